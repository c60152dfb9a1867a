"""Annotated timestamps: import an instrumented real run as a profile, export a simulated run the same way.

The CSV has one row per event and a header line naming its columns, in any order: required
``gpu,wg,t_ns,event,peer,flag,value,nbytes``, optional ``cond,mode,t_end_ns,blocking,scope,overlap``; any other
column
is an error. Cells may be empty where a column does not apply to the event, and cells of columns
that do not apply are ignored. ``event`` is one of:

- ``start`` / ``end``: the workgroup's program starts / ends (exactly one each; first and last row);
- ``write`` (``peer``, ``nbytes``, optional ``blocking`` true/false): a write to GPU ``peer``
  begins; becomes ``write(dst=peer, buffer="imported", offset=0, nbytes=nbytes, blocking=...)``
  (posted unless ``blocking`` is true). Buffer ``imported`` is declared
  with the largest nbytes seen: the simulator stores no data, only the traffic matters;
- ``signal`` (``peer``, ``flag``, ``value``, optional ``scope``, ``overlap`` true/false): an atomic
  add on GPU ``peer``'s ``flag`` begins (its release wait included); becomes ``signal(dst=peer,
  flag=flag, op="add", value=value, scope=scope, overlap=...)``, value 1, scope "workgroup" and
  overlap false if empty;
- ``put`` (``peer``, ``nbytes``, ``flag``, optional ``value``): a write that carries its own flag
  (NCCL's LL and LL128 lines) begins; becomes ``put(dst=peer, buffer="imported", offset=0,
  nbytes=nbytes, flag=flag, value=value, op="add")``, value 1 if empty. Like a signal, it counts
  towards an inferred wait value;
- ``fence``: becomes ``fence()``;
- ``wait_begin`` (``flag``, optional ``value``, ``cond``, ``mode``) and the next ``wait_end`` of
  the workgroup (its flag empty or the same): becomes ``wait(flag, cond, value, mode,
  interval_ns=100)``, cond ">=" and mode "poll" by default. Without a value, the value is
  inferred: the sum of the values of all signal and put rows to this GPU and flag with t_ns <= the
  wait_end's t_ns (the signals that released it).

Rows of one (gpu, wg) are taken in t_ns order (ties in file order). A write/put/signal row may give
``t_end_ns``, when it completed for its workgroup (a posted write or a signal when its last
packet was issued, a blocking write when its last acknowledgement arrived, a fence when the
writes before it were acknowledged). The time from the end of one op (or from ``start``, or from a
``wait_end``) to the beginning of the next op (or ``end``) becomes ``compute(ns=gap)``; zero gaps
are left out, and so are negative ones (the next op began before the previous one completed, as
with pipelined writes). Without ``t_end_ns`` the transfer is assumed to last until the next row:
the program is communication-bound there, and no compute is inserted after it.

Flags are declared in order of first appearance in the file; gpus is the largest gpu or peer + 1
and workgroups the largest wg + 1. Times are read as exact decimals, so gaps are exact.

Export writes the same CSV for a simulated run, every column filled where it applies, so that
importing it gives back the communication ops and the compute time between them. Compute, local
and read ops emit no row: their time becomes compute gaps. What the CSV cannot say is lost:
buffers and offsets (the import uses ``imported`` at offset 0), signal and put ops other than add
(exported with their value, imported as add) and wait intervals (imported as 100 ns). A profile
with NVLS ops (``multicast``, ``reduce_load``) is refused: the CSV has no event
for them, and dropping their traffic would change the run.
"""

from __future__ import annotations

import bisect
import csv
import io
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, SupportsFloat, cast, overload

import numpy as np
import numpy.typing as npt

from ...errors import ProfileError
from ...inputs import decode_text, read_input
from ..builder import ProfileBuilder, ProgramBuilder
from ..checks import NAME
from ..ops import CONDS, MULTIMEM_KINDS, RELEASE_SCOPES, WAIT_MODES, Op
from ..profile import Profile

__all__ = ["COLUMNS", "OPTIONAL_COLUMNS", "EVENTS", "import_timestamps", "export_timestamps"]

