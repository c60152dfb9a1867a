"""Profile generators for multi-GPU collectives.

gemv_allreduce models the fused GEMV + AllReduce kernel of K. Punniyamurthy, K. Hamidouche and
B. M. Beckmann, "Optimizing Distributed ML Communication with Fused Computation-Collective
Operations", SC24. It is a persistent kernel: every workgroup computes its GEMV tile, then runs a
direct (one-hop, all-to-all) reduce-scatter: it writes its slice of partial results straight into
each peer's `partials` buffer and bumps that peer's ready flag `rs_<own gpu>`. Once every peer's
workgroups have landed their partials (flag rs_q reaches the workgroup count for every peer q), it
reduces its own chunk and runs the all-gather the same way through `gathered` and flags `ag_<gpu>`.

Run as `python -m eidola.generators gemv_allreduce --gpus 4 ... -o out.yaml` to write a profile.
"""

import argparse

from .errors import ProfileError
from .profile import ProfileBuilder

__all__ = ["gemv_allreduce"]


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


if __name__ == "__main__":
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
    a = parser.parse_args()
    # Whole numbers become ints so the file says 2000, not 2000.0.
    whole = {k: int(v) if float(v).is_integer() else v for k, v in
             (("tile_ns", a.tile_ns), ("reduce_ns", a.reduce_ns), ("interval_ns", a.interval_ns))}
    try:
        prof = gemv_allreduce(a.gpus, a.workgroups, a.vector_bytes, mode=a.mode, name=a.name, **whole)
        prof.save(a.output)
    except ProfileError as e:
        parser.exit(2, f"error: {e}\n")
