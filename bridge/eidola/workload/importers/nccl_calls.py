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
with this algorithm, or the most workgroups a traced call's plan runs on), as NCCL caps them at ``NCCL_MAX_NCHANNELS``. An
all-to-all or send/recv exchange runs each channel's sends and receives on workgroups of their own
(`nccl.Plan.split`) where the lane holds twice its channels, else together on one workgroup each.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

from ...errors import ConfigError, ProfileError
from .. import nccl
from ..nccl import p2p
from ..nccl.protocols import protocol
from . import timeline

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from .timeline import Item, Report

__all__ = ["append", "OPS"]

#: the importer's collective kinds that the library's model runs, by their nccl-tests names
OPS = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
       "all_to_all": "alltoall", "broadcast": "broadcast", "send": "sendrecv"}


def append(b: ProfileBuilder, order: list[tuple[Item, int]], where: dict[int, tuple[int, int]], gpu: dict[int, int],
           W: int, library: nccl.System, report: Report) -> int | None:
    """Append the matched collective `order` ((item, rank) per member, as `timeline._rank_order` puts them: a send's
    sender first) as the library runs it and return its bytes; None (and a line in the report) where it cannot, for
    the caller's textbook schedule."""
    first = order[0][0].coll
    assert first is not None
    members = [gpu[r] for _, r in order]
    k = len(members)
    op = OPS.get(first.kind, "")
    nbytes = max(first.nbytes, 1)
    why = _cannot(first.kind, members, library)
    plan = None
    if not why:
        try:
            plan = _plan(library, order, W)
        except ConfigError as e:
            why = str(e)
    if plan is not None and plan.workgroups > W:
        plan, why = _capped(library, op, nbytes, k, W, plan)
    if plan is None:
        report.assume(f"collectives the {library.library.upper()} model does not run here took the textbook "
                      f"schedule (e.g. {first.name} of {k} ranks: {why})")
        return None
    root = members.index(gpu[first.root]) if first.root in gpu and gpu[first.root] in members else 0
    wgs = [[where[id(it)][1] * W + c for c in range(W)] for it, _ in order]
    prefix = b.next_prefix()
    placed = nccl.PlacedBuilder(b, members, wgs)
    if first.kind == "send":
        # One way (a send and its receive), or both (`timeline.is_exchange`: nccl-tests' send/recv on the pair).
        # Two ranks in two nodes are per_node 1, so each step pays the proxy at both ends.
        args = (plan.channels, protocol(plan.proto, library.library), p2p.P2P_CHUNK[library.link_type], prefix,
                int(_node(library, members[0]) != _node(library, members[1])), library.proxy_ns,
                library.proxy_launch_ns)
        if timeline.is_exchange(order):
            p2p.sendrecv(cast("ProfileBuilder", placed), nbytes, 2, *args, apart=plan.split)
        else:
            p2p.send(cast("ProfileBuilder", placed), nbytes, *args)
    else:
        nccl.append_call(placed, library, op, nbytes, k, plan, prefix, root)
    report.imported[f"{first.kind} ({library.library.upper()} {plan.algo} {plan.proto}, {k} ranks)"] += 1
    return nbytes


def _plan(library: nccl.System, order: list[tuple[Item, int]], room: int | None = None) -> nccl.Plan:
    """The library's plan for the matched call `order` with `room` workgroups a GPU (default all of them): a one-way
    send's sends and receives never apart (the sender only sends, the receiver only receives). Raises ConfigError
    where the library has none."""
    first = order[0][0].coll
    assert first is not None
    plan = nccl.plan_of(library, OPS.get(first.kind, ""), max(first.nbytes, 1), len(order), room=room)
    one_way = first.kind == "send" and not timeline.is_exchange(order)
    return replace(plan, split=False) if one_way else plan


