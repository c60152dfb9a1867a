"""Collectives inside programs, and the plain collective profiles built from them.

`collective(b, kind, nbytes, ...)` (also ``ProfileBuilder.collective``) expands one collective
into writes, flag signals, waits and reduction computes, appended at the current end of the
programs of the participating GPUs' workgroups; see `schedules` for the schedules. The
generators (ring_allreduce, direct_allreduce, all_gather, reduce_scatter, all_to_all) build a
whole profile holding one such collective.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ProfileError, shown
from . import schedules
from .builder import ProfileBuilder
from .profile import Profile

__all__ = ["KINDS", "collective", "ring_allreduce", "direct_allreduce", "all_gather", "reduce_scatter", "all_to_all",
           "check_int_arg"]

#: kind -> the algorithms it accepts (the first is the default)
KINDS: dict[str, tuple[str, ...]] = {
    "all_reduce": ("ring", "direct", "pinned"),
    "all_gather": ("ring", "direct"),
    "reduce_scatter": ("ring", "direct"),
    "all_to_all": ("direct", "pinned"),
    "broadcast": ("ring", "direct"),
    "barrier": ("direct",),
    "send": ("direct",),
}


def check_int_arg(fn: str, name: str, v: object, lo: int) -> int:
    """Return `v` if it is an int >= lo, else raise a ProfileError naming `fn` and `name`."""
    if type(v) is not int or v < lo:
        raise ProfileError(f"{fn}: {name} must be an int >= {lo}, got {shown(v)}")
    return v


def _check_rate(fn: str, r: object) -> float:
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r < float("inf"):
        raise ProfileError(f"{fn}: reduce_ns_per_byte must be a finite number >= 0, got {r!r}")
    return r


def collective(b: ProfileBuilder, kind: str, nbytes: int, algorithm: str | None = None,
               workgroups: int | Sequence[int] | Sequence[Sequence[int]] = 1, group: Sequence[int] | None = None, chunks: int = 1,
               mode: str = "syncmon", interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, root: int = 0,
               prefix: str | None = None) -> None:
    """Append collective `kind` of `nbytes` (S) to the programs of `group`'s GPUs, at their current end.

    kind: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, barrier or send (group
    [src, dst]: a matched send/recv). S is per-rank input for all_reduce, reduce_scatter and
    all_to_all, the gathered total for all_gather, the root's buffer for broadcast and the
    message for send. algorithm: see KINDS (default: the first). workgroups: how many (0..n-1)
    or which workgroups of every GPU run it, or one list of workgroups per GPU of the group.
    group: the GPUs, rank order (default: all GPUs).
    chunks: pieces per workgroup share. mode / interval_ns: of every wait. reduce_ns_per_byte:
    reduction cost of received data. root: the broadcast's root rank. prefix: of the flag and
    buffer names (default: a fresh ``c<n>.`` per call, so calls never share a flag).
    Sends per rank: ring all_reduce 2(P-1)/P · S, direct too; all_gather, reduce_scatter and
    all_to_all (P-1)/P · S; broadcast S (ring, every rank but the last) or (P-1) · S (direct, root).
    """
    fn = f"collective {kind!r}"
    if kind not in KINDS:
        raise ProfileError(f"collective: kind {shown(kind)} is not one of {', '.join(KINDS)}")
    algorithm = KINDS[kind][0] if algorithm is None else algorithm
    if algorithm not in KINDS[kind]:
        raise ProfileError(f"{fn}: algorithm must be {' or '.join(map(repr, KINDS[kind]))}, got {algorithm!r}")
    if group is not None and (not isinstance(group, (list, tuple, range)) or len(group) > b.gpus):
        raise ProfileError(f"{fn}: group {shown(group)} must be a list of distinct GPUs in 0..{b.gpus - 1}")
    if prefix is not None and not isinstance(prefix, str):
        raise ProfileError(f"{fn}: prefix must be a string (of the flag and buffer names), got {shown(prefix)}")
    gpus = list(range(b.gpus)) if group is None else list(group)
    if any(type(x) is not int or not 0 <= x < b.gpus for x in gpus) or len(set(gpus)) != len(gpus):
        raise ProfileError(f"{fn}: group {gpus!r} must be distinct GPUs in 0..{b.gpus - 1}")
    sets = _workgroup_sets(fn, b, workgroups, len(gpus))
    P, W = len(gpus), len(sets[0])
    if P < 2 or (kind == "send" and P != 2):
        raise ProfileError(f"{fn}: group must have {'2' if kind == 'send' else 'at least 2'} GPUs, got {gpus!r}")
    C = check_int_arg(fn, "chunks", chunks, 1)
    S = 0 if kind == "barrier" else check_int_arg(fn, "nbytes", nbytes, 1)
    rate = _check_rate(fn, reduce_ns_per_byte)
    parts = W * C * (1 if kind in ("broadcast", "send") else P)
    if kind != "barrier" and S < parts:  # any size splits, but every piece needs a byte
        what = "workgroups * chunks" if parts == W * C else "gpus * workgroups * chunks"
        raise ProfileError(f"{fn}: nbytes {S} must be at least {what} = {parts} (one byte per piece)")
    if algorithm == "pinned" and W % (P - 1):
        raise ProfileError(f"{fn}: algorithm 'pinned' needs workgroups ({W}) to be a multiple of gpus - 1 ({P - 1})")
    g = schedules.Group(b, gpus, sets, C, max(S, 1), max(parts, 1), b.next_prefix() if prefix is None else prefix,
                        {"mode": mode, "interval_ns": interval_ns}, rate * S / max(parts, 1))
    g.at()  # starts every program of the group, so program() refuses them afterwards whatever the schedule adds
    if algorithm == "ring" and kind != "broadcast":
        # At step s rank r sends block (r - s - 1) mod P while reducing, (r - s) mod P in an all-gather.
        rs = [("partials", _block(P, s + 1), True) for s in range(P - 1)] if kind != "all_gather" else []
        ag = [("data", _block(P, s), False) for s in range(P - 1)] if kind != "reduce_scatter" else []
        schedules.ring(g, rs + ag, S)
    elif algorithm == "pinned":
        stages = (("rs", "partials"), ("ag", "data")) if kind == "all_reduce" else (("a2a", "recv"),)
        schedules.pinned(g, stages, S, rate)
    elif kind in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all"):
        schedules.direct(g, {"all_reduce": (("rs", "partials", True), ("ag", "data", False)),
                             "all_gather": (("ag", "data", False),), "reduce_scatter": (("rs", "partials", True),),
                             "all_to_all": (("a2a", "recv", False),)}[kind], S)
    elif kind == "broadcast":
        if type(root) is not int or not 0 <= root < P:
            raise ProfileError(f"{fn}: root {root!r} is not a rank of the group (0..{P - 1})")
        schedules.broadcast(g, S, root, algorithm)
    elif kind == "barrier":
        schedules.barrier(g)
    else:
        schedules.send(g, S)


def _workgroup_sets(fn: str, b: ProfileBuilder, workgroups: int | Sequence[int] | Sequence[Sequence[int]],
                    P: int) -> list[list[int]]:
    """One list of workgroups per rank, all of one length: from a count, one set, or one set per rank."""
    bad = ProfileError(f"{fn}: workgroups {shown(workgroups)} must be a count, distinct workgroups in "
                       f"0..{b.workgroups - 1}, or one such list (all of one length) per GPU of the group")
    if isinstance(workgroups, int):
        # Checked against the builder's count before any list is made: workgroups=2**31 is refused, not built.
        if check_int_arg(fn, "workgroups", workgroups, 1) > b.workgroups:
            raise ProfileError(f"{fn}: workgroups {workgroups} is more than the profile's {b.workgroups} per GPU")
        sets = [list(range(workgroups))] * P
    elif not isinstance(workgroups, (list, tuple, range)) or len(workgroups) > max(P, b.workgroups):
        raise bad
    elif all(isinstance(x, int) for x in workgroups):
        sets = [list(workgroups)] * P
    elif all(isinstance(x, (int, list, tuple, range)) for x in workgroups):
        sets = [list(x) if not isinstance(x, int) else [x] for x in workgroups]
    else:
        raise bad
    if (len(sets) != P or not sets[0] or any(len(s) != len(sets[0]) or len(set(s)) != len(s) for s in sets)
            or any(type(x) is not int or not 0 <= x < b.workgroups for s in sets for x in s)):
        raise bad
    return sets


def _block(P: int, back: int) -> Callable[[schedules.Ints], schedules.Ints]:
    """block_of(ranks) for a ring step: the block `back` places behind each rank."""
    return lambda r: (r - back) % P


def _whole(fn: str, kind: str, gpus: int, nbytes: int, workgroups: int, name: str | None, **kw: Any) -> Profile:
    """A profile of `gpus` GPUs and `workgroups` workgroups holding one collective with unprefixed names."""
    # One GPU has nothing to exchange; an empty profile would only hide the mistake.
    P = check_int_arg(fn, "gpus", gpus, 2)
    check_int_arg(fn, "nbytes", nbytes, 1)
    W = check_int_arg(fn, "workgroups", workgroups, 1)
    check_int_arg(fn, "chunks", kw.get("chunks", 1), 1)
    _check_rate(fn, kw.get("reduce_ns_per_byte", 0.0))
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"{fn.replace('_', '-')}-{P}gpu")
    try:
        collective(b, kind, nbytes, workgroups=W, prefix="", **kw)
    except ProfileError as e:  # name the generator the user called, not the collective inside it
        raise ProfileError(str(e).replace(f"collective {kind!r}", fn)) from None
    return b.build()


def _schedule(fn: str, schedule: str, algorithm: str) -> str:
    if schedule not in ("rotated", "pinned"):
        raise ProfileError(f"{fn}: schedule must be 'rotated' or 'pinned', got {schedule!r}")
    return "pinned" if schedule == "pinned" else algorithm


def _check_algorithm(fn: str, algorithm: str) -> None:
    if algorithm not in ("ring", "direct"):
        raise ProfileError(f"{fn}: algorithm must be 'ring' or 'direct', got {algorithm!r}")


def ring_allreduce(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, mode: str = "poll",
                   interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, name: str | None = None) -> Profile:
    """Return a ring all-reduce of `nbytes` (S) per GPU: P-1 reduce-scatter then P-1 all-gather steps.

    2(P-1) steps; at step s GPU g writes block (g - s - 1) mod P to GPU (g+1) mod P, into
    `partials` during the reduce-scatter and into `data` during the all-gather, and signals
    `ring_w<w>` there once per chunk (chunk = S / (P*W*C) bytes). After the reduce-scatter GPU g
    owns the reduced block g. Each received reduce-scatter chunk costs
    compute(ns=reduce_ns_per_byte * chunk) before it is forwarded. Chunks are pipelined (see
    schedules.ring). Each GPU sends 2(P-1)/P * S bytes. Alpha-beta cost on a ring of links of bandwidth B
    and step latency alpha: T = 2(P-1)/P * S/B + 2(P-1)*alpha; with C chunks the latency overlaps
    the next chunks' data, down to T = 2(P-1)/P * S/B + alpha (docs/profiles.md, "What a collective
    step costs").
    """
    return _whole("ring_allreduce", "all_reduce", gpus, nbytes, workgroups, name, algorithm="ring", chunks=chunks,
                  mode=mode, interval_ns=interval_ns, reduce_ns_per_byte=reduce_ns_per_byte)


def direct_allreduce(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, mode: str = "poll",
                     interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, name: str | None = None,
                     schedule: str = "rotated") -> Profile:
    """Return a direct (one-hop) all-reduce of `nbytes` (S) per GPU: reduce-scatter then all-gather.

    2 steps. Reduce-scatter: GPU g writes its partial of block q (S/P bytes) into every peer q's
    `partials` at block g, in rotated peer order (g+k) mod P, and signals `rs_w<w>_<g>` there per
    chunk. Then per chunk c: wait for chunk c from every peer, reduce the P-1 received chunks
    (compute(ns=reduce_ns_per_byte * (P-1) * chunk)) and at once all-gather that chunk of the
    reduced block g into every peer's `data` at block g, signalling `ag_w<w>_<g>`; finally wait for
    every peer's all-gather chunks. Each GPU sends 2(P-1)/P * S bytes. Alpha-beta cost with P-1
    parallel links of bandwidth B and latency alpha: T = 2*alpha + 2 * S/(P*B) (2*C*alpha for C chunks).

    schedule="pinned" (workgroups a multiple of P-1) gives each workgroup one peer for the whole
    kernel instead, as channel-per-peer runtimes do; see `schedules.pinned`.
    """
    algorithm = _schedule("direct_allreduce", schedule, "direct")
    return _whole("direct_allreduce", "all_reduce", gpus, nbytes, workgroups, name, algorithm=algorithm,
                  chunks=chunks, mode=mode, interval_ns=interval_ns, reduce_ns_per_byte=reduce_ns_per_byte)


def all_gather(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, algorithm: str = "ring",
               mode: str = "poll", interval_ns: float = 100, reduce_ns_per_byte: float = 0.0,
               name: str | None = None) -> Profile:
    """Return an all-gather of `nbytes` (S) in total: GPU g contributes block g of S/P bytes to `data`.

    ring: P-1 steps; at step s GPU g writes block (g - s) mod P into GPU (g+1) mod P's `data`
    and signals `ring_w<w>` there per chunk. Alpha-beta cost on a ring:
    T = (P-1)/P * S/B + (P-1)*alpha (chunks pipeline: down to one alpha).
    direct: 1 step; GPU g writes block g into every peer's `data` (rotated peer order) and
    signals `ag_w<w>_<g>` per chunk, then waits for every peer's chunks. Cost with P-1 parallel
    links: T = alpha + S/(P*B) (C*alpha for C chunks).
    Each GPU sends (P-1)/P * S bytes either way. reduce_ns_per_byte is accepted for a uniform
    signature; an all-gather reduces nothing.
    """
    _check_algorithm("all_gather", algorithm)
    _check_rate("all_gather", reduce_ns_per_byte)
    return _whole("all_gather", "all_gather", gpus, nbytes, workgroups, name, algorithm=algorithm, chunks=chunks,
                  mode=mode, interval_ns=interval_ns)


def reduce_scatter(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, algorithm: str = "ring",
                   mode: str = "poll", interval_ns: float = 100, reduce_ns_per_byte: float = 0.0,
                   name: str | None = None) -> Profile:
    """Return a reduce-scatter of `nbytes` (S) input per GPU; GPU g ends with the reduced block g (S/P).

    ring: P-1 steps; at step s GPU g writes its running partial of block (g - s - 1) mod P into
    GPU (g+1) mod P's `partials` and signals `ring_w<w>` there per chunk; each received chunk costs
    compute(ns=reduce_ns_per_byte * chunk). Alpha-beta cost on a ring:
    T = (P-1)/P * S/B + (P-1)*alpha (chunks pipeline: down to one alpha).
    direct: 1 step; GPU g writes its partial of block q into every peer q's `partials` at block g
    (rotated peer order), signals `rs_w<w>_<g>` per chunk, then per chunk waits for every peer and
    reduces the P-1 received chunks (compute(ns=reduce_ns_per_byte * (P-1) * chunk)). Cost with
    P-1 parallel links: T = alpha + S/(P*B) (C*alpha for C chunks).
    Each GPU sends (P-1)/P * S bytes either way.
    """
    _check_algorithm("reduce_scatter", algorithm)
    return _whole("reduce_scatter", "reduce_scatter", gpus, nbytes, workgroups, name, algorithm=algorithm,
                  chunks=chunks, mode=mode, interval_ns=interval_ns, reduce_ns_per_byte=reduce_ns_per_byte)


def all_to_all(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, mode: str = "poll",
               interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, name: str | None = None,
               schedule: str = "rotated") -> Profile:
    """Return an all-to-all where each GPU holds `nbytes` (S): S/P for each GPU, its own share kept.

    1 step; GPU g writes its block for peer q (S/P bytes) into q's `recv` at block g, in rotated
    peer order (g+k) mod P, signals `a2a_w<w>_<g>` there per chunk, then waits for every peer's
    chunks. The self share is not sent. Each GPU sends (P-1)/P * S bytes. Alpha-beta cost with
    P-1 parallel links: T = alpha + S/(P*B) (C*alpha for C chunks). reduce_ns_per_byte is accepted
    for a uniform signature; an all-to-all reduces nothing.

    schedule="pinned" (workgroups a multiple of P-1) gives each workgroup one peer; see `schedules.pinned`.
    """
    algorithm = _schedule("all_to_all", schedule, "direct")
    _check_rate("all_to_all", reduce_ns_per_byte)
    return _whole("all_to_all", "all_to_all", gpus, nbytes, workgroups, name, algorithm=algorithm, chunks=chunks,
                  mode=mode, interval_ns=interval_ns)
