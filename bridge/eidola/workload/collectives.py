"""Collective schedules as profiles: ring and direct all-reduce, all-gather, reduce-scatter, all-to-all.

Plain collectives: peer writes and counter flags only, no compute but the optional reduction,
usable on any fabric. Each GPU's data is split over its workgroups and each workgroup's share
into `chunks`, so workgroups are the parallelism knob: one workgroup per peer link keeps every
link busy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ProfileError
from .builder import ProfileBuilder, ProgramBuilder
from .profile import Profile

#: One ring step: (buffer, block_of(gpu) -> the block it sends, whether the receiver reduces it)
_Step = tuple[str, Callable[[int], int], bool]

__all__ = ["ring_allreduce", "direct_allreduce", "all_gather", "reduce_scatter", "all_to_all", "check_int_arg"]


def check_int_arg(fn: str, name: str, v: object, lo: int) -> int:
    if type(v) is not int or v < lo:
        raise ProfileError(f"{fn}: {name} must be an int >= {lo}, got {v!r}")
    return v


def _collective_setup(fn: str, gpus: int, nbytes: int, workgroups: int, chunks: int, reduce_ns_per_byte: float,
                      name: str | None) -> tuple[ProfileBuilder, int, int, int, int, float]:
    """Check the common parameters; return (builder, P, W, C, chunk bytes, reduce ns per chunk)."""
    # One GPU has nothing to exchange; an empty profile would only hide the mistake.
    P = check_int_arg(fn, "gpus", gpus, 2)
    S = check_int_arg(fn, "nbytes", nbytes, 1)
    W = check_int_arg(fn, "workgroups", workgroups, 1)
    C = check_int_arg(fn, "chunks", chunks, 1)
    if S % (P * W * C):
        raise ProfileError(f"{fn}: nbytes {S} must be divisible by gpus * workgroups * chunks = {P * W * C}")
    r = reduce_ns_per_byte
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r < float("inf"):
        raise ProfileError(f"{fn}: reduce_ns_per_byte must be a finite number >= 0, got {r!r}")
    chunk = S // (P * W * C)
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"{fn.replace('_', '-')}-{P}gpu")
    return b, P, W, C, chunk, r * chunk


def _chunk_offset(block: int, w: int, c: int, W: int, C: int, chunk: int) -> int:
    return ((block * W + w) * C + c) * chunk


def _ring(b: ProfileBuilder, P: int, W: int, C: int, chunk: int, steps: Sequence[_Step], reduce_ns: float,
          wait: dict[str, Any]) -> None:
    """Add the ring programs: step s sends chunk c of `steps[s]` = (buffer, block_of(g), reduces) to g+1.

    Order, per workgroup: for each step s, for each chunk c: wait for chunk c of step s-1 (and
    reduce it if step s-1 reduces), then write chunk c of step s and signal it. The trailing
    waits receive the last step. Chunk c is forwarded as soon as it has arrived rather than
    after the whole block, so a late chunk holds back only its own successors. Deadlock-free:
    a GPU's sends of step s depend only on its predecessor's sends of step s-1, and the sends
    of step 0 depend on nothing.
    """
    flags = [f"ring_w{w}" for w in range(W)]
    for f in flags:
        b.flag(f)
    for g in range(P):
        nxt = (g + 1) % P
        for w in range(W):
            p = b.program(gpu=g, wg=w)

            def receive(s: int, c: int, p: ProgramBuilder = p, w: int = w) -> None:
                # Chunk c of step s is the (s*C + c + 1)-th chunk the predecessor sends.
                p.wait(flag=flags[w], cond=">=", value=s * C + c + 1, **wait)
                if steps[s][2] and reduce_ns > 0:
                    p.compute(ns=reduce_ns)

            for s, (buffer, block_of, _) in enumerate(steps):
                for c in range(C):
                    if s:
                        receive(s - 1, c)
                    p.write(dst=nxt, buffer=buffer, offset=_chunk_offset(block_of(g), w, c, W, C, chunk), nbytes=chunk)
                    p.signal(dst=nxt, flag=flags[w], op="add", value=1)
            for c in range(C):
                receive(len(steps) - 1, c)


def _direct_flags(b: ProfileBuilder, stage: str, P: int, W: int) -> None:
    for w in range(W):
        for q in range(P):
            b.flag(f"{stage}_w{w}_{q}")


def _peers(g: int, P: int, w: int = 0) -> list[int]:
    # Rotated like gemv_allreduce: in lockstep every GPU targets a different peer at each step.
    # Workgroup w starts w peers further on, so a GPU's concurrent workgroups drive different
    # links at once instead of queueing on one (workgroup 0 keeps gemv_allreduce's order).
    return [(g + 1 + (w + k) % (P - 1)) % P for k in range(P - 1)]


def _direct_send(p: ProgramBuilder, g: int, w: int, c: int, P: int, W: int, C: int, chunk: int, stage: str,
                 buffer: str) -> None:
    """Write chunk c of slice w to every peer, then signal each: flag `<stage>_w<w>_<g>` counts g's chunks.

    The data lands at the sender's own block (g), so senders never overlap in a receiver's buffer.
    """
    peers = _peers(g, P, w)
    offset = _chunk_offset(g, w, c, W, C, chunk)
    for q in peers:
        p.write(dst=q, buffer=buffer, offset=offset, nbytes=chunk)
    for q in peers:
        p.signal(dst=q, flag=f"{stage}_w{w}_{g}", op="add", value=1)


def _direct_receive(p: ProgramBuilder, g: int, w: int, c: int, P: int, stage: str, wait: dict[str, Any],
                    reduce_ns: float = 0) -> None:
    """Wait for chunk c from every peer, then reduce those P-1 chunks if `reduce_ns` > 0."""
    for q in _peers(g, P):
        p.wait(flag=f"{stage}_w{w}_{q}", cond=">=", value=c + 1, **wait)
    if reduce_ns > 0:
        p.compute(ns=reduce_ns)


def ring_allreduce(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, mode: str = "poll",
                   interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, name: str | None = None) -> Profile:
    """Return a ring all-reduce of `nbytes` (S) per GPU: P-1 reduce-scatter then P-1 all-gather steps.

    2(P-1) steps; at step s GPU g writes block (g - s - 1) mod P to GPU (g+1) mod P, into
    `partials` during the reduce-scatter and into `data` during the all-gather, and signals
    `ring_w<w>` there once per chunk (chunk = S / (P*W*C) bytes). After the reduce-scatter GPU g
    owns the reduced block g. Each received reduce-scatter chunk costs
    compute(ns=reduce_ns_per_byte * chunk) before it is forwarded. Chunks are pipelined (see
    _ring). Each GPU sends 2(P-1)/P * S bytes. Alpha-beta cost on a ring of links of bandwidth B
    and latency alpha: T = 2(P-1)/P * S/B + 2(P-1)*alpha, with 2(P-1)*C*alpha for C chunks.
    """
    b, P, W, C, chunk, reduce_ns = _collective_setup("ring_allreduce", gpus, nbytes, workgroups, chunks,
                                                     reduce_ns_per_byte, name)
    b.buffer("partials", nbytes)
    b.buffer("data", nbytes)
    steps = [("partials" if s < P - 1 else "data", lambda g, s=s: (g - s - 1) % P, s < P - 1)
             for s in range(2 * (P - 1))]
    _ring(b, P, W, C, chunk, steps, reduce_ns, {"mode": mode, "interval_ns": interval_ns})
    return b.build()


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
    kernel instead, as channel-per-peer runtimes do; see `_pinned`.
    """
    b, P, W, C, chunk, reduce_ns = _collective_setup("direct_allreduce", gpus, nbytes, workgroups, chunks,
                                                     reduce_ns_per_byte, name)
    if _schedule("direct_allreduce", schedule, P, W) == "pinned":
        return _pinned(b, P, W, C, nbytes, (("rs", "partials"), ("ag", "data")), mode, interval_ns,
                       reduce_ns_per_byte)
    b.buffer("partials", nbytes)
    b.buffer("data", nbytes)
    _direct_flags(b, "rs", P, W)
    _direct_flags(b, "ag", P, W)
    wait: dict[str, Any] = {"mode": mode, "interval_ns": interval_ns}
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for c in range(C):
                _direct_send(p, g, w, c, P, W, C, chunk, "rs", "partials")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "rs", wait, (P - 1) * reduce_ns)
                _direct_send(p, g, w, c, P, W, C, chunk, "ag", "data")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "ag", wait)
    return b.build()


