"""Collectives issued back to back, as nccl-tests times them: the host's cost per call against the GPU's.

nccl-tests (``src/common.cu``, ``benchTime``) starts a host timer, enqueues ``iters`` collectives on
one stream without a CUDA graph, waits for the stream and divides. The host's work per call (the
library's enqueue and the kernel launch, `System.host_call_ns`: H) overlaps the previous kernel, so
in steady state one call costs max(H, g + K): the host's cost when it is the slower, else the
kernel K plus the GPU's gap between two kernels of one stream (g, ``gpus.launch``: the GPU applies
it to the first kernel, the harness to each next one).

The harness is simulated, not computed: in a profile of `calls` collectives, each GPU runs
- the collective's C workgroups (`Plan.workgroups`: a channel each, or, where an all-to-all's or send/recv's
  sends and receives are apart, two; the functions below take C as `channels`); after each call but the last,
  each signals the GPU's own
  ``harness.done`` flag (a release: the kernel ends when its writes are done), and before each call
  but the first, it waits until all C of the previous call have (the stream's order), waits until
  the host has issued this call (``harness.issued``), then spends g (the launch gap);
- workgroup C, the host: it issues call i + 1 H after call i. Call 0 was issued g before its kernel
  started (the GPU's launch), so the host waits H - g and then H per further call, signalling
  ``harness.issued`` each time;
- workgroup C + 1, a marker: it waits for the GPU's second-to-last call to end, so its finish time is
  that call's end on this GPU.

So the kernel of call i + 1 starts at max(end of kernel i + g, host issue of call i + 1), and
`period_ns` reads one call's time from a run as the harness sees it: the last call's end minus the
previous one's, both the latest over the GPUs.

`eidola perf` simulates the loop's steady state instead (`host_floor`): one call, and beside its
channel workgroups the host's issue of the next call as one more workgroup per GPU that is busy
until H. Every program starts at the launch gap g, so the run's kernel time is max(H, g + K): the
period of nccl-tests' timed loop once its warm-up calls have filled the stream, at the cost of one
call. Two simulated calls give the same max with the transients of a loop's first calls (a first
kernel slower or faster than the next, the flags' wake-ups standing in for the stream's order),
which the measured average of nccl-tests' 20 timed iterations after 5 warm-up ones does not have.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .fifo import WAIT

if TYPE_CHECKING:
    from ...run.result import Result
    from ..builder import ProfileBuilder

__all__ = ["DONE", "ISSUED", "EXTRA_WORKGROUPS", "STEADY_WORKGROUPS", "declare", "before_call", "after_call",
           "host_and_marker", "period_ns", "host_floor"]

DONE = "harness.done"  #: per GPU: channel workgroups that have ended a call (C per call)
ISSUED = "harness.issued"  #: per GPU: calls after the first that the host has issued
EXTRA_WORKGROUPS = 2  #: the host and the marker, after the C channel workgroups
STEADY_WORKGROUPS = 1  #: a steady one-call run (host_floor): the host alone, after the C channel workgroups


def declare(b: ProfileBuilder) -> None:
    """Declare the harness's two flags."""
    b.flag(DONE)
    b.flag(ISSUED)


def after_call(b: ProfileBuilder, gpus: int, channels: int) -> None:
    """Every channel workgroup ends its call: a release-scoped add to its own GPU's DONE."""
    for g in range(gpus):
        for c in range(channels):
            b.program(g, c).signal(g, DONE, "add", 1)


def before_call(b: ProfileBuilder, gpus: int, channels: int, call: int, gap_ns: float) -> None:
    """Every channel workgroup waits for call `call` - 1 to end on its GPU and for the host's issue of
    `call`, then spends the launch gap."""
    for g in range(gpus):
        for c in range(channels):
            p = b.program(g, c)
            p.wait(DONE, ">=", channels * call, **WAIT)
            p.wait(ISSUED, ">=", call, **WAIT)
            if gap_ns > 0:
                p.compute(ns=gap_ns)


def host_and_marker(b: ProfileBuilder, gpus: int, channels: int, calls: int, host_ns: float, gap_ns: float) -> None:
    """Workgroup `channels`: the host issuing calls 1 .. calls-1; workgroup `channels` + 1: the marker of the
    second-to-last call's end."""
    for g in range(gpus):
        host = b.program(g, channels)
        for i in range(1, calls):
            wait = host_ns - gap_ns if i == 1 else host_ns
            if wait > 0:
                host.compute(ns=wait)
            host.signal(g, ISSUED, "add", 1)
        b.program(g, channels + 1).wait(DONE, ">=", channels * (calls - 1), **WAIT)


def host_floor(b: ProfileBuilder, gpus: int, channels: int, host_ns: float, gap_ns: float) -> None:
    """Workgroup `channels` of every GPU: the host issuing the next call, busy until `host_ns` after time zero
    (it starts at the launch gap `gap_ns`, as every program does), so a one-call run's kernel time is
    max(host_ns, gap_ns + kernel): the steady state of back-to-back calls."""
    for g in range(gpus):
        p = b.program(g, channels)
        if host_ns - gap_ns > 0:
            p.compute(ns=host_ns - gap_ns)


def period_ns(result: Result, channels: int) -> float:
    """One call's time in a run of a back-to-back profile: the last call's end (the run's kernel time) minus
    the previous call's (the latest marker finish). channels: the collective's workgroups, `Plan.workgroups`."""
    wg = result.workgroups
    marker = wg["finish_ns"][wg["wg"] == channels + 1]
    return float(result.kernel_time_ns - np.max(marker))
