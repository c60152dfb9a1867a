"""Notes on what limited a run's fabric, or what it was asked for and did not do, for the summary.

The packet fabric counts, per link (see ``LinkStats`` in C++), the time a packet ready to leave
its receiving input waited behind a head bound for another output (head-of-line blocking), the
time the link had a free lane and packets waiting that lacked only credits still on their way
back (a buffer shorter than the credit round trip), and the time they waited instead for room in
a next buffer full of packets waiting to go on (back-pressure from congestion further on; not
noted: every incast has it, its senders' links idling while they wait their turn at the
bottleneck, and it costs nothing there). Each GPU counts the peers the fabric
refused its packet trains to, and the time its window (`gpus.max_outstanding`) was full while it had
packets waiting to go (on the flow fabric, whose solver paces the window, the fabric counts the time the
window held paced flows back). A note is printed when one of them matters; see docs/router.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .result import Result

__all__ = ["fabric_notes", "SIGNIFICANT_SHARE", "BUSY_SLACK"]

#: The share of the run a link must spend blocked (head-of-line or for credits), or a GPU with its window full, to be
#: noted.
SIGNIFICANT_SHARE = 0.05
BUSY_SLACK = 1e-6  #: how far a link's busy time may pass the run's before a warning: its picoseconds' rounding


def _worst(r: Result, table: str, column: str) -> tuple[int, float] | None:
    """(row, share of the run) of the row of result table `table` ("links", "gpus") with the most `column` time, if
    that share is significant. A column the run's fabric leaves unavailable (NaN: the flow fabric's queues, a GPU
    window on a fabric that does not count it) is never noted."""
    rows = getattr(r, table)
    if r.kernel_time_ns <= 0 or not len(rows) or column not in (rows.dtype.names or ()):
        return None
    times = rows[column]
    if np.isnan(times).all():
        return None
    i = int(np.nanargmax(times))
    share = float(times[i]) / r.kernel_time_ns
    return (i, share) if share >= SIGNIFICANT_SHARE else None


def fabric_notes(r: Result) -> list[str]:
    """One line per significant limit: head-of-line blocking, credits, refused packet trains, a full window; one per
    fabric whose link bins were widened past fabric.stats.max_bins; and first, a warning if a link was busier than the
    run (a fault of the fabric model)."""
    notes = []
    if over := _faster_than_its_links(r):
        notes.append(over)
    links = r.links
    if hol := _worst(r, "links", "hol_blocked_ns"):
        i, share = hol
        src, dst = links["src"][i], links["dst"][i]
        notes.append(f"note: head-of-line blocking: at the input of link {src} -> {dst}, a packet ready to leave "
                     f"waited behind one bound for another output for {100 * share:.0f}% of the run; "
                     "fabric.switch.vcs 0 (the default) gives every input a queue per output")
    if credit := _worst(r, "links", "credit_stall_ns"):
        i, share = credit
        src, dst = links["src"][i], links["dst"][i]
        notes.append(f"note: credits: link {src} -> {dst} idled with packets waiting for {100 * share:.0f}% of "
                     "the run while its credits were on their way back; fabric.switch.buffer (per lane and "
                     "channel) should cover (serialisation + 2 x link latency + switch latency) x lane bandwidth")
    if "trains_refused" in (r.gpus.dtype.names or ()) and (refused := int(r.gpus["trains_refused"].sum())):
        notes.append(f"note: gpus.train: the fabric refused packet trains on {refused} GPU-to-peer route(s), "
                     "which went packet by packet: the packet fabric carries a train only over a link holding "
                     "nothing but its GPU's own traffic, as in a fully connected node (docs/fabrics.md)")
    if window := _worst(r, "gpus", "window_full_ns"):
        i, share = window
        gpu = r.gpus["gpu"][i]
        notes.append(f"note: gpus.max_outstanding: GPU {gpu}'s window was full, with packets waiting to go, for "
                     f"{100 * share:.0f}% of the run: where its links had room then, the window held it back (its "
                     "round trip under load needs more packets in flight); a run with gpus.max_outstanding raised "
                     "says what it cost (docs/fabrics.md, \"What it reports\")")
    for width_ns, doublings in r.bin_widths:
        if doublings:
            notes.append(f"note: fabric.stats.bin: the link bins were widened {2 ** doublings}x, to {width_ns:g} ns, "
                         "to hold no more than fabric.stats.max_bins of them (16 bytes each, all links together); "
                         "link_bins.csv's start_ns is in that width")
    return notes


def _faster_than_its_links(r: Result) -> str | None:
    """A warning when a link of `r` was busy (its wire bytes at its rate) for longer than the run, or one of its lanes
    was. Every workgroup's writes are acknowledged before it finishes (the release at the end of a kernel), so every
    byte has crossed its links by the kernel time: a link busier than that is a fault of the fabric model, not a
    result. Why: the flow fabric once ran custom-4gpu's NCCL all-to-all at 2.6x its slow link
    (tests/python/test_flow_link_bounds.py keeps the shipped platforms from it; this says so on a user's own). Not
    for a run stopped at limits.sim_time, nor synthetic traffic, whose packets may be on their way when it ends."""
    links = r.links
    if r.partial or r.traffic is not None or r.kernel_time_ns <= 0 or not len(links) \
            or "utilization" not in (links.dtype.names or ()):
        return None
    over = np.maximum(links["utilization"], links["lane_utilization_max"])
    if not np.isfinite(over).any():
        return None
    i = int(np.nanargmax(over))
    if over[i] <= 1 + BUSY_SLACK:
        return None
    return (f"warning: link {links['src'][i]} -> {links['dst'][i]} was busy {over[i]:.3f}x the run (its wire bytes at "
            "its rate): no fabric carries bytes faster than its links, and every byte had crossed by the kernel's "
            "end, so this time is a fault of the fabric model, not a result; please report it with the platform "
            "and profile")
