"""The packet fabric against numbers derived by hand.

Notation: link raw bandwidth B per direction, latency lat, per-packet header h, router latency
sw, flit F = 16 bytes (f = F / B = 0.25 ns). A packet of n payload bytes serialises in
ser = (h + n) / B. Routers are cut-through by default: a packet's head (one flit) crosses a hop
in f + lat and enters the next router (sw, the destination's included; injection from the GPU
pays none), and the packet moves on at once; the GPU takes it whole, when its tail is in. So a
packet crossing H hops at zero load takes ser + H (lat + sw) + (H - 1) f: its serialisation once,
and each later hop adds the head flit. Store and forward pays H (ser + lat + sw). Buffers hold 64
packets per virtual channel; credits come back one link latency after a packet's tail leaves, so
a link runs at full rate only if the buffer covers the credit round trip
(ser + 2 lat + sw) x B / packet = 254.25 ns x 64 GB/s / 272 B = 60 packets.
"""


import numpy as np
import pytest

import eidola
from eidola.generators import all_to_all, direct_allreduce, ring_allreduce
from eidola.profile import ProfileBuilder

B, LAT, H, SW = 64e9, 100.0, 16, 50.0   # bytes/s, ns, bytes, ns
F = 16 / B * 1e9                         # one flit's serialisation, ns
M = 300.0                                # memory latency, ns


def ser_ns(payload, header=H, bandwidth=B):
    return (header + payload) / bandwidth * 1e9


