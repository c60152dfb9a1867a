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

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from typing import Any, cast

import numpy as np

from ..errors import ProfileError
from .builder import ProfileBuilder
from .collectives import all_gather, all_to_all, check_int_arg, direct_allreduce, reduce_scatter, ring_allreduce
from .profile import Profile
from .traffic import synthetic

__all__ = ["gemv_allreduce", "neighbor_exchange", "ring_allreduce", "direct_allreduce",
           "all_gather", "reduce_scatter", "all_to_all", "synthetic"]


def _positive_int(name: str, v: object) -> int:
    if type(v) is not int or v < 1:
        raise ProfileError(f"gemv_allreduce: {name} must be an int >= 1, got {v!r}")
    return v


def gemv_allreduce(gpus: int = 4, workgroups: int = 4, vector_bytes: int = 65536,
                   tile_ns: float | list[float] | tuple[float, ...] = 2000, reduce_ns: float = 400,
                   mode: str = "poll", interval_ns: float = 100, name: str | None = None,
                   max_interval_ns: float | None = None, skew: dict[str, Any] | None = None,
                   jitter: dict[str, Any] | None = None, delays: Iterable[dict[str, Any]] = ()) -> Profile:
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
    # Every program at once (see bulk.py), in (gpu, wg) order: program i is GPU i // W, workgroup i % W.
    gpu, wg = np.repeat(np.arange(P), W), np.tile(np.arange(W), P)
    ps = b.programs_at(gpu, wg)
    offset = (gpu * W + wg) * slice_
    # Peer order rotated by g: in lockstep, at step k every GPU targets a different peer
    # (g + k) % P, so no GPU is a hotspot receiving from all others at once.
    peers = [(gpu + k) % P for k in range(1, P)]
    ps.compute(ns=[tiles[g] for g in gpu.tolist()])
    for stage, buffer, work_ns in (("rs", "partials", None), ("ag", "gathered", reduce_ns)):
        names = np.array([f"{stage}_{q}" for q in range(P)], dtype=object)
        if work_ns is not None:
            ps.compute(ns=work_ns)
        for peer in peers:
            ps.write(dst=peer, buffer=buffer, offset=offset, nbytes=slice_)
        for peer in peers:
            ps.signal(dst=peer, flag=names[gpu].tolist(), op="add", value=1, scope="peer")
        for peer in peers:
            ps.wait(flag=names[peer].tolist(), cond=">=", value=W, mode=mode, interval_ns=interval_ns,
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

def neighbor_exchange(gpus: int, nbytes: int, neighbors: int = 4, workgroups: int = 1, mode: str = "syncmon",
                      interval_ns: float = 100, name: str | None = None) -> Profile:
    """Return a halo exchange: each GPU writes nbytes/neighbors to each of its next `neighbors` GPUs.

    GPU g's workgroup w writes its slice (nbytes / (neighbors * W)) to GPUs g+1 .. g+neighbors
    (mod P), signals `nx_w<w>` on each, then waits until its own `nx_w<w>` counts `neighbors`
    arrivals. Traffic per GPU is fixed whatever the GPU count, which makes it the workload for
    measuring how simulation cost scales with the number of GPUs.
    """
    P = check_int_arg("neighbor_exchange", "gpus", gpus, 2)
    K = check_int_arg("neighbor_exchange", "neighbors", neighbors, 1)
    W = check_int_arg("neighbor_exchange", "workgroups", workgroups, 1)
    S = check_int_arg("neighbor_exchange", "nbytes", nbytes, 1)
    if K >= P:
        raise ProfileError(f"neighbor_exchange: neighbors ({K}) must be fewer than gpus ({P})")
    if S % (K * W):
        raise ProfileError(f"neighbor_exchange: nbytes {S} must be divisible by neighbors * workgroups = {K * W}")
    chunk = S // (K * W)
    b = ProfileBuilder(gpus=P, workgroups=W, name=name or f"neighbor-exchange-{P}gpu")
    b.buffer("halo", S)
    flags = [f"nx_w{w}" for w in range(W)]
    for f in flags:
        b.flag(f)
    # Every program at once (see bulk.py), in (gpu, wg) order: program i is GPU i // W, workgroup i % W.
    gpu, wg = np.repeat(np.arange(P), W), np.tile(np.arange(W), P)
    flag = flags * P
    ps = b.programs_at(gpu, wg)
    for k in range(1, K + 1):
        ps.write(dst=(gpu + k) % P, buffer="halo", offset=((k - 1) * W + wg) * chunk, nbytes=chunk)
    for k in range(1, K + 1):
        ps.signal(dst=(gpu + k) % P, flag=flag, op="add", value=1, scope="peer")
    ps.wait(flag=flag, cond=">=", value=K, mode=mode, interval_ns=interval_ns)
    return b.build()


_COLLECTIVES: dict[str, Callable[..., Profile]] = {"ring_allreduce": ring_allreduce, "direct_allreduce": direct_allreduce,
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
        c = sub.add_parser(cname, help=cast(str, fn.__doc__).split("\n", 1)[0])
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
    whole: dict[str, Any] = {k: int(v) if float(v).is_integer() else v for k, v in
             (("tile_ns", a.tile_ns), ("reduce_ns", a.reduce_ns), ("interval_ns", a.interval_ns))}
    try:
        prof = gemv_allreduce(a.gpus, a.workgroups, a.vector_bytes, mode=a.mode, name=a.name, **whole)
        prof.save(a.output)
    except ProfileError as e:
        parser.exit(2, f"error: {e}\n")
