"""NCCL's tuning model (``src/graph/tuning.cc``, ``src/enqueue.cc``): it CHOOSES algorithm, protocol and channels.

The model predicts ``time = latency + bytes / bandwidth`` for every enabled (algorithm, protocol) and
takes the least; then it drops channels for small messages. Its prediction is never reported: the
time of a collective is always the simulation of the profile it chose (docs/collectives.md).

- latency (us): ``base[algo][proto] + steps x hop[link][algo][proto]``; ring steps 2(k-1) for all_reduce,
  k-1 for all_gather and reduce_scatter; tree all_reduce 2(k-1) chain hops within a node. Broadcast and
  reduce: one hop where NCCL's ring graph has identical channels (`sameChannels`: a switch), else k hops,
  Simple's at the tree's figure; across nodes, network hops.
- bus bandwidth with C channels: B = C x (GPU link bandwidth / the library's channel count). Ring LL:
  B / 4 for all_reduce and reduce, B / 3 for the others up to NCCL 2.20 (Ampere and Hopper here), B / 2
  from 2.21.5 (Blackwell here: `LL_SHARE`), capped per generation (llMaxBw; NCCL.md's "half the link
  rate" is the line's payload share; tuning.cc also charges LL's polling); ring LL128 0.92 B, capped at
  C x the per-channel LL128 cap; ring Simple B. Tree: 0.92 B for Simple, then LL 1/3.8 of that (capped
  as LL), LL128 7/9 (one node, capped at 7/9 x C x the LL128 cap), each x NCCL's tree correction
  factor for medium sizes. The algorithm bandwidth is the bus bandwidth x k / steps for a ring
  (k / 2(k-1) for all_reduce) and x 1/2 for a tree.
- NVLS (Simple only; all_reduce, all_gather, reduce_scatter): latency 0 + the NVLS per-hop figure once
  (25 us on NVLink), whatever k. NCCL's NVLS graph has a channel per GPU (head, k of them), and its search
  gives each one G / (k + 1) of the GPU's NVSwitch bandwidth G (every GPU carries each head's data, the
  head's twice); a channel's bus bandwidth is that x the efficiency (Hopper 0.85, Blackwell 0.74) x
  (heads - 1) / heads, x 2 for all_reduce ("pipelines two operations") or x (k - 1) / k otherwise; the bus
  bandwidth is heads x that. all_reduce's algorithm bandwidth is the bus bandwidth x k / 2(k-1); NCCL does
  not convert all_gather's and reduce_scatter's. NVLS needs an NVSwitch with multicast (here
  fabric.switch.nvls), NVLink, a Hopper or later GPU and more than 2 GPUs in the node (NCCL 2.21-2.23's
  ``ncclNvlsInit``; master needs 2). Its channels: `nvls.nvls_channels`, at most 16.
- RCCL (its HIP build): B x its tuning model's bandwidth ratio (`RCCL_BW_RATIO`, MI300X's ``tuning_model_5``:
  ring LL 0.08, Simple 1) instead of NCCL's refinements, and the model's corrections by size; x1.65 for LL
  broadcast and reduce on one gfx94 node; across nodes its own latencies and ratios (`_predict_nodes_rccl`).
- channels: while ``bytes < channels x threads x threshold`` drop one channel (down to 1); thresholds
  8 B per thread for LL (x k for ring LL) and LL128, 64 B for Simple; threads per channel NCCL 512
  (LL, Simple) and 640 (LL128); RCCL 256 (assumed: RCCL's default block size on MI300X).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import ConfigError
from .nvls import NVLS_CHANNELS, NVLS_OPS, nvls_channels
from .system import NET_OVERHEAD_US, System

__all__ = ["LL_SHARE", "RCCL_BW_RATIO", "RCCL_GFX94_CHAIN_LL", "RCCL_BW_RATIO_MANY", "RCCL_NET_LAT",
           "RCCL_TREE_CORRECTION", "RCCL_RING_CORRECTION", "RCCL_NET_OVERHEAD_US",
           "NVLS_EFFICIENCY", "NVLS_HOP_LAT", "NVLS_MIN_NODE_GPUS", "nvls_eligible", "BASE_LAT",
           "HOP_LAT", "LL_MAX_BW", "LL128_CHANNEL_BW", "THREADS", "THRESHOLD", "TREE_CORRECTION", "Choice",
           "predict", "choose", "reduce_channels", "ALGOS", "RING_PLATEAU"]

ALGOS = ("ring", "tree", "nvls", "hierarchical")  #: the algorithms a user may name
#: Simple ring all-reduce across nodes: NCCL multiplies its latency by this once every rank's share of a
#: channel is 64 B or more ("plateau effect of ring", ``ncclTopoGetAlgoTime``; 1.9 before Ampere).
RING_PLATEAU = 1.4
#: NVLS bandwidth efficiency per GPU generation (``nvlsEfficiency``); generations without NVLS absent.
NVLS_EFFICIENCY = {"hopper": 0.85, "blackwell": 0.74}
#: NVLS latency, us, per link type (Simple; base latency 0): NVLink 25 (network 18 is for several nodes).
NVLS_HOP_LAT = {"nvlink": 25.0}
#: The fewest GPUs in the node for NVLS (NCCL 2.21-2.23: ``gpuCount <= 2`` turns it off).
NVLS_MIN_NODE_GPUS = 3
_P = ("LL", "LL128", "Simple")
#: Base latency, us: library -> algo -> (LL, LL128, Simple). RCCL's are 12 / 12 / 17 for every algorithm.
BASE_LAT = {"nccl": {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4)},
            "rccl": {"ring": (12.0, 12.0, 17.0), "tree": (12.0, 12.0, 17.0)}}
#: Per-hop latency, us: link -> algo -> (LL, LL128, Simple). xGMI: RCCL's tuning_model_5 (8 MI300X), ring 0.8 (LL)
#: / 2.1 (Simple), tree 0.9 / 2.3; its LL128 figures are assumed the ring's Simple (LL128 is off on MI300X).
HOP_LAT = {"nvlink": {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0)},
           "pcie": {"ring": (1.0, 2.5, 5.7), "tree": (1.0, 1.9, 4.0)},
           "network": {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0)},
           "xgmi": {"ring": (0.8, 2.1, 2.1), "tree": (0.9, 2.1, 2.3)}}
#: LL's bus bandwidth cap per GPU generation, GB/s (cdna3: assumed Hopper's).
LL_MAX_BW = {"ampere": 87.7, "hopper": 141.0, "blackwell": 282.0, "cdna3": 141.0}
#: LL128's per-channel ring bandwidth cap, GB/s (perChMaxRingLL128Bws; Blackwell 2 x 36.7 from NCCL 2.25;
#: cdna3: assumed 20, NCCL's pre-Hopper figure).
LL128_CHANNEL_BW = {"ampere": 20.0, "hopper": 36.7, "blackwell": 2 * 36.7, "cdna3": 20.0}
#: Ring LL's share of the bus bandwidth per GPU generation, (all_reduce and reduce, the others): NCCL up to 2.20
#: charges 1/4 for all_reduce and reduce (and, across nodes, for every collective: `_predict_nodes`) and 1/3
#: otherwise; 2.21.5 on charges 1/2 for all (with llMaxBws' Hopper 141 and Blackwell 282 GB/s). Ampere follows
#: 2.18.5 (the A100 points) and Blackwell 2.25.1 (the GB200 points).
#: Hopper keeps 2.20.5's share (the H200 small point's version) beside 2.25's cap, a mix no NCCL has:
#: on 8 GPUs it picks as 2.27.7 does (LL at 2 MiB, LL128 at 4 MiB), and the NVLS crossover is derived
#: from it (docs/collectives.md).
LL_SHARE = {"ampere": (1 / 4, 1 / 3), "hopper": (1 / 4, 1 / 3), "blackwell": (1 / 2, 1 / 2), "cdna3": (1 / 4, 1 / 3)}
#: RCCL's bus bandwidth ratio on one or two nodes, (LL, LL128, Simple) per algorithm, of its tuning model for
#: 8 MI300X over xGMI (``tuning_model_5``, chosen by its rome models of 8 gfx942 GPUs): RCCL applies it in place
#: of NCCL's LL and LL128 refinements (its HIP build compiles those out), so ring LL runs at 0.08 of the bus.
RCCL_BW_RATIO = {"ring": (0.08, 0.0, 1.0), "tree": (0.06, 0.0, 0.11)}
#: RCCL's ring LL bandwidth factor for broadcast and reduce inside one node of gfx94 GPUs (MI300X; ``tuning.cc``,
#: ``busBw * 1.65`` after the model's ratio).
RCCL_GFX94_CHAIN_LL = 1.65
#: The rest of RCCL's ``tuning_model_5`` (the same in RCCL 2.20.5 and 2.21.5, ROCm 6.2-6.3, and its development
#: branch of 2024-10): the bandwidth ratios above 2 nodes (`RCCL_BW_RATIO` is its row for 1 and 2 nodes), the network
#: hops (LL, LL128, Simple; us), and the correction factors of the bandwidth by log2(bytes / 64), the last one
#: standing for every larger size: the tree's always, the ring's across nodes only (``ncclTopoGetAlgoTime``).
RCCL_BW_RATIO_MANY = {"ring": (0.08, 0.0, 1.0), "tree": (0.06, 0.0, 0.59)}
RCCL_NET_LAT = {"ring": (9.5, 0.0, 320.0), "tree": (10.5, 0.0, 25.0)}
RCCL_TREE_CORRECTION = ((0.1,) * 6 + (1.0,) * 5 + (0.6, 1.0, 0.9, 1.0, 1.0) + (0.1,) * 11, (0.0,) * 27,
                        (0.1,) * 15 + (0.7,) + (1.0,) * 10 + (0.8,))
RCCL_RING_CORRECTION = ((0.1,) * 11 + (1.0, 0.2, 1.0, 0.4, 0.4, 0.1, 0.2, 0.2) + (0.1,) * 8, (0.0,) * 27,
                        (0.1,) * 23 + (0.8, 1.0, 1.0, 1.0))
#: RCCL's net overhead per network step on an AMD host (``getNetOverhead``: 2 us; x3 for Simple).
RCCL_NET_OVERHEAD_US = 2.0
#: NCCL's tree correction factor per protocol (LL, LL128, Simple), indexed by log2(bytes / 64) below 22:
#: "trees are not perfectly sticking to the model for medium sizes" (``tuning.cc``).
TREE_CORRECTION = ((1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0),
                   (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0),
                   (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9))
#: Threads per channel: library -> (LL, LL128, Simple).
THREADS = {"nccl": (512, 640, 512), "rccl": (256, 256, 256)}
#: Bytes per thread below which a channel is dropped: (LL, LL128, Simple); ring LL multiplies by k.
THRESHOLD = (8, 8, 64)


@dataclass(frozen=True)
class Choice:
    """One candidate and what the model predicts for it (never reported as the collective's time)."""

    algo: str
    proto: str
    latency_us: float
    algbw_GBps: float
    plateau_from: int = 0  #: bytes from which the latency is x RING_PLATEAU (0: never; ring Simple across nodes)
    #: The bandwidth's factor by log2(bytes / 64) (NCCL's tree correction, RCCL's model's), none past its end unless
    #: `capped`, where its last entry stands for every larger size (RCCL).
    correction: tuple[float, ...] = ()
    capped: bool = False

    def time_us(self, nbytes: int) -> float:
        """The model's time for `nbytes` (the bandwidth corrected by size as the library does)."""
        bw = self.algbw_GBps
        log_size = max(nbytes >> 6, 1).bit_length() - 1
        if self.correction and (log_size < len(self.correction) or self.capped):
            bw *= self.correction[min(log_size, len(self.correction) - 1)]
        if not bw > 0:  # a protocol the library's model gives no bandwidth (RCCL's LL128 on MI300X): never chosen
            return math.inf
        lat = self.latency_us * (RING_PLATEAU if self.plateau_from and nbytes >= self.plateau_from else 1.0)
        return lat + nbytes / (bw * 1e3)


def _steps(op: str, k: int) -> int:
    """NCCL's `nsteps` (``tuning.cc``): 2(k-1) for all-reduce, k-1 for all-gather and reduce-scatter, k for broadcast
    and reduce (whose chains have k-1 hops; NCCL's model counts k all the same)."""
    return 2 * (k - 1) if op == "all_reduce" else k - 1 if op in ("all_gather", "reduce_scatter") else k


def _chain_latency(sys: System, op: str, k: int, hops: dict[str, tuple[float, float, float]], p: int) -> float:
    """The ring's per-hop latency part (``tuning.cc``) over `hops` (a per-hop table's ring and tree rows: `HOP_LAT`'s
    link, `RCCL_NET_LAT`). Broadcast and reduce, whose rings are chains: one hop when the ring graph has
    `sameChannels` (`System.same_channels`), else nsteps hops, Simple's at the tree's figure ("Add some chunk latency,
    waiting for proper chunk modeling"). The other collectives: nsteps ring hops."""
    hop = hops["ring"][p]
    if op not in ("broadcast", "reduce"):
        return _steps(op, k) * hop
    if sys.same_channels(k):
        return hop
    return _steps(op, k) * (hops["tree"][p] if _P[p] == "Simple" else hop)


def predict(sys: System, op: str, k: int, algo: str, proto: str, channels: int) -> Choice:
    """The model's latency and algorithm bandwidth for (algo, proto) with `channels` channels on k GPUs
    (NVLS: its own channels, one per GPU, whatever `channels` says)."""
    p = _P.index(proto)
    if algo == "nvls":
        heads = k
        per_head = sys.gpu_bw / (heads + 1) / 1e9  # GB/s
        channel = per_head * NVLS_EFFICIENCY[sys.arch] * (heads - 1) / heads * (2 if op == "all_reduce" else (k - 1) / k)
        nvls_bus = heads * channel
        return Choice("nvls", "Simple", NVLS_HOP_LAT[sys.link_type],
                      nvls_bus * k / _steps(op, k) if op == "all_reduce" else nvls_bus)
    nodes = sys.nodes(k)
    if nodes > 1 or algo == "hierarchical":
        return _predict_nodes(sys, op, k, nodes, algo, proto, channels)
    hop = HOP_LAT[sys.link_type][algo][p]
    bus = channels * sys.gpu_bw / sys.channels / 1e9  # GB/s
    if sys.library == "rccl" and RCCL_BW_RATIO[algo][p] > 0:
        bus *= RCCL_BW_RATIO[algo][p]
    if algo == "ring":
        latency = BASE_LAT[sys.library]["ring"][p] + _chain_latency(sys, op, k, HOP_LAT[sys.link_type], p)
        if sys.library == "rccl":
            bw = bus
            if proto == "LL" and op in ("broadcast", "reduce") and sys.arch == "cdna3":
                bw *= RCCL_GFX94_CHAIN_LL  # one node of gfx94 GPUs (RCCL's tuning.cc)
        else:
            share = LL_SHARE[sys.arch][0 if op in ("all_reduce", "reduce") else 1]
            bw = {"LL": min(LL_MAX_BW[sys.arch], bus * share),
                  "LL128": min(bus * 0.92, channels * LL128_CHANNEL_BW[sys.arch]), "Simple": bus}[proto]
        ratio = k / _steps(op, k)
    else:  # a chain inside one node: up and down, 2(k-1) hops
        latency = BASE_LAT[sys.library]["tree"][p] + 2 * (k - 1) * hop
        if sys.library == "rccl":  # its model's ratio (above) and correction, none of NCCL's refinements
            return Choice(algo, proto, latency, bus * 0.5, correction=RCCL_TREE_CORRECTION[p], capped=True)
        tree = bus * 0.92
        bw = {"LL": min(LL_MAX_BW[sys.arch], tree / 3.8),
              "LL128": min(tree * 7 / 9, channels * LL128_CHANNEL_BW[sys.arch] * 7 / 9), "Simple": tree}[proto]
        return Choice(algo, proto, latency, bw * 0.5, correction=TREE_CORRECTION[p])
    return Choice(algo, proto, latency, bw * ratio)


def _predict_nodes(sys: System, op: str, k: int, nodes: int, algo: str, proto: str, channels: int) -> Choice:
    """`predict` across nodes, as ``tuning.cc`` does for nNodes > 1: the bandwidth per channel is the node's
    (intra) up to 2 nodes and its network's (inter: the node's NICs over the library's channels) above;
    a ring pays 2(nNodes-1) network steps (all_reduce; nNodes-1 otherwise) at the network per-hop latency
    and its other steps at max(intra per-hop, the net overhead, x3 for Simple); a tree pays
    2 x ((ppn-1) intra + log2(nNodes) network) hops. Its bandwidth: 0.92 of the bus, LL 1/3.8 of that,
    LL128 120/128. The hierarchical all-reduce (not in NCCL's model; only run when named): an intra-node
    reduce-scatter and all-gather (ppn-1 intra steps each) around a ring all-reduce per rail (2(nNodes-1)
    network steps), at the ring's bandwidth."""
    if sys.library == "rccl" and algo != "hierarchical":
        return _predict_nodes_rccl(sys, op, k, nodes, algo, proto, channels)
    p = _P.index(proto)
    ppn = k // nodes
    intra_lat = HOP_LAT[sys.link_type]["ring" if algo == "hierarchical" else algo][p]
    inter_lat = HOP_LAT["network"]["tree" if ppn == 1 else ("ring" if algo == "hierarchical" else algo)][p]
    per_channel = (sys.gpu_bw if nodes <= 2 else sys.nic_bw) / sys.channels / 1e9  # GB/s
    bus = channels * per_channel
    base = BASE_LAT[sys.library]["tree" if algo == "tree" else "ring"][p]
    if algo == "tree":
        latency = base + 2 * ((ppn - 1) * intra_lat + (nodes.bit_length() - 1) * inter_lat)
        tree = bus * 0.92
        bw = {"LL": min(LL_MAX_BW[sys.arch], tree / 3.8), "LL128": tree * 120 / 128, "Simple": tree}[proto]
        return Choice(algo, proto, latency, bw * 0.5, correction=TREE_CORRECTION[p])
    steps = _steps(op, k)
    inter = (2 if op == "all_reduce" else 1) * (nodes - 1)
    overhead = NET_OVERHEAD_US * (3 if proto == "Simple" else 1)
    if algo == "hierarchical":
        latency = base + 2 * (ppn - 1) * intra_lat + inter * inter_lat
    elif op in ("broadcast", "reduce"):  # a chain: the network's hops, whatever the links inside a node
        latency = base + _chain_latency(sys, op, k, HOP_LAT["network"], p)
    else:
        latency = base + (steps - inter) * max(intra_lat, overhead) + inter * inter_lat
    # NCCL charges ring LL a quarter of the bus across nodes whatever the collective (up to 2.20; half from 2.21.5,
    # as LL_SHARE's first entry has it).
    bw = {"LL": min(LL_MAX_BW[sys.arch], bus * LL_SHARE[sys.arch][0]),
          "LL128": min(bus * 0.92, channels * LL128_CHANNEL_BW[sys.arch]), "Simple": bus}[proto]
    plateau = 64 * channels * k if proto == "Simple" and op == "all_reduce" and algo == "ring" else 0
    return Choice(algo, proto, latency, bw * k / steps, plateau)


def _predict_nodes_rccl(sys: System, op: str, k: int, nodes: int, algo: str, proto: str, channels: int) -> Choice:
    """`_predict_nodes` as RCCL's ``tuning.cc`` has it on its matched MI300X models (``tuning_model_5``): the bus
    bandwidth x the model's ratio for the node count (`RCCL_BW_RATIO` up to 2 nodes, `RCCL_BW_RATIO_MANY` above), none
    of NCCL's refinements; network hops from the model (`RCCL_NET_LAT`), intra ones as on one node (`HOP_LAT`); a
    ring all-reduce pays 2 nNodes network steps (NCCL up to 2.22's count, which RCCL 2.21.5 keeps; nNodes - 1 for
    all-gather and reduce-scatter) and its other steps at max(intra hop, RCCL's 2 us net overhead, x3 for Simple);
    broadcast and reduce, whose flag stays 1, the base and one network hop; a tree 2 x ((ppn-1) intra + log2(nNodes)
    network) hops. The bandwidth is then corrected by size (`RCCL_RING_CORRECTION`, `RCCL_TREE_CORRECTION`), and no
    ring plateau: RCCL's HIP build compiles NCCL's out."""
    p = _P.index(proto)
    ppn = k // nodes
    per_channel = (sys.gpu_bw if nodes <= 2 else sys.nic_bw) / sys.channels / 1e9  # GB/s
    bus = channels * per_channel * (RCCL_BW_RATIO if nodes <= 2 else RCCL_BW_RATIO_MANY)[algo][p]
    base = BASE_LAT["rccl"][algo][p]
    intra, inter = HOP_LAT[sys.link_type][algo][p], RCCL_NET_LAT[algo][p]
    if algo == "tree":
        latency = base + 2 * ((ppn - 1) * intra + (nodes.bit_length() - 1) * inter)
        return Choice(algo, proto, latency, bus * 0.5, correction=RCCL_TREE_CORRECTION[p], capped=True)
    steps = _steps(op, k)
    if op in ("broadcast", "reduce"):
        latency = base + _chain_latency(sys, op, k, RCCL_NET_LAT, p)
    else:
        net = 2 * nodes if op == "all_reduce" else nodes - 1
        overhead = RCCL_NET_OVERHEAD_US * (3 if proto == "Simple" else 1)
        latency = base + (steps - net) * max(intra, overhead) + net * inter
    return Choice(algo, proto, latency, bus * k / steps, correction=RCCL_RING_CORRECTION[p], capped=True)


def nvls_eligible(sys: System, op: str, k: int) -> str:
    """Why NVLS cannot run `op` on the first `k` GPUs of `sys` ("" when it can)."""
    if not sys.nvls:
        return "needs an NVLS switch (fabric.switch.nvls on a topology: switch fabric); this platform's fabric has none"
    if op not in NVLS_OPS:
        return f"runs {', '.join(NVLS_OPS)}; {op} does not run by NVLS"
    if "Simple" not in sys.protocols:
        return "runs Simple, which collectives.protocols leaves out"
    if sys.arch not in NVLS_EFFICIENCY or sys.link_type not in NVLS_HOP_LAT:
        return f"needs NVLink and a Hopper or later GPU (collectives.arch {sys.arch}, link_type {sys.link_type})"
    # NCCL counts the GPUs of the communicator's own topology (ncclTopoGetGpuCount), not of the machine: 2 ranks of an
    # 8-GPU node run without NVLS.
    if sys.node_size(k) < NVLS_MIN_NODE_GPUS:
        return (f"needs at least {NVLS_MIN_NODE_GPUS} of the collective's GPUs in a node (NCCL turns it off below); "
                f"it has {sys.node_size(k)}")
    return ""


def reduce_channels(sys: System, algo: str, proto: str, k: int, nbytes: int, channels: int) -> int:
    """NCCL's channel drop for small messages: while nbytes < channels x threads x threshold, one channel fewer."""
    p = _P.index(proto)
    threads = THREADS[sys.library][p]
    threshold = THRESHOLD[p] * (k if algo == "ring" and proto == "LL" else 1)
    nc = channels
    while nc > 1 and nbytes < nc * threads * threshold:
        nc -= 1
    return nc


def check_proto(sys: System, proto: str) -> None:
    """Refuses a `proto` that is not auto or one of NCCL's three, or that the platform does not enable; one
    wording for the tuned collectives and the point-to-point ones."""
    if proto not in ("auto", *_P):
        raise ConfigError(f"proto: expected auto, {', '.join(_P)}, got {proto!r}")
    if proto != "auto" and proto not in sys.protocols:
        raise ConfigError(f"proto: {proto} is not enabled on this platform (collectives.protocols: "
                          f"{', '.join(sys.protocols)})")


def choose(sys: System, op: str, nbytes: int, k: int, algo: str = "auto", proto: str = "auto",
           channels: int = 0) -> tuple[str, str, int]:
    """(algo, proto, channels) for `op` of `nbytes` on k GPUs: the model's least time among the enabled
    protocols and the algorithms `op` has, honouring any explicit choice; channels 0: the tuner's count."""
    if algo not in ("auto", *ALGOS):
        raise ConfigError(f"algo: expected auto, {', '.join(ALGOS)}, got {algo!r}")
    if algo == "nvls":
        why = nvls_eligible(sys, op, k)
        if why:
            raise ConfigError(f"algo: nvls {why}")
        if proto not in ("auto", "Simple"):
            raise ConfigError(f"proto: nvls runs Simple only, got {proto}")
        if channels > NVLS_CHANNELS:
            raise ConfigError(f"channels: nvls runs at most {NVLS_CHANNELS} channels, got {channels}")
    check_proto(sys, proto)
    if type(channels) is not int or not 0 <= channels <= sys.workgroups:
        raise ConfigError(f"channels: expected 0 (the tuner's count) or an integer from 1 to the GPU's "
                          f"{sys.workgroups} workgroups, got {channels!r}")
    algos = ("ring", "tree") if op == "all_reduce" else ("ring",)
    if algo == "tree" and op != "all_reduce":
        raise ConfigError(f"algo: tree runs all_reduce only; {op} runs ring")
    if algo == "hierarchical" and (op != "all_reduce" or sys.nodes(k) < 2):
        raise ConfigError(f"algo: hierarchical runs all_reduce across nodes; {op} on {k} GPUs in "
                          f"{sys.nodes(k)} node(s) does not")
    if algo == "auto" and not nvls_eligible(sys, op, k):
        algos = (*algos, "nvls")
    # NVLS runs Simple only; RCCL never picks tree Simple on one node of gfx94 GPUs (its tuning.cc skips it).
    no_tree_simple = algo == "auto" and sys.library == "rccl" and sys.arch == "cdna3" and sys.nodes(k) == 1
    cands = [predict(sys, op, k, a, p, sys.channels) for a in (algos if algo == "auto" else (algo,))
             for p in (sys.protocols if proto == "auto" else (proto,))
             if (a != "nvls" or p == "Simple") and not (no_tree_simple and (a, p) == ("tree", "Simple"))]
    best = min(cands, key=lambda c: (c.time_us(nbytes), _P.index(c.proto), c.algo))
    if best.algo == "nvls":
        return "nvls", "Simple", channels or nvls_channels(nbytes, k, min(NVLS_CHANNELS, sys.workgroups))
    nc = channels or reduce_channels(sys, best.algo, best.proto, k, nbytes, sys.channels)
    return best.algo, best.proto, nc