def _platform(write_platform, gpus, topology, extra="", workgroups=8, max_outstanding=1024, max_payload="256B",
              mem_bw="5.3TB/s", buffer=64):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: packet-test
        gpus:
          count: {gpus}
          workgroups: {workgroups}
          max_outstanding: {max_outstanding}
          max_payload: {max_payload}
          memory: {{latency: {M:g}ns, bandwidth: {mem_bw}}}
        fabric:
          model: packet
          topology: {topology}
          link: {{bandwidth: 64GB/s, latency: {LAT:g}ns, header: {H}B}}
          switch: {{latency: {SW:g}ns, buffer: {buffer}}}
        {extra}
        """))


def _one_write(src, dst, gpus, nbytes=256, workgroups=1):
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="one")
    b.buffer("data", nbytes=max(nbytes, 4096))
    b.program(gpu=src, wg=0).write(dst=dst, buffer="data", offset=0, nbytes=nbytes)
    return b.build()


@pytest.mark.parametrize("topology, gpus, extra, src, dst, hops, back", [
    ("fully_connected", 4, "", 0, 3, 1, 1),
    ("switch", 8, "", 1, 6, 2, 2),                                 # GPU -> switch -> GPU
    ("ring", 8, "", 0, 3, 3, 3),                                   # the short way round
    ("ring", 8, "", 0, 6, 2, 2),                                   # the other way round
    ("ring", 8, "  bidirectional: false", 0, 6, 6, 2),             # one way only: the ack goes on round
    ("mesh2d", 16, "  dims: [4, 4]", 0, 15, 6, 6),                 # 3 in x, then 3 in y
    ("torus2d", 16, "  dims: [4, 4]", 0, 15, 2, 2),                # wrap once in x and in y
])
@pytest.mark.parametrize("flow", ["cut_through", "wormhole", "store_and_forward"])
def test_zero_load_latency_is_hops_times_hop_cost(write_platform, topology, gpus, extra, src, dst, hops, back, flow):
    # One 256-byte write (17 flits): from injection to delivery it takes ser + H (lat + sw) + (H - 1) f
    # cut through or wormhole (alike at zero load: the buffer has room for the whole packet), and
    # H (ser + lat + sw) store and forward.
    overrides: dict[str, object] = {"fabric.switch.flow_control": flow}
    if extra:
        key, value = extra.strip().split(": ", 1)
        import yaml
        overrides[f"fabric.{key}"] = yaml.safe_load(value)
    plat = _platform(write_platform, gpus, topology, workgroups=1)
    plat = eidola.load_platform(plat.source, overrides=overrides)
    res = eidola.simulate(plat, _one_write(src, dst, gpus))
    pair = res.pairs[(res.pairs["src"] == src) & (res.pairs["dst"] == dst)][0]
    if flow == "store_and_forward":
        expected = hops * (LAT + ser_ns(256) + SW)
    else:
        expected = ser_ns(256) + hops * (LAT + SW) + (hops - 1) * F
    assert pair["latency_mean_ns"] == pytest.approx(expected, abs=1e-3)
    # The write completes when its ack is back: request hops, memory, then the ack's hops. The ack
    # is a single flit (ser(0) = f), so it costs lat + f + sw a hop under every flow control.
    assert res.kernel_time_ns == pytest.approx(expected + M + 256 / 5.3e12 * 1e9 + back * (LAT + ser_ns(0) + SW),
                                               abs=2e-3)


def test_large_write_achieves_effective_bandwidth(write_platform):
    # 16 MiB over one link in 256-byte packets: effective bandwidth B * 256 / (256 + h) = 60.24 GB/s.
    nbytes = 16 << 20
    plat = _platform(write_platform, 2, "fully_connected", workgroups=1)
    res = eidola.simulate(plat, _one_write(0, 1, 2, nbytes=nbytes))
    achieved = nbytes / (res.kernel_time_ns * 1e-9)
    assert achieved == pytest.approx(B * 256 / (256 + H), rel=0.01)
    link = res.links[(res.links["src"] == 0) & (res.links["dst"] == 1)][0]
    assert link["bytes"] == nbytes and link["packets"] == nbytes // 256


def test_incast_shares_the_receiving_link_equally(write_platform):
    # 4 GPUs each write 4 MiB to GPU 0 through one switch: the switch -> GPU 0 link is shared round
    # robin, so each sender gets a quarter of its effective bandwidth.
    n, nbytes = 4, 4 << 20
    b = ProfileBuilder(gpus=n + 1, workgroups=1, name="incast")
    b.buffer("data", nbytes=nbytes)
    for g in range(1, n + 1):
        b.program(gpu=g, wg=0).write(dst=0, buffer="data", offset=0, nbytes=nbytes)
    res = eidola.simulate(_platform(write_platform, n + 1, "switch", workgroups=1), b.build())
    share = B * 256 / (256 + H) / n
    for g in range(1, n + 1):
        rate = nbytes / (res.gpus["finish_ns"][g] * 1e-9)
        assert rate == pytest.approx(share, rel=0.02), g


@pytest.mark.parametrize("vcs", [1, 0])
def test_head_of_line_blocking_slows_a_flow_sharing_the_buffer(write_platform, vcs):
    # Seven GPUs on one switch. GPUs 1, 4 and 0 all write to GPU 2 (its link gives each a third).
    # GPU 0 also writes to GPU 3 from another workgroup. With one virtual channel its packets sit
    # in the same switch input buffer behind GPU 0's packets for GPU 2, so it is held near the
    # same third although GPU 3's link is free.
    # GPU 5 -> GPU 6 shares no buffer or link with the hot flows: it streams at the full effective
    # rate and then pays one zero-load round trip: S/eff + (lat + sw) [first hop's last packet,
    # then cut through] + (lat + f + sw) [second hop: its tail follows one flit behind] + M +
    # occupancy + 2 (lat + ser(ack) + sw) [the last ack].
    nbytes = 2 << 20
    b = ProfileBuilder(gpus=7, workgroups=2, name="hol")
    b.buffer("data", nbytes=nbytes)
    for g in (1, 4, 0):
        b.program(gpu=g, wg=0).write(dst=2, buffer="data", offset=0, nbytes=nbytes)
    b.program(gpu=0, wg=1).write(dst=3, buffer="data", offset=0, nbytes=nbytes)
    b.program(gpu=5, wg=0).write(dst=6, buffer="data", offset=0, nbytes=nbytes)
    plat = _platform(write_platform, 7, "switch", workgroups=2)
    res = eidola.simulate(eidola.load_platform(plat.source, {"fabric.switch.vcs": vcs}), b.build())
    eff = B * 256 / (256 + H)
    wg = {(int(r["gpu"]), int(r["wg"])): r["finish_ns"] for r in res.workgroups}
    victim = nbytes / (wg[(0, 1)] * 1e-9)
    control_ns = (nbytes / eff * 1e9 + (LAT + SW) + (LAT + F + SW) + M + 256 / 5.3e12 * 1e9
                  + 2 * (LAT + ser_ns(0) + SW))
    assert wg[(5, 0)] == pytest.approx(control_ns, rel=0.01)
    # The switch input from GPU 0 (node 7 is the switch) counts the time its queue held a packet
    # for GPU 3 ready behind one for GPU 2: most of the victim's run with one channel, none with
    # a channel per output.
    from_0 = res.links[(res.links["src"] == 0) & (res.links["dst"] == 7)][0]
    if vcs == 0:
        # Nothing blocks it in the switch now, but GPU 0's own port still does: its injection
        # buffer (shared by its queues) fills with packets for GPU 2, which leave at eff/3, and its
        # one request channel offers the two workgroups' packets in turn, so each departure for
        # GPU 2 lets in one packet for GPU 3: the victim is held at eff/3 all the same.
        assert from_0["hol_blocked_ns"] == 0
        assert victim == pytest.approx(eff / 3, rel=0.02)
        return
    assert victim < 0.45 * eff                       # held near the hot flows' third, far from 2/3
    assert from_0["hol_blocked_ns"] > 0.5 * wg[(0, 1)]
    # GPU 0's input sends one packet at a time (input speedup 1), so while it feeds GPU 3 the
    # output to GPU 2 passes it over: GPUs 1 and 4 get at least a third of GPU 2's link, and less
    # than half (GPU 0 still gets its turns).
    for g in (1, 4):
        assert eff / 3 <= nbytes / (wg[(g, 0)] * 1e-9) < eff / 2


def _ring_alpha_ns(chunk, payload):
    """Per-step latency of the ring all-reduce on a bidirectional ring, one workgroup, derived by hand.

    A step is: write the chunk (posted: its packets stream at the link rate; the last one then
    propagates (lat), enters the next router (sw), is written in memory (M + its occupancy) and is
    acknowledged over the reverse link (one hop of a header-only packet)); then the signal, a
    release, goes once that acknowledgement is back, and lands in the successor's memory one hop
    later (ser(8) + lat + sw, then M + its occupancy), waking the successor's monitored wait: its
    next step starts there. The streaming part, chunk/payload packets of ser(payload), is the beta
    term; the rest is alpha.
    """
    write_tail = LAT + SW + M + payload / 5.3e12 * 1e9 + _ack_hop_ns()
    signal_lands = ser_ns(8) + LAT + SW + M + 8 / 5.3e12 * 1e9
    return write_tail + signal_lands


def _ack_hop_ns():
    return LAT + ser_ns(0) + SW


@pytest.mark.parametrize("p", [4, 8, 16])
@pytest.mark.parametrize("size", [64 << 10, 1 << 20, 16 << 20, 256 << 20])
def test_ring_allreduce_matches_alpha_beta(write_platform, p, size):
    # T = 2(p-1)/p * S/B + 2(p-1) * alpha + one acknowledgement hop, with B the effective bandwidth for
    # the payload size in use: the program ends when its last signal is acknowledged (the implicit
    # release at a kernel's end), one hop after the successor saw it.
    # Large messages use larger packets (max_payload), so a step never needs more than 256 of them.
    chunk = size // p
    payload = max(256, chunk // 256)
    plat = _platform(write_platform, p, "ring", workgroups=1, max_payload=f"{payload}B")
    prof = ring_allreduce(gpus=p, nbytes=size, mode="syncmon")
    res = eidola.simulate(plat, prof)
    b_eff = B * payload / (payload + H)
    expected = 2 * (p - 1) / p * size / b_eff * 1e9 + 2 * (p - 1) * _ring_alpha_ns(chunk, payload) + _ack_hop_ns()
    assert res.kernel_time_ns == pytest.approx(expected, rel=1e-3)


def test_no_packet_lost_or_duplicated_in_a_congested_torus_all_to_all(write_platform):
    # 16 GPUs on a 4x4 torus with shallow buffers (4 packets), 4 workgroups each sending to every
    # peer at once: every byte sent arrives exactly once, every link's packet count balances, and
    # no buffer ever held more than its depth per virtual channel.
    gpus, nbytes, depth = 16, 16 * 4 * 4096, 4
    plat = _platform(write_platform, gpus, "torus2d", workgroups=4, buffer=depth)
    res = eidola.simulate(plat, all_to_all(gpus=gpus, nbytes=nbytes, workgroups=4, mode="syncmon"))
    sent_per_gpu = (gpus - 1) * nbytes // gpus + (gpus - 1) * 4 * 8   # data plus 8-byte signals
    assert list(res.gpus["bytes_sent"]) == [sent_per_gpu] * gpus
    assert res.gpus["bytes_sent"].sum() == res.gpus["bytes_received"].sum()
    assert res.pairs["bytes"].sum() == res.gpus["bytes_sent"].sum()
    # Each request packet crosses as many links as its route has hops, and so does its response.
    assert res.links["packets"].sum() % 2 == 0
    # A channel per output of the router (two ejections and four links) per class and dateline half.
    assert res.links["peak_occupancy"].max() <= 2 * 2 * 6 * depth
    assert res.links["queue_max_ns"].max() > 0                       # it really was congested


def test_link_statistics_are_consistent(write_platform):
    plat = _platform(write_platform, 4, "fully_connected", workgroups=4)
    res = eidola.simulate(plat, direct_allreduce(gpus=4, nbytes=4 * 4 * 65536, workgroups=4))
    kernel = res.kernel_time_ns
    # Busy time is wire bytes at the link rate; utilisation is busy over the run; bins add up to busy.
    assert np.allclose(res.links["busy_ns"], res.links["wire_bytes"] / B * 1e9, rtol=1e-6)
    assert np.allclose(res.links["utilization"], res.links["busy_ns"] / kernel)
    per_link = np.bincount(res.link_bins["link"], weights=res.link_bins["busy_ns"], minlength=len(res.links))
    assert np.allclose(per_link, res.links["busy_ns"], rtol=1e-5)
    assert np.all(res.links["queue_p50_ns"] <= res.links["queue_p99_ns"] + 1e-9)
    assert np.all(res.links["queue_p99_ns"] <= res.links["queue_max_ns"] + 1e-9)


@pytest.mark.parametrize("spread, spines_used", [(False, 1), (True, 2)])
def test_equal_cost_spreading_uses_both_spines(repo, spread, spines_used):
    # hierarchical-16gpu: two nodes of 8 GPUs, each node's leaf switch joined to two spines. A
    # packet between nodes has two equal-cost routes (via either spine): without spreading the
    # deterministic first choice takes one spine; with it, packets alternate over both.
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", {"fabric.routing.spread": spread})
    b = ProfileBuilder(gpus=16, workgroups=1, name="cross")
    b.buffer("data", nbytes=8192)
    b.program(gpu=0, wg=0).write(dst=8, buffer="data", offset=0, nbytes=8192)
    res = eidola.simulate(plat, b.build())
    # Nodes: GPUs 0-15, leaves 16-17, spines 18-19. Links from leaf 16 (node 0) up to a spine:
    up = res.links[(res.links["src"] == 16) & (res.links["dst"] >= 18)]
    assert int((up["packets"] > 0).sum()) == spines_used
    assert int(up["packets"].sum()) == 8192 // 256


# hierarchical-16gpu, as shipped: NIC 50 GB/s and 1 us; leaf-spine 400 GB/s and 1 us; switches
# 100 ns; header 85 B, acknowledgement 16 B; memory 300 ns.
NIC_B, NIC_LAT, NET_LAT, HSW, HDR, HACK = 50e9, 1000.0, 1000.0, 100.0, 85, 16


@pytest.mark.parametrize("vcs, within", [(8, 0.15), (1, None)])
def test_hierarchical_direct_allreduce_is_link_bound_with_per_output_virtual_channels(repo, vcs, within):
    # 16 GPUs, 4 MiB direct all-reduce, 32 workgroups. GPU g's NIC uplink is the busiest link: it
    # carries g's data to its 8 peers in the other node in both phases (2 x 8 x S/16 bytes in
    # 256-byte packets), g's signals to them (32 workgroups x 8 peers x 2 phases, 8 bytes each),
    # and the acknowledgements of everything those 8 peers send g (the same counts, 16 B each).
    S, P, wgs, remote = 4 << 20, 16, 32, 8
    packets = 2 * remote * S // P // 256
    signals = wgs * remote * 2
    wire = packets * (256 + HDR) + signals * (8 + HDR) + (packets + signals) * HACK
    busy_ns = wire / NIC_B * 1e9
    # The NIC idles while each phase's last packet, its acknowledgement and then the signal (a
    # release) cross 4 hops each (NIC, spine link, spine link, NIC: lat + router latency each),
    # with a memory access after the data and after the signal; the program then ends when the
    # last signal is acknowledged (4 more hops).
    path = 2 * (NIC_LAT + HSW) + 2 * (NET_LAT + HSW)
    latency_ns = 2 * (3 * path + 2 * M) + path
    bound_ns = busy_ns + latency_ns
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml",
                                {"gpus.workgroups": wgs, "fabric.switch.vcs": vcs})
    res = eidola.simulate(plat, direct_allreduce(gpus=P, nbytes=S, workgroups=wgs, mode="syncmon"))
    # Nodes: GPUs 0-15, then leaves 16 and 17: GPU 0's NIC uplink is 0 -> 16, and no link is busier.
    uplink = res.links[(res.links["src"] == 0) & (res.links["dst"] == 16)][0]
    assert uplink["wire_bytes"] == wire
    assert res.links["busy_ns"].max() == pytest.approx(busy_ns, rel=1e-6)
    if within is not None:
        assert bound_ns <= res.kernel_time_ns <= (1 + within) * bound_ns
    else:
        # One channel per class: the spine -> leaf inputs are FIFOs towards 8 NICs, and head-of-line
        # blocking holds the all-reduce far from the bound (the NICs near half their rate).
        assert res.kernel_time_ns > 1.5 * bound_ns


def _saturating_uniform(gpus, writes, seed=1):
    """Every GPU writes `writes` 256-byte packets, each to a peer drawn uniformly (never itself),
    all posted at once: its port always has a packet waiting (a saturating source)."""
    import random
    rng = random.Random(seed)
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="uniform")
    b.buffer("data", nbytes=4096)
    for g in range(gpus):
        p = b.program(gpu=g, wg=0)
        for _ in range(writes):
            d = rng.randrange(gpus - 1)
            p.write(dst=d + (d >= g), buffer="data", offset=0, nbytes=256)
    return b.build()


def _switch_platform(write_platform, gpus, switch):
    # No header, so a write is exactly 16 flits and its acknowledgement takes no time on the wire:
    # the links carry only the measured traffic. Short wires and routers keep the start-up short.
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: single-switch
        gpus: {{count: {gpus}, workgroups: 1, max_outstanding: 100000, max_payload: 256B,
               memory: {{latency: 10ns, bandwidth: 1000TB/s}}}}
        fabric:
          model: packet
          topology: switch
          link: {{bandwidth: 64GB/s, latency: 1ns, header: 0B}}
          switch: {switch}
        """))


