"""Links of several lanes, and what limits a packet fabric, against bounds derived by hand.

A link of L lanes of bandwidth b is one port: a packet takes one lane (the first free), and every
router input of an L-lane link has L crossbar paths and L lanes' buffers, so L lanes carry L x b
through routers as on a direct link. A packet of n payload bytes takes n + h bytes of wire, and a
write's acknowledgement h (link.ack 0), so a GPU's one-way data runs at most at
L x b x n / (n + h) on its own, and at L x b x n / (n + 2h) when it also acknowledges as much
coming in (as in an all-reduce, where every GPU sends and receives alike).
"""

import numpy as np
import pytest
from conftest import SHIPPED_PLATFORMS

import eidola
from eidola.generators import direct_allreduce
from eidola.profile import ProfileBuilder

H = 16       # header bytes
N = 256      # payload bytes per packet (max_payload)


def _platform(write_platform, gpus, topology, lanes, lane_bw, latency=25, switch=25, buffer=64, mem_latency=50,
              workgroups=32):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: lanes
        gpus: {{count: {gpus}, workgroups: {workgroups}, max_outstanding: 8192, max_payload: {N}B,
               memory: {{latency: {mem_latency}ns, bandwidth: 5.3TB/s}}}}
        fabric:
          model: packet
          topology: {topology}
          link: {{bandwidth: {lane_bw}GB/s, latency: {latency}ns, header: {H}B, count: {lanes}}}
          switch: {{latency: {switch}ns, buffer: {buffer}}}
        """))


def _one_write(src, dst, gpus, nbytes):
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="one")
    b.buffer("data", nbytes=nbytes)
    b.program(gpu=src, wg=0).write(dst=dst, buffer="data", offset=0, nbytes=nbytes)
    return b.build()


def _round_trip_packets(lane_bw, latency, switch):
    """Packets one lane's buffer must hold to keep the lane busy: its credit round trip
    (ser + 2 lat + sw) x b / (n + h), rounded up."""
    ser = (N + H) / lane_bw
    return int(np.ceil((ser + 2 * latency + switch) * lane_bw / (N + H)))


@pytest.mark.parametrize("topology, gpus, src, dst", [
    ("fully_connected", 2, 0, 1),     # one link
    ("switch", 4, 0, 1),              # GPU -> switch -> GPU: through a router's input and output
    ("ring", 4, 0, 2),                # through GPU 1's router
])
@pytest.mark.parametrize("lanes, lane_bw", [(1, 100), (4, 100), (18, 25)])
def test_one_flow_uses_every_lane_of_every_hop(write_platform, topology, gpus, src, dst, lanes, lane_bw):
    # One 16 MiB write: the flow stripes its packets over the lanes of each link it crosses and
    # streams at L x b x n / (n + h), once its start-up and last round trip (under 1 us here,
    # against 40 us or more of streaming) are paid. The buffer covers one lane's credit round
    # trip, no more: each lane brings its own, so L lanes need no larger setting.
    nbytes = 16 << 20
    buffer = _round_trip_packets(lane_bw, 25, 25) + 2
    plat = _platform(write_platform, gpus, topology, lanes, lane_bw, buffer=buffer, workgroups=1)
    res = eidola.simulate(plat, _one_write(src, dst, gpus, nbytes))
    wire_rate = lanes * lane_bw * N / (N + H)                # GB/s of payload
    assert nbytes / res.kernel_time_ns == pytest.approx(wire_rate, rel=0.03)
    # Per port: every link the flow crosses carries its packets, each busy (n + h) / b per packet
    # summed over its lanes, and the lanes share the work evenly (packets go to the first free lane).
    packets = nbytes // N
    first = res.links[(res.links["src"] == src) & (res.links["packets"] >= packets)][0]
    assert first["lanes"] == lanes
    assert first["wire_bytes"] == packets * (N + H)
    assert first["busy_ns"] == pytest.approx(first["wire_bytes"] / lane_bw, rel=1e-6)
    assert first["utilization"] == pytest.approx(first["busy_ns"] / (lanes * res.kernel_time_ns))
    assert first["utilization"] > 0.95
    assert first["lane_utilization_max"] == pytest.approx(first["utilization"], rel=0.02)


def _busbw(write_platform, lanes, lane_bw, nbytes=4 << 20):
    plat = _platform(write_platform, 8, "switch", lanes, lane_bw, buffer=_round_trip_packets(lane_bw, 25, 25) + 2)
    res = eidola.simulate(plat, direct_allreduce(gpus=8, nbytes=nbytes, workgroups=32, mode="syncmon"))
    return res.busbw_gbs(nbytes, "all_reduce"), res


def _wire_busbw(lanes, lane_bw):
    """The direct all-reduce's bus bandwidth bound on a switch: each GPU sends 2 (P-1)/P x S through
    its link and acknowledges as much coming in, so busbw = S/t x 2 (P-1)/P <= L x b x n / (n + 2h)."""
    return lanes * lane_bw * N / (N + 2 * H)


def test_lanes_add_up_through_a_switch_in_an_all_reduce(write_platform):
    # 8 GPUs on a switch, 4 MiB direct all-reduce with 32 workgroups, short wires (25 ns links and
    # router, 50 ns memory) so that the run is bandwidth-bound. Four lanes of 100 GB/s must give at
    # least 3.6x one lane, and neither may beat its wire bound (88.9 and 355.6 GB/s).
    one, _ = _busbw(write_platform, 1, 100)
    four, res = _busbw(write_platform, 4, 100)
    assert one <= _wire_busbw(1, 100) and four <= _wire_busbw(4, 100)
    assert one >= 0.9 * _wire_busbw(1, 100)
    assert four >= 3.6 * one
    # The GPUs' links are the busiest and use their lanes evenly.
    uplinks = res.links[res.links["src"] < 8]
    assert np.all(uplinks["lane_utilization_max"] <= 1.05 * uplinks["utilization"])


def test_an_h100_like_switch_reaches_its_wire_bound(write_platform):
    # 18 NVLink-like lanes of 25 GB/s per GPU (450 GB/s a direction): within 10% of the wire bound
    # 18 x 25 x 256 / 288 = 400 GB/s.
    busbw, _ = _busbw(write_platform, 18, 25)
    assert 0.9 * _wire_busbw(18, 25) <= busbw <= _wire_busbw(18, 25)


# What limits a run: the fabric counts it, and the summary says so.
LAT, SW, B = 100.0, 50.0, 64.0   # ns, ns, GB/s


@pytest.mark.parametrize("buffer", [8, 64])
def test_a_buffer_short_of_the_credit_round_trip_is_counted_and_noted(write_platform, buffer):
    # GPU 0 streams 1 MiB to GPU 1 over one link. A packet's credits come back a round trip after
    # it started: ser + 2 lat + sw = 4.25 + 200 + 50 = 254.25 ns. With 8 packets of buffer the link
    # sends 8 packets (34 ns) per round trip and idles, packets waiting, for the other
    # 1 - 8 x 4.25 / 254.25 = 86.6% of it; 64 packets cover the round trip (60), so it never waits.
    plat = _platform(write_platform, 2, "fully_connected", 1, B, latency=LAT, switch=SW, buffer=buffer,
                     mem_latency=300, workgroups=1)
    res = eidola.simulate(plat, _one_write(0, 1, 2, 1 << 20))
    link = res.links[(res.links["src"] == 0) & (res.links["dst"] == 1)][0]
    ser = (N + H) / B
    credit_notes = [note for note in res.summary()["notes"] if "credits" in note]
    if buffer == 8:
        assert link["credit_stall_ns"] / res.kernel_time_ns == pytest.approx(1 - 8 * ser / (ser + 2 * LAT + SW),
                                                                             abs=0.01)
        assert len(credit_notes) == 1 and "0 -> 1" in credit_notes[0]
    else:
        assert link["credit_stall_ns"] == 0 and not credit_notes


def test_congestion_is_not_taken_for_short_buffers(write_platform):
    # Four GPUs write 1 MiB each to GPU 0 through a switch: the link into GPU 0 is the bottleneck,
    # and the switch input of each sender fills with packets waiting for it, so the senders' links
    # wait for credits. That is congestion, not a buffer short of its round trip (64 packets cover
    # it): no link counts it as a credit stall, and the summary notes nothing. It is back-pressure:
    # a sender's link carries a quarter of the bottleneck's packets, so it is busy a quarter of the
    # run and, from its first packet to its last, backed up whenever it is not busy. What is left
    # of the run is the tail after its last packet left: at most the 64 x 4 packets buffered at the
    # switch draining through GPU 0's link (ser each), the last one's hop into GPU 0, the memory's
    # 300 ns and the acknowledgement's two hops back. Found by ring-8gpu's all-to-all, whose links
    # idled 30% with both counters at 0 (docs/fabrics.md).
    n = 4
    b = ProfileBuilder(gpus=n + 1, workgroups=1, name="incast")
    b.buffer("data", nbytes=1 << 20)
    for g in range(1, n + 1):
        b.program(gpu=g, wg=0).write(dst=0, buffer="data", offset=0, nbytes=1 << 20)
    plat = _platform(write_platform, n + 1, "switch", 1, B, latency=LAT, switch=SW, buffer=64, mem_latency=300,
                     workgroups=1)
    res = eidola.simulate(plat, b.build())
    into_0 = res.links[res.links["dst"] == 0][0]
    assert into_0["utilization"] > 0.9
    assert res.links["credit_stall_ns"].max() < 0.01 * res.kernel_time_ns
    assert res.links["hol_blocked_ns"].max() == 0
    ser = (N + H) / B
    tail = 64 * n * ser + 3 * (LAT + SW) + 300
    uplinks = res.links[(res.links["src"] >= 1) & (res.links["src"] <= n)]
    for link in uplinks:
        assert link["busy_ns"] / res.kernel_time_ns == pytest.approx(1 / n, abs=0.02)
        left = res.kernel_time_ns - link["busy_ns"] - link["backpressure_ns"]
        assert 0 <= left <= tail, (link["busy_ns"], link["backpressure_ns"], res.kernel_time_ns, tail)
    assert res.links[res.links["dst"] == 0][0]["backpressure_ns"] == 0  # into GPU 0: nothing further on
    assert res.summary()["notes"] == []  # back-pressure is not noted: in an incast it costs nothing


def test_the_run_summary_says_what_a_packet_fabric_did(cli, write_platform, tmp_path):
    # A packet fabric that moved nothing has no busiest link (it is not the ideal fabric). Trains
    # asked for on a switch are refused (a switch's links carry several GPUs' packets): the
    # summary says so, naming gpus.train, and the run goes packet by packet.
    plat = write_platform(f"""
        eidola: 1
        name: summary
        gpus: {{count: 2, workgroups: 1, max_outstanding: 8192, max_payload: {N}B,
               memory: {{latency: 300ns, bandwidth: 5.3TB/s}}}}
        fabric: {{model: packet, topology: switch}}
        """)
    idle = ProfileBuilder(gpus=2, workgroups=1, name="idle")
    idle.program(gpu=0, wg=0).compute(ns=100)
    idle.build().save(tmp_path / "idle.yaml")
    r = cli("run", plat, "--profile", tmp_path / "idle.yaml", "--out", tmp_path / "idle")
    assert r.returncode == 0, r.stderr
    assert "busiest link  none (no link traffic)" in r.stdout and "ideal" not in r.stdout
    _one_write(0, 1, 2, 1 << 20).save(tmp_path / "write.yaml")
    r = cli("run", plat, "--profile", tmp_path / "write.yaml", "--set", "gpus.train=64", "--out", tmp_path / "w")
    assert r.returncode == 0, r.stderr
    notes = [line for line in r.stdout.splitlines() if line.startswith("note: gpus.train")]
    assert len(notes) == 1 and "refused packet trains on 1 GPU-to-peer route(s)" in notes[0]
    assert "busiest link  gpu0 -> s0, 1.05 MB at" in r.stdout   # GPU 0 to the switch (node 2): every byte


def _one_way_ring(write_platform, buffer):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: ring-one-way
        gpus: {{count: 4, workgroups: 1, max_outstanding: 8192, max_payload: {N}B,
               memory: {{latency: 300ns, bandwidth: 5.3TB/s}}}}
        fabric:
          model: packet
          topology: ring
          bidirectional: false
          link: {{bandwidth: {B:g}GB/s, latency: {LAT:g}ns, header: {H}B}}
          switch: {{latency: {SW:g}ns, buffer: {buffer}}}
        """))


