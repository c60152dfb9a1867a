"""Issue 25's validation table: the flow fabric against the packet fabric, and both against wire bounds.

Every case runs one profile on a shipped platform twice, with `fabric.model` switched and nothing
else, and checks flow / packet - 1 against the issue's bound for its row. Nothing is derived from
the flow fabric's own output: each case also checks the packet fabric (and the flow fabric)
against a bound worked out by hand from the platform file, so a change that moved both fabrics
the same wrong way would still fail.

Wire arithmetic (docs/fabrics.md): a write of n packets of payload P puts n (P + h) bytes on every
link of its route and an acknowledgement of `ack` bytes per packet on the reverse route; a link of
`lanes` lanes at B bytes/s carries lanes x B. A packet of L wire bytes crosses H hops at zero load
in zl(L, H) = L/B + H (lat + sw) + (H - 1) F/B (cut-through, F = 16-byte flits). So a stream of
n packets through a bottleneck of wire W bytes per packet takes about n W / (lanes B) plus one
packet's trip, the target memory (M + P / 5.3 TB/s) and the acknowledgement's trip.

A case the flow fabric does not meet is marked xfail(strict), saying
what it measured and why (docs/fabrics.md, "When to trust which model"); if it starts to pass, the
mark must go. Cases whose comment says "knife edge" move by a few tenths of a percent with the
order of the solver's floating-point sums.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from zero_load import zero_load_ns

import eidola
from eidola.generators import all_gather, all_to_all, direct_allreduce, reduce_scatter, ring_allreduce
from eidola.platform import FLOW_COUNTERPART
from eidola.profile import ProfileBuilder
from eidola.workload.variability import start_skews

MIB = 1 << 20
P = 256                 # max_payload on every shipped platform
M = 300.0 + P / 5.3e12 * 1e9  # target memory: latency + one packet at 5.3 TB/s, ns
FLIT = 16

# The shipped platforms' link figures (platforms/*.yaml), per direction:
# (lane bandwidth B, lanes, latency ns, header h, ack bytes, switch latency ns, hops GPU to GPU)
MI300X = dict(B=64e9, lanes=1, lat=174.0, h=85, ack=16, sw=100.0, hops=1)
SWITCH = dict(B=100e9, lanes=4, lat=150.0, h=16, ack=16, sw=100.0, hops=2)
# rail-16gpu.yaml's hops, (bytes/s, latency ns): PCIe to the NIC, the NIC links, the direct link inside a node;
# the GPU's header and acknowledgement; every router's latency.
RAIL = dict(pcie=(64e9, 0.0), nic=(50e9, 1000.0), link=(64e9, 250.0), h=85, ack=16, sw=100.0)


def _zl(link: dict, wire: float) -> float:
    hops = link["hops"]
    return wire / link["B"] * 1e9 + hops * (link["lat"] + link["sw"]) + (hops - 1) * FLIT / link["B"] * 1e9


def _stream_ns(link: dict, wire_bytes: float) -> float:
    """Wire bytes through one link direction at its full rate, ns."""
    return wire_bytes / (link["lanes"] * link["B"]) * 1e9


def _tail_ns(link: dict) -> float:
    """The last packet's trip, the target's memory and the acknowledgement's trip back, ns."""
    return _zl(link, P + link["h"]) + M + _zl(link, link["ack"])


def _transfers(gpus: int, transfers: list[tuple[str, int, int, int]]):
    """One workgroup per (kind: read or write, src, dst, nbytes) transfer, all issued at time 0."""
    b = ProfileBuilder(gpus=gpus, workgroups=len(transfers), name="transfers")
    b.buffer("data", nbytes=max(n for *_, n in transfers))
    for w, (kind, src, dst, n) in enumerate(transfers):
        program = b.program(gpu=src, wg=w)
        (program.read if kind == "read" else program.write)(dst=dst, buffer="data", offset=0, nbytes=n)
    return b.build()


#: custom-4gpu's buffer as it was before it counted bytes (2026-12-07): 128 packets' credits, an acknowledgement taking
#: a whole one. The cases below that were found on it need those credits to bind.
BARE_128 = {"fabric.switch.buffer": 128}


def _writes(gpus: int, transfers: list[tuple[int, int, int]], read: bool = False):
    """One workgroup per (src, dst, nbytes) transfer, all writes (or all reads), all issued at time 0."""
    return _transfers(gpus, [("read" if read else "write", src, dst, n) for src, dst, n in transfers])


def _skewed_all_to_all(gpus: int, nbytes: int, heavy: int = 4):
    """All-to-all of `nbytes` per GPU (nbytes / gpus to each peer), except GPU 0 sends `heavy` times as much."""
    b = ProfileBuilder(gpus=gpus, workgroups=gpus - 1, name="skewed-all-to-all")
    b.buffer("recv", nbytes=heavy * nbytes // gpus)
    for g in range(gpus):
        for k in range(1, gpus):
            n = nbytes // gpus * (heavy if g == 0 else 1)
            b.program(gpu=g, wg=k - 1).write(dst=(g + k) % gpus, buffer="recv", offset=0, nbytes=n)
    return b.build()


def _simulate(repo, platform: str, profile, model: str, overrides: dict | None = None, shipped: bool = False):
    """The result of `profile` on `platform` with fabric.model `model`; `shipped`: the flow fabric with the file's own
    fabric.flow settings rather than FLOW_COUNTERPART."""
    # Launch 0: the bounds are the fabric's (mi300x-8gpu has a calibrated kernel launch). FLOW_COUNTERPART: the
    # flow fabric as the packet fabric's counterpart (mi300x-8gpu sets flow.issue: queue for its calibration).
    counterpart = {} if shipped else FLOW_COUNTERPART
    plat = eidola.load_platform(repo / "platforms" / platform,
                                overrides={"gpus.launch": "0ns", **counterpart, **(overrides or {}), "fabric.model": model})
    return eidola.simulate(plat, profile)


def _kernel_ns(repo, platform: str, profile, model: str, overrides: dict | None = None, shipped: bool = False) -> float:
    """The kernel time of `profile` on `platform` with fabric.model `model`, ns (`shipped`: as _simulate)."""
    return _simulate(repo, platform, profile, model, overrides, shipped).kernel_time_ns


def _both(repo, platform: str, profile, overrides: dict | None = None, shipped: bool = False) -> tuple[float, float]:
    """(packet, flow) kernel times of `profile` on `platform`, ns (`shipped`: as _kernel_ns)."""
    return (_kernel_ns(repo, platform, profile, "packet", overrides, shipped),
            _kernel_ns(repo, platform, profile, "flow", overrides, shipped))


def _above_floor(packet: float, flow: float, floor_ns: float) -> None:
    """Both fabrics' times at or above the wire bound `floor_ns`."""
    assert packet >= floor_ns * (1 - 1e-6), f"packet {packet:.1f} ns below the wire bound {floor_ns:.1f} ns"
    assert flow >= floor_ns * (1 - 1e-6), f"flow {flow:.1f} ns below the wire bound {floor_ns:.1f} ns"


def _check(packet: float, flow: float, bound: float, floor_ns: float, ceiling_ns: float | None = None) -> None:
    # The wire bound first (both fabrics), then the agreement.
    error = flow / packet - 1
    _above_floor(packet, flow, floor_ns)
    if ceiling_ns is not None:
        assert packet <= ceiling_ns, f"packet {packet:.1f} ns above wire + latency {ceiling_ns:.1f} ns"
    assert abs(error) <= bound, f"flow / packet - 1 = {error:+.3%} (bound {bound:.1%})"


# ---- single flows, pairs, incast and outcast: wire time plus one tail, each within 0.5% --------------

def test_one_flow_latency_bound(repo):
    # One 4 KiB write on one MI300X link: 16 packets back to back, then the tail.
    n = 4096 // P
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _writes(8, [(0, 3, 4096)]))
    expected = (n - 1) * (P + MI300X["h"]) / MI300X["B"] * 1e9 + _tail_ns(MI300X)
    assert packet == pytest.approx(expected, rel=0.005)
    _check(packet, flow, 0.005, expected * 0.995)


def test_one_flow_bandwidth_bound(repo):
    n = 16 * MIB // P
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _writes(8, [(0, 3, 16 * MIB)]))
    wire = _stream_ns(MI300X, n * (P + MI300X["h"]))
    _check(packet, flow, 0.005, wire, wire + _tail_ns(MI300X) * 1.01)


def test_one_read_flow(repo):
    # A 1 MiB read: headers out, the data (P + h per packet) back over the reverse link.
    n = MIB // P
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _writes(8, [(0, 3, MIB)], read=True))
    wire = _stream_ns(MI300X, n * (P + MI300X["h"]))
    _check(packet, flow, 0.005, wire)