@pytest.mark.parametrize("vcs, expected, tol", [(1, 0.600, 0.03), (16, 1.0, 0.07), (0, 1.0, 0.1)])
def test_single_switch_head_of_line_saturation(write_platform, vcs, expected, tol):
    # A 16 x 16 switch under saturating uniform traffic. With one virtual channel each input is a
    # FIFO, and a head packet whose output is taken blocks the packets behind it: throughput per
    # output tends to 2 - sqrt(2) = 0.586 as N grows and is 0.600 at N = 16 (Karol, Hluchyj and
    # Morgan, 1987, table I). With 16 channels allocated by next output, or a channel per output
    # (vcs 0), each input holds a queue per output (virtual output queueing): no blocking, and
    # throughput approaches the link (what is left is the allocator matching inputs to outputs one
    # grant at a time).
    # Over four draws of the traffic: one draw's figure moves by +-0.03 with the draw alone (queues per output,
    # seeds 1-4: 0.880-0.927), and a single one made the test a test of that draw's luck.
    n, writes = 16, 1500
    plat = _switch_platform(write_platform, n, f"{{latency: 1ns, buffer: 8, vcs: {vcs}}}")
    runs = [eidola.simulate(plat, _saturating_uniform(n, writes, seed)) for seed in (1, 2, 3, 4)]
    accepted = np.mean([writes * 256 / (r.kernel_time_ns * 1e-9) / B for r in runs])  # per GPU, of the link
    assert accepted == pytest.approx(expected, abs=tol)
    res = runs[0]
    # The switch inputs (node 16) count the time a ready packet sat behind a head bound elsewhere:
    # with a FIFO, most of the run at every input, and the summary says so; with a queue per
    # output, never.
    blocked = res.links[res.links["dst"] == n]["hol_blocked_ns"] / res.kernel_time_ns
    hol_notes = [note for note in res.summary()["notes"] if "head-of-line" in note]
    if vcs == 1:
        assert blocked.min() > 0.5 and len(hol_notes) == 1
    elif vcs == 0:
        assert blocked.max() == 0 and not hol_notes