def lane_workgroups(asked: int | None, library: nccl.System, lanes: int, rows: list[list[tuple[Item, int]]]) -> int:
    """Workgroups per lane: `asked` (--workgroups), refused if the platform's GPUs cannot hold `lanes` of them; by
    default (None) the platform's channel count, or the most workgroups the plan of a matched call (`rows`) runs on
    (an all-to-all: its channels per peer, sends and receives apart), as far as the GPUs' workgroups shared by the
    lanes allow."""
    room = library.workgroups // lanes
    if room < 1:
        raise ProfileError(f"import: {lanes} streams need a workgroup each at least; the --platform's GPUs have "
                           f"{library.workgroups} (gpus.workgroups)")
    if asked is not None and asked > room:
        raise ProfileError(f"import: {lanes} streams of {asked} workgroups need {lanes * asked} workgroups per GPU; "
                           f"the --platform's GPUs have {library.workgroups}: give --workgroups {room} or fewer")
    if asked is not None:
        return asked
    need = max([library.channels] + [_workgroups(library, row) for row in rows])
    return min(need, room)


def _workgroups(library: nccl.System, row: list[tuple[Item, int]]) -> int:
    """The workgroups per GPU the library's plan for one matched call runs on (0 where the model does not run it)."""
    first = row[0][0].coll
    if first is None or first.kind not in OPS or len(row) < 2:
        return 0
    try:
        return _plan(library, row).workgroups
    except ConfigError:
        return 0


def _node(library: nccl.System, gpu: int) -> int:
    """The node of `gpu` (0 for a platform of one node)."""
    return gpu // (library.gpus_per_node or library.gpus)


def _cannot(kind: str, members: list[int], library: nccl.System) -> str:
    """Why the model cannot run `kind` on GPUs `members` (rank order), or ""."""
    if kind not in OPS:
        return f"no {kind} in the model"
    k = len(members)
    if kind == "send":
        return ""  # a pair: any two GPUs, inside a node or across
    if library.neighbours is not None and members != list(range(k)):
        # direct links (ring, mesh, torus): the model's rings follow the links among GPUs 0..k-1
        return f"GPUs {_few(members)} are not GPUs 0..{k - 1}, whose links the model's rings follow on this topology"
    g = library.gpus_per_node or library.gpus
    if k <= g and len({_node(library, m) for m in members}) == 1:
        return ""
    if k % g == 0 and members[0] % g == 0 and members == list(range(members[0], members[0] + k)):
        return ""
    return f"GPUs {_few(members)} are neither one node's nor whole nodes of {g} in order"


def _few(gpus: list[int]) -> str:
    return f"{gpus[:4]}{'...' if len(gpus) > 4 else ''}"


def _capped(library: nccl.System, op: str, nbytes: int, k: int, W: int,
            plan: nccl.Plan) -> tuple[nccl.Plan | None, str]:
    """The plan capped at the lane's W workgroups, as NCCL_MAX_NCHANNELS caps its channels: on as many channels as W
    holds, each channel's sends and receives together on one workgroup (`nccl.Plan.split` off: twice the channels
    do not fit W once its channels had to be capped); (None, why) if even one set of channels (an all-to-all: one per
    peer) does not fit. Why together rather than apart on half as many:
    a lane's W workgroups stand for W blocks, each of which runs a channel's sends and receives in NCCL, so its
    channels are capped at W as NCCL_MAX_NCHANNELS caps them. Neither way is the faster everywhere: 16 MiB on 8
    ranks, dgx-h100 on 24 workgroups 21 channels together 65.9 us against 7 apart 67.0 (perf, 21 apart: 65.4);
    switch-8gpu on 14, 14 together 47.49 against 7 apart 46.76."""
    step = k - 1 if op == "alltoall" else 1
    channels = min(plan.channels, W - W % step)
    if channels < step:
        return None, (f"it needs {step} workgroups per lane (one per peer) and the lanes have {W}: import with "
                      f"--workgroups {step} or more")
    return nccl.plan_of(library, op, nbytes, k, plan.algo, plan.proto, channels, room=W), ""
