"""Waits between streams in imported traces (`Item.after`, timeline.py; Kineto's cudaStreamWaitEvent, kineto.py).

Without them every stream of a rank replayed on its own: a collective slowed by the fabric never held back the
compute that needs its result, so an imported step took its traced time on any fabric (a user trial, 2026-12-07:
660.55 ms on mi300x, dgx-h100 and a 0.2 GB/s fabric alike). The expected times are worked out by hand from the
lanes; the Kineto checks hold the inferred waits to the trace's own order of events.
"""

from __future__ import annotations

import gzip
import json

import pytest
from test_import import SHARED

import eidola
from eidola.workload.importers.kineto import import_kineto, ns
from eidola.workload.importers.timeline import Coll, Item, Lane, Report, build_profile

MIB = 1 << 20


def _two_ranks(wait: bool) -> dict[int, list[Lane]]:
    """Two ranks, each a compute stream and a communication stream, in ns: compute 0-1,000, a 16 MiB all-reduce
    traced at 1,000-2,000 (after the first compute item), compute 3,000-4,000 (after the all-reduce, if `wait`)."""
    lanes = {}
    for r in range(2):
        first, last = Item(0, 1000), Item(3000, 4000)
        coll = Item(1000, 2000, Coll("all_reduce", 16 * MIB, (0, 1), "allreduce"), after=[first])
        if wait:
            last.after.append(coll)
        lanes[r] = [Lane("compute", [first, last]), Lane("comm", [coll])]
    return lanes


def _finishes(write_platform, lanes: dict[int, list[Lane]], bandwidth: str) -> dict[tuple[int, int], float]:
    """(gpu, wg) -> finish ns of `lanes` replayed on 2 GPUs of a zero-latency switch at `bandwidth` a link."""
    prof = build_profile("waits", lanes, 1, "ring", "syncmon", Report())
    plat = eidola.load_platform(write_platform(f"""
        eidola: 1
        name: pair
        gpus: {{count: 2, workgroups: 2, memory: {{latency: 0ns, bandwidth: 1000TB/s}}}}
        fabric: {{model: flow, topology: switch, link: {{bandwidth: {bandwidth}, latency: 0ns, header: 0B, count: 1}},
                 switch: {{latency: 0ns}}}}
        """))
    return {(int(w["gpu"]), int(w["wg"])): float(w["finish_ns"]) for w in eidola.simulate(plat, prof).workgroups}


def _run(write_platform, wait: bool) -> dict[int, float]:
    return {w: t for (g, w), t in _finishes(write_platform, _two_ranks(wait), "1GB/s").items() if g == 0}


def test_a_stream_waits_for_the_collective_it_needs(write_platform):
    # The all-reduce moves 2 (P - 1) / P x 16 MiB = 16 MiB each way on each GPU's 1 GB/s link: about 16.8 ms, far
    # beyond its traced 1 us. Lane 1 (comm) ends when it does; lane 0's last item starts once it has (a poll of
    # 50 ns at most) and takes its traced 1,000 ns. Without the wait lane 0 ends at its traced 4,000 ns.
    wire_ns = 16 * MIB / 1e9 * 1e9
    free = _run(write_platform, wait=False)
    assert free[0] == pytest.approx(4000, abs=1)
    assert free[1] >= 1000 + wire_ns
    held = _run(write_platform, wait=True)
    assert held[1] == pytest.approx(free[1], rel=1e-9)  # the collective itself is not moved by its waiter
    assert held[1] + 1000 <= held[0] <= held[1] + 1000 + 50


def test_a_collective_waits_for_the_compute_before_it(write_platform):
    # Rank 1's first compute item takes 1,000,000 ns instead of 1,000: the all-reduce (after it) cannot start
    # before it ends on rank 1, so it ends after 1 ms + its wire time (16 MiB each way at 1,000 GB/s, 16.8 us), on
    # both ranks.
    lanes = _two_ranks(wait=False)
    lanes[1][0].items[0].end = 1_000_000
    lanes[1][0].items[1].start, lanes[1][0].items[1].end = 1_002_000, 1_003_000
    comm = [t for (_, w), t in _finishes(write_platform, lanes, "1000GB/s").items() if w == 1]
    wire_ns = 16 * MIB / 1000e9 * 1e9
    assert all(1_000_000 + wire_ns <= t <= 1_000_000 + wire_ns * 1.01 + 100 for t in comm), comm


