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

A credit note gives the stalled link's own figures (platform.credits: its kind of link, its buffer), worked at
the link's mean packet where a bare-count buffer charged its small packets (acknowledgements, flags, read
requests) a whole slot each. Where no link's credit stall is noted, or none can be (the flow fabric paces by
credits but counts no stalls), a buffer short of a full packet's round trip by the platform's figures is warned of.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..platform.credits import DOC, buffer_warnings

if TYPE_CHECKING:
    from .result import Result

__all__ = ["fabric_notes", "link_overrun", "SIGNIFICANT_SHARE", "BUSY_SLACK"]

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
    """One line per significant limit: head-of-line blocking, credits (measured, else a buffer short of its links'
    round trip by the platform's figures), refused packet trains, a full window; one per fabric whose link bins were
    widened past fabric.stats.max_bins; and first, a warning if a link was busier than the run (a fault of the
    fabric model)."""
    notes = []
    if over := link_overrun(r):
        notes.append(over)
    links = r.links
    if hol := _worst(r, "links", "hol_blocked_ns"):
        i, share = hol
        src, dst = links["src"][i], links["dst"][i]
        notes.append(f"note: head-of-line blocking: at the input of link {src} -> {dst}, a packet ready to leave "
                     f"waited behind one bound for another output for {100 * share:.0f}% of the run; "
                     "fabric.switch.vcs 0 (the default) gives every input a queue per output")
    if credit := _worst(r, "links", "credit_stall_ns"):
        notes.append(_credit_note(r, *credit))
    else:  # none measured (or none to measure: the flow fabric): what the platform's own figures say
        notes += buffer_warnings(list(r.link_credits))
    if "trains_refused" in (r.gpus.dtype.names or ()) and (refused := int(r.gpus["trains_refused"].sum())):
        notes.append(f"note: gpus.train: the fabric refused packet trains on {refused} GPU-to-peer route(s), "
                     "which went packet by packet: the packet fabric carries a train only over a link holding "
                     "nothing but its GPU's own traffic, as in a fully connected node (docs/fabrics.md)")
    if held := _requests_held(r):
        notes.append(held)
    if window := _worst(r, "gpus", "window_full_ns"):
        i, share = window
        gpu = r.gpus["gpu"][i]
        # Why not always suggest a larger window: where links idle for credits, the acknowledgements that free the
        # window wait for those credits too (ring-8gpu one way with a bare-count buffer: window full 99% of the run,
        # and 8x the window ran 0.3% faster), so the buffer is what to change.
        tail = ("links idled for credits too (note above), which holds back the acknowledgements that free the "
                "window: a larger window may gain nothing until fabric.switch.buffer covers them" if credit else
                "a run with gpus.max_outstanding raised says what it cost (docs/fabrics.md, \"What it reports\")")
        notes.append(f"note: gpus.max_outstanding: GPU {gpu}'s window was full, with packets waiting to go, for "
                     f"{100 * share:.0f}% of the run: where its links had room then, the window held it back (its "
                     f"round trip under load needs more packets in flight); {tail}")
    for width_ns, doublings in r.bin_widths:
        if doublings:
            notes.append(f"note: fabric.stats.bin: the link bins were widened {2 ** doublings}x, to {width_ns:g} ns, "
                         "to hold no more than fabric.stats.max_bins of them (16 bytes each, all links together); "
                         "link_bins.csv's start_ns is in that width")
    return notes


#: At least this many requests on a GPU, nearly all held to their response, before _requests_held speaks.
HELD_MIN_REQUESTS = 16


def _requests_held(r: Result) -> str | None:
    """A note when a GPU's requests nearly all had their END_REQ only with their BEGIN_RESP: the base protocol's
    request exclusion then allowed it one transaction in flight, whatever its window. Why: a target that implements
    only b_transport, declared `protocol: at`, answers every request that way (tlm_utils' simple socket converts
    nb_transport to b_transport), and ran 36x slower than declared `lt` without a word (a user trial, 2026-12-07)."""
    names = r.gpus.dtype.names or ()
    if "requests_held" not in names:
        return None
    sent, held = r.gpus["requests"], r.gpus["requests_held"]
    worst = [i for i in range(len(sent)) if sent[i] >= HELD_MIN_REQUESTS and held[i] >= 0.9 * sent[i]]
    if not worst:
        return None
    i = max(worst, key=lambda k: held[k] / sent[k])
    return (f"note: GPU {r.gpus['gpu'][i]}'s fabric ended {int(held[i])} of its {int(sent[i])} requests only with their "
            "response (no END_REQ before BEGIN_RESP), so the base protocol's request exclusion let it have one "
            "transaction in flight at a time, whatever gpus.max_outstanding; an IP that implements only b_transport "
            "is to be declared fabric.plugin.protocol: lt, which puts an AT-to-LT adapter in front of it "
            "(docs/third_party_ip.md, \"AT or LT\")")


def _credit_note(r: Result, i: int, share: float) -> str:
    """The note on link `i` of `r`, which idled for credits for `share` of the run: what its buffer needed, from the
    platform's figures for that kind of link (platform.credits) and the packets the link carried."""
    links = r.links
    src, dst = int(links["src"][i]), int(links["dst"][i])
    head = (f"note: credits: link {src} -> {dst} idled with packets waiting for "
            f"{100 * share:.0f}% of the run while its credits were on their way back")
    kinds = [k for k in r.link_credits if k.covers(r.node_name(src), r.node_name(dst))]
    if not kinds:  # a fabric of the user's own, or links without names: the rule, without figures
        return (head + "; fabric.switch.buffer (per lane and channel) should cover (serialisation + 2 x link latency "
                "+ switch latency) x lane bandwidth")
    k = max(kinds, key=lambda k: k.needed() / k.credits)
    packets = int(links["packets"][i])
    mean = float(links["wire_bytes"][i]) / packets if packets else float(k.wire)
    full = math.ceil(k.needed() - 1e-9)
    if not k.in_bytes and mean < 0.9 * k.wire:
        # A bare count charges a 16-byte acknowledgement a whole packet's credit: at the link's mean packet the
        # round trip needs far more credits than full packets do (ring-8gpu one way: 335 against 60).
        packets_worth = max(k.credits, full)  # the same buffer in bytes, or the full packets' round trip if more
        per = math.ceil(k.wire / k.flit) * k.flit  # a full packet's flits, in bytes
        return (f"{head}. {k.buffer_key} is a bare count, {k.given()}, and each acknowledgement, flag and read "
                f"request takes a whole packet slot of it: the {packets} packets this link carried averaged "
                f"{mean:.0f} wire bytes, and at that size a lane needs about {k.formula(mean)} of credit, where full "
                f"packets need {full}. Give the buffer in bytes ({packets_worth} x {per} B = {packets_worth * per}B), which "
                f"counts credits in {k.flit}-byte flits, so a small packet takes a small share ({DOC})")
    if k.short:
        return f"{head}; {k.buffer_key}, {k.given()}, is short of {k.links}'s round trip, {k.formula()}: {k.advice()}"
    return (f"{head}; {k.buffer_key}, {k.given()}, covers {k.links}'s round trip at zero load, {k.formula()}, so "
            "under load the credits took longer to come back: a run with a larger buffer says what it cost")


def link_overrun(r: Result) -> str | None:
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