@pytest.mark.parametrize("buffer", [8, "2176B"])
def test_credit_limited_throughput_is_buffer_over_round_trip(write_platform, buffer):
    # GPU 0 streams 1 MiB to GPU 1 over one link with 8 packets of buffer (or 2176 bytes = 136
    # flits = 8 writes of 17 flits). A packet's credits come back when its tail has left the
    # buffer (it enters GPU 1 whole, ser + lat + sw after it started) plus the wire back (lat):
    # a credit round trip of ser + 2 lat + sw = 254.25 ns. Eight packets per round trip is 13% of
    # the link, so the link is credit-bound at 8 x 256 B / 254.25 ns = 8.06 GB/s of data.
    nbytes = 1 << 20
    plat = _platform(write_platform, 2, "fully_connected", workgroups=1)
    plat = eidola.load_platform(plat.source, overrides={"fabric.switch.buffer": buffer,
                                                         "gpus.memory.bandwidth": "1000TB/s"})
    res = eidola.simulate(plat, _one_write(0, 1, 2, nbytes=nbytes))
    round_trip = ser_ns(256) + 2 * LAT + SW
    assert nbytes / (res.kernel_time_ns * 1e-9) == pytest.approx(8 * 256 / round_trip * 1e9, rel=0.01)


@pytest.mark.parametrize("key, value, says", [
    ("fabric.switch.buffer", 0, "positive number of packets"),
    ("fabric.switch.buffer", "64", "a string: write 64 without quotes for packets, or '64B' for bytes"),
    ("gpus.max_outstanding", "100000", "expected an integer, got '100000', a string: write it without quotes"),
    ("fabric.switch.vcs", -1, "out of range"),
    ("fabric.switch.vcs", 65, "out of range"),
    ("fabric.switch.flow_control", "virtual_cut_through", "cut_through"),
])
def test_bad_router_settings_name_the_key(repo, key, value, says):
    with pytest.raises(eidola.ConfigError, match=key.replace(".", r"\.")) as err:
        eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", {key: value})
    assert says in str(err.value)


