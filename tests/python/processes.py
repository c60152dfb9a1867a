"""Processes seen through /proc, for the tests that interrupt or kill runs and check what is left.

A pid alone does not name a process for long: once its process is reaped (by its parent, or by init
when the parent is gone) the kernel may hand it to another. A pid with its start time does.
"""

from __future__ import annotations

import os
import time


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields after the command name (state first), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def identity(pid: int) -> tuple[int, str | None]:
    """(pid, start time in clock ticks since boot), or (pid, None) once it is gone."""
    fields = _stat_fields(pid)
    return pid, None if fields is None else fields[19]


def alive(pid: int) -> bool:
    """Whether `pid` runs (exists and is not a zombie)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def still_running(seen: tuple[int, str | None]) -> bool:
    """Whether the process `seen` (from identity()) is still the one running under its pid."""
    pid, started = seen
    return started is not None and alive(pid) and identity(pid)[1] == started


def children_of(parent: int) -> list[int]:
    """The pids whose parent is `parent` now (a process whose parent died is init's)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and int(fields[1]) == parent:
                out.append(int(entry))
    return out


def all_gone(seen: list[tuple[int, str | None]], seconds: float = 30.0) -> bool:
    """Polls until none of `seen` is still running; False if one still is after `seconds` (a bound)."""
    end = time.monotonic() + seconds
    while any(still_running(s) for s in seen):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def forked_children(parent: int) -> list[int]:
    """The children of `parent` that run its own command line: the processes it forked (a simulation, a
    sweep's point), not the programs it ran (a compiler probe)."""
    try:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return []
    out = []
    for child in children_of(parent):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if f.read() == cmdline:
                    out.append(child)
        except OSError:
            pass
    return out