def test_a_bare_count_buffer_charges_each_acknowledgement_a_packet(write_platform):
    # Four GPUs on a one-way ring, each writing 2 MiB to the next: 8192 packets of 272 B on each link, and each
    # packet's 16-byte acknowledgement goes the rest of the way round, 3 hops, so every link also carries 3 x 8192
    # of them: 32768 packets, 8192 x 272 + 24576 x 16 = 2,621,440 wire bytes, 80 on average. A full packet's credit
    # round trip needs (272 / 64 + 2 x 100 + 50) x 64 / 272 = 59.8, so 64 packets cover it; but a buffer counted in
    # packets charges every acknowledgement a whole packet, and at 80 bytes a packet a lane needs
    # (80 / 64 + 250) x 64 / 80 = 201. Found in a user trial: ring-8gpu one way ran its all-reduce at 7.7 GB/s
    # busbw with 64, 39 GB/s with the same 64 x 272 B as 17408B, and the note blamed neither the acknowledgements
    # nor the bare count. In bytes, the links run at their rate: 2,621,440 B / 64 GB/s = 40,960 ns, plus a start-up
    # and a last round trip under 1 us.
    b = ProfileBuilder(gpus=4, workgroups=1, name="shift")
    b.buffer("data", nbytes=2 << 20)
    for g in range(4):
        b.program(gpu=g, wg=0).write(dst=(g + 1) % 4, buffer="data", offset=0, nbytes=2 << 20)
    shift = b.build()
    count = eidola.simulate(_one_way_ring(write_platform, 64), shift)
    assert list(count.links["packets"]) == [32768] * 4 and list(count.links["wire_bytes"]) == [2_621_440] * 4
    (note,) = [n for n in count.summary["notes"] if n.startswith("note: credits")]
    for needle in ("fabric.switch.buffer is a bare count, 64 packets per lane and channel",
                   "each acknowledgement, flag and read request takes a whole packet slot",
                   "averaged 80 wire bytes", "= 201 packets of credit, where full packets need 60",
                   "Give the buffer in bytes (64 x 272 B = 17408B)"):
        assert needle in note, needle
    # GPUs' windows fill behind those acknowledgements; the note on them must not send the user to the window.
    window = [n for n in count.summary["notes"] if "max_outstanding" in n]
    assert all("may gain nothing until fabric.switch.buffer covers them" in n for n in window)
    flits = eidola.simulate(_one_way_ring(write_platform, "17408B"), shift)
    assert 40_960 <= flits.kernel_time_ns <= 40_960 + 1_000
    assert count.kernel_time_ns > 1.5 * flits.kernel_time_ns
    assert flits.summary["notes"] == []   # 1088 flits cover the 60 x 17 = 1017 of full packets: no warning either


