"""A static check of a profile's waits: can anything in the profile ever satisfy them?

A wait (GPU g, flag f, cond, value) blocks until g's copy of f satisfies `f <cond> value`. Inside a
simulation a flag word changes only by an atomic: a `signal` with dst g and that flag (local ones,
dst == g, included), or a `put` whose landing flag is f with dst g. Nothing else of a profile
writes flag words: writes, multicasts and synthetic traffic land in buffers, which the window
layout puts after the flag words (run/encode.py, encode_traffic.py); reads, reduce_loads, local
traffic, compute and fences write no memory. Collectives, NCCL-style programs, NVLS and imported
profiles are made of these same ops, so they are checked as written. Every flag starts at 0.

So when only `add`s of values >= 0 change (g, f), its value stays within [0, sum of those adds] for
the whole run; a wait no value of that range satisfies can never end: the workgroup never finishes
and the simulation ends in a deadlock (exit 3) after running. No writer at all is the range [0, 0].
A flag that some `set`, `cas` or negative `add` changes is not judged (its values are not bounded
so simply), and neither is a wait the initial 0 already satisfies.

Only GPUs that replay the profile are seen here: a platform with a user's own GPU model (a plugin
GPU, examples/user_gpu) may write any flag from outside the profile (the simulator then calls them
"external writers"), so there a stuck wait is only a likely problem, not a certain one. The caller
decides; this module only finds them.

Vectorised over the columnar op table (workload/table.py): Python runs once per template, never per op.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .ops import CONDS, Op
from .table import Put, Signal

if TYPE_CHECKING:
    from .profile import Profile

__all__ = ["StuckWait", "FlagCheck", "check_flags", "REPORTED"]

REPORTED = 10  #: stuck waits described one by one; the rest are counted
#: A flag with a single add above this is not judged, so that a flag's sum of adds cannot overflow int64
#: (fewer than 2^31 ops add to it); no real counter comes near it.
_BIG_ADD = 1 << 32


@dataclass(frozen=True)
class StuckWait:
    """A wait that no op of the profile can ever satisfy."""

    gpu: int
    wg: int
    op: int         #: the op's index in its program
    flag: str
    cond: str
    value: int
    writers: int    #: ops of the profile that change this flag on this GPU (all adds of values >= 0)
    reach: int      #: the highest value those adds can take the flag to (their sum; 0 without writers)

    def where(self) -> str:
        """``gpu 0 wg 1 op 3: waits for ready >= 2``: the wait, as the simulator's deadlock report names it."""
        return f"gpu {self.gpu} wg {self.wg} op {self.op}: waits for {self.flag} {self.cond} {self.value}"

    def text(self) -> str:
        """One line: where the wait is, what it waits for, and why it can never be satisfied."""
        if not self.writers:
            return (f"{self.where()}, but no op changes flag {self.flag!r} on GPU {self.gpu} (no signal or put with "
                    f"dst {self.gpu} and flag {self.flag}) and its initial value 0 does not satisfy it")
        ops = (f"the one op that changes it (a signal or put with dst {self.gpu} and flag {self.flag}) adds"
               if self.writers == 1 else
               f"the {self.writers} ops that change it (signals and puts with dst {self.gpu} and flag {self.flag}, "
               "all adds) add")
        return f"{self.where()}, but flag {self.flag!r} on GPU {self.gpu} can reach at most {self.reach}: {ops} {self.reach}"


@dataclass(frozen=True)
class FlagCheck:
    """What check_flags found."""

    stuck: tuple[StuckWait, ...]  #: the first REPORTED stuck waits, in (gpu, wg, op) order
    stuck_count: int              #: every stuck wait
    unwaited: tuple[str, ...]     #: flags some op changes but no op of any GPU waits for

    def stuck_lines(self, limit: int = REPORTED) -> list[str]:
        """One line per stuck wait (at most `limit`), then how many more there are."""
        lines = [w.text() for w in self.stuck[:limit]]
        if self.stuck_count > len(lines):
            lines.append(f"... and {self.stuck_count - len(lines)} more")
        return lines


