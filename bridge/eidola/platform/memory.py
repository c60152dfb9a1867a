"""How much host memory simulating a platform takes, estimated before anything is built.

Elaboration refuses a platform whose estimate exceeds ``limits.memory`` (bad input, exit 2), so a
typo such as a 1 GiB switch buffer or a fully connected fabric of thousands of GPUs is named with
its figure instead of setting off the kernel's out-of-memory killer. The simulation's child then
runs under that same limit (`run.simulate`), which catches what the estimate does not model (a
large profile, an open-loop traffic source whose queues grow).

The costs are measured (docs/reliability.md, "Memory"): the private memory of the simulation's
child (``child_private_kb``) for platforms that vary one term at a time, on this machine's build
(x86-64, glibc, g++ -O2). Each term follows the data structure that pays for it:

- per GPU: `PER_GPU` plus `PER_WORKGROUP` for each resident workgroup (its state machine). A GPU holds
  that state only up to the highest workgroup given a program, but the profile is not known here: the
  estimate counts every resident one, an upper bound;
- per pair of GPUs: `PER_GPU_PAIR` (per-peer counters and the pairs table);
- per packet-fabric link: `PER_LINK` (its wait histogram of 513 counters, its output queue,
  counters), plus `PER_QUEUE` for each virtual channel at its receiving input: 2 message classes x
  ``switch.vcs`` (or, with ``vcs: 0``, one per output of the receiving router, at most 64) x 2 on
  rings and tori (their datelines double the channels). A channel's slots grow as packets arrive,
  so ``switch.buffer`` itself costs nothing up front: the slots ever used are bounded by the
  packets in flight (`SLOT` each, twice over for the doubling growth), not by the buffer's size;
- per (router node, GPU): `PER_ROUTE` (the routing table: first choice, count, and a link);
- per worker thread of an AT-to-LT adapter (a plugin fabric with ``protocol: lt``; one adapter in front of
  each GPU's binding): `PER_WORKER`. A worker is an SC_THREAD made when a request finds every other one busy,
  with SystemC's default stack: ``SC_DEFAULT_STACK_SIZE``, 256 KiB in Debian's libsystemc 2.3.4 on x86-64
  (the headers only declare it; the library's constant holds 0x40000), and the adapter asks for no other
  size (a plain sc_spawn). The child's limit is on its address space (RLIMIT_AS), which counts a stack whole
  whether its pages are touched or not. The worst case is the most a GPU can have in flight: per GPU,
  ``fabric.plugin.workers`` when set (> 0, capped by the window), else its ``max_outstanding``. 4 GPUs with
  16,384-packet windows make 65,536 workers, 17 GB of stacks: the term names ``fabric.plugin.workers``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Component

__all__ = ["BASE", "PER_GPU", "PER_WORKGROUP", "PER_GPU_PAIR", "PER_LINK", "PER_QUEUE", "PER_ROUTE", "SLOT",
           "WORKER_STACK", "PER_WORKER", "MAPS_PER_WORKER", "adapter_workers", "lt_adapter_threads", "max_map_count",
           "map_limit_problem", "estimate",
           "default_limit", "limit_of", "fabric_links", "format_bytes"]

BASE = 4 * 2**20        #: the child's own memory before any model is built (bytes)
PER_GPU = 14 * 2**10    #: an eidolon GPU, its memory model, SyncMon and initiator (bytes)
PER_WORKGROUP = 208     #: one resident workgroup (bytes)
PER_GPU_PAIR = 16       #: one (source, destination) pair of GPUs (bytes)
PER_LINK = 6 * 2**10    #: one packet-fabric link without its buffer slots (bytes)
PER_QUEUE = 130         #: one virtual channel of an input, with its first 4 slots (measured: 129-135 bytes)
SLOT = 4                #: one input-buffer slot (a packet index)
MAX_VOQ = 64            #: channels per class at most with vcs 0 (PacketFabric's kMaxVcs)
PER_ROUTE = 12          #: one routing-table entry, per router node and destination GPU (bytes)
WORKER_STACK = 256 * 2**10  #: SystemC's default SC_THREAD stack (SC_DEFAULT_STACK_SIZE, libsystemc 2.3.4, x86-64)
#: one AT-to-LT adapter worker thread: its stack and its process (measured: 263,090 bytes of address space per
#: sc_spawn'd thread, 1,000 and 4,000 threads alike)
PER_WORKER = WORKER_STACK + 2**10


def default_limit() -> int:
    """The default of ``limits.memory``: 80% of this machine's RAM (16 GiB where it cannot be read).

    Why 80%: a run that needs more than that would push the machine into swap or the OOM killer,
    taking the user's other work with it; below it, the limit never stops a run the machine can hold.
    """
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 20 * 2**30
    return int(total * 0.8)


def limit_of(limits: dict[str, Any]) -> int:
    """A platform's memory limit in bytes: its ``limits.memory``, else `default_limit()`."""
    return int(limits.get("memory") or default_limit())


