"""Design-space sweeps: many simulations from one spec, on this machine or a Dask cluster.

`sweep(spec)` expands the spec's axes into points, checks every one (`check`), runs the points
not already finished (with `resume=True`), and returns the table: a pandas DataFrame with a row
per point. See `spec` for the file format, `metrics` for the metrics, `execute` for how a point
runs and fails, `table` for the output folder and what `--resume` reuses.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .check import check_points
from .execute import Task
from .metrics import METRICS, register, register_prefix
from .options import check_dask, check_workers, prepare_out
from .points import Point, expand
from .progress import Progress
from .spec import SweepSpec, load_spec, spec_from_dict
from .table import finished_rows, point_folder, write_table

if TYPE_CHECKING:
    import pandas

__all__ = [
    "METRICS",
    "Point",
    "SweepSpec",
    "default_out",
    "expand",
    "load_spec",
    "register",
    "register_prefix",
    "spec_from_dict",
    "sweep",
]


def default_out(spec: SweepSpec) -> Path:
    """Where a sweep writes when no folder is given: out/sweeps/NAME."""
    return Path("out") / "sweeps" / spec.name


def _as_spec(spec: SweepSpec | str | os.PathLike[str] | dict[str, Any]) -> SweepSpec:
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, dict):
        return spec_from_dict(spec)
    return load_spec(spec)


def sweep(spec: SweepSpec | str | os.PathLike[str] | dict[str, Any], *, out: str | os.PathLike[str] | None = None,
          workers: int | None = None, dask: str | None = None, resume: bool = False, overwrite: bool = False,
          progress: bool = False) -> pandas.DataFrame:
    """Runs a sweep and returns its table (a row per point: its axes, metrics, status, error, hash, folder).

    `spec` is a spec file, a dict in the file's form (paths relative to the working directory)
    or a SweepSpec. `out` is the output folder (default out/sweeps/NAME). `workers` is the number
    of points run at once locally (default: one per core). `dask` is a scheduler address
    (tcp://host:8786) or `local:N` for a new local cluster of N workers; None runs locally.
    `resume` keeps the points already finished in `out` and runs only the rest; `overwrite` runs
    every point again in a folder that holds an earlier sweep (without either, such a folder is
    refused). `progress` shows a bar (or plain lines when stderr is not a terminal). The table's
    `attrs` hold `reused` and `ran`: how many points came from disk and how many ran now.

    Everything is checked before the first point runs (the options, and every point's platform
    and generator: see `check`): bad input raises ConfigError naming the spec file and key.
    """
    check_workers(workers)
    check_dask(dask)
    spec = _as_spec(spec)
    points = expand(spec)
    check_points(spec, points)
    folder = Path(out) if out is not None else default_out(spec)
    prepare_out(folder, resume, overwrite)
    rows = finished_rows(folder, spec, points) if resume else {}
    reused = len(rows)
    tasks = [Task(spec, p, str(point_folder(folder, p).resolve())) for p in points if p.index not in rows]
    bar = Progress(len(points), reused, progress)

    def done(row: dict[str, Any]) -> None:
        rows[int(row["point"])] = row
        bar.update(row)

    try:
        if dask is not None:
            from .dask_backend import run_dask

            run_dask(tasks, dask, done)
        else:
            from .local import default_workers, run_local

            run_local(tasks, workers or default_workers(), done)
    finally:
        bar.close()
        # Written even when interrupted, so the table shows what finished.
        table = write_table(folder, spec, points, rows)
    table.attrs.update(reused=reused, ran=len(rows) - reused, failed=int((table["status"] != "ok").sum()))
    return table