def check_flags(profile: Profile, limit: int = REPORTED) -> FlagCheck:
    """Every wait of `profile` that the profile's own ops can never satisfy (the first `limit` described),
    and the flags that are changed but never waited for (a misspelt flag name, often)."""
    t = profile.table
    nflags = len(profile.flags)
    if not len(t) or not nflags:
        return FlagCheck((), 0, ())
    index = {name: i for i, name in enumerate(profile.flags)}
    ntemp = len(t.templates)
    # Per template (one per distinct op body, however many GPUs): the flag it changes or waits for.
    w_flag = np.full(ntemp, -1, dtype=np.int64)     # the flag a signal or put changes
    w_value = np.zeros(ntemp, dtype=np.int64)       # its add when plain, else 0
    w_plain = np.zeros(ntemp, dtype=bool)           # an add of 0 <= value <= _BIG_ADD
    q_flag = np.full(ntemp, -1, dtype=np.int64)     # the flag a wait waits for
    q_cond = np.zeros(ntemp, dtype=np.int64)        # its condition, as an index into CONDS
    q_value = np.zeros(ntemp, dtype=np.int64)
    for i, tp in enumerate(t.templates):
        if isinstance(tp, (Signal, Put)):
            op, value = (tp.op, tp.value) if isinstance(tp, Signal) else (tp.op_name, tp.value)
            w_flag[i] = index[tp.flag]
            w_plain[i] = op == "add" and 0 <= value <= _BIG_ADD
            w_value[i] = value if w_plain[i] else 0
        elif isinstance(tp, Op) and tp.kind == "wait":
            q_flag[i], q_cond[i], q_value[i] = index[tp["flag"]], CONDS.index(tp["cond"]), tp["value"]

    # One gather over every row (the rest works on the writer and wait rows only): 1 writer, 2 wait, 0 other.
    role = np.where(w_flag >= 0, 1, np.where(q_flag >= 0, 2, 0)).astype(np.int8)[t.rows[:, 0]]
    wrow, qrow = np.flatnonzero(role == 1), np.flatnonzero(role == 2)
    wref = t.rows[wrow, 0]
    if not len(qrow):
        return FlagCheck((), 0, _unwaited(profile, w_flag[wref], np.zeros(0, dtype=np.int64)))

    # Writers keyed by (target GPU, flag), sorted: per key, whether only plain adds change it, and their sum.
    wkey = t.rows[wrow, 1] * nflags + w_flag[wref]
    order = np.argsort(wkey, kind="stable")
    wkey, wref = wkey[order], wref[order]
    first = np.flatnonzero(np.r_[True, wkey[1:] != wkey[:-1]]) if len(wkey) else np.zeros(0, dtype=np.int64)
    keys = wkey[first]
    counts = np.diff(np.r_[first, len(wkey)])
    sums = np.add.reduceat(w_value[wref], first) if len(first) else np.zeros(0, dtype=np.int64)
    plain = np.logical_and.reduceat(w_plain[wref], first) if len(first) else np.zeros(0, dtype=bool)

    # Waits keyed by (own GPU, flag): the writers of their key, if any.
    prog = np.searchsorted(t.starts, qrow, side="right") - 1
    # The program keys are (gpu, wg) pairs; flattened without a Python object per program.
    pkeys = np.fromiter(chain.from_iterable(t.keys), dtype=np.int64, count=2 * len(t.keys)).reshape(-1, 2)
    qgpu = pkeys[prog, 0]
    qref = t.rows[qrow, 0]
    qkey = qgpu * nflags + q_flag[qref]
    at = np.minimum(np.searchsorted(keys, qkey), max(len(keys) - 1, 0))
    found = keys[at] == qkey if len(keys) else np.zeros(len(qkey), dtype=bool)
    if len(keys):
        judged, reach, writers = ~found | plain[at], np.where(found, sums[at], 0), np.where(found, counts[at], 0)
    else:
        judged, reach, writers = ~found, np.zeros(len(qkey), dtype=np.int64), np.zeros(len(qkey), dtype=np.int64)
    stuck = judged & _never(q_cond[qref], q_value[qref], reach)

    hits = np.flatnonzero(stuck)
    described = []
    for h in hits[:limit].tolist():
        row, p = int(qrow[h]), int(prog[h])
        described.append(StuckWait(int(qgpu[h]), int(pkeys[p, 1]), row - int(t.starts[p]), profile.flags[int(q_flag[qref[h]])],
                                   CONDS[int(q_cond[qref[h]])], int(q_value[qref[h]]), int(writers[h]), int(reach[h])))
    return FlagCheck(tuple(described), len(hits), _unwaited(profile, w_flag[wref], q_flag[qref]))


def _never(cond: NDArray[np.int64], value: NDArray[np.int64], reach: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Per wait: whether no flag value in [0, reach] satisfies `flag <cond> value` (conditions as CONDS indices)."""
    out = np.zeros(len(cond), dtype=bool)
    for i, c in enumerate(CONDS):
        m = cond == i
        v, r = value[m], reach[m]
        out[m] = {"==": (v < 0) | (v > r), "!=": (r == 0) & (v == 0), ">=": v > r, ">": v >= r,
                  "<=": v < 0, "<": v <= 0}[c]
    return out


def _unwaited(profile: Profile, written: NDArray[np.int64], waited: NDArray[np.int64]) -> tuple[str, ...]:
    """Flags some row changes (`written`, flag indices per writer row) that no row waits for (`waited`)."""
    n = len(profile.flags)
    w = np.bincount(written, minlength=n) if len(written) else np.zeros(n, dtype=np.int64)
    q = np.bincount(waited[waited >= 0], minlength=n) if len(waited) else np.zeros(n, dtype=np.int64)
    return tuple(profile.flags[i] for i in np.flatnonzero((w > 0) & (q == 0)).tolist())