def _trace_events():
    with gzip.open(SHARED / "nccl_data.json.gz") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_kineto_nccl_kernels_wait_for_the_compute_launched_before_them():
    # The outside reference is the trace itself. ProcessGroupNCCL makes its stream wait for the compute stream
    # before every collective, so each NCCL kernel waits for the last compute kernel its thread launched before
    # it, and that kernel ended before the NCCL kernel started in the trace. Worked out from the raw events:
    events = _trace_events()
    kernel = {e["args"]["correlation"]: e for e in events if e.get("cat") == "kernel"}
    expected = {}
    last_compute: dict[object, dict] = {}
    for e in sorted((e for e in events if e.get("cat") == "cuda_runtime"), key=lambda e: (e["tid"], e["ts"])):
        k = kernel.get(e["args"].get("correlation"))
        if k is None:
            continue
        if k["name"].startswith("ncclKernel"):
            before = last_compute[e["tid"]]
            expected[ns(k["ts"])] = ns(before["ts"] + before["dur"])
        else:
            last_compute[e["tid"]] = k
    assert len(expected) == 21  # 15 all-reduces and 6 broadcasts
    _, report = import_kineto([str(SHARED / "nccl_data.json.gz")])
    from eidola.workload.importers.kineto import _load, _rank_lanes

    path = SHARED / "nccl_data.json.gz"
    lanes = _rank_lanes(path, _load(path), 2, "device", Report())
    colls = [it for lane in lanes for it in lane.items if it.coll]
    assert len(colls) == 21
    for c in colls:  # the lanes keep the trace's clock, in ns
        assert len(c.after) == 1, (c.start, c.after)
        (d,) = c.after
        assert d.coll is None and d.end == expected[c.start]
    # Every wait kept is one the trace's own times allow: the awaited item ended before the waiting one began.
    waits = [(it, d) for lane in lanes for it in lane.items for d in it.after]
    assert waits and all(d.end <= it.start for it, d in waits)
    assert report.ignored["waits between streams that the trace's times contradict (the waiting kernel started "
                          "before the awaited one ended)"] > 0


def test_kineto_step_time_responds_to_the_fabric(write_platform):
    # The user's question: what does a slower fabric expose? Replayed on 2 GPUs at 100 GB/s and at 0.2 GB/s, the
    # compute stream's last workgroup ends later on the slow fabric, by at least the slowest collective's extra
    # time that it waits for. (Before, the compute stream ended at the same instant on both.)
    prof, _ = import_kineto([str(SHARED / "nccl_data.json.gz")], ranks=2)

    def compute_end(bandwidth: str) -> float:
        plat = eidola.load_platform(write_platform(f"""
            eidola: 1
            name: pair
            gpus: {{count: 2, workgroups: {prof.workgroups}}}
            fabric: {{model: flow, topology: switch, link: {{bandwidth: {bandwidth}, latency: 0ns, header: 0B}},
                     switch: {{latency: 0ns}}}}
            """))
        wgs = eidola.simulate(plat, prof).workgroups
        return max(float(w["finish_ns"]) for w in wgs if w["wg"] == 0)

    fast, slow = compute_end("100GB/s"), compute_end("0.2GB/s")
    # The largest all-reduce the compute stream waits for is 31.5 MB (the trace's largest, 7,883,008 floats):
    # 2 (P - 1) / P x S = S each way at 0.2 GB/s is 158 ms, at 100 GB/s 0.3 ms.
    assert slow - fast >= 7_883_008 * 4 / 0.2e9 * 1e9 - 7_883_008 * 4 / 100e9 * 1e9
