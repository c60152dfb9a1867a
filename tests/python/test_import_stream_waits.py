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
from eidola.workload.importers.timeline import Coll, Item, Lane, Report, build_profile, replicate

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


def test_replicas_copy_long_chains_of_waits():
    # Two NCCL streams (two process groups) and a compute stream linking them: 400 collectives on stream 17, each
    # after a compute kernel that waits for the collective before it, and one on stream 13 at the end. Lanes sort by
    # name, so copying "stream 13" first meant following the whole chain: copy.deepcopy passed the recursion
    # limit (found in review, 2026-12-07). Each replica's waits must name its own copies.
    s13, s17, s7 = [], [], []
    t = 0
    for i in range(400):
        comp = Item(t, t + 5, after=[s17[-1]] if s17 else [])
        s7.append(comp)
        (s13 if i == 399 else s17).append(Item(t + 10, t + 15, Coll("all_reduce", 64, (0, 1), "ar"), after=[comp]))
        t += 20
    lanes = replicate([Lane("stream 13", s13), Lane("stream 17", s17), Lane("stream 7", s7)], 2, "x", Report())
    for r in (0, 1):
        mine = {id(it) for lane in lanes[r] for it in lane.items}
        waits = [d for lane in lanes[r] for it in lane.items for d in it.after]
        assert len(waits) == 799 and all(id(d) in mine for d in waits)
    assert not {id(it) for lane in lanes[0] for it in lane.items} & {id(it) for lane in lanes[1] for it in lane.items}


@pytest.mark.parametrize("api", ["cuda", "hip"])
def test_a_wait_before_a_copy_holds_the_kernel_after_the_copy_on_that_stream(api):
    # One host thread: an NCCL kernel on stream 13 and its end record; a compute kernel on stream 7 and its record;
    # a wait, then a copy on stream 13 (the stream that waits), then a compute kernel on stream 7, then an NCCL kernel
    # on stream 13. The wait is stream 13's: the compute kernel after it must not wait for the NCCL kernel (it did
    # while a copy left the wait pending, found in review), and the next kernel on stream 13 waits for the compute.
    ev, items = [], {}

    def kernel(corr, stream, ts, cat="kernel"):
        k = {"ph": "X", "cat": cat, "name": "k", "ts": ts, "dur": 1.0, "tid": stream, "args": {"correlation": corr}}
        ev.append(k)
        if cat == "kernel":
            items[corr] = Item(ns(ts), ns(ts + 1))
        return k

    def call(name, ts, corr=None):  # ROCm traces name the same calls hip*
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name.replace("cuda", api), "ts": ts, "dur": 0.01,
                   "tid": "1", "args": {"correlation": corr} if corr else {}})

    kernel(1, "13", 1.0), call("cudaLaunchKernel", 0.5, 1), call("cudaEventRecord", 0.6)
    kernel(2, "7", 3.0), call("cudaLaunchKernel", 2.5, 2), call("cudaEventRecord", 2.6)
    call("cudaStreamWaitEvent", 2.7)
    kernel(3, "13", 5.0, "gpu_memcpy"), call("cudaMemcpyAsync", 2.8, 3)
    kernel(4, "7", 10.0), call("cudaLaunchKernel", 2.9, 4)
    kernel(5, "13", 12.0), call("cudaLaunchKernel", 3.0, 5)
    from eidola.workload.importers.kineto import _stream_waits

    _stream_waits(ev, {id(e): items[e["args"]["correlation"]] for e in ev if e["cat"] == "kernel"}, Report())
    assert items[4].after == []
    assert items[5].after == [items[2]]


def test_with_several_workgroups_a_wait_counts_every_workgroup_of_every_earlier_item(write_platform):
    # --workgroups 2: each awaited item adds 2 to its lane's flag (one per workgroup), so the wait for the comm
    # lane's second awaited item needs 4. Comm: a 64 KiB all-reduce, then a 16 MiB one (16.8 ms at 1 GB/s); compute:
    # one item after the first, one after the second. Counting items instead of workgroups would release the last
    # compute item after the first all-reduce, at its traced 9,000 ns.
    lanes = {}
    for r in range(2):
        small = Item(1000, 2000, Coll("all_reduce", 64 << 10, (0, 1), "small"))
        large = Item(3000, 4000, Coll("all_reduce", 16 * MIB, (0, 1), "large"))
        lanes[r] = [Lane("compute", [Item(2500, 2600, after=[small]), Item(8000, 9000, after=[large])]),
                    Lane("comm", [small, large])]
    prof = build_profile("waits", lanes, 2, "ring", "syncmon", Report())
    plat = eidola.load_platform(write_platform("""
        eidola: 1
        name: pair
        gpus: {count: 2, workgroups: 4, memory: {latency: 0ns, bandwidth: 1000TB/s}}
        fabric: {model: flow, topology: switch, link: {bandwidth: 1GB/s, latency: 0ns, header: 0B, count: 1},
                 switch: {latency: 0ns}}
        """))
    done = {(int(w["gpu"]), int(w["wg"])): float(w["finish_ns"]) for w in eidola.simulate(plat, prof).workgroups}
    comm_end = max(done[0, 2], done[0, 3])
    assert comm_end >= 3000 + 16 * MIB / 1e9 * 1e9  # the large all-reduce's 16 MiB each way at 1 GB/s
    for w in (0, 1):  # the compute lane's workgroups: the large all-reduce, then the item's 1,000 ns
        assert comm_end + 1000 <= done[0, w] <= comm_end + 1000 + 50