def test_cut_through_refuses_a_buffer_smaller_than_a_packet(write_platform):
    # 32 bytes is 2 flits; a 256-byte write with its 16-byte header is 17: it could never move.
    plat = _platform(write_platform, 2, "fully_connected", workgroups=1)
    # Refused when the platform is loaded (elaboration: bad input), before anything is built.
    with pytest.raises(eidola.ConfigError, match=r"fabric\.switch\.buffer: a buffer of 32 bytes holds 2 flit\(s\) "
                                                 r"of 16 B, but one packet .* needs 17"):
        eidola.load_platform(plat.source, overrides={"fabric.switch.buffer": "32B"})


@pytest.mark.parametrize("order", ["arrival", "round_robin"])
def test_injection_order_two_workgroups_on_one_link(write_platform, order):
    # Workgroup 0 writes n = 64 packets to GPU 1 at time 0; workgroup 1 the same from d = 64 ns on
    # (both blocking: each finishes with its last acknowledgement). Both writes fit in GPU 0's
    # injection buffer (64 x (2 + 1 link) = 192 packets). A packet takes ser = 272 B / 64 GB/s =
    # 4.25 ns on the link; a write's last packet that starts at s finishes at s + tail, tail = the
    # packet's trip (ser + lat + sw), the memory, and the acknowledgement's trip (f + lat + sw).
    # arrival: workgroup 0's packets are queued whole before workgroup 1's: it finishes at
    # (n - 1) ser + tail. round_robin: from d on the link alternates between the two, so its
    # n - d/ser remaining packets take twice as long: its last starts at (2n - 1) ser - d, less up
    # to 4 packets it had committed to the link before workgroup 1's arrived (the one sending, the
    # queue's head, the next in turn). Workgroup 1's last packet is the link's last either way.
    n, d = 64, 64.0
    ser = ser_ns(256)
    tail = ser + LAT + SW + M + 256 / 5.3e12 * 1e9 + F + LAT + SW
    b = ProfileBuilder(gpus=2, workgroups=2, name="two-writes")
    b.buffer("data", nbytes=n * 256)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=n * 256, blocking=True)
    b.program(gpu=0, wg=1).compute(ns=d).write(dst=1, buffer="data", offset=0, nbytes=n * 256, blocking=True)
    plat = _platform(write_platform, 2, "fully_connected", workgroups=2)
    plat = eidola.load_platform(plat.source, overrides={"fabric.switch.injection_order": order})
    res = eidola.simulate(plat, b.build())
    wg = res.workgroups[res.workgroups["gpu"] == 0]
    first, second = float(wg[wg["wg"] == 0]["finish_ns"][0]), float(wg[wg["wg"] == 1]["finish_ns"][0])
    assert second == pytest.approx((2 * n - 1) * ser + tail, rel=0.01)
    if order == "arrival":
        assert first == pytest.approx((n - 1) * ser + tail, rel=0.01)
    else:
        latest = (2 * n - 1) * ser - d + tail
        assert latest - 4 * ser - 0.01 * latest <= first <= latest * 1.01