def test_validate_warns_of_a_switch_buffer_short_of_its_links_round_trip(cli, repo):
    # switch-8gpu's 192 packets per lane cover its 100 GB/s lanes' round trip, (272 B / 100 GB/s + 2 x 150 ns +
    # 100 ns) x 100 GB/s / 272 B = 148.1; at 400 GB/s lanes it is (0.68 + 400) x 400 / 272 = 589.2, 590 packets,
    # and 192 carry 192 / 589.2 = 33% of a lane's rate. A warning, not an error: the platform runs.
    plat = repo / "platforms" / "switch-8gpu.yaml"
    r = cli("validate", plat)
    assert r.returncode == 0 and "warning" not in r.stdout + r.stderr
    r = cli("validate", plat, "--set", "fabric.link.bandwidth=400GB/s")
    assert r.returncode == 0, r.stderr
    (line,) = [x for x in r.stdout.splitlines() if x.startswith("warning")]
    for needle in (f"{plat}: fabric.switch.buffer: 192 packets per lane and channel, short of the credit round "
                   "trip of fabric.link's lanes", "(272 B / 400GB/s + 2 x 150 ns + 100 ns) x 400GB/s / 272 B = 590 "
                   "packets", "at most 33% of its rate", "give at least 590, or 160480B in flits"):
        assert needle in line, needle


