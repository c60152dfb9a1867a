"""Eidolon GPU behaviour against hand-worked numbers: wait modes, SyncMon, memory, atomics.

Platform for all of these (unless a test says otherwise): ideal fabric with one-way latency
L = 500 ns; memory latency M = 300 ns and a bandwidth so high (1000 PB/s) that an access occupies
it for 0 ps. So a remote signal issued at t is applied at t + L + M and acknowledged at t + 2L + M;
a local poll issued at t completes (and samples the flag) at t + M.
"""

import math

import pytest

import eidola
from eidola.profile import ProfileBuilder

L, M = 500.0, 300.0
D = 10000.0            # GPU 0 computes this long before it signals
APPLIED = D + L + M    # = 10 800 ns: when GPU 0's first signal lands in GPU 1's memory
RTT = 2 * L + M


def _plat(write_platform, workgroups=4, **overrides):
    plat = eidola.load_platform(write_platform(gpus=2, workgroups=workgroups, latency="500ns", mem_latency="300ns",
                                               mem_bw="1000PB/s"), overrides=overrides)
    return plat


def _signaller(b, signals=1, flags=("f",), compute=D):
    p = b.program(gpu=0, wg=0).compute(ns=compute)
    for flag in flags:
        for _ in range(signals):
            p.signal(dst=1, flag=flag, op="add", value=1)


def _builder(workgroups=1, flags=("f",)):
    b = ProfileBuilder(gpus=2, workgroups=workgroups, name="t")
    for f in flags:
        b.flag(f)
    return b


def test_poll_read_count_for_a_known_wait(write_platform):
    # Polls complete at M + k(M + I). The first that sees the flag: k = ceil((APPLIED - M) / (M + I)).
    interval = 100.0
    k = math.ceil((APPLIED - M) / (M + interval))      # ceil(10 500 / 400) = 27
    b = _builder()
    _signaller(b)
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1, mode="poll", interval_ns=interval)
    res = eidola.simulate(_plat(write_platform), b.build())
    assert res.gpus["flag_reads"][1] == k + 1 == 28
    assert res.gpus["finish_ns"][1] == M + k * (M + interval) == 11100.0
    assert res.workgroups[res.workgroups["gpu"] == 1]["wait_ns"][0] == 11100.0


def test_spin_yield_backs_off(write_platform):
    # Intervals double from I = 100 ns up to 1 600 ns: completions at 300, 700, 1200, 1900, 3000, 4900,
    # 6800, 8700, 10 600, 12 500 -> the 10th poll (12 500 >= 10 800) sees the flag.
    completions, t, gap = [], M, 100.0
    while True:
        completions.append(t)
        if t >= APPLIED:
            break
        t += gap + M
        gap = min(2 * gap, 1600.0)
    assert completions[-1] == 12500.0 and len(completions) == 10
    b = _builder()
    _signaller(b)
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1, mode="spin_yield", interval_ns=100,
                                max_interval_ns=1600)
    res = eidola.simulate(_plat(write_platform), b.build())
    assert res.gpus["flag_reads"][1] == len(completions)
    assert res.gpus["finish_ns"][1] == completions[-1]


def test_syncmon_wakes_at_the_write_with_no_reads(write_platform):
    # Arm at 0 (the monitor request completes at M and finds 0), sleep, wake when the signal is
    # applied: exactly APPLIED = arrival (D + L) + M. No flag reads at all.
    b = _builder()
    _signaller(b)
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    res = eidola.simulate(_plat(write_platform), b.build())
    g1 = res.gpus[1]
    assert g1["flag_reads"] == 0
    assert g1["finish_ns"] == APPLIED == 10800.0
    assert (g1["syncmon_arms"], g1["syncmon_wakeups"], g1["syncmon_spurious"], g1["syncmon_peak"]) == (1, 1, 0, 1)


def test_syncmon_full_log_falls_back_to_polling(write_platform):
    # One entry. wg 0 arms f first; wg 1 finds the log full at M and polls g from there:
    # completions at 2M + k(M + I). GPU 0 signals f (applied 10 800, acked 11 300) then g
    # (applied 11 300 + L + M = 12 100). wg 1's first poll seeing g: k = ceil((12 100 - 600) / 400) = 29.
    g_applied = D + RTT + L + M
    k = math.ceil((g_applied - 2 * M) / (M + 100))
    b = _builder(workgroups=2, flags=("f", "g"))
    _signaller(b, flags=("f", "g"))
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    b.program(gpu=1, wg=1).wait(flag="g", cond=">=", value=1, mode="syncmon", interval_ns=100)
    res = eidola.simulate(_plat(write_platform, workgroups=2, **{"gpus.syncmon.entries": 1}), b.build())
    g1 = res.gpus[1]
    assert g1["syncmon_fallbacks"] == 1 and g1["syncmon_wakeups"] == 1
    assert g1["flag_reads"] == k + 1 == 30
    wgs = res.workgroups[res.workgroups["gpu"] == 1]
    assert list(wgs["finish_ns"]) == [APPLIED, 2 * M + k * (M + 100)]


