"""Profile generators for multi-GPU collectives.

gemv_allreduce models the fused GEMV + AllReduce kernel of K. Punniyamurthy, K. Hamidouche and
B. M. Beckmann, "Optimizing Distributed ML Communication with Fused Computation-Collective
Operations", SC24. It is a persistent kernel: every workgroup computes its GEMV tile, then runs a
direct (one-hop, all-to-all) reduce-scatter: it writes its slice of partial results straight into
each peer's `partials` buffer and bumps that peer's ready flag `rs_<own gpu>`. Once every peer's
workgroups have landed their partials (flag rs_q reaches the workgroup count for every peer q), it
reduces its own chunk and runs the all-gather the same way through `gathered` and flags `ag_<gpu>`.

ring_allreduce, direct_allreduce, all_gather, reduce_scatter and all_to_all are plain collectives
(peer writes and counter flags only, no compute but the optional reduction), usable on any fabric.

Run as `python -m eidola.generators gemv_allreduce --gpus 4 ... -o out.yaml` to write a profile
(or `python -m eidola.generators ring_allreduce --nbytes 1048576 ... -o out.yaml` for a collective).
"""

import argparse

from ..errors import ProfileError
from .builder import ProfileBuilder

__all__ = ["gemv_allreduce", "neighbor_exchange", "ring_allreduce", "direct_allreduce",
           "all_gather", "reduce_scatter", "all_to_all"]


def _positive_int(name, v):
    if type(v) is not int or v < 1:
        raise ProfileError(f"gemv_allreduce: {name} must be an int >= 1, got {v!r}")
    return v


def gemv_allreduce(gpus=4, workgroups=4, vector_bytes=65536, tile_ns=2000, reduce_ns=400,
                   mode="poll", interval_ns=100, name=None, max_interval_ns=None, skew=None, jitter=None,
                   delays=()):
    """Return the fused GEMV + AllReduce profile (direct reduce-scatter then all-gather, SC24).

    `tile_ns` is one number for every GPU, or a sequence of one per GPU: a slow GPU holds its
    peers in their flag waits. `skew` and `jitter` are distributions (keyword dicts for
    ProfileBuilder.skew / .jitter), `delays` a list of ProfileBuilder.delay keyword dicts (the
    paper's wake-up delay: ``[{"gpu": 0, "ns": 20000}]``).
    """
    P = _positive_int("gpus", gpus)
    W = _positive_int("workgroups", workgroups)
    tiles = list(tile_ns) if isinstance(tile_ns, (list, tuple)) else [tile_ns] * P
    if len(tiles) != P:
        raise ProfileError(f"gemv_allreduce: tile_ns has {len(tiles)} entries; expected one per GPU ({P})")
    _positive_int("vector_bytes", vector_bytes)
    if vector_bytes % (P * W):
        raise ProfileError(f"gemv_allreduce: vector_bytes {vector_bytes} must be divisible by "
                           f"gpus * workgroups = {P * W}")
    slice_ = vector_bytes // (P * W)
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"gemv-allreduce-{P}gpu")
    for stage in ("rs", "ag"):
        for q in range(P):
            b.flag(f"{stage}_{q}")
    if skew:
        b.skew(**skew)
    if jitter:
        b.jitter(**jitter)
    for d in delays:
        b.delay(**d)
    b.buffer("partials", vector_bytes)
    b.buffer("gathered", vector_bytes)
    for g in range(P):
        # Peer order rotated by g: in lockstep, at step k every GPU targets a different peer
        # (g + k) % P, so no GPU is a hotspot receiving from all others at once.
        peers = [(g + k) % P for k in range(1, P)]
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            offset = (g * W + w) * slice_
            p.compute(ns=tiles[g])
            for stage, buffer, work_ns in (("rs", "partials", None), ("ag", "gathered", reduce_ns)):
                if work_ns is not None:
                    p.compute(ns=work_ns)
                for peer in peers:
                    p.write(dst=peer, buffer=buffer, offset=offset, nbytes=slice_)
                for peer in peers:
                    p.signal(dst=peer, flag=f"{stage}_{g}", op="add", value=1)
                for q in peers:
                    p.wait(flag=f"{stage}_{q}", cond=">=", value=W, mode=mode, interval_ns=interval_ns,
                           max_interval_ns=max_interval_ns)
    return b.build()