def _check_algorithm(fn: str, algorithm: str) -> None:
    if algorithm not in ("ring", "direct"):
        raise ProfileError(f"{fn}: algorithm must be 'ring' or 'direct', got {algorithm!r}")


def all_gather(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, algorithm: str = "ring",
               mode: str = "poll", interval_ns: float = 100, reduce_ns_per_byte: float = 0.0,
               name: str | None = None) -> Profile:
    """Return an all-gather of `nbytes` (S) in total: GPU g contributes block g of S/P bytes to `data`.

    ring: P-1 steps; at step s GPU g writes block (g - s) mod P into GPU (g+1) mod P's `data`
    and signals `ring_w<w>` there per chunk. Alpha-beta cost on a ring:
    T = (P-1)/P * S/B + (P-1)*alpha ((P-1)*C*alpha for C chunks).
    direct: 1 step; GPU g writes block g into every peer's `data` (rotated peer order) and
    signals `ag_w<w>_<g>` per chunk, then waits for every peer's chunks. Cost with P-1 parallel
    links: T = alpha + S/(P*B) (C*alpha for C chunks).
    Each GPU sends (P-1)/P * S bytes either way. reduce_ns_per_byte is accepted for a uniform
    signature; an all-gather reduces nothing.
    """
    _check_algorithm("all_gather", algorithm)
    b, P, W, C, chunk, _ = _collective_setup("all_gather", gpus, nbytes, workgroups, chunks,
                                             reduce_ns_per_byte, name)
    b.buffer("data", nbytes)
    wait: dict[str, Any] = {"mode": mode, "interval_ns": interval_ns}
    if algorithm == "ring":
        steps = [("data", lambda g, s=s: (g - s) % P, False) for s in range(P - 1)]
        _ring(b, P, W, C, chunk, steps, 0, wait)
        return b.build()
    _direct_flags(b, "ag", P, W)
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for c in range(C):
                _direct_send(p, g, w, c, P, W, C, chunk, "ag", "data")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "ag", wait)
    return b.build()