COLUMNS = ("gpu", "wg", "t_ns", "event", "peer", "flag", "value", "nbytes")
OPTIONAL_COLUMNS = ("cond", "mode", "t_end_ns", "blocking", "scope", "overlap")
EVENTS = ("start", "write", "put", "signal", "fence", "wait_begin", "wait_end", "end")
BUFFER = "imported"
WAIT_INTERVAL_NS = 100
_INT = re.compile(r"[-+]?[0-9]+")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_EVENT_FIELDS = ("gpu", "wg", "op", "begin_ns", "end_ns")


class _Bad(Exception):
    """A problem with one row; the caller prefixes the file and line."""


@dataclass
class _Row:
    """One parsed CSV row; fields that do not apply to the event stay None."""

    line: int
    event: str
    gpu: int
    wg: int
    t: Decimal
    peer: int | None = None
    flag: str | None = None
    value: int | None = None
    nbytes: int | None = None
    cond: str = ">="
    mode: str = "poll"
    t_end: Decimal | None = None
    blocking: bool = False
    scope: str = "workgroup"
    overlap: bool = False


# ---------------------------------------------------------------- reading rows

@overload
def _int(cells: dict[str, str], key: str, lo: int = ..., hi: int = ..., *, need: str) -> int: ...
@overload
def _int(cells: dict[str, str], key: str, lo: int = ..., hi: int = ..., need: None = ...) -> int | None: ...
def _int(cells: dict[str, str], key: str, lo: int = 0, hi: int = _I64_MAX, need: str | None = None) -> int | None:
    s = cells.get(key, "")
    if not s:
        if need:
            raise _Bad(f"{need} without {key} (column {key!r} is empty)")
        return None
    if not _INT.fullmatch(s) or not lo <= int(s) <= hi:
        raise _Bad(f"{key} {s!r} is not an integer >= {lo}" + ("" if hi == _I64_MAX else f" and <= {hi}"))
    return int(s)


def _time(cells: dict[str, str], key: str) -> Decimal | None:
    s = cells.get(key, "")
    if not s:
        return None
    t: Decimal | None
    try:
        t = Decimal(s)
    except InvalidOperation:
        t = None
    if t is None or not t.is_finite() or t < 0:
        raise _Bad(f"{key} {s!r} is not a number >= 0")
    return t


def _flag(cells: dict[str, str], need: str | None = None) -> str | None:
    s = cells.get("flag", "")
    if not s:
        if need:
            raise _Bad(f"{need} without flag (column 'flag' is empty)")
        return None
    if not NAME.fullmatch(s):
        raise _Bad(f"flag {s!r} is not a valid name (expected [A-Za-z_][A-Za-z0-9_.]*)")
    return s


def _choice(cells: dict[str, str], key: str, allowed: Sequence[str], default: str) -> str:
    s = cells.get(key, "")
    if not s:
        return default
    if s not in allowed:
        raise _Bad(f"{key} {s!r} is not one of {', '.join(allowed)}")
    return s


def _parse_row(line: int, cells: dict[str, str]) -> _Row:
    event = cells["event"]
    if event not in EVENTS:
        raise _Bad(f"event {event!r} is not one of {', '.join(EVENTS)}")
    gpu, wg = _int(cells, "gpu", need=event), _int(cells, "wg", need=event)
    t = _time(cells, "t_ns")
    if t is None:
        raise _Bad(f"{event} without t_ns (column 't_ns' is empty)")
    row = _Row(line, event, gpu, wg, t)
    if event in ("write", "put", "signal", "fence"):
        row.t_end = _time(cells, "t_end_ns")
        if row.t_end is not None and row.t_end < t:
            raise _Bad(f"t_end_ns {cells['t_end_ns']!r} is before t_ns {cells['t_ns']!r}")
    if event in ("write", "put", "signal"):
        row.peer = _int(cells, "peer", need=event)
    if event in ("write", "put"):
        row.nbytes = _int(cells, "nbytes", lo=1, need=event)
    if event == "write":
        row.blocking = _choice(cells, "blocking", ("false", "true"), "false") == "true"
    elif event == "put":
        row.flag = _flag(cells, need=event)
        value = _int(cells, "value", lo=_I64_MIN)
        row.value = 1 if value is None else value
    elif event == "signal":
        row.scope = _choice(cells, "scope", RELEASE_SCOPES, "workgroup")
        row.overlap = _choice(cells, "overlap", ("false", "true"), "false") == "true"
        row.flag = _flag(cells, need=event)
        value = _int(cells, "value", lo=_I64_MIN)
        row.value = 1 if value is None else value
    elif event == "wait_begin":
        row.flag = _flag(cells, need=event)
        row.value = _int(cells, "value", lo=_I64_MIN)
        row.cond = _choice(cells, "cond", CONDS, ">=")
        row.mode = _choice(cells, "mode", WAIT_MODES, "poll")
    elif event == "wait_end":
        row.flag = _flag(cells)
    return row