# ---------------------------------------------------------------- collectives
#
# Shared conventions of the collective generators below. P GPUs, W workgroups, C chunks per
# transfer; every buffer of S bytes is P blocks of S/P, each block W slices (one per workgroup),
# each slice C chunks, so chunk (block, w, c) lives at ((block * W + w) * C + c) * chunk bytes.
# A workgroup only ever touches its own slice of every block, so the W workgroups are independent.
# Every wait is ">=" a cumulative count of chunks from one sender workgroup: flags only grow,
# so a wait that is satisfied once stays satisfied, whatever the interleaving.
#
# The alpha-beta costs in the docstrings (alpha: latency per message, B: link bandwidth) are the
# textbook ones; each of the C chunks is its own message and pays alpha. A workgroup issues its
# ops one after another, so chunking cannot hide alpha within a workgroup: it only lets a
# receiver that is not in lockstep with its sender start earlier. Concurrency across links
# comes from the W workgroups.

def _check_int(fn, name, v, lo):
    if type(v) is not int or v < lo:
        raise ProfileError(f"{fn}: {name} must be an int >= {lo}, got {v!r}")
    return v


def _collective_setup(fn, gpus, nbytes, workgroups, chunks, reduce_ns_per_byte, name):
    """Check the common parameters; return (builder, P, W, C, chunk bytes, reduce ns per chunk)."""
    # One GPU has nothing to exchange; an empty profile would only hide the mistake.
    P = _check_int(fn, "gpus", gpus, 2)
    S = _check_int(fn, "nbytes", nbytes, 1)
    W = _check_int(fn, "workgroups", workgroups, 1)
    C = _check_int(fn, "chunks", chunks, 1)
    if S % (P * W * C):
        raise ProfileError(f"{fn}: nbytes {S} must be divisible by gpus * workgroups * chunks = {P * W * C}")
    r = reduce_ns_per_byte
    if isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 <= r < float("inf"):
        raise ProfileError(f"{fn}: reduce_ns_per_byte must be a finite number >= 0, got {r!r}")
    chunk = S // (P * W * C)
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"{fn.replace('_', '-')}-{P}gpu")
    return b, P, W, C, chunk, r * chunk


def _chunk_offset(block, w, c, W, C, chunk):
    return ((block * W + w) * C + c) * chunk


def _ring(b, P, W, C, chunk, steps, reduce_ns, wait):
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

            def receive(s, c, p=p, w=w):
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


def _direct_flags(b, stage, P, W):
    for w in range(W):
        for q in range(P):
            b.flag(f"{stage}_w{w}_{q}")


def _peers(g, P, w=0):
    # Rotated like gemv_allreduce: in lockstep every GPU targets a different peer at each step.
    # Workgroup w starts w peers further on, so a GPU's concurrent workgroups drive different
    # links at once instead of queueing on one (workgroup 0 keeps gemv_allreduce's order).
    return [(g + 1 + (w + k) % (P - 1)) % P for k in range(P - 1)]


def _direct_send(p, g, w, c, P, W, C, chunk, stage, buffer):
    """Write chunk c of slice w to every peer, then signal each: flag `<stage>_w<w>_<g>` counts g's chunks.

    The data lands at the sender's own block (g), so senders never overlap in a receiver's buffer.
    """
    peers = _peers(g, P, w)
    offset = _chunk_offset(g, w, c, W, C, chunk)
    for q in peers:
        p.write(dst=q, buffer=buffer, offset=offset, nbytes=chunk)
    for q in peers:
        p.signal(dst=q, flag=f"{stage}_w{w}_{g}", op="add", value=1)