def reduce_scatter(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, algorithm: str = "ring",
                   mode: str = "poll", interval_ns: float = 100, reduce_ns_per_byte: float = 0.0,
                   name: str | None = None) -> Profile:
    """Return a reduce-scatter of `nbytes` (S) input per GPU; GPU g ends with the reduced block g (S/P).

    ring: P-1 steps; at step s GPU g writes its running partial of block (g - s - 1) mod P into
    GPU (g+1) mod P's `partials` and signals `ring_w<w>` there per chunk; each received chunk costs
    compute(ns=reduce_ns_per_byte * chunk). Alpha-beta cost on a ring:
    T = (P-1)/P * S/B + (P-1)*alpha ((P-1)*C*alpha for C chunks).
    direct: 1 step; GPU g writes its partial of block q into every peer q's `partials` at block g
    (rotated peer order), signals `rs_w<w>_<g>` per chunk, then per chunk waits for every peer and
    reduces the P-1 received chunks (compute(ns=reduce_ns_per_byte * (P-1) * chunk)). Cost with
    P-1 parallel links: T = alpha + S/(P*B) (C*alpha for C chunks).
    Each GPU sends (P-1)/P * S bytes either way.
    """
    _check_algorithm("reduce_scatter", algorithm)
    b, P, W, C, chunk, reduce_ns = _collective_setup("reduce_scatter", gpus, nbytes, workgroups, chunks,
                                                     reduce_ns_per_byte, name)
    b.buffer("partials", nbytes)
    wait: dict[str, Any] = {"mode": mode, "interval_ns": interval_ns}
    if algorithm == "ring":
        steps = [("partials", lambda g, s=s: (g - s - 1) % P, True) for s in range(P - 1)]
        _ring(b, P, W, C, chunk, steps, reduce_ns, wait)
        return b.build()
    _direct_flags(b, "rs", P, W)
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for c in range(C):
                _direct_send(p, g, w, c, P, W, C, chunk, "rs", "partials")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "rs", wait, (P - 1) * reduce_ns)
    return b.build()