def test_a_sized_injection_buffer_counts_flits(write_platform):
    # switch.buffer as a size counts flits at the GPU's injection as in the links' buffers. With
    # 32 KiB (2,048 flits; a link's 120 packets of 17 flits cover its 60-packet credit round trip)
    # GPU 0's one-link port holds 2,048 x (2 + 1) = 6,144 flits: it takes packets while it holds
    # fewer, so D = 362 packets of 272 B (361 x 17 = 6,137). Workgroup 0 writes n = 1,024 packets
    # to GPU 1 at time 0 and fills it; workgroup 1 the same from d on. From then on each packet
    # that leaves lets in one of each workgroup's in turn (arrival order): workgroup 0 had queued
    # D + d / ser, so its other n - D - d / ser packets go every other one, and its last starts at
    # (2n - D - d / ser - 1) ser. Counted in packets (6,144 > n) its write would all be queued
    # ahead and finish at (n - 1) ser + tail, 2.9 us sooner.
    n, d = 1024, 64.0
    ser = ser_ns(256)
    flits = (256 + H) // 16
    depth = -(-(2048 * 3) // flits)  # packets taken while fewer than 6,144 flits are held
    tail = ser + LAT + SW + M + 256 / 5.3e12 * 1e9 + F + LAT + SW
    b = ProfileBuilder(gpus=2, workgroups=2, name="two-writes")
    b.buffer("data", nbytes=n * 256)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=n * 256, blocking=True)
    b.program(gpu=0, wg=1).compute(ns=d).write(dst=1, buffer="data", offset=0, nbytes=n * 256, blocking=True)
    plat = _platform(write_platform, 2, "fully_connected", workgroups=2, max_outstanding=4096, buffer="32KiB")
    res = eidola.simulate(plat, b.build())
    wg = res.workgroups[res.workgroups["gpu"] == 0]
    first, second = float(wg[wg["wg"] == 0]["finish_ns"][0]), float(wg[wg["wg"] == 1]["finish_ns"][0])
    assert depth == 362
    assert second == pytest.approx((2 * n - 1) * ser + tail, rel=0.01)
    assert first == pytest.approx((2 * n - depth - d / ser - 1) * ser + tail, rel=0.01)


