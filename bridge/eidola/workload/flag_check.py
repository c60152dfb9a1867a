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
decides (run.simulate.check_waits: simulate() warns, check() refuses); this module finds them and words them.

Vectorised over the columnar op table (workload/table.py): Python runs once per template, never per op.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .ops import Op
from .table import Put, Signal

if TYPE_CHECKING:
    from .profile import Profile

__all__ = ["StuckWait", "FlagCheck", "StuckWaitWarning", "check_flags", "stuck_error_text", "stuck_warning_text",
           "outside_note", "REPORTED"]

REPORTED = 10  #: stuck waits described one by one; the rest are counted
#: A flag with a single add above this is not judged, so that a flag's sum of adds cannot overflow int64
#: (fewer than 2^31 ops add to it); no real counter comes near it.
_BIG_ADD = 1 << 32
#: The least satisfying value of a wait no value >= 0 satisfies: above any reach (a sum of fewer than 2^31 adds of at
#: most _BIG_ADD is below it).
_NEVER = int(np.iinfo(np.int64).max)


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


class StuckWaitWarning(UserWarning):
    """A profile has a wait that no op of it can ever satisfy: the simulation will end in a deadlock (exit 3).

    `eidola.simulate` (and `eidola run`) warn with it and simulate anyway, since the deadlock report shows where
    every workgroup stopped; `check` (and `eidola validate`) refuse the profile (ProfileError) instead. With GPUs
    of the user's own model, which may write any flag from outside the profile, `check` warns with it as a note.
    `found` is the FlagCheck (its `stuck` names each wait's gpu, wg, op index and flag)."""

    def __init__(self, message: str, found: FlagCheck) -> None:
        super().__init__(message)
        self.found = found


def stuck_warning_text(source: str, found: FlagCheck) -> str:
    """What a run warns of before it simulates a profile with stuck waits: the first, and how many more."""
    more = f" (and {found.stuck_count - 1} more; eidola validate lists them)" if found.stuck_count > 1 else ""
    return f"{source}: {found.stuck[0].text()}{more}: the run will end in a deadlock"


def stuck_error_text(source: str, found: FlagCheck) -> str:
    """Why a profile whose waits can never be satisfied is refused: one line per wait (the first few), and the
    flags changed but never waited for, which are often the same flag misspelt."""
    lines = [f"{source}: {found.stuck_count} wait(s) can never be satisfied by the profile's ops, so the run would end "
             "in a deadlock:", *(f"  {line}" for line in found.stuck_lines())]
    if found.unwaited:
        lines.append(f"  flags changed but never waited for (misspelt?): {', '.join(found.unwaited[:10])}"
                     + (f" and {len(found.unwaited) - 10} more" if len(found.unwaited) > 10 else ""))
    return "\n".join(lines)


def outside_note(found: FlagCheck, plugin_gpus: list[int]) -> str:
    """Stuck waits on a platform whose `plugin_gpus` run a model of their own: only they can end the waits."""
    return (f"{found.stuck_count} wait(s) can be satisfied only from outside the profile, by plugin GPU(s) "
            f"{', '.join(map(str, plugin_gpus))} (first: {found.stuck[0].where()})")


