"""An imported collective as the platform's library runs it (``import ... --algorithm nccl --platform P``).

`timeline.build_profile` hands each matched collective here first. Where the library's model can run it, it is
built by `workload.nccl` as `eidola perf` builds it (the tuner's algorithm, protocol and channels for its size on
the collective's ranks, its FIFOs, protocols and proxy costs; a matched send/recv as one ncclSend and ncclRecv
pair, `p2p.send`, on the channels and protocol of nccl-tests' send/recv for its size), on the ranks' GPUs and on
the workgroups of the lane each rank launched it from (`nccl.PlacedBuilder`), with no launch or host cost of its
own: the trace's gaps hold those. Where the model cannot run it, the importer's textbook ring runs it instead, and
the report says why:

- barriers (the model has none);
- a group that is neither inside one node nor whole nodes in rank order (the model's rings and trees follow the
  platform's nodes: ranks g..g+k-1 from a node's first GPU);
- fewer workgroups per lane than the call needs (an all-to-all needs one per peer): `--workgroups`.

The tuner's channels are capped at the lane's workgroups (`--workgroups`, the platform's channel count by default
with this algorithm), as NCCL caps them at ``NCCL_MAX_NCHANNELS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ...errors import ConfigError
from .. import nccl
from ..nccl import p2p
from ..nccl.protocols import protocol

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from .timeline import Item, Report

__all__ = ["append", "OPS"]

#: the importer's collective kinds that the library's model runs, by their nccl-tests names
OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
       "all_to_all": "alltoall", "broadcast": "broadcast", "send": "sendrecv"}


def append(b: ProfileBuilder, row: list[tuple[Item, int]], where: dict[int, tuple[int, int]], gpu: dict[int, int],
           W: int, library: nccl.System, report: Report) -> bool:
    """Append the matched collective `row` ((item, rank) per member) as the library runs it; False (and a line in
    the report) where it cannot, for the caller's textbook schedule."""
    first = row[0][0].coll
    assert first is not None
    if first.kind == "send":  # sender first
        order = sorted(row, key=lambda x: bool(x[0].coll and x[0].coll.recv))
    else:
        order = sorted(row, key=lambda x: x[1])
    members = [gpu[r] for _, r in order]
    k = len(members)
    why = _cannot(first.kind, members, library)
    plan = None
    if not why:
        try:
            plan = _plan(library, OPS[first.kind], first.nbytes, k, W)
        except ConfigError as e:
            why = str(e)
    if plan is None:
        report.assume(f"collectives the {library.library.upper()} model does not run here took the textbook ring "
                      f"(e.g. {first.name} of {k} ranks: {why or 'no workgroups enough for it'})")
        return False
    root = members.index(gpu[first.root]) if first.root in gpu and gpu[first.root] in members else 0
    wgs = [[where[id(it)][1] * W + c for c in range(W)] for it, _ in order]
    prefix = b.next_prefix()
    placed = nccl.PlacedBuilder(b, members, wgs)
    if first.kind == "send":
        g = library.gpus_per_node or library.gpus
        p2p.send(cast("ProfileBuilder", placed), max(first.nbytes, 1), plan.channels,
                 protocol(plan.proto, library.library), p2p.P2P_CHUNK[library.link_type], prefix,
                 int(members[0] // g != members[1] // g), library.proxy_ns, library.proxy_launch_ns)
    else:
        nccl.append_call(placed, library, OPS[first.kind], max(first.nbytes, 1), k, plan, prefix, root)
    report.imported[f"{first.kind} ({library.library.upper()} {plan.algo} {plan.proto}, {k} ranks)"] += 1
    report.calls.append((prefix, first.kind, first.nbytes, {gpu[r]: it.end - it.start for it, r in order}))
    report.groups[prefix] = (first.traced_size or len(first.group),
                             [gpu[r] for it, r in order if it.coll is None or it.coll.own])
    return True


def _cannot(kind: str, members: list[int], library: nccl.System) -> str:
    """Why the model cannot run `kind` on GPUs `members` (rank order), or ""."""
    if kind not in OPS:
        return f"no {kind} in the model"
    k = len(members)
    if kind == "send":
        return ""  # a pair: any two GPUs, inside a node or across
    g = library.gpus_per_node or library.gpus
    if k <= g and len({m // g for m in members}) == 1:
        return ""
    if k % g == 0 and members[0] % g == 0 and members == list(range(members[0], members[0] + k)):
        return ""
    return f"GPUs {members[:4]}{'...' if k > 4 else ''} are neither one node's nor whole nodes of {g} in order"


def _plan(library: nccl.System, op: str, nbytes: int, k: int, W: int) -> nccl.Plan | None:
    """The tuner's plan for `op` on k ranks, its channels capped at W workgroups; None if even one set of channels
    (an all-to-all: one per peer) does not fit."""
    plan = nccl.plan_of(library, op, max(nbytes, 1), k)
    if plan.channels <= W:
        return plan
    step = k - 1 if op == "alltoall" else 1
    channels = W - W % step
    if channels < step:
        return None
    return nccl.plan_of(library, op, max(nbytes, 1), k, plan.algo, plan.proto, channels)
