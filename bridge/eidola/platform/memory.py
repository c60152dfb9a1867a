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
- per (router node, GPU): `PER_ROUTE` (the routing table: first choice, count, and a link).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Component

__all__ = ["BASE", "PER_GPU", "PER_WORKGROUP", "PER_GPU_PAIR", "PER_LINK", "PER_QUEUE", "PER_ROUTE", "SLOT", "estimate",
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


def estimate(components: list[Component], values: dict[str, dict[str, Any]], gpus: int) -> tuple[int, str, str]:
    """(bytes, the largest term as a phrase, the key that sets it) for simulating these components.

    `values` holds each component's canonical parameter values; `gpus` is the number of GPUs.
    Third-party plugins cost what their own code allocates, which cannot be known here: they
    count as nothing (the child's memory limit still applies to them).
    """
    terms: list[tuple[int, str, str]] = [(BASE, "the simulator itself", ""),
                                         (PER_GPU_PAIR * gpus * gpus, f"{gpus} x {gpus} GPU pairs", "gpus.count")]
    # Every packet in the fabric is a request or a response of an outstanding transaction.
    in_flight = sum(2 * int(values[c.name].get("max_outstanding", 0)) for c in components if c.spec.replays_profile)
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
    # The per-GPU terms are one per GPU: merge them, so the largest term names the whole cost.
    merged: dict[str, tuple[int, str, str]] = {}
    for size, what, key in terms:
        old = merged.get(what)
        merged[what] = (size + (old[0] if old else 0), what, key)
    total = sum(t[0] for t in merged.values())
    _, what, key = max(merged.values(), key=lambda t: t[0])
    return total, what, key