@pytest.mark.parametrize("write", [False, True])
def test_read_requests_of_no_bytes_are_not_held_behind_read_data(repo, write):
    # dgx-a100 with one 25 GB/s lane a link, 64-byte payloads and link.header 0B: three chained 1 MiB reads (GPU 1
    # from 0, 0 from 7, 7 from 3) whose data cross six distinct switch links, each at its full rate; the read
    # requests carry no bytes, so take no time on any link. Each read is then 16,384 packets of 64 wire bytes,
    # 41.94 us on its links, after the launch, plus its first request's and first packet's zero-load trip
    # (two hops of 112 + 50 ns each way and the memory's 150 ns: under 1 us). One more 1-byte write from GPU 2
    # to GPU 0 shifted GPU 0's acknowledgement stream by 120 ps, and its zero-byte requests to GPU 7 then waited
    # at the switch for an input path that GPU 0's read data freed only in the picosecond it took it again:
    # 120.5 us, the whole of GPU 1's read longer (found by scripts/compare_fabrics.py, seed 6, case 102).
    b = ProfileBuilder(gpus=8, workgroups=4, name="chained-reads")
    b.buffer("data", nbytes=1 << 20)
    for wg, (src, dst) in enumerate([(1, 0), (0, 7), (7, 3)]):
        b.program(gpu=src, wg=wg).read(dst=dst, buffer="data", offset=0, nbytes=1 << 20)
    if write:
        b.program(gpu=2, wg=3).write(dst=0, buffer="data", offset=0, nbytes=1)
    over = {"fabric.link.header": "0B", "fabric.link.count": 1, "gpus.max_payload": "64B"}
    res = eidola.simulate(eidola.load_platform(repo / "platforms" / "dgx-a100.yaml", overrides=over), b.build())
    wire_ns = (1 << 20) / 25e9 * 1e9
    launch_ns = 36280.0
    assert launch_ns + wire_ns <= res.kernel_time_ns <= launch_ns + wire_ns + 1000.0