def _check_header(header: list[str]) -> None:
    allowed = COLUMNS + OPTIONAL_COLUMNS
    for i, col in enumerate(header):
        if col not in allowed:
            raise _Bad(f"unknown column {col!r} (allowed: {', '.join(allowed)})")
        if col in header[:i]:
            raise _Bad(f"column {col!r} appears twice")
    for col in COLUMNS:
        if col not in header:
            raise _Bad(f"missing column {col!r} (required: {', '.join(COLUMNS)})")


def _read_rows(path: str) -> list[_Row]:
    text = decode_text(read_input(path, "timestamps file", ProfileError), path, ProfileError)
    rows: list[_Row] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise ProfileError(f"{path}: file is empty (expected a header line {','.join(COLUMNS)})")
        header = [c.strip() for c in header]
        _check_header(header)
        for raw in reader:
            if not any(c.strip() for c in raw):
                continue  # blank line
            if len(raw) != len(header):
                raise _Bad(f"expected {len(header)} cells (one per header column), got {len(raw)}")
            rows.append(_parse_row(reader.line_num, dict(zip(header, (c.strip() for c in raw)))))
    except _Bad as e:
        raise ProfileError(f"{path}: line {reader.line_num}: {e}") from None
    except csv.Error as e:
        raise ProfileError(f"{path}: line {reader.line_num}: invalid CSV ({e})") from None
    if not rows:
        raise ProfileError(f"{path}: no event rows after the header")
    return rows


# ---------------------------------------------------------------- building the profile

class _Signals:
    """Signal and put rows per (target gpu, flag), to sum the values that had arrived by a given time."""

    def __init__(self, rows: list[_Row]) -> None:
        by_target: dict[tuple[int | None, str | None], list[tuple[Decimal, int | None]]] = {}
        for r in rows:
            if r.event in ("signal", "put"):
                by_target.setdefault((r.peer, r.flag), []).append((r.t, r.value))
        self._times: dict[tuple[int | None, str | None], list[Decimal]] = {}
        self._sums: dict[tuple[int | None, str | None], list[Any]] = {}
        for key, items in by_target.items():
            items.sort(key=lambda tv: tv[0])
            self._times[key] = [t for t, _ in items]
            # Signal and put rows always have a value; dtype object keeps exact Python ints (no 64-bit overflow).
            self._sums[key] = list(np.cumsum(cast("list[int]", [v for _, v in items]), dtype=np.object_))

    def released(self, gpu: int, flag: str | None, t: Decimal) -> tuple[int, int]:
        """Return (number of signals and puts, sum of their values) to `gpu`'s `flag` with t_ns <= `t`."""
        times = self._times.get((gpu, flag), [])
        n = bisect.bisect_right(times, t)
        return n, (int(self._sums[gpu, flag][n - 1]) if n else 0)


def _ns(gap: Decimal) -> int | float:
    return int(gap) if gap == gap.to_integral_value() else float(gap)


def _wait_value(begin: _Row, end: _Row, signals: _Signals) -> int:
    if begin.value is not None:
        return begin.value
    n, total = signals.released(begin.gpu, begin.flag, end.t)
    if n == 0:
        raise _Bad(f"wait on flag {begin.flag!r} gives no value and none can be inferred: no signal or put row "
                   f"targets gpu {begin.gpu} flag {begin.flag!r} by t_ns {end.t} (its wait_end, line "
                   f"{end.line}); put the value in the wait_begin row")
    return total