def format_bytes(n: float) -> str:
    """A byte count as people read it: 31 GB, 420 MB, 12 kB (decimal units, as limits.memory accepts)."""
    for factor, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if n >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{int(n)} B"


def fabric_links(values: dict[str, Any], gpus: int) -> tuple[int, int]:
    """(links, router nodes) of a PacketFabric with these canonical parameter values, by arithmetic.

    Counts what `tlm_models/src/topology.cpp` builds, without building it (a fully connected
    fabric of 16,384 GPUs has 268 million links: counting must not list them).
    """
    kind = values.get("topology", "fully_connected")
    n = gpus
    if kind == "fully_connected":
        return n * (n - 1), n
    if kind == "switch":
        return 2 * n, n + 1
    if kind == "ring":
        if n < 2:
            return 0, n
        return (2 * n if values.get("bidirectional", True) and n > 2 else n), n
    if kind in ("mesh2d", "torus2d"):
        dims = [int(x) for x in str(values.get("dims", "")).split()]
        x, y = (dims[0], dims[1]) if len(dims) == 2 else (n, 1)
        if kind == "mesh2d":
            return 2 * ((x - 1) * y + (y - 1) * x), n
        return 2 * (x * y if x > 2 else (x - 1) * y) + 2 * (x * y if y > 2 else (y - 1) * x), n
    if kind == "hierarchical":
        per = max(1, int(values.get("hierarchical.gpus_per_node", 1)))
        nodes = max(1, n // per)
        spines = int(values.get("hierarchical.spines", 1))
        switched = values.get("hierarchical.intra") == "switch"
        intra = 2 * per if switched else per * (per - 1)
        links = nodes * (intra + 2 * per + 2 * spines)
        return links, n + nodes * (2 if switched else 1) + spines
    if kind == "rail":
        per = max(1, int(values.get("rail.gpus_per_node", 1)))
        nodes = max(1, n // per)
        nics = int(values.get("nic.count", 0)) or per
        spines = int(values.get("rail.spines", 1))
        switched = values.get("rail.intra") == "switch"
        intra = 2 * per if switched else per * (per - 1)
        links = nodes * (intra + 2 * per + 2 * nics) + 2 * nics * spines
        return links, n + nodes * ((1 if switched else 0) + nics) + nics + spines
    if kind == "custom":
        edges = [e for e in str(values.get("custom.edges", "")).split(";") if e]
        return len(edges), n + int(values.get("custom.switches", 0))
    return 0, n


def _channels_per_link(values: dict[str, Any], gpus: int, links: int) -> int:
    """Virtual channels summed over every link's receiving input (both message classes, datelines included).

    With ``vcs: 0`` an input has one channel per output of its router (two ejections and its
    links, at most `MAX_VOQ`), so the count follows each topology's router degrees.
    """
    vcs = int(values.get("switch.vcs", 0))
    dateline = 2 if values.get("topology") in ("ring", "torus2d") else 1
    if vcs > 0:
        return links * 2 * vcs * dateline
    kind = values.get("topology", "fully_connected")

    def voq(out_links: int) -> int:
        return min(2 + out_links, MAX_VOQ)

    if kind == "fully_connected":
        per_input = {links: voq(gpus - 1)}
    elif kind == "switch":  # n links into the switch (n outputs), n into GPU routers (1 output)
        per_input = {links // 2: voq(gpus), links - links // 2: voq(1)}
    elif kind == "ring":
        per_input = {links: voq(2 if values.get("bidirectional", True) and gpus > 2 else 1)}
    elif kind in ("mesh2d", "torus2d"):
        per_input = {links: voq(4)}
    else:  # hierarchical, rail, custom: router degrees vary; count every input at the most a router may have
        per_input = {links: MAX_VOQ}
    return sum(count * channels for count, channels in per_input.items()) * 2 * dateline


MAPS_PER_WORKER = 2  #: memory mappings a worker thread's stack takes (the stack and its guard page)


def max_map_count() -> int:
    """The most memory mappings a process may have (Linux's vm.max_map_count; 65,530 by default)."""
    try:
        return int(open("/proc/sys/vm/max_map_count").read())
    except (OSError, ValueError):
        return 65530


def adapter_workers(workers: int, windows: list[int]) -> int:
    """The most worker threads the AT-to-LT adapters in front of an LT plugin fabric can make: one adapter per GPU
    whose `windows` (max_outstanding) are given, each making at most `workers` (``fabric.plugin.workers``) when that
    is set (> 0), and never more than its GPU's window: an adapter makes a thread only for a request that finds
    every other one busy, and a GPU has at most max_outstanding requests in flight."""
    return sum(min(w, workers) if workers > 0 else w for w in windows)


def _windows(components: list[Component], values: dict[str, dict[str, Any]]) -> list[int]:
    """Each profile-replaying GPU's window (max_outstanding), in packets."""
    return [int(values[g.name].get("max_outstanding", 0)) for g in components if g.spec.replays_profile]


def lt_adapter_threads(fabric: Component, windows: list[int]) -> int:
    """The most AT-to-LT adapter worker threads `fabric` can make for GPUs with these `windows` (`adapter_workers`);
    0 unless it is a plugin fabric with ``protocol: lt``."""
    plugin = fabric.spec.plugin
    if fabric.spec.role != "fabric" or plugin is None or plugin.protocol != "lt":
        return 0
    return adapter_workers(plugin.workers, windows)


def map_limit_problem(components: list[Component], values: dict[str, dict[str, Any]]) -> str:
    """Why the LT adapters' worker threads could not all be made ("" if they can): each stack takes
    `MAPS_PER_WORKER` memory mappings, and past the process's vm.max_map_count the next thread fails to start
    (found at 4 GPUs x 8,192-packet windows: "stack setup failed", then an LLVM out-of-memory abort), whatever
    the memory limit. A fifth of the mappings is left to the simulator and its libraries."""
    windows = _windows(components, values)
    maps = max_map_count()
    allowed = maps * 4 // 5 // MAPS_PER_WORKER
    for c in components:
        threads = lt_adapter_threads(c, windows)
        if threads > allowed:
            return (f"the AT-to-LT adapters in front of this LT plugin fabric may make "
                    f"{threads} worker threads (one per packet the GPUs can have in flight), more than the {allowed} "
                    f"this machine's vm.max_map_count ({maps}) lets one process start; set "
                    f"fabric.plugin.workers to at most {max(1, allowed // max(1, len(windows)))} "
                    "per GPU, or lower gpus.max_outstanding")
    return ""


def estimate(components: list[Component], values: dict[str, dict[str, Any]], gpus: int) -> tuple[int, str, str]:
    """(bytes, the largest term as a phrase, the key that sets it) for simulating these components.

    `values` holds each component's canonical parameter values; `gpus` is the number of GPUs.
    Third-party plugins cost what their own code allocates, which cannot be known here: they
    count as nothing (the child's memory limit still applies to them); but the AT-to-LT adapters Eidola puts in
    front of an LT plugin fabric count, at their worst case (`adapter_workers` x `PER_WORKER`).
    """
    terms: list[tuple[int, str, str]] = [(BASE, "the simulator itself", ""),
                                         (PER_GPU_PAIR * gpus * gpus, f"{gpus} x {gpus} GPU pairs", "gpus.count")]
    # Every packet in the fabric is a request or a response of an outstanding transaction.
    windows = _windows(components, values)
    in_flight = 2 * sum(windows)
    for c in components:
        v = values[c.name]
        if c.spec.replays_profile:
            terms.append((PER_GPU + PER_WORKGROUP * int(v.get("workgroups", 0)),
                          "GPUs and their workgroups", c.where("workgroups")))
        elif c.spec.name == "PacketFabric":
            links, nodes = fabric_links(v, gpus)
            channels = _channels_per_link(v, gpus, links)
            terms.append((channels * PER_QUEUE, f"{channels} virtual channels on {links} links", c.where("switch.vcs")))
            terms.append((2 * SLOT * in_flight, "buffer slots of the packets in flight", "gpus.max_outstanding"))
            terms.append((links * PER_LINK, f"{links} links ({v.get('topology')})", c.where("topology")))
            terms.append((nodes * gpus * PER_ROUTE, f"routes of {nodes} routers to {gpus} GPUs", c.where("topology")))
        elif (threads := lt_adapter_threads(c, windows)) > 0:
            limit = c.spec.plugin.workers if c.spec.plugin is not None else 0
            each = (f"fabric.plugin.workers = {limit} per GPU" if limit else
                    f"one per packet of the GPUs' windows, gpus.max_outstanding = {'/'.join(map(str, sorted(set(windows))))}")
            terms.append((threads * PER_WORKER, f"the stacks of {threads} AT-to-LT adapter worker threads, "
                          f"{format_bytes(PER_WORKER)} each ({each}; fabric.plugin.workers caps them per GPU)",
                          "fabric.plugin.workers"))
    # The per-GPU terms are one per GPU: merge them, so the largest term names the whole cost.
    merged: dict[str, tuple[int, str, str]] = {}
    for size, what, key in terms:
        old = merged.get(what)
        merged[what] = (size + (old[0] if old else 0), what, key)
    total = sum(t[0] for t in merged.values())
    _, what, key = max(merged.values(), key=lambda t: t[0])
    return total, what, key