def _direct_receive(p, g, w, c, P, stage, wait, reduce_ns=0):
    """Wait for chunk c from every peer, then reduce those P-1 chunks if `reduce_ns` > 0."""
    for q in _peers(g, P):
        p.wait(flag=f"{stage}_w{w}_{q}", cond=">=", value=c + 1, **wait)
    if reduce_ns > 0:
        p.compute(ns=reduce_ns)


def ring_allreduce(gpus, nbytes, workgroups=1, chunks=1, mode="poll", interval_ns=100, reduce_ns_per_byte=0.0,
                   name=None):
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


def direct_allreduce(gpus, nbytes, workgroups=1, chunks=1, mode="poll", interval_ns=100, reduce_ns_per_byte=0.0,
                     name=None, schedule="rotated"):
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
    wait = {"mode": mode, "interval_ns": interval_ns}
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


def _check_algorithm(fn, algorithm):
    if algorithm not in ("ring", "direct"):
        raise ProfileError(f"{fn}: algorithm must be 'ring' or 'direct', got {algorithm!r}")


def all_gather(gpus, nbytes, workgroups=1, chunks=1, algorithm="ring", mode="poll", interval_ns=100,
               reduce_ns_per_byte=0.0, name=None):
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
    wait = {"mode": mode, "interval_ns": interval_ns}
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


def reduce_scatter(gpus, nbytes, workgroups=1, chunks=1, algorithm="ring", mode="poll", interval_ns=100,
                   reduce_ns_per_byte=0.0, name=None):
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
    wait = {"mode": mode, "interval_ns": interval_ns}
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


def all_to_all(gpus, nbytes, workgroups=1, chunks=1, mode="poll", interval_ns=100, reduce_ns_per_byte=0.0,
               name=None, schedule="rotated"):
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
    wait = {"mode": mode, "interval_ns": interval_ns}
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for c in range(C):
                _direct_send(p, g, w, c, P, W, C, chunk, "a2a", "recv")
            for c in range(C):
                _direct_receive(p, g, w, c, P, "a2a", wait)
    return b.build()


def neighbor_exchange(gpus, nbytes, neighbors=4, workgroups=1, mode="syncmon", interval_ns=100, name=None):
    """Return a halo exchange: each GPU writes nbytes/neighbors to each of its next `neighbors` GPUs.

    GPU g's workgroup w writes its slice (nbytes / (neighbors * W)) to GPUs g+1 .. g+neighbors
    (mod P), signals `nx_w<w>` on each, then waits until its own `nx_w<w>` counts `neighbors`
    arrivals. Traffic per GPU is fixed whatever the GPU count, which makes it the workload for
    measuring how simulation cost scales with the number of GPUs.
    """
    P = _check_int("neighbor_exchange", "gpus", gpus, 2)
    K = _check_int("neighbor_exchange", "neighbors", neighbors, 1)
    W = _check_int("neighbor_exchange", "workgroups", workgroups, 1)
    S = _check_int("neighbor_exchange", "nbytes", nbytes, 1)
    if K >= P:
        raise ProfileError(f"neighbor_exchange: neighbors ({K}) must be fewer than gpus ({P})")
    if S % (K * W):
        raise ProfileError(f"neighbor_exchange: nbytes {S} must be divisible by neighbors * workgroups = {K * W}")
    chunk = S // (K * W)
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"neighbor-exchange-{P}gpu")
    b.buffer("halo", S)
    for w in range(W):
        b.flag(f"nx_w{w}")
    for g in range(P):
        for w in range(W):
            p = b.program(gpu=g, wg=w)
            for k in range(1, K + 1):
                p.write(dst=(g + k) % P, buffer="halo", offset=((k - 1) * W + w) * chunk, nbytes=chunk)
            for k in range(1, K + 1):
                p.signal(dst=(g + k) % P, flag=f"nx_w{w}", op="add", value=1)
            p.wait(flag=f"nx_w{w}", cond=">=", value=K, mode=mode, interval_ns=interval_ns)
    return b.build()


