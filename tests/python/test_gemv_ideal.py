"""End-to-end: the fused GEMV + AllReduce on the ideal fabric, against timing worked out by hand.

The derivation (posted writes, per-peer releases, polling) is in gemv_timing.py; the numbers
below are worked through once by hand in the comments.
"""

import pytest
from gemv_timing import symmetric_kernel_ns, two_gpu_ns

import eidola
from eidola.generators import gemv_allreduce
from eidola.profile import ProfileBuilder

L, M, I = 500.0, 300.0, 100.0
T, R = 2000.0, 400.0
RTT = 2 * L + M


def _platform(write_platform, gpus, mem_bw="1000PB/s"):
    # 1000 PB/s makes an access occupy the memory for under half a picosecond, i.e. 0 ps.
    return eidola.load_platform(write_platform(gpus=gpus, workgroups=1, latency=f"{L:g}ns",
                                               mem_latency=f"{M:g}ns", mem_bw=mem_bw))


def test_symmetric_4gpu_kernel_time(write_platform):
    # Each phase: the 3 writes go at once; each peer's signal goes one rtt later (1300 ns) and lands
    # L + M = 800 ns after that. Polling from the moment the signals go, the first wait's polls
    # complete at +300, +700, +1100: the third sees the flag; the other two flags are there (one
    # poll each, 300 ns). Phase = 1300 + 1100 + 600 = 3000 ns; the all-gather's last signals are
    # acknowledged 2 rtt = 2600 ns after its writes went, before its waits end.
    #   kernel = T + 3000 + R + 3000 = 8400 ns   (with blocking writes and signals it was 19 800)
    expected = symmetric_kernel_ns(4, L, M, I, T, R)
    prof = gemv_allreduce(gpus=4, workgroups=1, vector_bytes=4 * 256, tile_ns=T, reduce_ns=R, interval_ns=I)
    res = eidola.simulate(_platform(write_platform, 4), prof)
    assert res.kernel_time_ns == expected == 8400.0
    assert list(res.gpus["finish_ns"]) == [expected] * 4
    assert list(res.gpus["flag_reads"]) == [10] * 4         # per phase: 3 polls, then 1 + 1
    assert list(res.gpus["atomics"]) == [6] * 4             # 3 peers x 2 phases signal each GPU
    assert list(res.gpus["bytes_sent"]) == [2 * 3 * (256 + 8)] * 4


def test_posted_writes_to_7_peers_cost_one_round_trip_not_7():
    # One workgroup writes 64 KiB to each of 7 peers over a fabric with a 2 us round trip
    # (L = 1 us, M = 300 ns; unbounded memory bandwidth, so the wire is the only cost besides the
    # round trip; max_outstanding covers all 7 x 256 packets). Posted: every packet goes at once
    # and the program ends when the last is acknowledged: 2L + M. Blocking: 7 round trips.
    doc = {"eidola": 1, "name": "posted", "fabric": {"model": "ideal", "latency": "1us"},
           "gpus": {"count": 8, "workgroups": 1, "max_outstanding": 4096,
                    "memory": {"latency": "300ns", "bandwidth": "1000PB/s"}}}
    plat = eidola.platform.platform_from_dict(doc)
    times = {}
    for blocking in (False, True):
        b = ProfileBuilder(gpus=8, workgroups=1, name="seven-peers")
        b.buffer("data", nbytes=65536)
        p = b.program(gpu=0, wg=0)
        for peer in range(1, 8):
            p.write(dst=peer, buffer="data", offset=0, nbytes=65536, blocking=blocking)
        times[blocking] = eidola.simulate(plat, b.build()).kernel_time_ns
    assert times[False] == 2 * 1000 + 300
    assert times[True] == 7 * (2 * 1000 + 300)


def _release_platform():
    doc = {"eidola": 1, "name": "release", "fabric": {"model": "ideal", "latency": f"{L:g}ns"},
           "gpus": {"count": 3, "workgroups": 1, "max_outstanding": 4096,
                    "memory": {"latency": f"{M:g}ns", "bandwidth": "1TB/s"}}}
    return eidola.platform.platform_from_dict(doc)


def test_a_signal_lands_after_the_data_it_releases():
    # GPU 0 posts 64 KiB (256 packets) to GPU 1, then signals GPU 1; GPU 1 sleeps in SyncMon.
    # At 1 TB/s GPU 1's memory takes 256 ps per packet: they all arrive at L and the last is
    # written at L + 256 x 256 ps + M, acknowledged L later. Only then does the signal go; it is
    # applied at GPU 1 L + 8 ps + M after that (the memory is idle again), and wakes the waiter.
    b = ProfileBuilder(gpus=3, workgroups=1, name="release")
    b.flag("ready")
    b.buffer("data", nbytes=65536)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=65536).signal(dst=1, flag="ready")
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="syncmon")
    res = eidola.simulate(_release_platform(), b.build(), trace=True)
    last_data_written = L + 256 * 0.256 + M
    signal_applied = last_data_written + L + L + 0.008 + M
    waiter = res.ops[(res.ops["gpu"] == 1)]
    assert waiter["end_ns"][0] == signal_applied > last_data_written
    assert res.flags[(1, "ready")] == 1