def _add_program(p: ProgramBuilder, rows: list[_Row], signals: _Signals) -> None:
    """Append the ops of one workgroup's time-ordered rows to ProgramBuilder `p`; _Bad carries the line."""
    who = f"gpu {p.gpu} wg {p.wg}"
    first = rows[0]
    if first.event != "start":
        raise _Bad(f"{who} has no start row before this {first.event!r} row (its first row must be 'start')", first)
    ready: Decimal | None
    waiting: _Row | None
    end: _Row | None
    ready, waiting, end = first.t, None, None
    for r in rows[1:]:
        if end is not None:
            raise _Bad(f"{r.event!r} row after the end of {who} (end at line {end.line}, t_ns {end.t})", r)
        if waiting is not None and r.event != "wait_end":
            raise _Bad(f"wait_begin without matching wait_end: the next row of {who} is {r.event!r} "
                       f"(line {r.line})", waiting)
        if r.event == "start":
            raise _Bad(f"a second start row for {who} (the first is line {first.line})", r)
        if r.event in ("write", "put", "signal", "fence", "wait_begin", "end") and ready is not None and r.t > ready:
            p.compute(ns=_ns(r.t - ready))
        if r.event == "write":
            p.write(dst=r.peer, buffer=BUFFER, offset=0, nbytes=r.nbytes, blocking=r.blocking)
            ready = r.t_end
        elif r.event == "put":
            p.put(dst=r.peer, buffer=BUFFER, offset=0, nbytes=r.nbytes, flag=r.flag, value=r.value, op="add")
            ready = r.t_end
        elif r.event == "signal":
            p.signal(dst=r.peer, flag=r.flag, op="add", value=r.value, scope=r.scope, overlap=r.overlap)
            ready = r.t_end
        elif r.event == "fence":
            p.fence()
            ready = r.t_end
        elif r.event == "wait_begin":
            waiting = r
        elif r.event == "wait_end":
            if waiting is None:
                raise _Bad(f"wait_end without wait_begin in {who}", r)
            if r.flag is not None and r.flag != waiting.flag:
                raise _Bad(f"wait_end names flag {r.flag!r} but its wait_begin (line {waiting.line}) "
                           f"waits on {waiting.flag!r}", r)
            try:
                value = _wait_value(waiting, r, signals)
            except _Bad as e:
                raise _Bad(str(e), waiting) from None
            p.wait(flag=waiting.flag, cond=waiting.cond, value=value, mode=waiting.mode,
                   interval_ns=WAIT_INTERVAL_NS)
            waiting, ready = None, r.t
        else:  # end
            end = r
    if waiting is not None:
        raise _Bad(f"wait_begin without matching wait_end: it is the last row of {who}", waiting)
    if end is None:
        last = rows[-1]
        raise _Bad(f"{who} has no end row (its last row is this {last.event!r} row)", last)


def _declare(b: ProfileBuilder, rows: list[_Row]) -> None:
    flags: dict[str, _Row] = {}
    for r in rows:
        if r.flag is not None and r.flag not in flags:
            flags[r.flag] = r
            b.flag(r.flag)
    writes = [r.nbytes for r in rows if r.event in ("write", "put")]
    if writes:
        if BUFFER in flags:
            raise _Bad(f"flag name {BUFFER!r} is reserved for the imported data buffer", flags[BUFFER])
        b.buffer(BUFFER, max(cast("list[int]", writes)))  # every write and put row has nbytes


def import_timestamps(path: str | os.PathLike[str], name: str | None = None) -> Profile:
    """Read an annotated timestamps CSV (see the module doc) as a Profile named `name` (default: file stem)."""
    path = os.fspath(path)
    rows = _read_rows(path)
    gpus = 1 + max(max(r.gpu, -1 if r.peer is None else r.peer) for r in rows)
    workgroups = 1 + max(r.wg for r in rows)
    programs: dict[tuple[int, int], list[_Row]] = {}
    for r in rows:
        programs.setdefault((r.gpu, r.wg), []).append(r)
    signals = _Signals(rows)
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name=name if name is not None else Path(path).stem)
    try:
        _declare(b, rows)
        for (gpu, wg), prows in sorted(programs.items()):
            prows.sort(key=lambda r: r.t)  # stable: ties keep file order
            _add_program(b.program(gpu=gpu, wg=wg), prows, signals)
    except _Bad as e:  # here every _Bad carries (message, the row it is about)
        raise ProfileError(f"{path}: line {e.args[1].line}: {e.args[0]}") from None
    except ProfileError as e:  # the builder's own check (e.g. a value beyond 64 bits)
        raise ProfileError(f"{path}: {e}") from None
    return b.build()