@pytest.mark.parametrize("wake, expected", [
    ("all", [APPLIED] * 3),                                   # one signal satisfies all three
    ("one", [APPLIED, APPLIED + RTT, APPLIED + 2 * RTT]),     # each signal releases one, in arming order
])
def test_wake_one_versus_wake_all(write_platform, wake, expected):
    b = _builder(workgroups=3)
    _signaller(b, signals=3)
    for w in range(3):
        b.program(gpu=1, wg=w).wait(flag="f", cond=">=", value=1, mode="syncmon", wake=wake)
    res = eidola.simulate(_plat(write_platform, workgroups=3), b.build())
    wgs = res.workgroups[res.workgroups["gpu"] == 1]
    assert list(wgs["finish_ns"]) == expected
    assert res.gpus["syncmon_wakeups"][1] == 3 and res.gpus["flag_reads"][1] == 0


def test_monitor_without_condition_rechecks_and_counts_spurious_wakeups(write_platform):
    # The monitor wakes the waiter on every write; it re-reads (M) and sleeps again while f < 3.
    # Signals land at 10 800, 12 100, 13 400; re-reads complete M later: the third one sees 3.
    b = _builder()
    _signaller(b, signals=3)
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=3, mode="syncmon")
    res = eidola.simulate(_plat(write_platform, **{"gpus.syncmon.check_in_monitor": False}), b.build())
    g1 = res.gpus[1]
    assert (g1["syncmon_wakeups"], g1["syncmon_spurious"], g1["flag_reads"]) == (3, 2, 3)
    assert g1["finish_ns"] == APPLIED + 2 * RTT + M


def test_atomics_from_many_gpus_sum_under_contention(write_platform):
    # 7 GPUs x 4 workgroups each add (gpu) to GPU 0's counter, all at once, through a memory of
    # 1 TB/s: 28 atomics. The waiter needs the exact sum 4 * (1 + ... + 7) = 112, so a lost or
    # doubled update would leave it stuck (a deadlock, exit 3).
    b = ProfileBuilder(gpus=8, workgroups=4, name="sum")
    b.flag("count")
    for g in range(1, 8):
        for w in range(4):
            b.program(gpu=g, wg=w).signal(dst=0, flag="count", op="add", value=g)
    b.program(gpu=0, wg=0).wait(flag="count", cond="==", value=112, mode="syncmon")
    plat = eidola.load_platform(write_platform(gpus=8, workgroups=4, mem_bw="1TB/s"))
    res = eidola.simulate(plat, b.build())
    assert res.gpus["atomics"][0] == 28
    assert res.gpus["syncmon_wakeups"][0] == 1


def test_compare_swap_takes_a_lock_once(write_platform):
    # Two GPUs race a compare-swap 0 -> 1 on GPU 0's lock at the same instant. Exactly one may
    # succeed, so the lock ends at 1 (an add, or two successes, would make it 2 and leave the
    # final poll stuck: a deadlock).
    b = ProfileBuilder(gpus=3, workgroups=1, name="cas")
    b.flag("lock")
    for g in (1, 2):
        b.program(gpu=g, wg=0).signal(dst=0, flag="lock", op="cas", compare=0, value=1)
    b.program(gpu=0, wg=0).wait(flag="lock", cond="!=", value=0, mode="syncmon").compute(ns=5000) \
        .wait(flag="lock", cond="==", value=1, mode="poll")
    res = eidola.simulate(eidola.load_platform(write_platform(gpus=3, workgroups=1)), b.build())
    assert res.gpus["atomics"][0] == 2


def test_local_traffic_is_charged_to_memory_bandwidth_and_polls_queue_behind_it(write_platform):
    # At 1 TB/s (1 byte/ps), 1 000 local reads of 256 B occupy the memory 256 000 ps; they end at
    # 256 + 300 ns. A poll issued at 0 by another workgroup (its flag already satisfies == 0) waits
    # behind them: 256 ns + 8 ps + 300 ns.
    b = ProfileBuilder(gpus=1, workgroups=2, name="local")
    b.flag("f")
    b.program(gpu=0, wg=0).local(reads=1000, writes=0, nbytes=256)
    b.program(gpu=0, wg=1).wait(flag="f", cond="==", value=0, mode="poll")
    plat = eidola.load_platform(write_platform(gpus=1, workgroups=2, mem_bw="1TB/s"))
    res = eidola.simulate(plat, b.build())
    assert list(res.workgroups["finish_ns"]) == [556.0, 556.008]
    assert res.gpus["reads"][0] == 1000 and res.gpus["flag_reads"][0] == 1