def test_a_peer_scoped_signal_waits_only_for_that_peer():
    # GPU 0 posts 64 KiB to GPU 2, then signals GPU 1. A workgroup-scoped release waits for the
    # 256 packets to GPU 2 (the last written at L + 256 x 256 ps + M, acknowledged L later); a
    # peer-scoped one goes at once, since nothing was written to GPU 1.
    ends = {}
    for scope in ("workgroup", "peer"):
        b = ProfileBuilder(gpus=3, workgroups=1, name="scope")
        b.flag("ready")
        b.buffer("data", nbytes=65536)
        b.program(gpu=0, wg=0).write(dst=2, buffer="data", offset=0, nbytes=65536).signal(dst=1, flag="ready",
                                                                                          scope=scope)
        b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="syncmon")
        res = eidola.simulate(_release_platform(), b.build(), trace=True)
        ends[scope] = float(res.ops[res.ops["gpu"] == 1]["end_ns"][0])
    assert ends["peer"] == L + 0.008 + M
    assert ends["workgroup"] == (L + 256 * 0.256 + M + L) + L + 0.008 + M


def test_a_peer_scoped_signal_waits_for_that_peer_after_writes_to_another():
    # GPU 0 posts 64 KiB to GPU 2, then 256 B to GPU 1, then signals one of them, peer-scoped;
    # the signalled GPU waits in SyncMon. Everything is issued at 0 (4,096 may be outstanding).
    # Signalling GPU 2 waits for its 256 packets, acknowledged at L + 256 x 256 ps + M + L, though
    # the workgroup wrote GPU 1 since; signalling GPU 1 waits only for its one packet, written at
    # L + 256 ps + M (GPU 1's memory is idle) and acknowledged L later.
    ends = {}
    for peer in (2, 1):
        b = ProfileBuilder(gpus=3, workgroups=1, name="two-peers")
        b.flag("ready")
        b.buffer("data", nbytes=65536)
        (b.program(gpu=0, wg=0).write(dst=2, buffer="data", offset=0, nbytes=65536)
         .write(dst=1, buffer="data", offset=0, nbytes=256).signal(dst=peer, flag="ready", scope="peer"))
        b.program(gpu=peer, wg=0).wait(flag="ready", cond=">=", value=1, mode="syncmon")
        res = eidola.simulate(_release_platform(), b.build(), trace=True)
        ends[peer] = float(res.ops[res.ops["gpu"] == peer]["end_ns"][0])
    assert ends[2] == pytest.approx((L + 256 * 0.256 + M + L) + L + 0.008 + M, abs=1e-9)
    assert ends[1] == pytest.approx((L + 0.256 + M + L) + L + 0.008 + M, abs=1e-9)


def test_incast_of_posted_writes_is_serialised_by_the_memory():
    # Two GPUs each post 4 x 256 bytes to GPU 0 at once. GPU 0's memory (1 TB/s: 256 ps a packet)
    # serves the 8 packets one after another from their common arrival at L, so the last is
    # written at L + 8 x 256 ps + M and acknowledged L later: the kernel's end.
    doc = {"eidola": 1, "name": "incast", "fabric": {"model": "ideal", "latency": f"{L:g}ns"},
           "gpus": {"count": 3, "workgroups": 1, "memory": {"latency": f"{M:g}ns", "bandwidth": "1TB/s"}}}
    b = ProfileBuilder(gpus=3, workgroups=1, name="incast")
    b.buffer("data", nbytes=2048)
    for g in (1, 2):
        b.program(gpu=g, wg=0).write(dst=0, buffer="data", offset=(g - 1) * 1024, nbytes=1024)
    res = eidola.simulate(eidola.platform.platform_from_dict(doc), b.build())
    assert res.kernel_time_ns == 2 * L + M + 8 * 0.256


def test_skewed_2gpu_polling_granularity(write_platform):
    # D = 1000 ns. GPU 0's rs signal goes at 3000 + 1300 and lands on GPU 1 at 5100; GPU 1 polls
    # from 3300: completions at 3600, 4000, ..., 5200, the fifth seeing it. GPU 1's rs signal
    # landed on GPU 0 at 4100, before GPU 0's first poll completes (4600). All-gather: GPU 0 waits
    # from 6300 for GPU 1's signal, landing at 5200 + 400 + 2100 = 7700: polls end at 7800. GPU 1
    # waits from 6900 for GPU 0's, landed at 7100: its first poll (7200) sees it, but its signal
    # is acknowledged only at 5200 + 400 + 2600 = 8200, which ends the kernel.
    assert two_gpu_ns(1000, L, M, I, T, R) == (8200.0, 7800.0, 8200.0, 6)
    plat = _platform(write_platform, 2)
    for delay in (0, 1000, 3000, 7777):
        kernel, g0, g1, polls = two_gpu_ns(delay, L, M, I, T, R)
        prof = gemv_allreduce(gpus=2, workgroups=1, vector_bytes=2 * 256, tile_ns=[T + delay, T],
                              reduce_ns=R, interval_ns=I)
        res = eidola.simulate(plat, prof)
        assert res.kernel_time_ns == kernel, delay
        assert list(res.gpus["finish_ns"]) == [g0, g1], delay
        assert res.gpus["flag_reads"][1] == polls, delay


def test_busy_wait_reads_grow_linearly_with_wakeup_delay(write_platform):
    # The paper's observation: GPU 1's flag reads grow by one per (M + I) of GPU 0's delay.
    plat = _platform(write_platform, 2)
    reads = []
    for delay in (4000, 8000, 12000):
        prof = gemv_allreduce(gpus=2, workgroups=1, vector_bytes=512, tile_ns=[T + delay, T], reduce_ns=R,
                              interval_ns=I)
        reads.append(int(eidola.simulate(plat, prof).gpus["flag_reads"][1]))
    assert reads[1] - reads[0] == reads[2] - reads[1] == 4000 / (M + I)
