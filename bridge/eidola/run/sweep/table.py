"""The sweep's output folder: a folder per point, and the tidy table of every point's row.

```
DIR/sweep.parquet, DIR/sweep.csv   one row per point: point, the axes, the metrics, status,
                                   exit_status, error, hash, folder
DIR/spec.json                      the sweep's axes and metrics (what `eidola sweep plot` reads)
DIR/points/<hash16>/               the point's Result (summary.json, CSV tables), log.txt, row.json
```
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from ...errors import ConfigError
from ...inputs import read_input
from .execute import ROW_FILE, STATUSES, row_template
from .points import Point
from .spec import SweepSpec

if TYPE_CHECKING:
    import pandas

__all__ = ["STATUS_COLUMNS", "finished_rows", "point_folder", "read_table", "write_table"]

STATUS_COLUMNS = ("status", "exit_status", "error")  #: the columns that say how a point went


def point_folder(out: Path, point: Point) -> Path:
    """Where `point` keeps its Result and its row."""
    return out / "points" / point.key


def finished_rows(out: Path, spec: SweepSpec, points: list[Point]) -> dict[int, dict[str, Any]]:
    """The rows already on disk for `points` (by index) that `--resume` may reuse.

    A point's folder must be a real folder (not a link) holding a whole row.json with the point's
    hash. A point whose inputs changed has another hash, so another folder. Nothing in the file is
    trusted beyond that: the row is rebuilt from the spec (index, hash, axis values) and the file's
    status, exit status, error and metrics, each checked for its type; a file that fails a check is
    not a finished point, and the point runs again. A point that timed out is reused only if the spec's
    timeout is no longer than the one it was killed at: a longer one may let it finish. A point that
    finished is reused only if it ran for less than the spec's timeout: a shorter one would now kill it.
    """
    rows: dict[int, dict[str, Any]] = {}
    for p in points:
        folder = point_folder(out, p)
        if folder.is_symlink() or not folder.is_dir():
            continue
        try:
            row = json.loads(read_input(folder / ROW_FILE, "point row"))
        except (ConfigError, ValueError, RecursionError):
            continue
        trusted = _trusted(row, p, spec)
        if trusted is not None:
            rows[p.index] = trusted
    return rows


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _trusted(row: object, point: Point, spec: SweepSpec) -> dict[str, Any] | None:
    """The row of `point` rebuilt from a row.json's outcome, or None when the file cannot be its row."""
    if not isinstance(row, dict) or row.get("hash") != point.hash:
        return None
    status, code, error = row.get("status"), row.get("exit_status"), row.get("error")
    if status not in STATUSES or not isinstance(code, int) or isinstance(code, bool) or not isinstance(error, str):
        return None
    metrics: dict[str, Any] = {}
    for m in spec.metrics:
        value = row.get(m)
        if value is None and status != "ok":
            continue
        if not _number(value):
            return None
        metrics[m] = float(value)
    killed_at = row.get("timeout_s")
    if status == "timeout" and (not _number(killed_at) or spec.timeout_s is None or spec.timeout_s > killed_at):
        return None
    ran = row.get("ran_s")
    if status != "timeout" and spec.timeout_s is not None and _number(ran) and ran >= spec.timeout_s:
        return None  # it took longer than the timeout now allows: under it the point would time out
    return {**row_template(point), **metrics, "status": status, "exit_status": code, "error": error}


def _columns(spec: SweepSpec) -> list[str]:
    return ["point", *spec.axis_names(), *spec.metrics, *STATUS_COLUMNS, "hash", "folder"]


def write_table(out: Path, spec: SweepSpec, points: list[Point], rows: dict[int, dict[str, Any]]) -> pandas.DataFrame:
    """Writes DIR/sweep.parquet, DIR/sweep.csv and DIR/spec.json from the rows so far; returns the table."""
    import pandas

    records = []
    for p in points:
        if p.index not in rows:
            continue
        row = dict(rows[p.index])
        row["folder"] = str(point_folder(Path("."), p))
        for m in spec.metrics:
            value = row.get(m)
            row[m] = math.nan if value is None else value
        records.append(row)
    frame = pandas.DataFrame.from_records(records, columns=_columns(spec))
    for m in spec.metrics:
        frame[m] = frame[m].astype("float64")
    for axis in spec.axis_names():
        # Parquet columns have one type: an axis mixing 4096 and "1GiB", or true and 1, is written as
        # text, and so is an integer beyond 64 bits (2**64), which no Parquet integer column holds.
        if not _one_parquet_type(list(frame[axis])):
            frame[axis] = frame[axis].astype(str)
    frame["exit_status"] = frame["exit_status"].astype("int64")
    try:
        out.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(out / "sweep.parquet.tmp", index=False)
        (out / "sweep.parquet.tmp").replace(out / "sweep.parquet")
        frame.to_csv(out / "sweep.csv", index=False)
        meta = {"name": spec.name, "source": spec.source, "axes": spec.axis_names(), "metrics": list(spec.metrics),
                "points": len(points)}
        (out / "spec.json").write_text(json.dumps(meta, indent=2) + "\n")
    except OSError as e:
        raise ConfigError(f"output folder {out} (--out): cannot write the table ({e.strerror or e})") from None
    return frame


def _one_parquet_type(values: list[Any]) -> bool:
    """Whether a column of these values has one Parquet type (numbers in 64 bits, or all of one kind)."""
    kinds = {type(v) for v in values}
    if kinds <= {int, float}:
        return all(-(2**63) <= v < 2**63 for v in values if isinstance(v, int))
    return len(kinds) <= 1


def read_table(out: Path) -> pandas.DataFrame:
    """The table of a finished sweep's folder; ConfigError naming the file when it is missing or not a sweep table."""
    import pandas
    import pyarrow  # type: ignore[import-untyped]

    path = out / "sweep.parquet"
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        mode = 0
    if not stat.S_ISREG(mode):
        raise ConfigError(f"{out}: not a sweep folder (no sweep.parquet); write one with eidola sweep SPEC --out {out}")
    try:
        table = pandas.read_parquet(path)
    except (pyarrow.ArrowException, OSError, ValueError) as e:  # truncated, or not Parquet at all
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError(f"{path}: not a readable sweep table ({first}); run the sweep again "
                          "(eidola sweep SPEC --resume)") from None
    missing = [c for c in ("point", *STATUS_COLUMNS) if c not in table.columns]
    if missing:
        raise ConfigError(f"{path}: not a sweep table (no column {', '.join(missing)})")
    return table