def test_compute_in_cycles_uses_the_clock(write_platform):
    # 2 100 cycles at 2.1 GHz = 1 000 ns; at 1.05 GHz, 2 000 ns.
    b = ProfileBuilder(gpus=1, workgroups=1, name="cycles")
    b.program(gpu=0, wg=0).compute(cycles=2100)
    prof = b.build()
    assert eidola.simulate(eidola.load_platform(write_platform(gpus=1, workgroups=1)), prof).kernel_time_ns == 1000
    slow = eidola.load_platform(write_platform(gpus=1, workgroups=1), overrides={"gpus.clock": "1.05GHz"})
    assert eidola.simulate(slow, prof).kernel_time_ns == 2000


def test_max_outstanding_limits_pipelining(write_platform):
    # 16 packets of 256 B to GPU 1 with at most 4 in flight: four waves of one round trip each.
    b = ProfileBuilder(gpus=2, workgroups=1, name="window")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=4096)
    plat = _plat(write_platform, **{"gpus.max_outstanding": 4})
    res = eidola.simulate(plat, b.build())
    assert res.kernel_time_ns == 4 * RTT
    # The window is full with packets waiting through the first three waves (the fourth issues the last
    # packets): 3 RTT of the run's 4, which the summary notes, naming the GPU.
    assert list(res.gpus["window_full_ns"]) == [3 * RTT, 0]
    (note,) = [n for n in res.summary()["notes"] if "max_outstanding" in n]
    assert "GPU 0's window was full" in note and "75% of the run" in note
    plat = _plat(write_platform, **{"gpus.max_outstanding": 16})
    res = eidola.simulate(plat, b.build())
    assert res.kernel_time_ns == RTT
    assert list(res.gpus["window_full_ns"]) == [0, 0] and res.summary()["notes"] == []


def test_a_flow_gpus_window_is_counted_by_its_fabric(tmp_path):
    # On the flow fabric the solver paces the window, so the fabric counts the time it held the GPU's flows
    # back: 16 packets, 4 in flight, so the first 4 go as a burst and the other 12 are paced at 4 a round trip,
    # 3 round trips, as long as the packet GPU's window is full with packets waiting (3 of its 4 round trips,
    # test_max_outstanding_limits_pipelining). The packet fabric on the same file is the reference.
    b = ProfileBuilder(gpus=2, workgroups=1, name="window")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=4096)
    path = tmp_path / "flow.yaml"
    path.write_text("eidola: 1\nname: flow-pair\ngpus: {count: 2, workgroups: 1, max_outstanding: 4}\n"
                    "fabric: {model: flow, topology: fully_connected, link: {bandwidth: 64GB/s, latency: 200ns}}\n")
    packet = eidola.simulate(eidola.load_platform(path, overrides={"fabric.model": "packet"}), b.build())
    round_trip = packet.kernel_time_ns / 4
    assert packet.gpus["window_full_ns"][0] == pytest.approx(3 * round_trip, rel=0.005)
    res = eidola.simulate(eidola.load_platform(path), b.build())
    full = list(res.gpus["window_full_ns"])
    assert full[0] == pytest.approx(3 * round_trip, rel=0.01) and full[1] == 0
    (note,) = [n for n in res.summary()["notes"] if "max_outstanding" in n]
    assert "GPU 0's window was full" in note
    # Room for all 16: one burst, never paced, never full. What is left is the default buffer of 64 packets, short of
    # these links' credit round trip, (272 B / 64 GB/s + 2 x 200 ns + 50 ns) x 64 GB/s / 272 B = 106.9: 107 packets,
    # 64/106.9 = 60% of the rate (too few packets here to feel it; the summary warns from the figures alone).
    res = eidola.simulate(eidola.load_platform(path, overrides={"gpus.max_outstanding": 16}), b.build())
    (warning,) = res.summary()["notes"]
    assert list(res.gpus["window_full_ns"]) == [0, 0] and warning.startswith("warning: ")
    assert "fabric.switch.buffer (not given: the default): 64 packets" in warning and "= 107 packets" in warning
    assert "at most 60% of its rate" in warning


def test_remote_read_costs_a_round_trip_and_counts_at_the_owner(write_platform):
    # 4 KiB read from GPU 1 as 16 packets, all in flight: one round trip (2L + M); GPU 1's memory
    # counts 16 data reads and GPU 0 receives the 4 096 bytes.
    b = ProfileBuilder(gpus=2, workgroups=1, name="read")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).read(dst=1, buffer="data", offset=0, nbytes=4096)
    res = eidola.simulate(_plat(write_platform), b.build())
    assert res.kernel_time_ns == RTT
    assert res.gpus["reads"][1] == 16 and res.gpus["bytes_received"][0] == 4096
    assert res.gpus["bytes_sent"][0] == 0