def test_a_custom_edge_short_of_its_round_trip_is_named(repo):
    # custom-4gpu's slow edge (the fifth, index 4: 32 GB/s, 500 ns) needs (272 / 32 + 2 x 500 + 50) x 32 / 272 =
    # 124.5 packets of 17 flits, 2117 flits; its 34816B (2176 flits) cover it, and half of that (1088) does not:
    # 1088 / 2116.5 = 51% of the rate. The 64 GB/s, 100 ns edges need 59.8 x 17 = 1017 flits, covered by both.
    from eidola.platform.credits import buffer_warnings, credit_checks

    path = repo / "platforms" / "custom-4gpu.yaml"
    assert buffer_warnings(credit_checks(eidola.load_platform(path))) == []
    (line,) = buffer_warnings(credit_checks(eidola.load_platform(path, {"fabric.switch.buffer": "17408B"})))
    assert f"{path}: fabric.switch.buffer: 17KiB (1088 flits of 16 B) per lane and channel" in line
    assert "fabric.custom.edges[4]'s lanes" in line and "= 125 packets of 17 flits = 2117 flits" in line
    assert "at most 51% of its rate; give at least 33872B" in line


@pytest.mark.parametrize("path", SHIPPED_PLATFORMS, ids=lambda p: p.stem)
def test_no_shipped_platform_is_short_of_credits(path):
    # Each file's comment sizes its buffer to its links' round trip (ring-8gpu: 64 against 59.8; switch-8gpu: 192
    # against 148.1; the byte buffers by their own figures): none may warn.
    from eidola.platform.credits import buffer_warnings, credit_checks

    assert buffer_warnings(credit_checks(eidola.load_platform(path))) == []


def test_a_flow_run_says_what_it_cannot_measure_of_credits(repo):
    # The flow fabric paces each channel to its credits but counts no credit stalls (its links' credit_stall_ns is
    # NaN), so a user's flow run of switch-8gpu at 400 GB/s lanes printed no note at all (a user trial). The summary
    # now gives the figures (590 packets needed, as above) and says the flow fabric does not count the wait.
    from eidola.generators import all_to_all

    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml",
                                {"fabric.model": "flow", "fabric.link.bandwidth": "400GB/s"})
    res = eidola.simulate(plat, all_to_all(gpus=8, nbytes=8 * 4096))
    assert np.isnan(res.links["credit_stall_ns"]).all()
    (line,) = [n for n in res.summary["notes"] if "fabric.switch.buffer" in n]
    assert line.startswith("warning: ") and "= 590 packets" in line
    assert "The flow fabric paces each channel to these credits a round trip but does not count how long" in line