def check_flags(profile: Profile, limit: int = REPORTED) -> FlagCheck:
    """Every wait of `profile` that the profile's own ops can never satisfy (the first `limit` described),
    and the flags that are changed but never waited for (a misspelt flag name, often)."""
    t = profile.table
    nflags = len(profile.flags)
    if not len(t) or not nflags:
        return FlagCheck((), 0, ())
    index = {name: i for i, name in enumerate(profile.flags)}
    ntemp = len(t.templates)
    # Per template (one per distinct op body, however many GPUs): the flag it changes or waits for. Built as lists
    # (a numpy item store per template cost more than the rest of the check on a 5,000-template profile).
    w_flag = [-1] * ntemp     # the flag a signal or put changes
    w_value = [0] * ntemp     # its add when plain, else 0
    w_plain = [False] * ntemp  # an add of 0 <= value <= _BIG_ADD
    q_flag = [-1] * ntemp     # the flag a wait waits for
    q_need = [0] * ntemp      # the least flag value >= 0 that satisfies it (_need)
    for i, tp in enumerate(t.templates):
        if isinstance(tp, (Signal, Put)):
            op, value = (tp.op, tp.value) if isinstance(tp, Signal) else (tp.op_name, tp.value)
            w_flag[i] = index[tp.flag]
            if op == "add" and 0 <= value <= _BIG_ADD:
                w_plain[i], w_value[i] = True, value
        elif isinstance(tp, Op) and tp.kind == "wait":
            args = dict(tp.args)
            q_flag[i], q_need[i] = index[args["flag"]], _need(args["cond"], args["value"])
    wf, qf = np.array(w_flag, dtype=np.int64), np.array(q_flag, dtype=np.int64)

    # One gather over every row (the rest works on the writer and wait rows only): 1 writer, 2 wait, 0 other.
    ref = np.ascontiguousarray(t.rows[:, 0])
    role = np.where(wf >= 0, 1, np.where(qf >= 0, 2, 0)).astype(np.int8)[ref]
    wrow, qrow = np.flatnonzero(role == 1), np.flatnonzero(role == 2)
    wref = ref[wrow]
    if not len(qrow):
        return FlagCheck((), 0, _unwaited(profile, wf[wref], np.zeros(0, dtype=np.int64)))

    # Writers keyed by (target GPU, flag), sorted: per key, how many ops change it and the most they can take it to:
    # the sum of its adds when only plain adds change it, else _NEVER (not judged: no wait on it is called stuck).
    wkey = t.rows[wrow, 1] * nflags + wf[wref]
    order = np.argsort(wkey, kind="stable")  # stable: faster here (the rows come nearly sorted) than the default
    wkey, wref = wkey[order], wref[order]
    first = np.flatnonzero(np.r_[True, wkey[1:] != wkey[:-1]]) if len(wkey) else np.zeros(0, dtype=np.int64)
    keys = np.r_[wkey[first], -1]  # -1: matches no wait, whose slot is then the last, "no writer"
    counts = np.r_[np.diff(np.r_[first, len(wkey)]), 0]
    sums = np.add.reduceat(np.array(w_value, dtype=np.int64)[wref], first) if len(first) else np.zeros(0, np.int64)
    plain = np.logical_and.reduceat(np.array(w_plain, dtype=bool)[wref], first) if len(first) else np.zeros(0, bool)
    reach = np.r_[sums, 0]               # no writer: the flag stays 0
    cap = np.r_[np.where(plain, sums, _NEVER), 0]

    # Waits keyed by (own GPU, flag): the slot of their key's writers (the last slot when none).
    prog = np.searchsorted(t.starts, qrow, side="right") - 1
    # The program keys are (gpu, wg) pairs; flattened without a Python object per program.
    pkeys = np.fromiter(chain.from_iterable(t.keys), dtype=np.int64, count=2 * len(t.keys)).reshape(-1, 2)
    qgpu = pkeys[prog, 0]
    qref = ref[qrow]
    qkey = qgpu * nflags + qf[qref]
    at = np.searchsorted(keys[:-1], qkey)
    slot = np.where(keys[at] == qkey, at, len(keys) - 1)
    # Stuck: no value in [0, reach] satisfies the wait, i.e. the least value >= 0 that does is above reach (_need).
    hits = np.flatnonzero(np.array(q_need, dtype=np.int64)[qref] > cap[slot])

    described = []
    for h in hits[:limit].tolist():
        row, p, k = int(qrow[h]), int(prog[h]), int(slot[h])
        described.append(StuckWait(int(qgpu[h]), int(pkeys[p, 1]), row - int(t.starts[p]), profile.flags[q_flag[qref[h]]],
                                   *_wait_of(t.templates[int(qref[h])]), int(counts[k]), int(reach[k])))
    return FlagCheck(tuple(described), len(hits), _unwaited(profile, wf[wref], qf[qref]))


def _need(cond: str, value: int) -> int:
    """The least flag value x >= 0 with `x <cond> value`, or _NEVER when no x >= 0 satisfies it. A flag whose values
    are [0, reach] can satisfy the wait exactly when this is <= reach: == v needs v; >= v needs max(v, 0); > v needs
    max(v + 1, 0); != v needs 0, or 1 when v is 0; <= v and < v need 0 if any x >= 0 satisfies them at all."""
    if cond == ">=":
        return min(max(value, 0), _NEVER)
    if cond == ">":
        return min(max(value + 1, 0), _NEVER)
    if cond == "==":
        return value if value >= 0 else _NEVER
    if cond == "!=":
        return 1 if value == 0 else 0
    if cond == "<=":
        return 0 if value >= 0 else _NEVER
    if cond == "<":
        return 0 if value > 0 else _NEVER
    raise ValueError(f"unknown wait condition {cond!r}")


def _wait_of(template: object) -> tuple[str, int]:
    """The (cond, value) of a wait template."""
    assert isinstance(template, Op)
    return str(template["cond"]), int(template["value"])


def _unwaited(profile: Profile, written: NDArray[np.int64], waited: NDArray[np.int64]) -> tuple[str, ...]:
    """Flags some row changes (`written`, flag indices per writer row) that no row waits for (`waited`)."""
    n = len(profile.flags)
    w = np.bincount(written, minlength=n) if len(written) else np.zeros(n, dtype=np.int64)
    q = np.bincount(waited[waited >= 0], minlength=n) if len(waited) else np.zeros(n, dtype=np.int64)
    return tuple(profile.flags[i] for i in np.flatnonzero((w > 0) & (q == 0)).tolist())