# ---------------------------------------------------------------- export

def _t(x: SupportsFloat) -> str:
    return f"{float(x):.3f}"


def _program_rows(gpu: int, wg: int, ops: tuple[Op, ...], idx: list[int], begin: npt.NDArray[Any],
                  end: npt.NDArray[Any]) -> list[list[object]]:
    rows: list[list[object]] = [[gpu, wg, _t(begin[0]), "start", "", "", "", "", "", "", "", "", "", ""]]
    for k, b, e in zip(idx, begin, end):
        op = ops[k]
        if op.kind == "write":
            rows.append([gpu, wg, _t(b), "write", op["dst"], "", "", op["nbytes"], "", "", _t(e),
                         "true" if op["blocking"] else "false", "", ""])
        elif op.kind == "put":
            rows.append([gpu, wg, _t(b), "put", op["dst"], op["flag"], op["value"], op["nbytes"], "", "", _t(e), "",
                         "", ""])
        elif op.kind == "signal":
            rows.append([gpu, wg, _t(b), "signal", op["dst"], op["flag"], op["value"], "", "", "", _t(e), "",
                         op["scope"], "true" if op["overlap"] else "false"])
        elif op.kind == "fence":
            rows.append([gpu, wg, _t(b), "fence", "", "", "", "", "", "", _t(e), "", "", ""])
        elif op.kind == "wait":
            rows.append([gpu, wg, _t(b), "wait_begin", "", op["flag"], op["value"], "", op["cond"], op["mode"], "", "",
                         "", ""])
            rows.append([gpu, wg, _t(e), "wait_end", "", op["flag"], "", "", "", "", "", "", "", ""])
    rows.append([gpu, wg, _t(end[-1]), "end", "", "", "", "", "", "", "", "", "", ""])
    return rows


#: Ops whose traffic the CSV cannot carry: export refuses them rather than drop it.
_NO_EVENT = MULTIMEM_KINDS


def export_timestamps(profile: Profile, op_events: npt.ArrayLike, path: str | os.PathLike[str]) -> None:
    """Write the timestamps CSV of a simulated run; `op_events` rows are (gpu, wg, op, begin_ns, end_ns)."""
    ev = np.asarray(op_events)
    missing = [f for f in _EVENT_FIELDS if f not in (ev.dtype.names or ())]
    if missing:
        raise ProfileError(f"op_events: missing field {missing[0]!r} (expected a structured array with "
                           f"fields {', '.join(_EVENT_FIELDS)})")
    ev = ev[np.lexsort((ev["op"], ev["wg"], ev["gpu"]))]
    cut = np.flatnonzero((np.diff(ev["gpu"]) != 0) | (np.diff(ev["wg"]) != 0)) + 1
    groups = {(int(g[0]["gpu"]), int(g[0]["wg"])): g for g in np.split(ev, cut) if len(g)}
    rows: list[list[object]] = []
    for (gpu, wg), ops in profile.programs:
        nvls = next((op.kind for op in ops if op.kind in _NO_EVENT), None)
        if nvls is not None:
            raise ProfileError(f"profile {profile.name!r}: gpu {gpu} wg {wg} has a {nvls} op, which the timestamps "
                               "CSV has no event for (NVLS traffic would be lost); export a profile without NVLS ops")
        g = groups.pop((gpu, wg), None)
        if g is None:
            continue
        idx = g["op"].astype(np.int64)
        if idx[0] < 0 or idx[-1] >= len(ops) or np.any(np.diff(idx) == 0):
            raise ProfileError(f"op_events: gpu {gpu} wg {wg}: op indices must be distinct and in "
                               f"0..{len(ops) - 1}, got {idx.tolist()}")
        rows += _program_rows(gpu, wg, ops, idx.tolist(), g["begin_ns"], g["end_ns"])
    if groups:
        gpu, wg = next(iter(groups))
        raise ProfileError(f"op_events: events for gpu {gpu} wg {wg}, which has no program in profile {profile.name!r}")
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(COLUMNS + OPTIONAL_COLUMNS)
        out.writerows(rows)