def test_one_flow_window_limited(repo):
    # max_outstanding 64 on a switch lane path: at most 64 packets per round trip (zero-load RTT
    # = tail), far below the link: n / 64 round trips.
    n = MIB // P
    packet, flow = _both(repo, "switch-8gpu.yaml", _writes(8, [(0, 3, MIB)]), {"gpus.max_outstanding": 64})
    window_ns = n / 64 * _tail_ns(SWITCH)
    _check(packet, flow, 0.005, window_ns * 0.99)
    assert packet > 3 * _stream_ns(SWITCH, n * (P + SWITCH["h"]))  # the window, not the link, binds


def test_one_flow_window_limited_by_a_long_memory_latency(repo):
    # 1 MiB on switch-8gpu with 5 us of memory latency: the GPU's window of 2,048 packets is half the write and
    # far less than a round trip at the link's rate, so the GPU sends a window at the link's rate (400 GB/s, a
    # packet every 0.68 ns), then each of the rest as an answer comes in: its last packet leaves a round trip
    # after the first window's last, and the kernel ends a round trip after that. The switch's buffers (768
    # credits a link) bind nothing: their credits come back within a hop's round trip. The flow fabric's burst
    # was the least room of all its windows, those 768 credits, and the rest went paced by the GPU's window, a
    # window a round trip: 16.28 us, +21.5% (scripts/compare_fabrics.py --seed 10 --case 91).
    n = MIB // P
    packet, flow = _both(repo, "switch-8gpu.yaml", _writes(8, [(0, 3, MIB)]), {"gpus.memory.latency": "5us"})
    round_trip = _zl(SWITCH, P + SWITCH["h"]) + (M - 300.0 + 5000.0) + _zl(SWITCH, SWITCH["ack"])
    expected = (n // 2 - 1) * _stream_ns(SWITCH, P + SWITCH["h"]) + 2 * round_trip
    assert packet == pytest.approx(expected, rel=0.005)
    _check(packet, flow, 0.005, expected * 0.995)


@pytest.mark.parametrize("platform, link", [("switch-8gpu.yaml", SWITCH), ("mi300x-8gpu.yaml", MI300X)])
def test_a_window_of_one_packet_frees_with_the_answer(repo, platform, link):
    # gpus.max_outstanding 1: one workgroup's two 1-byte writes go one round trip apart, so the kernel is two
    # zero-load round trips of a 17-byte packet (the target's memory for one byte: its latency). The flow
    # fabric gave its window's room back at an estimate a packet's memory time and serialisation later than
    # the answer came, so the second write, issued in the answer's picosecond, found the window full and was
    # paced a round trip: +31% (scripts/compare_fabrics.py --seed 9 --case 23, torus2d-16gpu, +37.5%).
    b = ProfileBuilder(gpus=8, workgroups=1, name="two bytes")
    b.buffer("data", nbytes=1)
    b.program(gpu=1, wg=0).write(dst=3, buffer="data", offset=0, nbytes=1).write(dst=3, buffer="data", offset=0,
                                                                                  nbytes=1)
    packet, flow = _both(repo, platform, b.build(), {"gpus.max_outstanding": 1})
    round_trip = _zl(link, 1 + link["h"]) + 300.0 + _zl(link, link["ack"])
    assert packet == pytest.approx(2 * round_trip, rel=0.001)
    assert flow == pytest.approx(2 * round_trip, rel=0.001)


def _outcast_finishes(repo, model: str, nbytes: int) -> list[float]:
    """GPU 0 of rail-16gpu writes `nbytes` to GPU 8 (the other node) and to GPU 1 (its own) at once, window 512:
    the two writes' finishes, ns (the far one first)."""
    plat = eidola.load_platform(repo / "platforms" / "rail-16gpu.yaml", overrides={
        **FLOW_COUNTERPART, "fabric.model": model, "gpus.max_outstanding": 512})
    wgs = eidola.simulate(plat, _writes(16, [(0, 8, nbytes), (0, 1, nbytes)])).workgroups
    return [float(r["finish_ns"]) for r in wgs if r["finish_ns"] > 0]


# The two round trips of _outcast_finishes by hand (test_flow_nic.py's hops): the far one is PCIe, the NIC link to
# the rail switch, the NIC link on to GPU 8's NIC, PCIe, then memory and the acknowledgement back (zero-byte packets
# on the NIC links), 5.11 us; the near one is the direct link there and back, 1.01 us.
def _rail_round_trip_ns(hops: list[str]) -> float:
    """A packet over rail-16gpu's `hops` (RAIL's keys), the target's memory, and the acknowledgement back the same
    way: the GPU's header and acknowledgement on GPU links, the bare payload and zero-byte packets on NIC links."""
    def trip(gpu_wire: float, nic_wire: float) -> float:
        return zero_load_ns([(nic_wire if h == "nic" else gpu_wire, *RAIL[h]) for h in hops], RAIL["sw"], FLIT)
    return trip(P + RAIL["h"], P) + M + trip(RAIL["ack"], 0)


_FAR_NS = _rail_round_trip_ns(["pcie", "nic", "nic", "pcie"])
_NEAR_NS = _rail_round_trip_ns(["link"])


def test_outcast_across_the_nic_and_inside_the_node_under_a_binding_window(repo):
    # 1 MiB each: the round robin shares the window's slots, so the two send alike and each slot is held for the
    # round trip of its write's path: each write sends 512 / (far + near) packets a microsecond, 4,096 packets in
    # 48.9 us, which the near write (its last packet answered a far round trip sooner) finishes before and the far
    # one after, on both fabrics. The packet fabric is the reference.
    shared_ns = MIB // P * (_FAR_NS + _NEAR_NS) / 512
    packet, flow = _outcast_finishes(repo, "packet", MIB), _outcast_finishes(repo, "flow", MIB)
    assert len(packet) == len(flow) == 2
    for times in (packet, flow):
        assert min(times) < shared_ns < max(times), f"{times} ns do not bracket {shared_ns:.1f} ns"
    for p, f in zip(packet, flow):
        assert abs(f / p - 1) <= 0.02, f"flow / packet - 1 = {f / p - 1:+.2%} ({p:.1f} / {f:.1f} ns)"


@pytest.mark.xfail(strict=True, reason=(
    "measured -8.4% (the write across the NIC, packet 10.40 / flow 9.52 us) and -14.0% (the intra-node write, "
    "6.30 / 5.42 us), 2026-12-05. Each write takes half the window as its burst, as on the packet fabric; then the "
    "near write is paced against the whole window while the far write's burst still holds half of it, where the "
    "packet GPU waits for its own slots to come back and shares them with the far write. Traced further 2026-12-07 "
    "(experiments/overrun25): from 3.3 us the issue gates' history counts the flows' carried bytes as sent where the "
    "queues are empty, the window reads over-full (152.6 KB against 131.1 KB), its room is clamped at 0, and each "
    "advance issues the interval's carried bytes anyway, 19.6 KB in all, so both writes finish issuing by 4.42 us where the "
    "packet GPU waits for the far write's first answers (5.11 us). docs/fabrics.md, Choosing: \"Short writes under "
    "a shared binding window\" (rules tried there, and the prototypes of experiments/window25 and overrun25)"))
def test_short_outcast_across_the_nic_and_inside_the_node_under_a_binding_window(repo):
    # 128 KiB each: 512 packets, one window between the two. Neither write can be answered before its first
    # packet's round trip after its last packet leaves (512 packets of 341 wire bytes at PCIe's or the link's
    # 64 GB/s, shared alike: 256 each at once), so each takes at least that on both fabrics.
    n = 128 << 10
    packet, flow = _outcast_finishes(repo, "packet", n), _outcast_finishes(repo, "flow", n)
    assert len(packet) == len(flow) == 2
    wire_ns = (n // P - 1) * (P + RAIL["h"]) / RAIL["pcie"][0] * 1e9  # the direct link's rate is PCIe's
    for times in (packet, flow):
        assert times[0] >= wire_ns + _FAR_NS and times[1] >= wire_ns + _NEAR_NS, times
    for p, f in zip(packet, flow):
        assert abs(f / p - 1) <= 0.02, f"flow / packet - 1 = {f / p - 1:+.2%} ({p:.1f} / {f:.1f} ns)"


@pytest.mark.parametrize("platform, link", [("mi300x-8gpu.yaml", MI300X), ("switch-8gpu.yaml", SWITCH)])
def test_bidirectional_pair(repo, platform, link):
    # 0 -> 3 and 3 -> 0 at once: each link direction carries one flow's data and the other's
    # acknowledgements, n (P + h + ack) wire bytes.
    n = 16 * MIB // P
    packet, flow = _both(repo, platform, _writes(8, [(0, 3, 16 * MIB), (3, 0, 16 * MIB)]))
    wire = _stream_ns(link, n * (P + link["h"] + link["ack"]))
    _check(packet, flow, 0.01, wire, wire + _tail_ns(link) * 1.01)


@pytest.mark.parametrize("ack", [148, 149, 256])
def test_bidirectional_pair_with_acknowledgements_as_long_as_the_packets(repo, ack):
    # As above with 64-byte payloads, a packet of 64 + 85 = 149 wire bytes, and acknowledgements of 148, 149 and
    # 256 bytes: each link direction carries n (149 + ack) wire bytes. Found by scripts/fuzz.py's flow campaign
    # (2026-12-06): from 149 bytes the flow fabric served each write's acknowledgements first where they were as
    # long as the other's data, which has no one answer (both writes got rate 0 and the run stopped with a stall
    # naming a lost transaction); at 148 its solver's levels did not converge and the time came out +36.8%.
    n = MIB // 64
    over = {"gpus.max_payload": "64B", "fabric.link.ack": f"{ack}B"}
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _writes(8, [(0, 3, MIB), (3, 0, MIB)]), over)
    _check(packet, flow, 0.01, _stream_ns(MI300X, n * (64 + MI300X["h"] + ack)))


@pytest.mark.parametrize("lanes", [1, 4])
def test_a_put_beside_a_larger_write_of_another_workgroup(repo, lanes):
    # switch-8gpu, GPU 4: workgroup 4 puts 256 B to GPU 2 (a write, then a signal released by its acknowledgement)
    # while workgroup 5 writes 64 KiB to GPU 5. The GPU issues the two writes round robin, so the put's one packet
    # leaves among the first two, and the put takes two zero-load round trips, its write's and its signal's; the
    # 64 KiB write (0.7 us on one lane) ends before it. The flow fabric's gates issued both whole in one instant and
    # queued the small write behind all of the large one, so its signal waited the 64 KiB's sending: +26.6% on one
    # lane, +6.7% on four (found by scripts/compare_fabrics.py, 2026-12-06).
    b = ProfileBuilder(gpus=8, workgroups=8, name="put-beside-write")
    b.flag("done")
    b.buffer("data", nbytes=64 << 10)
    b.program(gpu=4, wg=4).write(dst=2, buffer="data", offset=0, nbytes=256).signal(dst=2, flag="done")
    b.program(gpu=4, wg=5).write(dst=5, buffer="data", offset=0, nbytes=64 << 10)
    packet, flow = _both(repo, "switch-8gpu.yaml", b.build(), {"fabric.link.count": lanes})
    lane = SWITCH["B"]

    def round_trip_ns(payload: int) -> float:  # its packet out over 2 hops cut through, the memory, the ack back
        out = (payload + SWITCH["h"]) / lane * 1e9 + 2 * (SWITCH["lat"] + SWITCH["sw"]) + FLIT / lane * 1e9
        back = 2 * (SWITCH["lat"] + SWITCH["sw"] + SWITCH["ack"] / lane * 1e9)
        return out + 300.0 + payload / 5.3e12 * 1e9 + back

    chain = round_trip_ns(256) + round_trip_ns(8)
    assert packet == pytest.approx(chain, abs=1.0)
    _check(packet, flow, 0.005, chain - 1.0)


def test_a_read_and_a_write_into_one_gpu_across_the_network(repo):
    # hierarchical-16gpu: GPU 6 reads 1 MiB from GPU 8 while GPU 9 writes 64 KiB to GPU 6, both across the spines
    # into node 0's leaf, whose link into GPU 6 has an incast queue. The read's data took that link max-min while
    # the queue, which held the write, drained at what was left: 0.1% of it, and the write took 1.76 ms (packet
    # fabric: 10.8 us; found by a random packet-against-flow comparison, 2026-12-06). Both now wait in the queue.
    b = ProfileBuilder(gpus=16, workgroups=2, name="read-and-write")
    b.buffer("data", nbytes=MIB)
    b.program(gpu=9, wg=0).write(dst=6, buffer="data", offset=0, nbytes=64 << 10)
    b.program(gpu=6, wg=1).read(dst=8, buffer="data", offset=0, nbytes=MIB)
    profile = b.build()
    packet, flow = _both(repo, "hierarchical-16gpu.yaml", profile)
    # The read's data crosses GPU 8's NIC link, 50 GB/s, in packets of 256 + 85 bytes.
    _check(packet, flow, 0.02, _stream_ns(dict(B=50e9, lanes=1), MIB / P * (P + 85)))
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", overrides={"fabric.model": "flow"})
    write_ns = float(eidola.simulate(plat, profile).gpus["finish_ns"][9])
    assert write_ns < packet, f"the write took {write_ns:.0f} ns, the read {packet:.0f} ns"


@pytest.mark.parametrize("pattern", ["incast", "outcast"])
def test_incast_and_outcast_on_the_switch(repo, pattern):
    # 7 to 1 (or 1 to 7) with 2 MiB each: the switch's link into (out of) GPU 0, 4 lanes, carries
    # 7 n (P + h) bytes; then one tail.
    n = 2 * MIB // P
    transfers = [(g, 0, 2 * MIB) if pattern == "incast" else (0, g, 2 * MIB) for g in range(1, 8)]
    packet, flow = _both(repo, "switch-8gpu.yaml", _writes(8, transfers))
    wire = _stream_ns(SWITCH, 7 * n * (P + SWITCH["h"]))
    assert packet == pytest.approx(wire + _tail_ns(SWITCH), rel=0.005)
    _check(packet, flow, 0.02, wire)


def test_incast_of_a_read_and_a_write(repo):
    # 2 to 1 on switch-8gpu: GPU 1 reads 1 MiB from GPU 5 while GPU 3 writes 1 MiB to it. The switch's link into
    # GPU 1 (4 lanes) carries both payloads, each 4,096 packets of P + h bytes: the floor. The issue's incast row
    # (2%); found by scripts/compare_fabrics.py --seed 11 --case 135 (4 KiB payloads, +12.0%).
    packet, flow = _both(repo, "switch-8gpu.yaml", _transfers(8, [("read", 1, 5, MIB), ("write", 3, 1, MIB)]))
    _check(packet, flow, 0.02, _stream_ns(SWITCH, 2 * MIB // P * (P + SWITCH["h"])))


def test_a_large_read_leaves_its_targets_memory_to_a_write_beside_it(repo):
    # switch-8gpu: GPU 1 reads 16 MiB from GPU 0, and GPU 2 writes 8 bytes to GPU 0, both at time 0. The read's
    # memory time at GPU 0 is 16 MiB at 5.3 TB/s, 3.2 us; the packet fabric's GPU 0 reads it a packet at a time, and
    # the write's one packet waits for one of them at most. So GPU 2's write is answered after its zero-load round
    # trip: its packet's trip, the memory's latency and 8 bytes, and the acknowledgement's trip (both fabrics,
    # within a nanosecond; a read whose bytes the flow fabric's target booked at once read 3.2 us more).
    profile = _transfers(8, [("read", 1, 0, 16 * MIB), ("write", 2, 0, 8)])
    expected = _zl(SWITCH, 8 + SWITCH["h"]) + 300.0 + 8 / 5.3e12 * 1e9 + _zl(SWITCH, SWITCH["ack"])
    for model in ("packet", "flow"):
        wgs = _simulate(repo, "switch-8gpu.yaml", profile, model).dataframe("workgroups")
        write_done = float(wgs[(wgs.gpu == 2) & (wgs.wg == 1)].finish_ns.iloc[0])
        assert write_done == pytest.approx(expected, abs=1.0), model


def test_a_write_into_a_gpu_that_a_read_empties(repo):
    # The incast row's 2 to 1 the other way round, on switch-8gpu: GPU 6 writes 1 MiB to GPU 0 while GPU 5 reads
    # 1 MiB from it. GPU 0's link to the switch carries the read's data and the write's acknowledgements, 4,096
    # packets of P + h bytes and 4,096 of ack bytes: the floor. The time is set on the link into GPU 0: the read's
    # 4,096 requests take a credit each there, and the switch's turns in bytes let them past the write's packets, so
    # until they are through (2.75 us) the write gets a third of that link (link bins of 250 ns, 2026-12-06). Measured
    # -0.62% (packet 5,974.8 ns, flow 5,937.6 ns) since the requests' credits on their target's channel are served
    # first; -24.9% before, when both flows had left that channel out, each keeping up with it alone.
    packet, flow = _both(repo, "switch-8gpu.yaml", _transfers(8, [("read", 5, 0, MIB), ("write", 6, 0, MIB)]))
    _check(packet, flow, 0.02, _stream_ns(SWITCH, MIB // P * (P + SWITCH["h"] + SWITCH["ack"])))


def test_outcast_on_separate_links(repo):
    # MI300X: GPU 0's seven links each carry one 2 MiB flow: one flow's time.
    n = 2 * MIB // P
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _writes(8, [(0, g, 2 * MIB) for g in range(1, 8)]))
    wire = _stream_ns(MI300X, n * (P + MI300X["h"]))
    _check(packet, flow, 0.02, wire, wire + _tail_ns(MI300X) * 1.01)


# ---- collectives: within 3% at 1 MiB and above ---------------------------------------------------------

def _floor(link: dict, sent: float, acks: bool = True) -> float:
    """The busiest link direction at full rate: `sent` bytes of data with their headers, plus (acks)
    the acknowledgements of as many bytes received the other way, where those share the direction:
    on a switch a GPU's one uplink carries both; on MI300X a ring's link g -> g+1 carries no
    acknowledgements (those of g's receipts go to g-1), a direct exchange's link g -> k does."""
    n = sent / P
    return _stream_ns(link, n * (P + link["h"] + (link["ack"] if acks else 0)))


W = 8  # workgroups per GPU


@pytest.mark.parametrize("name, platform, link, make, gpus, nbytes, sent, acks", [
    # sent: the bytes each GPU sends through its busiest link direction
    ("ring all-reduce", "switch-8gpu.yaml", SWITCH, ring_allreduce, 8, MIB, 2 * 7 / 8 * MIB, True),
    ("ring all-reduce", "switch-8gpu.yaml", SWITCH, ring_allreduce, 8, 16 * MIB, 2 * 7 / 8 * 16 * MIB, True),
    ("ring all-reduce", "mi300x-8gpu.yaml", MI300X, ring_allreduce, 8, 16 * MIB, 2 * 7 / 8 * 16 * MIB, False),
    ("reduce-scatter", "switch-8gpu.yaml", SWITCH, reduce_scatter, 8, MIB, 7 / 8 * MIB, True),
    ("reduce-scatter", "mi300x-8gpu.yaml", MI300X, reduce_scatter, 8, 16 * MIB, 7 / 8 * 16 * MIB, False),
    ("all-gather", "mi300x-8gpu.yaml", MI300X, all_gather, 8, MIB, 7 / 8 * MIB, False),
    # Measured +0.57% (packet 90.08 us, flow 90.59 us). This case sits on a knife edge, and the bound holds by
    # luck of rounding as much as by the model: in the all-gather half one GPU's workgroups can wake in a
    # different order from another's, so several GPUs write to one peer at once through the switch and the last
    # flags come up to 5.9 us late, where the packet fabric's GPUs keep in step. Which order they wake in
    # follows the last bits of the solver's sums: +0.61%, +3.40% and +0.57% at three revisions that changed
    # no rule of the model, only the order of sums; between +0.10% and +2.11% with the solver's rates truncated
    # to 40 or 32 bits (an experiment, not kept). docs/fabrics.md. +0.10% since a workgroup's writes go one after
    # another in its output queue (2026-12-04, docs/fabrics.md "Incast queues"), +0.39% before.
    ("direct all-reduce", "switch-8gpu.yaml", SWITCH, direct_allreduce, 8, 16 * MIB, 2 * 7 / 8 * 16 * MIB, True),
    # direct on MI300X: each of a GPU's 7 links carries 2/8 of S each way. Measured -1.05% (packet 130.84 us, flow
    # 129.46 us); -25% before the flow fabric modelled the GPU's issue gates (docs/fabrics.md).
    ("direct all-reduce", "mi300x-8gpu.yaml", MI300X, direct_allreduce, 8, 16 * MIB, 2 / 8 * 16 * MIB, True),
])
def test_collective(repo, name, platform, link, make, gpus, nbytes, sent, acks):
    packet, flow = _both(repo, platform, make(gpus, nbytes, workgroups=W))
    _check(packet, flow, 0.03, _floor(link, sent, acks))


def test_ring_allreduce_hierarchical(repo):
    # 16 GPUs over two nodes: the ring crosses the NICs (50 GB/s, 85-byte headers) twice; each
    # crossing GPU's NIC carries 2 (P-1)/P S of data and headers.
    nbytes = MIB
    packet, flow = _both(repo, "hierarchical-16gpu.yaml", ring_allreduce(16, nbytes, workgroups=W))
    nic = dict(MI300X, B=50e9, lanes=1)
    _check(packet, flow, 0.03, _stream_ns(nic, 2 * 15 / 16 * nbytes / P * (P + 85)))


@pytest.mark.parametrize("nbytes", [
    MIB,  # measured +1.28%: packet 63.52 us, flow 64.34 us, since the leaves' incast queues (2026-12-04); +1.83%,
    #       flow 64.69 us, before them (+1.77% before signals took their round-robin turn among
    #       writes issued in their instant, 2026-12-04; +2.10% while writes the room of the moment issued whole
    #       were told a packet apart too; +3.69% while the window's answers came back at one mean round trip for all
    #       the GPU's outputs, the NIC's and the near links')
    4 * MIB,  # -2.34%: packet 163.19 us, flow 159.37 us, since the incast queues; +2.53%, flow 167.32 us, before them
    #           (+2.50% before the round-robin turn; +1.60% before that rule;
    #           -7.48% before the issue gates)
])
def test_direct_allreduce_hierarchical(repo, nbytes):
    # 16 GPUs over two nodes: each GPU sends its S/16 to each of the 8 GPUs of the other node twice (the
    # reduce-scatter, then the all-gather), so its NIC (50 GB/s, 85-byte headers) carries S of data.
    packet, flow = _both(repo, "hierarchical-16gpu.yaml", direct_allreduce(16, nbytes, workgroups=W))
    nic = dict(MI300X, B=50e9, lanes=1)
    _check(packet, flow, 0.03, _stream_ns(nic, nbytes / P * (P + 85)))


def test_direct_allreduce_hierarchical_4_workgroups_4mib(repo):
    # The issue's direct all-reduce row (3% at 1 MiB and above) over two nodes with few workgroups, SyncMon waits,
    # over in step and four start skews. Measured -1.43% (-1.12 -2.29 -0.92 -0.06 -2.75%; packet 197.3-199.3 us)
    # since the leaves' incast queues and a workgroup's writes one after another in its output queue (2026-12-04,
    # docs/fabrics.md "Incast queues"); +4.60% before, a strict expected failure: the fluid shared each receiving
    # NIC max-min and acknowledged GPU 0's four writes to GPU 8 by 10.9-27.4 us, where the packet fabric's leaves
    # held the NIC's backlog first in, first out and acknowledged them at 20.8-56.2 us.
    nbytes = 4 * MIB
    nic = dict(MI300X, B=50e9, lanes=1)
    packet, flow = _over_five_starts(repo, "hierarchical-16gpu.yaml",
                                     direct_allreduce(16, nbytes, workgroups=4, mode="syncmon"),
                                     _stream_ns(nic, nbytes / P * (P + 85)))
    _check(packet, flow, 0.03, 0.0)


@pytest.mark.xfail(strict=True, reason="measured -4.99% since the flow solver chooses its path by cost (2026-12-06, "
                   "0dfe152; the same allocation to rounding), -5.24% since a channel a flow keeps up with stays its use "
                   "(2026-12-06, e282f1f), -5.58% since a buffer's credits that keep up with the links "
                   "stopped limiting bursts (2026-12-06, 9cf0487), -5.65% since a burst's window room comes back with its answer "
                   "(7d77355), -5.49% since alike solved levels are one (2026-12-05, "
                   "FlowSolver::snap_levels; its spread under a change of link bandwidth by one part in 10^8 is now 0.66%), "
                   "-5.98% since the flow solver takes its solved levels as the rates "
                   "(2026-12-05; the point's own spread under a change of link bandwidth by one part in 10^8 is 0.99%, "
                   "experiments/flow_conditioning.py), -6.02% since writes started in one instant share the window's "
                   "room (2026-12-04), -5.77% since the leaves' incast queues (2026-12-04, docs/fabrics.md "
                   "\"Incast queues\"; -5.39% before their back-pressure, -5.08% before them, -5.15% before "
                   "releases took their wire time in the output queue, -5.21% before the round-robin turn and the "
                   "queue's rate); "
                   "-5.36% (-5.60..-5.21) under start skews of 0-8 ns. The window: with gpus.max_outstanding 100000 "
                   "on both fabrics, packet 507.2 us, flow 501.5 us (-1.14%), so the 2,048-packet window costs the "
                   "packet fabric 6.5% and the flow fabric 2.0%. In the all-gather the workgroups' sends drift out "
                   "of the step's permutation, several GPUs' packets for one NIC meet at its leaf, and that queue "
                   "(2.2 us mean, 16 us p99) lengthens the packet fabric's round trips until the window binds (the "
                   "NIC's all-gather wire time fills 82% of its all-gather, 89% on the flow fabric). The flow "
                   "fabric's incast queues now hold a backlog of that size (0.9-3.1 us mean waits) and charge it to "
                   "the senders' windows, and it stays fast: charged 3 or 10 times over it was faster still "
                   "(experiments/queues25), so what holds the packet GPU back here is not the window's amount "
                   "(docs/fabrics.md, \"When to trust which model\")")
def test_direct_allreduce_hierarchical_32_workgroups_16mib(repo):
    nbytes = 16 * MIB
    packet, flow = _both(repo, "hierarchical-16gpu.yaml", direct_allreduce(16, nbytes, workgroups=32, mode="syncmon"))
    nic = dict(MI300X, B=50e9, lanes=1)
    _check(packet, flow, 0.03, _stream_ns(nic, nbytes / P * (P + 85)))


def test_direct_allreduce_mi300x_1mib(repo):
    # Measured +0.44%: packet 11.96 us, flow 12.01 us, the same under start skews of up to 8 ns (experiments/skew).
    # -4.23% while the first workgroup back from writes told issued together took the room the packet GPU's round
    # robin gives the others in turn, and issued all seven of its writes before they came back (docs/fabrics.md,
    # "Credits for the workgroups still to come back").
    packet, flow = _both(repo, "mi300x-8gpu.yaml", direct_allreduce(8, MIB, workgroups=W))
    _check(packet, flow, 0.03, _floor(MI300X, 2 / 8 * MIB))


def test_ring_allreduce_switch_32_workgroups_16mib(repo):
    # A knife edge, so held over five starts, not one: in step and with four start skews of 0-8 ns (seeds 1-4, as
    # experiments/skew/ensemble.py), the flow fabric's time summed against the packet fabric's. The packet fabric's
    # own time moves by 12% for nanoseconds of skew (94.97 us in step, 101.9-106.5 us skewed): in step is its best
    # case, and a comparison with that one run tests its wake order, not the fluid. Measured over these five:
    # -0.00% (each run +6.79 -0.66 +0.39 -4.20 -1.64%), and over seven -0.55%. Before the flow fabric put a signal
    # among the writes other workgroups issue in its instant and timed a queued write's last packet at its output
    # queue's rate (2026-12-04) -4.24% over these five (+2.56 -7.16 -2.97 -7.83 -5.10%): it passed in step only.
    # With the window lifted on both fabrics -0.6% in step, the buffer +0.7%: the two gates together part them;
    # -26.5% in step before the gates were modelled.
    nbytes = 16 * MIB
    profile = ring_allreduce(8, nbytes, workgroups=32, mode="syncmon")
    packet, flow = _over_five_starts(repo, "switch-8gpu.yaml", profile, _floor(SWITCH, 2 * 7 / 8 * nbytes))
    _check(packet, flow, 0.03, 0.0)



def test_ring_allreduce_switch_8_workgroups_4mib(repo):
    # The issue's ring row (3% at 1 MiB and above) on the shipped switch, with the validation tests' usual 8
    # workgroups, over in step and four start skews (the packet fabric's time moves by 2% with them). Measured -1.29%
    # (-2.06 +0.63 -2.13 -1.37 -1.48%; 16 MiB: -3.52%) since the credits of a channel that neither limits a burst nor
    # is held stay a use of its flows (2026-12-06): the workgroups' writes into the next GPU share its ejection's
    # credits. -3.96% before (a strict expected failure: the packet fabric's releases waited longer behind other
    # workgroups' packets in the GPUs' injection queues, 0.919 against 0.841 us from release to flag seen).
    nbytes = 4 * MIB
    profile = ring_allreduce(8, nbytes, workgroups=8, mode="syncmon")
    packet, flow = _over_five_starts(repo, "switch-8gpu.yaml", profile, _floor(SWITCH, 2 * 7 / 8 * nbytes))
    _check(packet, flow, 0.03, 0.0)

def _over_five_starts(repo, platform: str, profile, floor_ns: float) -> tuple[float, float]:
    """(packet, flow) kernel times summed over in step and four start skews of 0-8 ns, each run above the floor."""
    packet = flow = 0.0
    for seed in range(5):
        p, f = _both(repo, platform, start_skews(profile, seed))
        _above_floor(p, f, floor_ns)
        packet, flow = packet + p, flow + f
    return packet, flow


@pytest.mark.parametrize("workgroups", [
    # measured +0.09% over the five starts (+0.63% before releases took their wire time in the output queue and
    # flags on a link one after another, 2026-12-04; +4.24% before the round-robin turn and the queue's rate)
    32,
    # +0.00% (+4.17% before those two rules, the five starts reading +4.55 +4.38 +5.64 +4.78 +1.51%: every
    # release left in the picosecond a write ended, and which of a release and the next write went first, a
    # packet's time either way on the packet fabric, decided a whole write's time a step on the flow fabric)
    8,
])
def test_ring_allreduce_hierarchical_syncmon(repo, workgroups):
    # The SyncMon ring over two nodes at 1 MiB, where the workgroups' releases and the next steps' writes meet in
    # the GPUs' output queues (the validation grid's point, 32 workgroups, read +4.03% until 2026-12-04).
    nbytes = MIB
    profile = ring_allreduce(16, nbytes, workgroups=workgroups, mode="syncmon")
    nic = dict(MI300X, B=50e9, lanes=1)
    packet, flow = _over_five_starts(repo, "hierarchical-16gpu.yaml", profile,
                                     _stream_ns(nic, 2 * 15 / 16 * nbytes / P * (P + 85)))
    _check(packet, flow, 0.03, 0.0)


def test_ring_allreduce_switch_2_workgroups_16mib(repo):
    # Measured -0.39%: packet 92.56 us, flow 92.20 us (+20.4% before the issue gates were modelled).
    nbytes = 16 * MIB
    packet, flow = _both(repo, "switch-8gpu.yaml", ring_allreduce(8, nbytes, workgroups=2))
    _check(packet, flow, 0.03, _floor(SWITCH, 2 * 7 / 8 * nbytes))


# The packet GPU's issue with its two gates lifted: an injection buffer (switch.buffer, shared by the
# GPU port's outputs) and a window (max_outstanding) so large that no packet ever waits for either,
# so the GPU puts every packet of a workgroup's posted writes into its injection queues at once, as
# the flow fabric would without its model of the gates. The four cases above and below that the
# gates decide then agree within the issue's bounds (measured +0.15%, +1.38%, +0.04%, +0.34%).
UNGATED = {"fabric.switch.buffer": 100_000, "gpus.max_outstanding": 1_000_000}


@pytest.mark.parametrize("platform, link, make, workgroups, sent, bound", [
    ("mi300x-8gpu.yaml", MI300X, direct_allreduce, W, 2 / 8 * 16 * MIB, 0.03),   # gated: -25%
    ("mi300x-8gpu.yaml", MI300X, all_to_all, W, 16 * MIB / 8, 0.05),             # gated: -16%
    ("switch-8gpu.yaml", SWITCH, ring_allreduce, 2, 2 * 7 / 8 * 16 * MIB, 0.03),  # gated: +20.4%
    ("switch-8gpu.yaml", SWITCH, ring_allreduce, 32, 2 * 7 / 8 * 16 * MIB, 0.03),  # gated: -26.5% (SyncMon)
])
def test_ungated_issue(repo, platform, link, make, workgroups, sent, bound):
    mode = {"mode": "syncmon"} if workgroups == 32 else {}
    packet, flow = _both(repo, platform, make(8, 16 * MIB, workgroups=workgroups, **mode), UNGATED)
    _check(packet, flow, bound, _floor(link, sent))


# ---- all-to-all, uniform and skewed: 5% at 16 MiB and above, 15% below 1 MiB -------------------------------

def test_all_to_all_switch(repo):
    # Each uplink: 7/8 S of data and headers out, acknowledgements of 7/8 S coming in.
    nbytes = 16 * MIB
    packet, flow = _both(repo, "switch-8gpu.yaml", all_to_all(8, nbytes, workgroups=W))
    _check(packet, flow, 0.05, _floor(SWITCH, 7 / 8 * nbytes))


def test_all_to_all_hierarchical_small(repo):
    # 256 KiB: the 8 remote peers' shares, 8/16 S, leave through one 50 GB/s NIC.
    nbytes = 256 << 10
    packet, flow = _both(repo, "hierarchical-16gpu.yaml", all_to_all(16, nbytes, workgroups=W))
    nic = dict(MI300X, B=50e9, lanes=1)
    _check(packet, flow, 0.15, _stream_ns(nic, 8 / 16 * nbytes / P * (P + 85)))


@pytest.mark.parametrize("workgroups", [
    7,  # one workgroup per link at every turn of the rotation: measured +0.06%
    # More workgroups than links: some share a link, and once the gates are full every workgroup issues at the
    # pace of the busiest link's. Measured +0.14% (packet 58.29 us; +5.8% with acknowledgements sharing links
    # fairly, -2.5% served first while the window's room came back at once; -16% before the gates were modelled).
    W,
])
def test_all_to_all_mi300x(repo, workgroups):
    nbytes = 16 * MIB
    packet, flow = _both(repo, "mi300x-8gpu.yaml", all_to_all(8, nbytes, workgroups=workgroups))
    _check(packet, flow, 0.05, _floor(MI300X, nbytes / 8))


@pytest.mark.parametrize("platform, nbytes, bound", [
    ("mi300x-8gpu.yaml", 16 * MIB, 0.05),
    ("switch-8gpu.yaml", 16 * MIB, 0.05),
    ("mi300x-8gpu.yaml", 256 << 10, 0.15),
])
def test_skewed_all_to_all(repo, platform, nbytes, bound):
    # GPU 0 sends 4x: on MI300X its link to each peer carries 4 S/8 of data and headers plus the
    # acknowledgements of the S/8 coming back; on the switch its uplink carries 7 of those.
    packet, flow = _both(repo, platform, _skewed_all_to_all(8, nbytes))
    link = MI300X if platform.startswith("mi300x") else SWITCH
    per_link = 1 if link is MI300X else 7
    n = 4 * nbytes / 8 / P
    wire = _stream_ns(link, per_link * (n * (P + link["h"]) + n / 4 * link["ack"]))
    _check(packet, flow, bound, wire, wire + _tail_ns(link) * 1.01 + 2000)


def _staggered_all_to_all(gpus: int, nbytes: int, sets: int, late: int, delay_ns: float):
    """All-to-all of `nbytes` per GPU on `sets` workgroups per peer (workgroup w writes to peer w mod (gpus - 1)
    + 1 the (w div (gpus - 1))-th of `sets` equal parts of its share), the first `late` workgroups of every
    GPU starting `delay_ns` after the others."""
    peers = gpus - 1
    b = ProfileBuilder(gpus=gpus, workgroups=sets * peers, name="staggered-all-to-all")
    part = nbytes // gpus // sets
    b.buffer("recv", nbytes=nbytes // gpus)
    for g in range(gpus):
        for w in range(sets * peers):
            program = b.program(gpu=g, wg=w)
            if w < late:
                program.compute(ns=delay_ns)
            program.write(dst=(g + w % peers + 1) % gpus, buffer="recv", offset=(w // peers) * part, nbytes=part)
    return b.build()


# Measured +0.69%, +0.69% and +0.80% (packet 46.52 us); +44.8% before the issue gates were modelled, when
# the flow fabric queued a write issued after another workgroup's on its link behind all of that one.
@pytest.mark.parametrize("delay_ns", [0.001, 1.0, 100.0])
def test_all_to_all_with_staggered_starts(repo, delay_ns):
    # MI300X, 16 MiB, two workgroups per peer, workgroups 0-3 (peers 1-4) starting a picosecond to
    # 100 ns after the rest: 14 writes of 1 MiB (4,096 packets each) against a window of 2,048
    # packets, so the window paces every GPU's writes, and on links 1-4 a write starts behind the
    # other workgroup's. The packet GPU issues its workgroups' packets round robin, so the late write
    # shares the link with the early one; the flow fabric queues it behind all of the early write,
    # outside the window's round robin (+37% at a picosecond on an RCCL all-to-all at 8 MiB, before
    # its channels' copies were made to end together). Each link carries 2 MiB of data and headers
    # one way and the acknowledgements of 2 MiB the other.
    nbytes = 16 * MIB
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _staggered_all_to_all(8, nbytes, 2, 4, delay_ns))
    n = nbytes / 8 / P
    _check(packet, flow, 0.05, _stream_ns(MI300X, n * (P + MI300X["h"] + MI300X["ack"])))


def test_all_to_all_with_staggered_starts_as_mi300x_ships(repo):
    # The same staggered all-to-all (1 ns) with mi300x-8gpu's own flow settings (flow.issue: queue, responses: the
    # default, first), which perf's auto fabric uses. Measured +0.06%. With responses: fair, which the file set
    # until 2026-12-05, it read +42.6%: the late writes queue behind the early ones on links 1-4 while the window
    # binds, and acknowledgements sharing the links fairly kept those links' writes at their share.
    nbytes = 16 * MIB
    packet, flow = _both(repo, "mi300x-8gpu.yaml", _staggered_all_to_all(8, nbytes, 2, 4, 1.0), shipped=True)
    n = nbytes / 8 / P
    _check(packet, flow, 0.05, _stream_ns(MI300X, n * (P + MI300X["h"] + MI300X["ack"])))


# The two-node files' NICs: their header per message of 4 KiB (platforms/*.yaml, fabric.nic), at 50 GB/s.
RAIL_NIC_HEADER = {"mi300x-rail.yaml": 78, "dgx-h100-rail.yaml": 42}


@functools.cache
def _staggered_on_packets(repo, platform: str) -> float:
    """The packet fabric's time of _staggered_over_two_nodes' profile, shared by the two tests of a platform."""
    return _kernel_ns(repo, platform, _staggered_all_to_all(16, 16 * MIB, 2, 4, 1.0), "packet")


def _staggered_over_two_nodes(repo, platform: str, shipped: bool) -> tuple[float, float, float]:
    """(packet, flow, floor) ns of the staggered all-to-all (1 ns) on the 16 GPUs of a two-node file. Floor: each
    GPU sends 1 MiB to each of the 8 GPUs of the other node, so each NIC sends 8 MiB, at 50 GB/s less its header
    per 4 KiB message."""
    flow = _kernel_ns(repo, platform, _staggered_all_to_all(16, 16 * MIB, 2, 4, 1.0), "flow", shipped=shipped)
    floor = 8 * MIB * (4096 + RAIL_NIC_HEADER[platform]) / 4096 / 50e9 * 1e9
    return _staggered_on_packets(repo, platform), flow, floor


@pytest.mark.parametrize("platform", sorted(RAIL_NIC_HEADER))
def test_all_to_all_with_staggered_starts_over_two_nodes(repo, platform):
    # The staggered all-to-all above on 16 GPUs of the two-node files, the flow fabric with its defaults (the
    # GPU's issue gates): measured -1.3% (dgx-h100-rail) and -1.5% (mi300x-rail).
    packet, flow, floor = _staggered_over_two_nodes(repo, platform, shipped=False)
    _check(packet, flow, 0.05, floor)


# Measured -3.2% (dgx-h100-rail, packet 182.08 / flow 176.25 us) and -1.9% (mi300x-rail, 194.0 / 190.29 us); +20.0%
# and +19.8% while the files' flow.issue: queue served a GPU's writes to one GPU first come, first served whatever
# its window: the late write waited for the whole early one and then went alone at the end, where the packet GPU,
# its window full, hands its slots to the two in turn (FlowFabric::shares_window_turns).
@pytest.mark.parametrize("platform", sorted(RAIL_NIC_HEADER))
def test_all_to_all_with_staggered_starts_over_two_nodes_as_shipped(repo, platform):
    packet, flow, floor = _staggered_over_two_nodes(repo, platform, shipped=True)
    _check(packet, flow, 0.05, floor)


def _turns_profile(writes: int):
    """GPU 0: workgroup 0 writes 4 MiB to GPU 1 as `writes` writes one after another (1 ns of compute after each, so
    each is issued at an instant of its own), workgroup 1 writes 2 MiB to GPU 2; both through GPU 0's one link."""
    b = ProfileBuilder(gpus=8, workgroups=2, name="turns")
    b.buffer("data", nbytes=4 * MIB)
    first = b.program(gpu=0, wg=0)
    for _ in range(writes):
        first.write(dst=1, buffer="data", offset=0, nbytes=4 * MIB // writes).compute(ns=1.0)
    b.program(gpu=0, wg=1).write(dst=2, buffer="data", offset=0, nbytes=2 * MIB)
    return b.build()


@pytest.mark.parametrize("writes, window", [(8, 2048), (16, 2048), (8, 1024)])
def test_a_workgroup_with_many_writes_to_one_gpu_takes_one_turn_under_flow_issue_queue(repo, writes, window):
    # switch-8gpu with flow.issue: queue (the real-system files' setting). With the window full the packet GPU's
    # round robin gives each workgroup a turn, whatever its writes queued behind one another: workgroup 1's write
    # to GPU 2 takes half the link while workgroup 0 has data, 2 MiB x (P + h) / P at B / 2, then the tail; workgroup
    # 0's 6 MiB of both end at the whole link's rate. The flow fabric gave each waiting write a share of its own, so
    # workgroup 1 got 1 / (writes + 1) of the link and ended last: +45% at 8 writes (18.01 against 12.44 us), +47% at
    # a 1,024-packet window (FlowFabric::take_turns).
    over = {"fabric.flow.issue": "queue", "gpus.max_outstanding": window}
    ends = {}
    for model in ("packet", "flow"):
        wgs = _simulate(repo, "switch-8gpu.yaml", _turns_profile(writes), model, over).workgroups
        ends[model] = [float(t) for t in wgs["finish_ns"][wgs["gpu"] == 0][:2]]
    link = SWITCH["lanes"] * SWITCH["B"]
    half_ns = 2 * MIB * (P + SWITCH["h"]) / P / (link / 2) * 1e9
    whole_ns = 6 * MIB * (P + SWITCH["h"]) / P / link * 1e9
    for model, (wg0, wg1) in ends.items():
        assert half_ns <= wg1 < wg0, (model, wg0, wg1, half_ns)
        assert wg0 >= whole_ns, (model, wg0, whole_ns)
    if window == 2048:  # the window covers the link's round trip: both within a tail of their wire bounds
        assert ends["packet"][1] <= half_ns + 1.1 * _tail_ns(SWITCH), ends
    for p, f in zip(ends["packet"], ends["flow"]):
        assert abs(f / p - 1) <= 0.01, ends


def test_credit_bound_writes_that_fan_out_have_a_channel_each(repo):
    # custom-4gpu at 64-byte payloads: GPUs 2 and 3 write 1 MiB each to GPUs 1 and 0, across the switches' slow link
    # (32 GB/s, 500 ns). A channel's 128 packets of 80 wire bytes cover its credit round trip (80 B / 32 GB/s +
    # 2 x 500 + 50 ns) only 7.8 GB/s of payload, so each write is credit-bound, and the link carries both at 19.5
    # GB/s. With switch.vcs 0 each output of the receiving switch has a channel of its own, so two writes bound for
    # GPUs 0 and 1 take what one does. The flow fabric gave the link's flows one channel's credits between them,
    # and took twice as long (+98.6%; found by a random packet-against-flow comparison, 2026-12-06, as were the
    # shipped torus2d's and mesh2d's +67% to +94% that went with it).
    round_trip_ns = 80 / 32e9 * 1e9 + 2 * 500 + 50
    floor = MIB / 64 / 128 * round_trip_ns
    over = {"gpus.max_payload": "64B", **BARE_128}
    one = _both(repo, "custom-4gpu.yaml", _writes(4, [(2, 1, MIB)]), over)
    two = _both(repo, "custom-4gpu.yaml", _writes(4, [(2, 1, MIB), (3, 0, MIB)]), over)
    for t in (*one, *two):
        assert floor <= t <= floor * 1.02, f"{t:.0f} ns against {floor:.0f} ns of credit round trips"
    _check(*two, 0.01, floor)


def test_packets_past_the_dateline_take_the_other_halfs_credits(repo):
    # ring-8gpu (64 GB/s links, 100 ns, 50 ns routers, 64-packet buffers): GPU 5 writes 1 MiB to GPU 6 and reads
    # 1 MiB from GPU 0. Link 5->6 carries the write's 4,096 packets of 256 + 16 bytes and the read's 4,096
    # 16-byte requests: 18.43 us, the floor. The read's data comes over the wrap link 0->7, the ring's dateline,
    # and from there on takes the other half of each router's channels, as the packet fabric's routers do; so on
    # 6->5 it does not share credits with the write's acknowledgements. Sharing them, 64 response packets
    # per credit round trip (272 B / 64 GB/s + 2 x 100 + 50 ns = 254 ns) left both at half the link: the
    # flow fabric took 33.4 us against the packet fabric's 19.6 (+69.5%; scripts/compare_fabrics.py --seed 10
    # --case 71 --counterpart).
    packet, flow = _both(repo, "ring-8gpu.yaml", _transfers(8, [("write", 5, 6, MIB), ("read", 5, 0, MIB)]))
    floor = MIB // P * (P + 16 + 16) / 64e9 * 1e9
    _check(packet, flow, 0.01, floor, floor + 1500)


def test_a_queued_write_held_by_a_slower_link_further_on(repo):
    # custom-4gpu: GPU 3 reads 1 MiB from GPU 0 while GPU 1 writes 1 MiB each to GPUs 0 and 3, a workgroup each.
    # The read's data and the write to GPU 3 cross the 32 GB/s link between the switches: 2 x 4,096 packets of
    # 256 + 16 bytes, 69.63 us of wire. Around it: under 0.2 us before the first write's bytes reach that link,
    # and after its last byte, the link's 500 ns and the switch's 50, GPU 3's link, the memory's 300 ns and the
    # write's acknowledgement back across both switches, 850 ns: under 2.5 us in all. GPU 1's write to GPU 0 waits
    # behind the other in its one injection queue, whose head packet waits for credits across the slow link. Measured
    # -1.46% (packet 71.53 us, flow 70.49 us) since a GPU's long writes through one link go at one rate
    # (flow.injection: blocking, 2026-12-06); before, a strict expected failure at -25.0% (flow 53.66 us, under the
    # wire: the write to GPU 3 ended when GPU 1's output queue had sent it, while its flow had carried half its
    # bytes across the slow link). flow.injection: free read that too until its queued writes waited for their
    # flows' bytes (2026-12-07): measured -1.47% (70.48 us) since.
    profile = _transfers(4, [("read", 3, 0, MIB), ("write", 1, 0, MIB), ("write", 1, 3, MIB)])
    packet, flow = _both(repo, "custom-4gpu.yaml", profile)
    wire_ns = 2 * MIB / P * (P + 16) / 32e9 * 1e9
    _check(packet, flow, 0.02, wire_ns, wire_ns + 2500)
    free = _kernel_ns(repo, "custom-4gpu.yaml", profile, "flow", {"fabric.flow.injection": "free"})
    _check(packet, free, 0.02, wire_ns, wire_ns + 2500)


def test_a_write_behind_a_starved_one_in_its_injection_queue(repo):
    # custom-4gpu, reduced from scripts/compare_fabrics.py --seed 17 --case 49: GPU 0 reads 1 MiB from GPU 2 while
    # GPU 1 writes 64 KiB to GPU 2 and 1 MiB to GPU 3. The read's requests (a credit each, let past the writes'
    # packets by the routers' turns in bytes) take the channel towards GPU 2 across the slow link, so the 64 KiB
    # write crawls until the read is done, and the 1 MiB write waits behind its head packet in GPU 1's one injection
    # queue, though its own channel has credits to spare: it cannot end before the 64 KiB write, nor before its own
    # wire time on the 32 GB/s link. Measured -2.9% (packet 71.53 us, flow 69.48 us; -42.6%, 41.04 us, with
    # flow.injection: free, where the 1 MiB write went at once). The packet fabric is the reference, to 5%.
    b = ProfileBuilder(gpus=4, workgroups=3, name="behind-a-starved-write")
    b.buffer("data", nbytes=MIB)
    b.flag("done")
    b.program(gpu=0, wg=0).read(dst=2, buffer="data", offset=0, nbytes=MIB)
    put = b.program(gpu=1, wg=1)
    put.write(dst=2, buffer="data", offset=0, nbytes=64 << 10)
    put.signal(dst=2, flag="done")
    b.program(gpu=1, wg=2).write(dst=3, buffer="data", offset=0, nbytes=MIB)
    wire_ns = MIB / P * (P + 16) / 32e9 * 1e9
    kernel = {}
    for model in ("packet", "flow"):
        result = _simulate(repo, "custom-4gpu.yaml", b.build(), model, BARE_128, shipped=True)
        ends = {int(w["wg"]): float(w["finish_ns"]) for w in result.workgroups if w["gpu"] == 1}
        assert ends[2] > ends[1] and ends[2] >= wire_ns, (model, ends)
        kernel[model] = result.kernel_time_ns
    packet, flow = kernel["packet"], kernel["flow"]
    assert abs(flow / packet - 1) <= 0.05, f"flow / packet - 1 = {flow / packet - 1:+.2%} ({packet:.1f} / {flow:.1f} ns)"
    free = _kernel_ns(repo, "custom-4gpu.yaml", b.build(), "flow", {"fabric.flow.injection": "free", **BARE_128},
                      shipped=True)
    assert free < 0.7 * packet  # without the coupling the 1 MiB write goes at once


def test_flags_wait_for_room_in_a_credit_starved_buffer(repo):
    # switch-8gpu with 16-packet buffers against a credit round trip of 148 packets (docs/fabrics.md,
    # "Flags"): a 64 KiB all-to-all of 32 workgroups sends one-packet writes and as many signals, and
    # in that small window a flag holds a credit for a round trip as any packet does, so flags are
    # not timed alone there. The packet fabric is the reference: measured +6.5%; timing every flag
    # alone gave -14.0% (every single packet alone, -23.7%).
    packet, flow = _both(repo, "switch-8gpu.yaml", all_to_all(8, 64 * 1024, workgroups=32, mode="syncmon"),
                         {"fabric.switch.buffer": 16})
    assert abs(flow / packet - 1) < 0.10


# ---- the GPU's round robin and output queue, packet by packet, on one hierarchical-16gpu link --------------

HIER_LINK = dict(B=64e9, h=85)  # hierarchical-16gpu.yaml's links within a node, one lane
FLAG_WIRE_NS = (8 + HIER_LINK["h"]) / HIER_LINK["B"] * 1e9  # a flag's packet (8 bytes and a header) on one: 1.45 ns


def _op_ends(repo, profile, model: str, gpu: int, kind: str) -> list[float]:
    """The end times (ns) of `gpu`'s ops of `kind` on hierarchical-16gpu, in workgroup order."""
    overrides = {"gpus.launch": "0ns", "fabric.model": model, **(FLOW_COUNTERPART if model == "flow" else {})}
    r = eidola.simulate(eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", overrides=overrides),
                        profile, trace=True)
    ops = r.ops_table()
    mine = ops[(ops["gpu"] == gpu) & (ops["kind"] == kind)]
    return [float(t) for t in mine[np.argsort(mine["wg"], kind="stable")]["end_ns"]]


def test_a_signal_takes_its_turn_among_the_writes_issued_in_its_instant(repo):
    # Workgroups 0-7 of GPU 6 each write 8 KiB to GPU 7 at time 0; workgroup 8 signals GPU 7 at time 0. The GPU
    # issues a packet a workgroup a turn, so the flag leaves after one packet of each write, not after all 64 KiB:
    # GPU 7 sees it well before the writes' wire time. The flow fabric queued it behind them all until 2026-12-04
    # (2.015 us against the packet fabric's 0.694 us): on hierarchical-16gpu's SyncMon ring all-reduce a release
    # whose acknowledgements came back in the instant another workgroup's wait ended went a whole write late.
    b = ProfileBuilder(gpus=16, workgroups=9, name="turn")
    b.buffer("buf", nbytes=8 * 8192)
    b.flag("f")
    for w in range(8):
        b.program(gpu=6, wg=w).write(dst=7, buffer="buf", offset=w * 8192, nbytes=8192)
    b.program(gpu=6, wg=8).signal(dst=7, flag="f", op="add", value=1)
    b.program(gpu=7, wg=0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    profile = b.build()
    (packet,), (flow,) = (_op_ends(repo, profile, model, 7, "wait") for model in ("packet", "flow"))
    writes_ns = 8 * 8192 // P * (P + HIER_LINK["h"]) / HIER_LINK["B"] * 1e9  # 1,364 ns
    assert packet < writes_ns  # behind all the writes it could not be seen before their wire time
    assert flow == pytest.approx(packet, rel=0.005)


def test_a_write_queued_behind_a_finishing_one_does_not_move_its_release(repo):
    # Workgroup 0 writes 32 KiB and then releases a flag; workgroup 1 issues its 32 KiB 676 ns later, in the first
    # write's last packet (683 ns at 48 GB/s of payload). The output queue sends the first write whole, so its last
    # packet, its acknowledgement and its release come as they would alone. The flow fabric timed that packet at its
    # flow's share with the second write, half the link, and released it a packet's time (5.3 ns) early.
    def profile(second: bool):
        b = ProfileBuilder(gpus=16, workgroups=2, name="tail")
        b.buffer("buf", nbytes=2 * 32768)
        b.flag("f0")
        b.program(gpu=6, wg=0).write(dst=7, buffer="buf", offset=0, nbytes=32768).signal(dst=7, flag="f0", op="add",
                                                                                          value=1)
        if second:
            b.program(gpu=6, wg=1).compute(ns=676).write(dst=7, buffer="buf", offset=32768, nbytes=32768)
        b.program(gpu=7, wg=0).wait(flag="f0", cond=">=", value=1, mode="syncmon")
        return b.build()

    alone = _op_ends(repo, profile(False), "flow", 6, "signal")[0]
    packet = _op_ends(repo, profile(True), "packet", 6, "signal")[0]
    flow = _op_ends(repo, profile(True), "flow", 6, "signal")[0]
    assert flow == alone
    assert flow == pytest.approx(packet, abs=1.0)


def test_a_release_between_two_writes_takes_its_packets_wire_time(repo):
    # Workgroup 1's 256-byte write goes first and its release comes back while workgroup 0's 128 KiB write is still
    # in GPU 6's output queue; workgroup 2's 8 KiB write, issued later, is queued behind both. Its last packet then
    # leaves one flag packet's wire time later than without the release (93 bytes at 64 GB/s, 1.45 ns), and so does
    # its own release: the packet fabric's output queue sends the release between the two writes' packets. The
    # flow fabric counted a release as no bytes in the queue until 2026-12-04 (0 ns), and an 8-GPU SyncMon ring of
    # 8 workgroups and 8 KiB steps ran 19% slow (test_syncmon_ring_of_thirty_8_kib_steps).
    def profile(release: bool):
        b = ProfileBuilder(gpus=16, workgroups=3, name="between")
        b.buffer("buf", nbytes=256 * 1024)
        b.flag("f1")
        b.flag("f2")
        b.program(gpu=6, wg=0).compute(ns=1).write(dst=7, buffer="buf", offset=0, nbytes=128 * 1024)
        first = b.program(gpu=6, wg=1).write(dst=7, buffer="buf", offset=128 * 1024, nbytes=256)
        if release:
            first.signal(dst=7, flag="f1", op="add", value=1, scope="peer", overlap=True)
        b.program(gpu=6, wg=2).compute(ns=1500).write(dst=7, buffer="buf", offset=160 * 1024, nbytes=8192).signal(
            dst=7, flag="f2", op="add", value=1, scope="peer", overlap=True)
        b.program(gpu=7, wg=2).wait(flag="f2", cond=">=", value=1, mode="syncmon")
        return b.build()

    for model in ("packet", "flow"):
        (later,), (alone,) = (_op_ends(repo, profile(release), model, 7, "wait") for release in (True, False))
        assert later - alone == pytest.approx(FLAG_WIRE_NS, abs=0.01), model


def test_flags_in_one_instant_leave_a_wire_time_apart(repo):
    # Two workgroups of GPU 6 each signal GPU 7 at time 0 on an idle link: the second flag's packet follows the
    # first's on the wire, so GPU 7 sees it one flag packet's wire time later (1.45 ns). The flow fabric timed each
    # flag alone and delivered both in the same picosecond until 2026-12-04.
    b = ProfileBuilder(gpus=16, workgroups=4, name="flags")
    for w in range(2):
        b.flag(f"f{w}")
        b.program(gpu=6, wg=w).signal(dst=7, flag=f"f{w}", op="add", value=1)
        b.program(gpu=7, wg=2 + w).wait(flag=f"f{w}", cond=">=", value=1, mode="syncmon")
    profile = b.build()
    for model in ("packet", "flow"):
        first, second = _op_ends(repo, profile, model, 7, "wait")
        assert second - first == pytest.approx(FLAG_WIRE_NS, abs=0.01), model


def _syncmon_ring(gpus: int, workgroups: int, nbytes: int, steps: int):
    """Each workgroup of GPU g writes `nbytes` to GPU g+1 and releases its flag there, `steps` times, waiting
    before each next step for its flag from GPU g-1 (a ring all-reduce's data flow, steps on end)."""
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="syncmon-ring")
    b.buffer("buf", nbytes=workgroups * nbytes)
    for w in range(workgroups):
        b.flag(f"f{w}")
    for g in range(gpus):
        for w in range(workgroups):
            program = b.program(gpu=g, wg=w)
            for s in range(steps):
                if s > 0:
                    program.wait(flag=f"f{w}", cond=">=", value=s, mode="syncmon")
                program.write(dst=(g + 1) % gpus, buffer="buf", offset=w * nbytes, nbytes=nbytes).signal(
                    dst=(g + 1) % gpus, flag=f"f{w}", op="add", value=1, scope="peer", overlap=True)
            program.wait(flag=f"f{w}", cond=">=", value=steps, mode="syncmon")
    return b.build()


def test_syncmon_ring_of_thirty_8_kib_steps(repo):
    # 8 GPUs of mi300x-8gpu (fully connected), 8 workgroups, 30 steps of 8 KiB: measured +0.12% over the five starts
    # (+13.45% before releases took their wire time in the output queue and flags on a link one after another, the
    # starts reading +3.98 +8.68 +19.78 +15.88 +18.94%: under skews of a few nanoseconds the flow fabric's workgroups
    # bunched, their releases leaving together behind one write, while the packet fabric kept them a write apart;
    # on GPUs 0-7 of hierarchical-16gpu, +19.3% before and -0.05% after).
    nbytes, steps, workgroups = 8192, 30, 8
    sent = steps * workgroups * nbytes // P * (P + MI300X["h"])
    packet, flow = _over_five_starts(repo, "mi300x-8gpu.yaml", _syncmon_ring(8, workgroups, nbytes, steps),
                                     _stream_ns(MI300X, sent))
    _check(packet, flow, 0.03, 0.0)