def all_to_all(gpus: int, nbytes: int, workgroups: int = 1, chunks: int = 1, mode: str = "poll",
               interval_ns: float = 100, reduce_ns_per_byte: float = 0.0, name: str | None = None,
               schedule: str = "rotated") -> Profile:
    """Return an all-to-all where each GPU holds `nbytes` (S): S/P for each GPU, its own share kept.

    1 step; GPU g writes its block for peer q (S/P bytes) into q's `recv` at block g, in rotated
    peer order (g+k) mod P, signals `a2a_w<w>_<g>` there per chunk, then waits for every peer's
    chunks. The self share is not sent. Each GPU sends (P-1)/P * S bytes. Alpha-beta cost with
    P-1 parallel links: T = alpha + S/(P*B) (C*alpha for C chunks). reduce_ns_per_byte is accepted for a uniform
    signature; an all-to-all reduces nothing.

    schedule="pinned" (workgroups a multiple of P-1) gives each workgroup one peer; see `_pinned`.
    """
    b, P, W, C, chunk, _ = _collective_setup("all_to_all", gpus, nbytes, workgroups, chunks,
                                             reduce_ns_per_byte, name)
    if _schedule("all_to_all", schedule, P, W) == "pinned":
        return _pinned(b, P, W, C, nbytes, (("a2a", "recv"),), mode, interval_ns, 0.0)
    b.buffer("recv", nbytes)
    _direct_flags(b, "a2a", P, W)
    wait: dict[str, Any] = {"mode": mode, "interval_ns": interval_ns}
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for c in range(C):
                _direct_send(p, g, w, c, P, W, C, chunk, "a2a", "recv")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "a2a", wait)
    return b.build()


def _schedule(fn: str, schedule: str, P: int, W: int) -> str:
    if schedule not in ("rotated", "pinned"):
        raise ProfileError(f"{fn}: schedule must be 'rotated' or 'pinned', got {schedule!r}")
    if schedule == "pinned" and W % (P - 1):
        raise ProfileError(f"{fn}: schedule 'pinned' needs workgroups ({W}) to be a multiple of gpus - 1 ({P - 1})")
    return schedule


def _pinned(b: ProfileBuilder, P: int, W: int, C: int, S: int, stages: tuple[tuple[str, str], ...], mode: str,
            interval_ns: float, reduce_ns_per_byte: float) -> Profile:
    """Direct collectives with one peer per workgroup: k = W/(P-1) workgroups per peer.

    Why: a workgroup's writes are blocking, so one that cycles through peers leaves each link idle
    for a round trip whenever it moves on, and workgroups drift onto the same links. Pinned, the
    k workgroups serving a peer keep that link busy for the whole transfer.

    Workgroup w of GPU g serves peer q = (g + 1 + w mod (P-1)) mod P and slice j = w div (P-1) of
    each block (S/P bytes = k slices of C chunks). Per stage (reduce-scatter then all-gather, or
    the single all-to-all stage) it writes its C chunks into q's buffer at block g, signalling
    `<stage>_s<j>` on q once per chunk, then waits until its own `<stage>_s<j>` counts all
    (P-1) * C chunks of slice j; between the stages it reduces them.
    """
    k = W // (P - 1)
    chunk = S // (P * k * C)
    for stage, buffer in stages:
        b.buffer(buffer, S)
        for j in range(k):
            b.flag(f"{stage}_s{j}")
    wait: dict[str, Any] = {"mode": mode, "interval_ns": interval_ns}
    reduce_ns = reduce_ns_per_byte * (P - 1) * C * chunk
    for g in range(P):
        for w in range(W):
            q, j = (g + 1 + w % (P - 1)) % P, w // (P - 1)
            p = b.program(gpu=g, wg=w)
            for index, (stage, buffer) in enumerate(stages):
                if index and reduce_ns > 0:
                    p.compute(ns=reduce_ns)
                for c in range(C):
                    p.write(dst=q, buffer=buffer, offset=(g * k * C + j * C + c) * chunk, nbytes=chunk)
                    p.signal(dst=q, flag=f"{stage}_s{j}", op="add", value=1)
                p.wait(flag=f"{stage}_s{j}", cond=">=", value=(P - 1) * C, **wait)
    return b.build()
