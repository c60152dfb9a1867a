"""End-to-end: the fused GEMV + AllReduce on the ideal fabric, against timing worked out by hand.

Notation: L fabric one-way latency, M memory latency, I poll interval, T tile compute, R reduce
compute. With one workgroup per GPU and one packet per write (256 bytes), every transfer op is
blocking, so a write or a signal costs one round trip: out (L), memory (M), back (L):
    rtt = 2L + M.
A signal's atomic is applied when its memory access completes: L + M after issue. A poll is a
local read that completes M after issue; the next one is issued I later, so polls complete
every M + I.
"""

import math

import eidola
from eidola.generators import gemv_allreduce

L, M, I = 500.0, 300.0, 100.0
T, R = 2000.0, 400.0
RTT = 2 * L + M


def _platform(write_platform, gpus, mem_bw="1000PB/s"):
    # 1000 PB/s makes an access occupy the memory for under half a picosecond, i.e. 0 ps.
    return eidola.load_platform(write_platform(gpus=gpus, workgroups=1, latency=f"{L:g}ns",
                                               mem_latency=f"{M:g}ns", mem_bw=mem_bw))


def test_symmetric_4gpu_kernel_time(write_platform):
    # Each phase (reduce-scatter, all-gather): 3 writes and 3 signals, one rtt each. Every peer's
    # flag has landed before the waits start (the last one lands L + M after the last signal is
    # issued, rtt - L before that signal's ack), so each of the 3 waits costs one poll: M.
    #   kernel = T + R + 2 * (6 rtt + 3 M) = 2000 + 400 + 2 * (7800 + 900) = 19 800 ns
    expected = T + R + 2 * (6 * RTT + 3 * M)
    prof = gemv_allreduce(gpus=4, workgroups=1, vector_bytes=4 * 256, tile_ns=T, reduce_ns=R, interval_ns=I)
    res = eidola.simulate(_platform(write_platform, 4), prof)
    assert res.kernel_time_ns == expected == 19800.0
    assert list(res.gpus["finish_ns"]) == [expected] * 4
    assert list(res.gpus["flag_reads"]) == [6] * 4          # 6 waits, one poll each
    assert list(res.gpus["atomics"]) == [6] * 4             # 3 peers x 2 phases signal each GPU
    assert list(res.gpus["bytes_sent"]) == [2 * 3 * (256 + 8)] * 4


def test_symmetric_4gpu_with_memory_bandwidth(write_platform):
    # At 1 TB/s (1 byte/ps) a 256-byte write occupies the memory 256 ps, an atomic or poll 8 ps.
    # The rotated peer order means each memory receives one request at a time, so nothing queues:
    #   kernel = 19 800 ns + 2 * 3 * (256 + 8 + 8) ps = 19 801.632 ns
    prof = gemv_allreduce(gpus=4, workgroups=1, vector_bytes=4 * 256, tile_ns=T, reduce_ns=R, interval_ns=I)
    res = eidola.simulate(_platform(write_platform, 4, mem_bw="1TB/s"), prof)
    assert res.kernel_time_ns == 19800.0 + 2 * 3 * (256 + 8 + 8) / 1000


def _two_gpu_expected(delay):
    """GPU 0 computes `delay` longer; GPU 1 polls for GPU 0's flags. Returns (kernel, gpu0, gpu1, gpu1 polls)."""
    t0 = T + delay                                   # GPU 0's tile ends
    rs0_applied = t0 + RTT + L + M                   # after its write, its signal lands on GPU 1
    gpu1_wait = T + 2 * RTT                          # GPU 1 starts waiting for rs_0
    first = gpu1_wait + M                            # its first poll completes
    polls_rs = 1 + max(0, math.ceil((rs0_applied - first) / (M + I)))
    e1 = first + (polls_rs - 1) * (M + I)            # the poll that sees rs_0
    assert e1 != rs0_applied                         # no tie between a poll and the flag's arrival
    # GPU 0: rs_1 landed long ago -> one poll; reduce; all-gather write + signal; wait for ag_1.
    gpu0_ag_wait = t0 + 2 * RTT + M + R + 2 * RTT
    ag1_applied = e1 + R + RTT + L + M               # GPU 1's all-gather signal lands on GPU 0
    assert ag1_applied < gpu0_ag_wait                # so GPU 0 needs one poll
    gpu0_finish = gpu0_ag_wait + M
    # GPU 1: reduce, all-gather write + signal, then poll for ag_0.
    gpu1_ag_wait = e1 + R + 2 * RTT
    ag0_applied = t0 + 2 * RTT + M + R + RTT + L + M
    polls_ag = 1 + max(0, math.ceil((ag0_applied - (gpu1_ag_wait + M)) / (M + I)))
    gpu1_finish = gpu1_ag_wait + M + (polls_ag - 1) * (M + I)
    return max(gpu0_finish, gpu1_finish), gpu0_finish, gpu1_finish, polls_rs + polls_ag


def test_skewed_2gpu_polling_granularity(write_platform):
    # D = 1000 ns: rs_0 lands at 5100; GPU 1's polls complete at 4900 (sees 0) and 5300 (sees 1).
    # Then GPU 0 finishes at 9200 and GPU 1 at 8600 (its first ag poll, at 8600, sees ag_0 of 8400).
    assert _two_gpu_expected(1000) == (9200.0, 9200.0, 8600.0, 3)
    plat = _platform(write_platform, 2)
    for delay in (0, 1000, 3000, 7777):
        kernel, g0, g1, polls = _two_gpu_expected(delay)
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
