"""The local backend: this process loads the models once, then forks a child per point, N at a time."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .execute import Task, run_tasks

__all__ = ["default_workers", "run_local"]


def default_workers() -> int:
    """One worker per core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_local(tasks: list[Task], workers: int, on_done: Callable[[dict[str, Any]], None]) -> None:
    """Runs `tasks` with `workers` children at once; `on_done(row)` as each point finishes.

    Why fork children rather than keep a pool of long-lived worker processes: a SystemC kernel
    elaborates once per process, so every point needs a fresh process anyway; forking it from
    a parent that has already loaded cppyy and the models costs milliseconds, and it starts with
    them loaded.
    """
    from .. import sysc

    sysc.load()
    run_tasks(tasks, workers, on_done)
