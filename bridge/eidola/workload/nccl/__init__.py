"""Collectives as NCCL and RCCL run them: channels, connection FIFOs with credits, LL/LL128/Simple, a tuner.

`build_collective(platform, op, nbytes)` returns one collective as a profile (and the `Plan` the
tuner or the caller chose): channel c is workgroup c of every GPU; each connection is an 8-slot FIFO
whose receiver returns credits; LL and LL128 steps are `put`s that carry their own flag, Simple
steps are writes then a release signal. Simulate the profile on the platform for the collective's
time: the tuner only chooses (docs/collectives.md). The textbook schedules in `workload.collectives`
stay as they are.

Files: `protocols` (wire formats, FIFO geometry), `fifo` (a connection and one primitive), `ring`
(ring all-reduce, all-gather, reduce-scatter, broadcast, reduce), `tree` (chain all-reduce), `nvls` (NVLink
SHARP all-reduce, all-gather, reduce-scatter through the switch), `p2p`
(all-to-all, send/recv), `hier` (the hierarchical all-reduce across nodes), `tuner` (NCCL's tuning model), `system`
(what a platform gives them: GPUs, nodes, NICs). Across nodes, ring and tree run NCCL's multi-node
forms (rail-local rings, the double binary tree) and network steps pay the proxy (`fifo.proxy_ns`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ...errors import ConfigError, ProfileError
from ..builder import ProfileBuilder
from . import harness, hier, nvls, p2p, ring, tree, tuner
from .placed import PlacedBuilder
from .protocols import protocol
from .system import System

if TYPE_CHECKING:
    from ...platform.model import Platform
    from ..profile import Profile

__all__ = ["OPS", "P2P_OPS", "ROOTED", "Plan", "build_collective", "plan_of", "append_call", "PlacedBuilder", "System"]

#: The collectives, by their nccl-tests names.
OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv", "gather",
       "scatter")
#: The collectives that run point-to-point (algo "p2p") rather than by the tuner.
P2P_OPS = ("alltoall", "sendrecv", "gather", "scatter")
#: The collectives with a root (nccl-tests' -r).
ROOTED = ("broadcast", "reduce", "gather", "scatter")
#: The point-to-point collectives whose every rank both sends and receives (`Plan.split`).
_EXCHANGE = ("alltoall", "sendrecv")
#: The point-to-point collectives with a set of channels per peer of the root (or, all-to-all, of every rank).
_PER_PEER = ("alltoall", "gather", "scatter")


@dataclass(frozen=True)
class Plan:
    """How the collective runs: algorithm, protocol and channels (workgroups per GPU)."""

    algo: str  #: "ring", "tree", "nvls" or "hierarchical" ("p2p" for alltoall, sendrecv, gather and scatter)
    proto: str  #: "LL", "LL128" or "Simple"
    channels: int  #: channels: one workgroup each on every GPU that runs it (two where `split`)
    #: all-to-all and send/recv: each channel's sends and receives on workgroups of their own, as NCCL gives them
    #: warps of their own (`p2p.alltoall`); False where the GPUs have too few workgroups for that
    split: bool = False

    @property
    def workgroups(self) -> int:
        """Workgroups of every GPU that run it: a channel each, two where its sends and receives are split."""
        return self.channels * (2 if self.split else 1)


def build_collective(platform: Platform, op: str, nbytes: int, gpus: int | None = None, algo: str = "auto",
                     proto: str = "auto", channels: int = 0, calls: int = 1,
                     steady: bool = False, root: int = 0) -> tuple[Profile, Plan]:
    """One collective as the library runs it, on the first `gpus` GPUs of `platform` (default all), as a profile.

    op: one of OPS. nbytes: the nccl-tests size (all_reduce: the buffer per rank; all_gather: the
    gathered output per rank; reduce_scatter: the input per rank; alltoall: the per-rank send total;
    broadcast: the buffer, from the root; reduce: the buffer, to the root; sendrecv: the bytes each rank sends to
    the next and receives from the one before; gather: the gathered output at the root, S/k from each rank;
    scatter: the input at the root, S/k to each rank). root: the root GPU of broadcast, reduce, gather and scatter
    (nccl-tests' -r, default 0); the other collectives have none and ignore it. algo / proto: "auto" (the tuner's choice) or a name;
    channels: 0 (the tuner's count) or a count. calls: how many of it, back to back on each GPU's stream
    as nccl-tests issues them (`harness`: two extra workgroups per GPU, the host and a marker; read one
    call's time with `harness.period_ns`). steady: one call in the steady state of that loop
    (`harness.host_floor`: one extra workgroup per GPU, the host's issue of the next call, so the run's
    kernel time is max(collectives.host_call, launch gap + kernel)); not with calls > 1.
    Bad values raise ConfigError naming the option.
    """
    if op not in OPS:
        raise ConfigError(f"op: expected one of {', '.join(OPS)}, got {op!r}")
    if type(nbytes) is not int or nbytes < 1:
        raise ConfigError(f"nbytes: expected an integer number of bytes >= 1, got {nbytes!r}")
    if type(calls) is not int or calls < 1:
        raise ConfigError(f"calls: expected an integer >= 1, got {calls!r}")
    if steady and calls > 1:
        raise ConfigError(f"steady: the steady state is one call; got calls={calls}")
    sys = System.of(platform)
    k = sys.gpus if gpus is None else gpus
    if type(k) is not int or not 2 <= k <= sys.gpus:
        raise ConfigError(f"gpus: expected an integer from 2 to the platform's {sys.gpus} GPUs, got {gpus!r}")
    if op in ROOTED and (type(root) is not int or not 0 <= root < k):
        raise ConfigError(f"root: expected a GPU from 0 to {k - 1} (the {op}'s root), got {root!r}")
    extra = harness.EXTRA_WORKGROUPS if calls > 1 else harness.STEADY_WORKGROUPS if steady else 0
    plan = plan_of(sys, op, nbytes, k, algo, proto, channels, room=sys.workgroups - extra)  # beside the harness's
    b = ProfileBuilder(gpus=k, workgroups=plan.workgroups + extra, name=f"{sys.library}-{op}-{nbytes}B-{k}gpu")
    if calls > 1:
        harness.declare(b)
    for call in range(calls):
        if call:
            harness.before_call(b, k, plan.workgroups, call, sys.launch_ns)
        _emit(b, sys, op, nbytes, k, plan, f"call{call}." if call else "", root)
        if call < calls - 1:
            harness.after_call(b, k, plan.workgroups)
    if calls > 1:
        harness.host_and_marker(b, k, plan.workgroups, calls, sys.host_call_ns, sys.launch_ns)
    if steady:
        harness.host_floor(b, k, plan.workgroups, sys.host_call_ns, sys.launch_ns)
    return b.build(), plan


def plan_of(sys: System, op: str, nbytes: int, k: int, algo: str = "auto", proto: str = "auto",
            channels: int = 0, room: int | None = None) -> Plan:
    """How `op` of `nbytes` runs on k GPUs of `sys`: the tuner's choice, or the point-to-point rules (`_p2p_plan`),
    with `algo`, `proto` and `channels` forced where not "auto" / 0. room: the workgroups a GPU has for it (default
    `sys.workgroups`), which decides `Plan.split`. Bad values raise ConfigError naming them."""
    if op in P2P_OPS:
        return _p2p_plan(sys, op, nbytes, k, algo, proto, channels, sys.workgroups if room is None else room)
    return Plan(*tuner.choose(sys, op, nbytes, k, algo, proto, channels))


def append_call(b: ProfileBuilder | PlacedBuilder, sys: System, op: str, nbytes: int, k: int, plan: Plan, prefix: str,
                root: int = 0) -> None:
    """Append one call of `op` as `plan` runs it on ranks 0..k-1, channel c on workgroup c (or where a
    `placed.PlacedBuilder` puts them), its flags and buffers named with `prefix`; the kernel alone, with no host
    or launch (`harness`)."""
    # A PlacedBuilder offers the part of ProfileBuilder the builders use, mapped (placed.py): typed as the builder
    # it stands for, rather than a protocol threaded through every module.
    _emit(cast(ProfileBuilder, b), sys, op, nbytes, k, plan, prefix, root)


def _emit(b: ProfileBuilder, sys: System, op: str, nbytes: int, k: int, plan: Plan, prefix: str, root: int) -> None:
    """Append one call of `op` as `plan` runs it, its flags and buffers named with `prefix`; `root`: a rooted
    collective's root (the others do not read it)."""
    p = protocol(plan.proto, sys.library)
    try:
        g, nodes = sys.node_size(k), sys.nodes(k)
        per_node = g if nodes > 1 else 0  # 0: one node, no step crosses the network
        if op in P2P_OPS:
            chunk = p2p.P2P_CHUNK[sys.link_type]
            if op == "alltoall":
                p2p.alltoall(b, nbytes, k, plan.channels // (k - 1), p, chunk, sys.mem_bw, prefix, per_node,
                             sys.proxy_ns, sys.proxy_launch_ns, plan.split)
            elif op in ("gather", "scatter"):
                rooted = p2p.gather if op == "gather" else p2p.scatter
                rooted(b, nbytes, k, plan.channels // (k - 1), p, chunk, sys.mem_bw, prefix, root, per_node,
                       sys.proxy_ns, sys.proxy_launch_ns)
            else:
                p2p.sendrecv(b, nbytes, k, plan.channels, p, chunk, prefix, per_node, sys.proxy_ns,
                             sys.proxy_launch_ns, plan.split)
        else:
            rings = sys.rings(k, plan.channels)
            if plan.algo == "nvls":
                nvls.nvls(b, op, nbytes, k, plan.channels, prefix)
            elif op in ("broadcast", "reduce"):
                chain = ring.broadcast if op == "broadcast" else ring.reduce
                chain(b, nbytes, rings, root, p, sys.mem_bw, prefix, per_node, sys.proxy_ns, sys.proxy_launch_ns,
                      sys.library)
            elif plan.algo == "hierarchical":
                hier.hierarchical_allreduce(b, nbytes, sys, k, plan.channels, p, prefix)
            elif plan.algo == "tree" and nodes > 1:
                # NCCL's tree channels: one search channel per NIC, headed by the NIC's GPU, duplicated onto the
                # mirror tree, then copied (System.tree_channels)
                chains, trees = sys.tree_channels(k, plan.channels)
                tree.dtree_allreduce(b, nbytes, chains, nodes, p, sys.mem_bw, prefix, sys.proxy_ns,
                                     sys.proxy_launch_ns, trees, sys.library)
            elif plan.algo == "tree":
                tree.tree_allreduce(b, nbytes, rings, p, sys.mem_bw, prefix)
            else:
                ring.ring(b, op, nbytes, rings, p, sys.mem_bw, prefix, per_node=per_node, proxy=sys.proxy_ns,
                          launch=sys.proxy_launch_ns)
    except ProfileError as e:  # a bug of ours, not the user's: say which collective made it
        raise ProfileError(f"{op} of {nbytes} B ({plan}): {e}") from None


def _p2p_plan(sys: System, op: str, nbytes: int, k: int, algo: str, proto: str, channels: int, room: int) -> Plan:
    """All-to-all, send/recv, gather and scatter: no tuning model in NCCL; LL up to the p2p LL threshold per peer,
    else Simple; channels per peer as `p2p.per_peer_channels` (send/recv: one peer, the whole buffer; the others
    S/k to or from each of k-1 peers), rounded to whole peers."""
    if algo not in ("auto", "p2p"):
        raise ConfigError(f"algo: {op} runs point-to-point; expected auto or p2p, got {algo!r}")
    peers = k - 1 if op in _PER_PEER else 1
    per_peer = -(-nbytes // k) if op in _PER_PEER else nbytes
    tuner.check_proto(sys, proto)
    if proto == "auto":
        proto = "LL" if per_peer <= p2p.P2P_LL_THRESHOLD and "LL" in sys.protocols else "Simple"
    if type(channels) is not int or channels < 0:
        raise ConfigError(f"channels: expected 0 (the tuner's count) or a positive integer, got {channels!r}")
    if channels:
        m = channels // peers
        if m < 1 or m * peers != channels or channels > sys.workgroups:
            what = f"a multiple of {k - 1} (one set per peer)" if peers > 1 else "a count"
            raise ConfigError(f"channels: {op} on {k} GPUs needs {what} up to {sys.workgroups}, got {channels}")
    else:
        m = p2p.per_peer_channels(sys.channels, peers + 1, per_peer, p2p.P2P_CHUNK[sys.link_type])
        m = max(1, min(m, sys.workgroups // peers))
    # Sends and receives on workgroups of their own where `room` holds them; else one workgroup does both.
    return Plan("p2p", proto, m * peers, op in _EXCHANGE and 2 * m * peers <= room)
