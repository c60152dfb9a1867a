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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .execute import ROW_FILE
from .points import Point
from .spec import SweepSpec

if TYPE_CHECKING:
    import pandas

__all__ = ["STATUS_COLUMNS", "finished_rows", "point_folder", "read_table", "write_table"]

STATUS_COLUMNS = ("status", "exit_status", "error")  #: the columns that say how a point went


def point_folder(out: Path, point: Point) -> Path:
    """Where `point` keeps its Result and its row."""
    return out / "points" / point.key


def finished_rows(out: Path, points: list[Point]) -> dict[int, dict[str, Any]]:
    """The rows already on disk for `points` (by index): those whose folder holds a whole row.json
    with the same hash. A point whose inputs changed has another hash, so another folder."""
    rows: dict[int, dict[str, Any]] = {}
    for p in points:
        path = point_folder(out, p) / ROW_FILE
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if row.get("hash") == p.hash:
            rows[p.index] = {**row, "point": p.index}
    return rows


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
        # Parquet columns have one type: an axis mixing 4096 and "1GiB" is written as text.
        kinds = {type(v) for v in frame[axis]}
        if str in kinds and len(kinds) > 1:
            frame[axis] = frame[axis].astype(str)
    frame["exit_status"] = frame["exit_status"].astype("int64")
    out.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out / "sweep.parquet.tmp", index=False)
    (out / "sweep.parquet.tmp").replace(out / "sweep.parquet")
    frame.to_csv(out / "sweep.csv", index=False)
    meta = {"name": spec.name, "source": spec.source, "axes": spec.axis_names(), "metrics": list(spec.metrics),
            "points": len(points)}
    (out / "spec.json").write_text(json.dumps(meta, indent=2) + "\n")
    return frame


def read_table(out: Path) -> pandas.DataFrame:
    """The table of a finished sweep's folder."""
    import pandas

    from ...errors import ConfigError

    path = out / "sweep.parquet"
    if not path.is_file():
        raise ConfigError(f"{out}: not a sweep folder (no sweep.parquet); write one with eidola sweep SPEC --out {out}")
    return pandas.read_parquet(path)
