"""Reading the output of a real nccl-tests or rccl-tests run (``all_reduce_perf ... > LOG``).

Both tools print a ``#`` header, then one line per size: ``size count type redop root`` and a
group of columns per run of the collective, out-of-place first, then in-place (rccl-tests ``-O 0``
prints only the in-place group). A group is ``time algbw busbw #wrong`` (``#wrong`` is ``N/A``
without data checks), and nccl-tests ``-I 1`` adds ``i_min i_max i_p99 i_cv%`` to each. The
reader takes the layout from the log itself:

- the column-head line (``#  size  count  type  redop  root  time ...``) says where each
  group's ``time`` (or ``cputime``) is; the line above it names the groups (``out-of-place``,
  ``in-place``). Without heads: groups of four after the fifth column, out-of-place first;
- the ranks: the ``#  Rank N ...`` device lines (every rank of every process is listed), else
  ``# nThread T nGpus G`` (one process: T x G ranks);
- the collective: nccl-tests' ``# Collective test starting: all_reduce_perf``, when present.

A data line is one whose first two fields are whole numbers; every other line (``#`` lines,
rccl-tests' ``rccl-tests: Version ...``, NCCL INFO lines, MPI chatter) is passed over. A data
line with too few fields or a time that is not a positive number is refused, naming the file and
line (exit status 2).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, shown
from ..inputs import decode_text, read_input

__all__ = ["COLUMNS", "LogRow", "NcclLog", "read_log"]

COLUMNS = ("out-of-place", "in-place")  #: the groups a log may hold, as --column names them
_HEADS = ("size", "count", "type", "redop", "root")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\b")
_THREADS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\b")
_TEST = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_GROUP = re.compile(r"out-of-place|in-place")


@dataclass(frozen=True)
class LogRow:
    """One data line of the log: its size and count columns, redop, and the chosen group's time."""

    size: int       #: bytes
    count: int      #: elements
    redop: str      #: sum, prod, ... or none
    time_us: float  #: the time of the chosen group (out-of-place or in-place)
    line: int       #: where it is in the file (1-based)
    root: int = -1  #: the root column: a rooted collective's root (nccl-tests' -r), -1 for the others


@dataclass(frozen=True)
class NcclLog:
    """What a log says: its rows (in file order), ranks, tool and collective, and which group was read."""

    path: str
    rows: tuple[LogRow, ...]
    nranks: int | None   #: from the Rank lines or nThread x nGpus; None when the log does not say
    tool: str            #: "nccl-tests", "rccl-tests" or "nccl-tests or rccl-tests"
    test: str | None     #: e.g. "all_reduce_perf", when the log names it
    column: str          #: the group read: out-of-place or in-place (or "the only" for an unnamed single group)


def read_log(path: str | Path, column: str = "out-of-place") -> NcclLog:
    """Reads an nccl-tests or rccl-tests output; ConfigError naming the file (and line) if it is not one."""
    if column not in COLUMNS:
        raise ConfigError(f"--column {column!r}: expected one of {', '.join(COLUMNS)}")
    where = str(path)
    text = decode_text(read_input(path, "nccl-tests log"), where)
    heads: list[str] | None = None
    titles: list[str] = []
    ranks: set[int] = set()
    threads: tuple[int, int] | None = None
    test = None
    tool = "nccl-tests or rccl-tests"
    rows: list[LogRow] = []
    pick: tuple[int, str] | None = None  # (index of the time field, the group's name), fixed at the first data line
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            if m := _RANK.match(stripped):
                ranks.add(int(m.group(1)))
            elif m := _THREADS.match(stripped):
                threads = (int(m.group(1)), int(m.group(2)))
            elif m := _TEST.match(stripped):
                test, tool = m.group(1), "nccl-tests"
            elif stripped.lstrip("#").split()[:5] == list(_HEADS):
                heads = stripped.lstrip("#").split()
            elif "nccl-tests version" in stripped:
                tool = "nccl-tests"
            elif _GROUP.search(stripped):
                titles = _GROUP.findall(stripped)
            continue
        if stripped.startswith("rccl-tests"):
            tool = "rccl-tests"
            continue
        fields = stripped.split()
        if len(fields) < 2 or not (fields[0].isdigit() and fields[1].isdigit()):
            continue  # not a data line: NCCL INFO, MPI messages, a banner
        if pick is None:
            pick = _time_field(where, lineno, heads, titles, fields, column)
        rows.append(_row(where, lineno, fields, pick[0]))
    if not rows:
        raise ConfigError(f"{where}: no data lines (expected nccl-tests or rccl-tests output: lines of size, count, "
                          "type, redop, root, then time, algbw, busbw per group)")
    nranks = max(ranks) + 1 if ranks else (threads[0] * threads[1] if threads else None)
    assert pick is not None
    return NcclLog(where, tuple(rows), nranks, tool, test, pick[1])


def _time_field(where: str, lineno: int, heads: list[str] | None, titles: list[str], fields: list[str],
                column: str) -> tuple[int, str]:
    """(index of the time field in a data line, the group's name) for the chosen `column`."""
    if heads is not None:
        times = [i for i, h in enumerate(heads) if h in ("time", "cputime")]
    else:  # no column heads: groups of four (time algbw busbw #wrong) after the five leading columns
        times = list(range(5, len(fields) - 3, 4))[:2]
    if not times:
        raise ConfigError(f"{where}:{lineno}: the column heads name no time column")
    names = titles if len(titles) == len(times) else (list(COLUMNS) if len(times) == 2 else [])
    if not names:  # one unnamed group (a log of eidola perf itself, or a fragment): it is the only measurement
        return times[0], "the only"
    if column not in names:
        raise ConfigError(f"{where}: has no {column} column (it has {', '.join(names)}); use --column {names[0]}")
    return times[names.index(column)], column


def _row(where: str, lineno: int, fields: list[str], at: int) -> LogRow:
    if len(fields) <= at + 2 or len(fields) < 5:
        raise ConfigError(f"{where}:{lineno}: a data line with {len(fields)} fields, expected at least {max(at + 3, 5)} "
                          "(size count type redop root, then time algbw busbw per group); the line is cut short?")
    try:
        time_us = float(fields[at])
    except ValueError:
        time_us = math.nan
    size = int(fields[0])
    if not (math.isfinite(time_us) and (time_us > 0 or (size == 0 and time_us == 0))):
        raise ConfigError(f"{where}:{lineno}: time {shown(fields[at])} (field {at + 1}) is not a positive number "
                          "of microseconds")
    try:
        root = int(fields[4])
    except ValueError:
        raise ConfigError(f"{where}:{lineno}: root {shown(fields[4])} (field 5) is not a whole number") from None
    return LogRow(size, int(fields[1]), fields[3], time_us, lineno, root)