def _schedule(fn, schedule, P, W):
    if schedule not in ("rotated", "pinned"):
        raise ProfileError(f"{fn}: schedule must be 'rotated' or 'pinned', got {schedule!r}")
    if schedule == "pinned" and W % (P - 1):
        raise ProfileError(f"{fn}: schedule 'pinned' needs workgroups ({W}) to be a multiple of gpus - 1 ({P - 1})")
    return schedule


def _pinned(b, P, W, C, S, stages, mode, interval_ns, reduce_ns_per_byte):
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
    wait = {"mode": mode, "interval_ns": interval_ns}
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


_COLLECTIVES = {"ring_allreduce": ring_allreduce, "direct_allreduce": direct_allreduce,
                "all_gather": all_gather, "reduce_scatter": reduce_scatter, "all_to_all": all_to_all}


def main(argv: list[str] | None = None) -> None:
    """`python -m eidola.generators NAME ...`: writes a generated profile."""
    parser = argparse.ArgumentParser(prog="python -m eidola.generators", description="Write a generated profile.")
    sub = parser.add_subparsers(dest="generator", required=True)
    g = sub.add_parser("gemv_allreduce", help="fused GEMV + AllReduce (Punniyamurthy et al., SC24)")
    g.add_argument("--gpus", type=int, default=4)
    g.add_argument("--workgroups", type=int, default=4)
    g.add_argument("--vector-bytes", type=int, default=65536)
    g.add_argument("--tile-ns", type=float, default=2000)
    g.add_argument("--reduce-ns", type=float, default=400)
    g.add_argument("--mode", default="poll", choices=("poll", "spin_yield", "syncmon"))
    g.add_argument("--interval-ns", type=float, default=100)
    g.add_argument("--name")
    g.add_argument("-o", "--output", required=True, help="YAML file to write")
    for cname, fn in _COLLECTIVES.items():
        c = sub.add_parser(cname, help=fn.__doc__.split("\n", 1)[0])
        c.add_argument("--gpus", type=int, default=4)
        c.add_argument("--nbytes", type=int, required=True)
        c.add_argument("--workgroups", type=int, default=1)
        c.add_argument("--chunks", type=int, default=1)
        if cname in ("all_gather", "reduce_scatter"):
            c.add_argument("--algorithm", default="ring", choices=("ring", "direct"))
        c.add_argument("--mode", default="poll", choices=("poll", "spin_yield", "syncmon"))
        c.add_argument("--interval-ns", type=float, default=100)
        c.add_argument("--reduce-ns-per-byte", type=float, default=0.0)
        c.add_argument("--name")
        c.add_argument("-o", "--output", required=True, help="YAML file to write")
    a = parser.parse_args(argv)
    if a.generator in _COLLECTIVES:
        kw = {k: v for k, v in vars(a).items() if k not in ("generator", "output")}
        if float(a.interval_ns).is_integer():
            kw["interval_ns"] = int(a.interval_ns)
        try:
            _COLLECTIVES[a.generator](**kw).save(a.output)
        except ProfileError as e:
            parser.exit(2, f"error: {e}\n")
        parser.exit(0)
    # Whole numbers become ints so the file says 2000, not 2000.0.
    whole = {k: int(v) if float(v).is_integer() else v for k, v in
             (("tile_ns", a.tile_ns), ("reduce_ns", a.reduce_ns), ("interval_ns", a.interval_ns))}
    try:
        prof = gemv_allreduce(a.gpus, a.workgroups, a.vector_bytes, mode=a.mode, name=a.name, **whole)
        prof.save(a.output)
    except ProfileError as e:
        parser.exit(2, f"error: {e}\n")
