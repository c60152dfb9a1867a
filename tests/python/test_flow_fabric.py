"""The flow fabric (fabric.model: flow) against hand derivations and against the packet fabric.

Notation as in test_packet_fabric.py: link raw bandwidth B per direction, latency lat, per-packet
header h, router latency sw, flit F = 16 bytes (f = F / B). A packet of L wire bytes crosses H
hops cut-through at zero load in zl(L, H) = L/B + H (lat + sw) + (H - 1) f (docs/router.md); the
GPU's memory serves a packet in M + P / 5.3 TB/s. In the flow fabric a transfer is one flow: its
packets leave back to back at the flow's rate, its last packet starts one packet time before the
end and arrives one zero-load latency later, and the response comes back at zero load.

The comparisons with the packet fabric run the same profile on the same platform file with
fabric.model switched; the tolerances are the ones the flow fabric is documented to meet
(docs/fabrics.md, "Flow").
"""

import math

import numpy as np
import pytest
import yaml

import eidola
from eidola.errors import ConfigError
from eidola.generators import all_gather, direct_allreduce, ring_allreduce
from eidola.profile import ProfileBuilder

B, LAT, H, SW = 64e9, 100.0, 16, 50.0   # bytes/s, ns, bytes, ns
F = 16 / B * 1e9                         # one flit's serialisation, ns
M = 300.0                                # memory latency, ns
MEM = 5.3e12                             # memory bandwidth, bytes/s
P = 256                                  # max_payload


def ser_ns(wire):
    return wire / B * 1e9


def zl(wire, hops):
    return ser_ns(wire) + hops * (LAT + SW) + (hops - 1) * F


def _platform(write_platform, gpus, topology, model="flow", max_outstanding=100000, buffer="4096", extra="",
              issue="gates"):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: flow-test
        gpus:
          count: {gpus}
          workgroups: 8
          max_outstanding: {max_outstanding}
          max_payload: {P}B
          memory: {{latency: {M:g}ns, bandwidth: 5.3TB/s}}
        fabric:
          model: {model}
          topology: {topology}
          link: {{bandwidth: 64GB/s, latency: {LAT:g}ns, header: {H}B}}
          switch: {{latency: {SW:g}ns, buffer: {buffer}}}
          flow: {{issue: {issue}}}
        {extra}
        """, name=f"{model}-{topology}-{issue}.yaml"))


def _writes(gpus, pairs, nbytes):
    """One workgroup per (src, dst) pair writing `nbytes`."""
    b = ProfileBuilder(gpus=gpus, workgroups=max(1, len(pairs)), name="writes")
    b.buffer("data", nbytes=max(nbytes, 4096))
    for w, (src, dst) in enumerate(pairs):
        b.program(gpu=src, wg=w).write(dst=dst, buffer="data", offset=0, nbytes=nbytes)
    return b.build()


# ---- exact, from the derivation -------------------------------------------------------------------

@pytest.mark.parametrize("topology, gpus, src, dst, hops", [
    ("fully_connected", 4, 0, 3, 1),
    ("switch", 4, 1, 2, 2),
    ("ring", 8, 0, 3, 3),
])
def test_one_packet_takes_the_zero_load_round_trip(write_platform, topology, gpus, src, dst, hops):
    # A 256-byte write: zero-load there (272 wire bytes), the memory, the 16-byte ack back.
    res = eidola.simulate(_platform(write_platform, gpus, topology), _writes(gpus, [(src, dst)], P))
    expected = zl(P + H, hops) + M + P / MEM * 1e9 + zl(H, hops)
    assert res.kernel_time_ns == pytest.approx(expected, abs=2e-3)
    pair = res.pairs[(res.pairs["src"] == src) & (res.pairs["dst"] == dst)][0]
    assert pair["latency_mean_ns"] == pytest.approx(zl(P + H, hops), abs=1e-3)


@pytest.mark.parametrize("nbytes", [4096, 1 << 20, 16 << 20])
def test_one_flow_streams_at_the_link_rate(write_platform, nbytes):
    # n packets of L = 272 wire bytes leave back to back at B: the last starts at (n - 1) L / B and
    # arrives zl(L, 1) later; its memory access and ack follow. The earlier packets' memory work is
    # done while the rest stream in (5.3 TB/s against 60 GB/s).
    n = nbytes // P
    res = eidola.simulate(_platform(write_platform, 2, "fully_connected"), _writes(2, [(0, 1)], nbytes))
    expected = (n - 1) * ser_ns(P + H) + zl(P + H, 1) + M + P / MEM * 1e9 + zl(H, 1)
    assert res.kernel_time_ns == pytest.approx(expected, rel=1e-5)
    link = res.links[(res.links["src"] == 0) & (res.links["dst"] == 1)][0]
    assert (link["bytes"], link["wire_bytes"], link["packets"]) == (nbytes, nbytes + n * H, n)
    assert link["busy_ns"] == pytest.approx(ser_ns(nbytes + n * H), abs=1e-3)
    back = res.links[(res.links["src"] == 1) & (res.links["dst"] == 0)][0]
    assert (back["bytes"], back["wire_bytes"], back["packets"]) == (0, n * H, n)  # one header-sized ack a packet


def test_window_limits_a_flow_to_its_packets_per_round_trip(write_platform):
    # max_outstanding 16: 16 packets per zero-load round trip RTT = zl(272) + M + P/MEM + zl(16).
    # The first 16 go at once (the window is empty), the rest at 16 per RTT: the last of n = 4096
    # packets starts about (n - 16) / 16 RTT + 16 L / B after the first.
    n, w = 4096, 16
    res = eidola.simulate(_platform(write_platform, 2, "fully_connected", max_outstanding=w),
                          _writes(2, [(0, 1)], n * P))
    rtt = zl(P + H, 1) + M + P / MEM * 1e9 + zl(H, 1)
    expected = (n - w) / w * rtt + w * ser_ns(P + H) + rtt
    assert res.kernel_time_ns == pytest.approx(expected, rel=2e-3)
    assert res.kernel_time_ns > n / w * rtt * 0.98  # far from the link rate: the window binds


def test_two_flows_on_one_link_get_half_each(write_platform):
    # GPUs 0 and 1 write 4 MiB each to GPU 2 through the switch: the switch -> GPU 2 link is the
    # bottleneck, each flow gets half of it and both end together, after 2 n L / B of streaming.
    nbytes = 4 << 20
    n = nbytes // P
    res = eidola.simulate(_platform(write_platform, 3, "switch"), _writes(3, [(0, 2), (1, 2)], nbytes))
    finish = res.gpus["finish_ns"][:2]
    assert finish[0] == pytest.approx(finish[1], abs=ser_ns(P + H))  # within a packet
    streaming = 2 * n * ser_ns(P + H)
    tail = zl(P + H, 2) + M + zl(H, 2)  # the last packet's trip, memory and ack, each within ns
    assert res.kernel_time_ns == pytest.approx(streaming + tail, rel=1e-3)
    hot = res.links[(res.links["src"] == 3) & (res.links["dst"] == 2)][0]  # the switch is node 3
    assert hot["bytes"] == 2 * nbytes and hot["utilization"] > 0.97


def test_a_flow_whose_share_falls_and_rises_ends_when_the_link_has_carried_both(write_platform):
    # GPU 0 writes nA bytes to GPU 2 through the switch; GPU 1 starts D later and writes nB there. The switch ->
    # GPU 2 link carries both, work-conserving: GPU 1's flow takes half of it from D (2 nB packet times) and GPU 0's
    # last byte leaves after (nA + nB) packet times. GPU 0's rate falls at D and rises when GPU 1's flow ends, so
    # its Finish is booked before its end and re-booked (flow_fabric.h, Flow::booked_ps) both ways. flow.issue queue:
    # with gates a write's end is its place in its GPU's output queue, not a Finish.
    n_a, n_b, d = 8 << 20, 2 << 20, 20_000.0
    b = ProfileBuilder(gpus=3, workgroups=2, name="late-joiner")
    b.buffer("data", nbytes=n_a)
    b.program(gpu=0, wg=0).write(dst=2, buffer="data", offset=0, nbytes=n_a)
    b.program(gpu=1, wg=1).compute(ns=d).write(dst=2, buffer="data", offset=0, nbytes=n_b)
    res = eidola.simulate(_platform(write_platform, 3, "switch", issue="queue"), b.build())
    tail = zl(P + H, 2) + M + zl(H, 2)  # the last packet's trip, memory and ack
    finish = res.gpus["finish_ns"]
    assert finish[1] == pytest.approx(d + 2 * (n_b // P) * ser_ns(P + H) + tail, rel=1e-3)
    assert finish[0] == pytest.approx((n_a + n_b) // P * ser_ns(P + H) + tail, rel=1e-3)


def test_a_flag_crosses_a_full_link_at_zero_load_and_takes_no_share(write_platform):
    # GPU 0 streams 4 MiB to GPU 2 through the switch while GPUs 1 and 3 each write an 8-byte flag
    # to GPU 2 over the same, full, switch -> GPU 2 link. A flag (a payload of at most 64 bytes) is
    # timed alone where its windows are large (docs/fabrics.md, "Flags"): it arrives a zero-load
    # latency after it is issued and its ack comes back at zero load, as on an idle fabric (the
    # two land together, so GPU 2's memory serves one after the other), and the stream ends when it
    # would alone. A 256-byte write is data: it shares the link (the stream ends later).
    nbytes, flag = 4 << 20, 8
    n = nbytes // P

    def run(small):
        b = ProfileBuilder(gpus=4, workgroups=3, name="stream-and-flags")
        b.buffer("data", nbytes=nbytes)
        b.program(gpu=0, wg=0).write(dst=2, buffer="data", offset=0, nbytes=nbytes)
        b.program(gpu=1, wg=1).write(dst=2, buffer="data", offset=0, nbytes=small)
        b.program(gpu=3, wg=2).write(dst=2, buffer="data", offset=0, nbytes=small)
        return eidola.simulate(_platform(write_platform, 4, "switch"), b.build())

    res = run(flag)
    trip = zl(flag + H, 2) + M + flag / MEM * 1e9 + zl(H, 2)
    first, second = sorted(res.gpus["finish_ns"][[1, 3]])
    assert first == pytest.approx(trip, abs=1e-3)
    assert second == pytest.approx(trip + flag / MEM * 1e9, abs=1e-3)
    alone = (n - 1) * ser_ns(P + H) + zl(P + H, 2) + M + P / MEM * 1e9 + zl(H, 2)
    assert res.gpus["finish_ns"][0] == pytest.approx(alone, rel=1e-6)
    hot = res.links[(res.links["src"] == 4) & (res.links["dst"] == 2)][0]  # the switch is node 4
    assert hot["bytes"] == nbytes + 2 * flag  # bytes stay exact
    # Two 256-byte writes take their share: the stream loses about their wire time, 2 x 272 B.
    shared = run(P).gpus["finish_ns"][0]
    assert shared - alone == pytest.approx(2 * ser_ns(P + H), rel=0.05)


def test_credits_limit_a_link_whose_buffer_misses_the_round_trip(write_platform):
    # A buffer of 32 packets on a 64 GB/s link: at most 32 packets per credit round trip
    # (L/B + 2 lat + sw = 254.25 ns), 32 x 272 B / 254.25 ns = 34.2 GB/s on the wire, a little over
    # half the link. The flow streams at that rate once its first 32 packets are out.
    nbytes = 4 << 20
    n = nbytes // P
    res = eidola.simulate(_platform(write_platform, 2, "fully_connected", buffer="32"), _writes(2, [(0, 1)], nbytes))
    credit_rtt = ser_ns(P + H) + 2 * LAT + SW
    rate = 32 * (P + H) / credit_rtt  # wire bytes per ns
    expected_stream = 32 * ser_ns(P + H) + (n - 32) * (P + H) / rate
    assert res.kernel_time_ns == pytest.approx(expected_stream + zl(P + H, 1) + M + zl(H, 1), rel=2e-3)


def test_same_traffic_same_link_bytes_as_the_packet_fabric(write_platform):
    # A direct all-reduce on a ring and on a switch: every link carries exactly the payload, wire
    # bytes and packets it carries per packet (routes from the same Topology, no spreading).
    for topology, gpus in (("ring", 8), ("switch", 8)):
        prof = direct_allreduce(gpus=gpus, nbytes=64 << 10, workgroups=2)
        per_packet = eidola.simulate(_platform(write_platform, gpus, topology, model="packet"), prof)
        flow = eidola.simulate(_platform(write_platform, gpus, topology), prof)
        for column in ("src", "dst", "bytes", "wire_bytes", "packets"):
            np.testing.assert_array_equal(flow.links[column], per_packet.links[column], err_msg=column)
        np.testing.assert_array_equal(flow.gpus["bytes_received"], per_packet.gpus["bytes_received"])


def test_a_spine_carries_its_share_of_all_packets_not_of_each_flow(repo):
    # hierarchical-16gpu spreads the packets between its nodes over two spines (routing.spread), the packet fabric
    # by turns at each switch: a leaf-spine link carries half of the packets its node sends the other and half of the
    # acknowledgements it gets back, and no packet twice. Here 8 x 8 GPU pairs each way, each pair sending 1 MiB / 16
    # twice (reduce-scatter and all-gather, 256-byte packets) and an 8-byte flag per workgroup twice: 64 x 528
    # packets and 64 x (2 x 65,536 + 16 x 8) payload bytes per direction. Until 2026-12-05 the flow fabric rounded
    # each flow's share per link, so a one-packet flag counted whole on both spines (packets and wire bytes over the
    # packet fabric's; busy_ns 1.7% over the link's own bins).
    mib = 1 << 20
    prof = direct_allreduce(16, mib, workgroups=8, mode="syncmon")
    runs = {model: eidola.simulate(eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml",
                                                        overrides={"fabric.model": model}), prof).links
            for model in ("packet", "flow")}
    packets = 64 * (2 * (mib // 16) // P + 2 * 8)
    payload = 64 * (2 * (mib // 16) + 2 * 8 * 8)
    leaves, spines = [16, 17], [18, 19]
    cross = {model: np.isin(links["src"], spines) | np.isin(links["dst"], spines) for model, links in runs.items()}
    for model, links in runs.items():
        on = cross[model]
        assert sorted(zip(links["src"][on], links["dst"][on])) == sorted(
            [(leaf, spine) for leaf in leaves for spine in spines] + [(spine, leaf) for leaf in leaves for spine in spines])
        # half of its node's packets one way and half of the acknowledgements coming back: `packets` in all
        assert (links["packets"][on] == packets).all(), links["packets"][on]
    # The payload: byte for byte on the flow fabric (a half of every flow), to 0.5% on the packet fabric (its turns put
    # more of the 256-byte packets on one spine, more flags on the other).
    flow, packet, on = runs["flow"], runs["packet"], cross["flow"]
    assert (flow["bytes"][on] == payload // 2).all(), flow["bytes"][on]
    np.testing.assert_allclose(flow["bytes"][on], packet["bytes"][on], rtol=0.005)


@pytest.mark.parametrize("platform", ["switch-8gpu.yaml", "mi300x-8gpu.yaml"])
def test_alike_gpus_end_in_one_instant(repo, platform):
    # switch-8gpu's GPUs are alike (one link each to one switch), as are mi300x-8gpu's (a link to every other), and a
    # direct all-reduce started in step asks the same of each: every GPU ends in the same picosecond. Until 2026-12-05
    # the solver's solved levels for the eight alike links came out an ulp or so apart (Gauss-Seidel takes its rows in
    # turn), so their flows ended picoseconds apart and switch-8gpu's GPUs 151 ns apart, the 16 MiB run taking 3.9
    # times the solves; and writes that reach a GPU in one picosecond went to its memory in the GPUs' index order, so
    # mi300x-8gpu's GPUs ended 2.2 ns apart, 0.38 ns a GPU index (now round robin: arrival_turns.h).
    plat = eidola.load_platform(repo / "platforms" / platform, overrides={"fabric.model": "flow"})
    res = eidola.simulate(plat, direct_allreduce(8, 1 << 20, workgroups=8, mode="syncmon"))
    assert len(set(res.gpus["finish_ns"].tolist())) == 1, res.gpus["finish_ns"]


def test_queueing_is_unavailable_not_zero(write_platform):
    # Queues, head-of-line blocking, credit stalls and back-pressure are the input buffers', which a fluid does not
    # have (head-of-line blocking and credit stalls read 0 until 2026-12-05).
    res = eidola.simulate(_platform(write_platform, 2, "fully_connected"), _writes(2, [(0, 1)], 1 << 16))
    for column in ("queue_mean_ns", "queue_p50_ns", "queue_p99_ns", "queue_max_ns", "hol_blocked_ns",
                   "credit_stall_ns", "backpressure_ns"):
        assert np.isnan(res.links[column]).all(), column


def test_the_busiest_lane_is_a_links_share_of_each_lane(repo):
    # A fluid shares a link's lanes evenly: its busiest lane is busy busy_ns / lanes (until 2026-12-05 it read 0, and
    # lane_utilization_max with it). switch-8gpu's links have 4 lanes; on a ring all-reduce the packet fabric's busiest
    # lane is busy 0.05-0.1% more than that share (measured 20,665.9-20,677.8 ns against 20,655.0).
    prof = ring_allreduce(8, 4 << 20, workgroups=8)
    runs = {model: eidola.simulate(eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml",
                                                        overrides={"fabric.model": model}), prof).links
            for model in ("packet", "flow")}
    flow, packet = runs["flow"], runs["packet"]
    assert (flow["lanes"] == 4).all()
    share = flow["busy_ns"] / flow["lanes"]
    np.testing.assert_allclose(flow["lane_busy_max_ns"], share, rtol=0, atol=1e-3)
    busy = packet["lane_busy_max_ns"] > 0
    assert busy.sum() == 16  # each GPU's link up to the switch and down from it
    np.testing.assert_allclose(flow["lane_busy_max_ns"][busy], packet["lane_busy_max_ns"][busy], rtol=0.005)


@pytest.mark.parametrize("issue", ["gates", "queue"])
def test_no_bin_holds_more_than_its_lanes_time(repo, issue):
    # A link of L lanes is busy at most L x the bin's width in a bin, and its bins add up to the wire time of what it
    # carried (busy_ns, its wire bytes at its rate) and to its payload bytes. Signals timed alone add their wire time
    # where they start, on top of a full link: on this case a NIC's bin read 137% until what a bin cannot hold went
    # on into the next. With `gates` a write's flow keeps its share until its output queue has sent it, and its
    # links' bins followed that share until 2026-12-05: a link's bins added up to 5-10 times its busy time on the
    # two-node platforms (docs/fabrics.md, "Results").
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml",
                                overrides={"fabric.model": "flow", "fabric.flow.issue": issue, "fabric.stats.bin": "1us"})
    res = eidola.simulate(plat, direct_allreduce(16, 4 << 20, workgroups=32, mode="syncmon"))
    bins, links = res.link_bins, res.links
    lanes = links["lanes"][bins["link"]]
    assert (bins["busy_ns"] <= lanes * 1000.0 * (1 + 1e-6)).all(), bins["busy_ns"].max()
    # Link by link, to a part in 10^5 (measured 0.9999996-1.0000007): until 2026-12-05 a spine's busy_ns counted each
    # single-packet flag whole (routing.spread's share of each flow rounded flow by flow), its bins half: 0.9913.
    busy = np.bincount(bins["link"], weights=bins["busy_ns"], minlength=len(links))
    assert busy == pytest.approx(links["busy_ns"], rel=1e-5, abs=1e-3)
    payload = np.zeros(len(links), dtype=np.int64)
    np.add.at(payload, bins["link"], bins["bytes"])
    assert (payload == links["bytes"]).all()


def test_a_links_time_profile_follows_its_bytes_under_the_issue_gates(repo):
    # hierarchical-16gpu's 4 MiB direct all-reduce with 16 workgroups (flow.issue: gates): a GPU's writes to its
    # node's peers are issued at the pace its NIC's writes let its window go, so each link inside a node is busy
    # some 2-8% of a bin most of the run on the packet fabric. The flow fabric's bins followed the writes' max-min
    # shares until 2026-12-05, which those flows keep until their output queue has sent them: the same links read
    # 90-100% a bin (median), their bins adding up to 7.4-7.8 times their busy time. Against the packet fabric, link
    # by link: the median and the 90th percentile of the 1 us bins, over the kernel time (measured: within 0.043 and
    # 0.071 over the 112 links inside the nodes).
    runs = {}
    for model in ("packet", "flow"):
        plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml",
                                    overrides={"fabric.model": model, "fabric.stats.bin": "1us"})
        runs[model] = eidola.simulate(plat, direct_allreduce(16, 4 << 20, workgroups=16))

    def utilisation(res, link):
        bins = res.link_bins[res.link_bins["link"] == link]
        u = np.zeros(int(res.summary["kernel_time_ns"] // 1000) + 1)
        u[bins["bin"]] = bins["busy_ns"] / 1000.0
        return np.median(u), np.percentile(u, 90)

    links = runs["packet"].links
    inside = [k for k in range(len(links)) if links["src"][k] < 16 and links["dst"][k] < 16]
    assert len(inside) == 112  # 2 nodes of 8 GPUs, each pair linked both ways
    for k in inside:
        (pm, p90), (fm, f90) = utilisation(runs["packet"], k), utilisation(runs["flow"], k)
        assert pm < 0.1 and abs(fm - pm) <= 0.05 and abs(f90 - p90) <= 0.1, (k, pm, fm, p90, f90)


@pytest.mark.parametrize("issue", ["gates", "queue"])
def test_reruns_are_bit_identical(write_platform, issue):
    plat = _platform(write_platform, 8, "switch", issue=issue)
    prof = ring_allreduce(gpus=8, nbytes=1 << 20, workgroups=4)
    first, second = eidola.simulate(plat, prof), eidola.simulate(plat, prof)
    assert first.kernel_time_ns == second.kernel_time_ns
    for table in ("gpus", "workgroups"):
        for column in getattr(first, table).dtype.names:  # column by column: NaN (a column the flow fabric
            # leaves unavailable) equals NaN there, where a structured array's records compare unequal
            np.testing.assert_array_equal(getattr(first, table)[column], getattr(second, table)[column])
    np.testing.assert_array_equal(first.links["busy_ns"], second.links["busy_ns"])
    np.testing.assert_array_equal(first.link_bins, second.link_bins)


# ---- the same platform -----------------------------------------------------------------------------

def _shipped_packet_platforms() -> list[str]:
    """Every platform file shipped with `fabric.model: packet`: a platform added later is covered without a list
    to keep (the issue: `--set fabric.model=flow` works on every shipped packet platform)."""
    from conftest import SHIPPED_PLATFORMS
    return [p.name for p in SHIPPED_PLATFORMS if (yaml.safe_load(p.read_text()).get("fabric") or {}).get("model") == "packet"]


PACKET_PLATFORMS = _shipped_packet_platforms()


def test_the_shipped_packet_platforms_are_found():
    # The glob must find the topologies the issue names, the real nodes and the multi-node platforms.
    assert {"mi300x-8gpu.yaml", "ring-8gpu.yaml", "mesh2d-16gpu.yaml", "torus2d-16gpu.yaml", "switch-8gpu.yaml",
            "hierarchical-16gpu.yaml", "dgx-h100.yaml", "gb200-nvl4.yaml", "rail-16gpu.yaml"} <= set(PACKET_PLATFORMS)


@pytest.mark.parametrize("name", PACKET_PLATFORMS)
def test_every_packet_platform_runs_as_flows(name):
    from conftest import REPO
    plat = eidola.load_platform(REPO / "platforms" / name, overrides={"fabric.model": "flow"})
    gpus = len(plat.eidolons())
    res = eidola.simulate(plat, direct_allreduce(gpus=gpus, nbytes=64 << 10, workgroups=2))
    per_packet = eidola.simulate(eidola.load_platform(REPO / "platforms" / name),
                                 direct_allreduce(gpus=gpus, nbytes=64 << 10, workgroups=2))
    assert res.kernel_time_ns > 0 and res.links["bytes"].sum() == per_packet.links["bytes"].sum()


def test_flows_are_refused_on_other_fabrics(write_platform):
    # gpus.flow makes a GPU send whole transfers as single transactions, which only a flow fabric times.
    with pytest.raises(ConfigError, match=r"gpus\.flow"):
        eidola.load_platform(write_platform("""
            eidola: 1
            name: x
            gpus: {count: 2, flow: 1MiB}
            fabric: {model: packet, topology: fully_connected}
            """))


def test_a_window_paced_flow_longer_than_the_watchdog_is_not_a_stall(write_platform):
    # One 64 KiB write (256 packets) under a window of one packet: each packet holds the slot for its round trip,
    # zl(P + h, 1) + M + P / MEM + zl(h, 1) = 604.55 ns, so the write takes 256 of them, 154.8 us. The packet GPU
    # hears a response every round trip, within gpus.watchdog (2 us); the flow GPU hears one when the flow is done,
    # 154.8 us on. The watchdog allows a flow its time per window of the packets it stands for (here 256 x 2 us):
    # with the flat 2 us the flow fabric reported a stall (scripts/fuzz.py's flow campaign found it).
    n = 64 << 10
    round_trip = zl(P + H, 1) + M + P / MEM * 1e9 + zl(H, 1)
    b = ProfileBuilder(gpus=2, workgroups=1, name="paced")
    b.buffer("data", nbytes=n)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=n)
    profile = b.build()
    times = {}
    for model in ("packet", "flow"):
        plat = _platform(write_platform, 2, "fully_connected", model=model, max_outstanding=1)
        plat = eidola.load_platform(plat.source, overrides={"gpus.watchdog": "2us", "gpus.launch": "0ns"})
        times[model] = eidola.simulate(plat, profile).kernel_time_ns
    assert times["packet"] == pytest.approx(n // P * round_trip, rel=0.005)
    assert times["flow"] == pytest.approx(times["packet"], rel=0.005)
    assert times["flow"] > 50 * 2000  # far past the watchdog's own 2 us


@pytest.mark.parametrize("model", ["packet", "ideal"])
def test_a_memory_latency_longer_than_the_watchdog_is_not_a_stall(write_platform, model):
    # One 256-byte write whose acknowledgement comes after the target's memory latency of 5 us, against a watchdog of
    # 2 us: no response can come sooner, so the watchdog allows the memory's latency as well. Before, the run stopped
    # with a stall report asking whether a transaction was lost (a fuzzed gb200-nvl4 with gpus.memory.latency 1ms on
    # the ideal fabric, scripts/fuzz.py's flow campaign, seed 44). The write's time: its packet over one hop, the
    # memory (5 us and the packet at MEM), the acknowledgement back: zl(P + h, 1) + 5 us + P / MEM + zl(h, 1) on the
    # packet fabric; on the ideal fabric its one-way latency (500 ns by default) each way around the memory.
    b = ProfileBuilder(gpus=2, workgroups=1, name="slow-memory")
    b.buffer("data", nbytes=P)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=P).fence()
    plat = _platform(write_platform, 2, "fully_connected", model=model)
    plat = eidola.load_platform(plat.source, overrides={"gpus.watchdog": "2us", "gpus.launch": "0ns",
                                                        "gpus.memory.latency": "5us"})
    time_ns = eidola.simulate(plat, b.build()).kernel_time_ns
    if model == "packet":
        assert time_ns == pytest.approx(zl(P + H, 1) + 5000 + P / MEM * 1e9 + zl(H, 1), rel=0.005)
    else:
        assert time_ns == pytest.approx(500 + 5000 + P / MEM * 1e9 + 500, abs=0.01)


def test_a_packet_only_key_is_ignored_with_one_warning(write_platform, capsys):
    _platform(write_platform, 2, "fully_connected", extra="  watchdog: 5ms")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "fabric: watchdog ignored" in lines[0], lines


def test_the_port_in_turns_is_ignored_with_one_warning(write_platform, capsys):
    # switch.injection_order: round_robin is the packet fabric's; the flow fabric keeps first come, first served.
    source = _platform(write_platform, 2, "fully_connected").source
    capsys.readouterr()
    eidola.load_platform(source, overrides={"fabric.switch.injection_order": "round_robin"})
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "fabric.switch.injection_order: round_robin ignored" in lines[0], lines
    eidola.load_platform(source, overrides={"fabric.switch.injection_order": "arrival"})
    assert capsys.readouterr().err == ""


def test_a_router_arbitration_other_than_bytes_is_ignored_with_one_warning(write_platform, capsys):
    # switch.arbitration is the packet fabric's routers'; the flow fabric shares a link's rate max-min.
    source = _platform(write_platform, 2, "fully_connected").source
    capsys.readouterr()
    for choice in ("packets", "responses_first"):
        eidola.load_platform(source, overrides={"fabric.switch.arbitration": choice})
        lines = capsys.readouterr().err.splitlines()
        assert len(lines) == 1 and f"fabric.switch.arbitration: {choice} ignored" in lines[0], lines
    eidola.load_platform(source, overrides={"fabric.switch.arbitration": "bytes"})
    assert capsys.readouterr().err == ""


# ---- against the packet fabric -------------------------------------------------------------------

def _compare(path, prof, overrides=None):
    overrides = overrides or {}
    # flow.issue gates: the packet fabric's counterpart, also on mi300x-8gpu (which sets queue for its calibration)
    per_packet = eidola.simulate(eidola.load_platform(path, overrides={**overrides, "fabric.model": "packet"}), prof)
    flow = eidola.simulate(eidola.load_platform(path, overrides={"fabric.flow.issue": "gates", **overrides,
                                                                 "fabric.model": "flow"}), prof)
    return flow.kernel_time_ns / per_packet.kernel_time_ns - 1


def _platform_path(name):
    from conftest import REPO
    return REPO / "platforms" / name


# Single links (switch-8gpu with one lane per link, where the flow fabric's credit and window
# arithmetic is checked link by link), and the switch as shipped, 4 lanes a link, for the ring
# all-reduce (docs/fabrics.md gives its other patterns' errors on 4 lanes). Targets from the issue:
# one flow 0.5%, a pair 1%, incast 2%, collectives 3% at 1 MiB and above.
@pytest.mark.parametrize("name, overrides, pattern, nbytes, bound", [
    ("mi300x-8gpu.yaml", {}, "one", 4096, 0.005),
    ("mi300x-8gpu.yaml", {}, "one", 1 << 20, 0.005),
    ("switch-8gpu.yaml", {"fabric.link.count": 1}, "one", 1 << 20, 0.005),      # credit-limited link
    ("switch-8gpu.yaml", {"fabric.link.count": 1, "gpus.max_outstanding": 64}, "one", 1 << 20, 0.005),  # window
    ("mi300x-8gpu.yaml", {}, "pair", 1 << 20, 0.01),
    ("switch-8gpu.yaml", {"fabric.link.count": 1}, "pair", 1 << 20, 0.01),
    ("mi300x-8gpu.yaml", {}, "incast", 1 << 20, 0.02),
    ("switch-8gpu.yaml", {"fabric.link.count": 1}, "incast", 1 << 20, 0.02),
    ("mi300x-8gpu.yaml", {}, "ring", 1 << 20, 0.03),
    ("switch-8gpu.yaml", {"fabric.link.count": 1}, "ring", 1 << 20, 0.03),
    ("switch-8gpu.yaml", {}, "ring", 1 << 20, 0.03),                             # 4 lanes a link
    ("mi300x-8gpu.yaml", {}, "all_gather", 1 << 20, 0.03),
    ("switch-8gpu.yaml", {"fabric.link.count": 1}, "direct", 1 << 20, 0.03),
])
def test_close_to_the_packet_fabric(name, overrides, pattern, nbytes, bound):
    if pattern == "one":
        prof = _writes(8, [(0, 3)], nbytes)
    elif pattern == "pair":
        prof = _writes(8, [(0, 3), (3, 0)], nbytes)
    elif pattern == "incast":
        prof = _writes(8, [(g, 0) for g in range(1, 8)], nbytes)
    elif pattern == "ring":
        prof = ring_allreduce(gpus=8, nbytes=nbytes, workgroups=8)
    elif pattern == "all_gather":
        prof = all_gather(gpus=8, nbytes=nbytes, workgroups=8)
    else:
        prof = direct_allreduce(gpus=8, nbytes=nbytes, workgroups=8)
    error = _compare(_platform_path(name), prof, overrides)
    assert math.isfinite(error) and abs(error) <= bound, f"{error:+.3%}"


def test_a_thousand_gpus_fit_in_memory(repo):
    # Every GPU sending flows needs a data area as large as a flow (gpus.flow, 64 MiB); one area
    # per process serves them all, where one per GPU ran out of address space at GPU 301 of 1,024
    # under the run's default memory limit. One 4 KiB write as a flow: 16 packets at the
    # lane rate and one zero-load round trip on switch-8gpu's figures (4 lanes of 100 GB/s, 150 ns
    # links, 100 ns switch, 16-byte headers and acknowledgements).
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml",
                                overrides={"fabric.model": "flow", "gpus.count": 1024, "gpus.workgroups": 1})
    b = ProfileBuilder(gpus=1024, workgroups=1, name="far")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).write(dst=1023, buffer="data", offset=0, nbytes=4096)
    res = eidola.simulate(plat, b.build())
    lane = 100e9
    zl2 = lambda wire: wire / lane * 1e9 + 2 * (150 + 100) + 16 / lane * 1e9  # noqa: E731
    expected = 15 * 272 / (4 * lane) * 1e9 + zl2(272) + M + P / MEM * 1e9 + zl2(16)  # the 4 lanes share the stream
    assert res.kernel_time_ns == pytest.approx(expected, rel=1e-3)


def test_a_few_events_per_transaction_with_many_flows_on_the_nics(repo):
    # The flow fabric's speed comes from a handful of kernel events per transaction: its request, a share of the
    # solves, its finish (again when its rate changes), its delivery and its response. hierarchical-16gpu's 64 MiB
    # direct all-reduce (32 workgroups a GPU, SyncMon) has 30,720 transactions (a write and a release to each of 15
    # peers per workgroup), and half of them cross the two NICs, where hundreds of flows can share a link: it took
    # 205,346 events, 6.7 a transaction, and 325,111, 10.6, once the GPU's issue was modelled (each write's
    # issue completion and its place in its output queue are timed, and writes that finish issuing together
    # are told one packet apart, each a wake of its GPU); 391,852, 12.8, since those writes also end a packet
    # apart in their output queue (each end its own plan of the GPU's issue); 362,180, 11.8, since a rate change
    # that moves a finish later no longer re-books it (Flow::booked_ps); 465,139, 15.1, since the window's room
    # comes back as the answers come in (a GPU whose window binds plans its issue again at each step of its send
    # rate's history a round trip old; `first` responses, the default, 15.8 with `fair`; at each step's answer
    # and at every rise of the room, 54.9 and 81-153); 530,934, 17.3, since each output keeps its own history over its
    # own round trip (the NIC's answers come back later than the near links': their steps are answered at their own
    # times) and the workgroups told issued together keep their round robin's room until they come back (a plan when
    # the last of them has had its time to come; 531,326 with the histories' running totals); 589,885, 19.2, since the
    # leaves' incast queues with their back-pressure and a workgroup's writes one after another in its output queue
    # (411,629, 13.4, with `flow.incast: share`; docs/fabrics.md "Incast queues"). A rule that put the
    # GPUs' later writes beside the earlier ones there (tried 2026-12-03, docs/fabrics.md "Injection") made every
    # flow's start and end re-rate all of them: 1,117,150 events, 36 a transaction, and 100x the wall time at 1 GiB.
    # Events are counted, not timed: deterministic.
    events, transactions = _events_and_transactions(repo, "hierarchical-16gpu.yaml", 64 << 20, 32,
                                                    {"fabric.stats.bin": "100us"})
    assert transactions == 30_720
    assert events <= 20 * transactions, f"{events:,} events, {events / transactions:.1f} a transaction"


def _events_and_transactions(repo, platform: str, nbytes: int, workgroups: int, overrides: dict) -> tuple[int, int]:
    """Kernel events of a 16-GPU direct all-reduce (SyncMon) on the flow fabric, and its writes and signals."""
    profile = direct_allreduce(16, nbytes, workgroups=workgroups, mode="syncmon")
    transactions = sum(1 for g in range(16) for w in range(workgroups) for op in profile.program(g, w)
                       if op.kind in ("write", "signal"))
    plat = eidola.load_platform(repo / "platforms" / platform, overrides={"fabric.model": "flow", **overrides})
    return eidola.simulate(plat, profile).events, transactions


def test_signals_going_in_one_time_step_share_a_solve(repo):
    # A GPU's signals wait in its output queues (flow_issue.cpp) and go, as Slip actions, once the flows ahead have
    # rates: after the time step's solve. Where a window is full a signal joins the solver, and its start books
    # another solve; the other signals of that time step used to wait for that one too, and so on: one solve
    # each, every one re-rating every flow of a torus. torus2d-16gpu's 32 KiB direct all-reduce (16 workgroups,
    # SyncMon, 256-byte writes) took 1,105,926 events, 72 a transaction (the 64 KiB one with 32 workgroups 11.1
    # million events and 567 s); 608,842, 39.6, once a signal waits for one solve only. Most of what was left were
    # the flags' finishes, re-booked at every solve and each stale one a wake of the fabric: 255,716, 16.6, since a
    # rate change that moves a finish later books nothing (the standing Finish re-books when it comes; the 64 KiB
    # case 987,466 events, 5 s). Events are counted, not timed: deterministic.
    events, transactions = _events_and_transactions(repo, "torus2d-16gpu.yaml", 32 << 10, 16,
                                                    {"fabric.flow.issue": "gates"})
    assert transactions == 15_360
    assert events <= 20 * transactions, f"{events:,} events, {events / transactions:.1f} a transaction"


def test_a_backlog_under_a_byte_books_no_replan(repo):
    # The issue fluid re-plans a GPU's issue when one of its output queues will have sent its backlog
    # (flow_issue.cpp). Each interval's issue and sending leave fractions of a byte in the queues, and each such
    # remnant booked a re-plan a few picoseconds ahead, again and again: NCCL's LL128 ring all-reduce on
    # hierarchical-16gpu (its window full behind the NICs) took 1,935,175 events for 22,080 puts at 16 MiB, 87.6 a
    # put (1.3 million of the fabric's 1.5 million actions were such re-plans; 43 s of wall time at 1 GiB with
    # Simple, 153 s at 256 MiB with LL128). A backlog under a byte now books no re-plan: 430,642 events, 19.5 a put.
    # Events are counted, not timed: deterministic.
    from eidola.workload.nccl import build_collective
    plat = eidola.load_platform(repo / "platforms" / "hierarchical-16gpu.yaml", overrides={"fabric.model": "flow"})
    profile, plan = build_collective(plat, "all_reduce", 16 << 20, algo="ring", proto="LL128")
    puts = sum(1 for g in range(16) for w in range(profile.workgroups) for op in profile.program(g, w)
               if op.kind == "put")
    assert (plan.channels, puts) == (16, 22_080)
    events = eidola.simulate(plat, profile).events
    assert events <= 30 * puts, f"{events:,} events, {events / puts:.1f} a put"


# ---- fabric.flow.issue: the GPU's issue gates (docs/fabrics.md, "The GPU's issue gates") ----------

def _burst(mib_per_peer: int):  # one workgroup on GPU 0 posts a write to each of its 7 peers, back to back
    b = ProfileBuilder(gpus=8, workgroups=1, name="burst")
    b.buffer("recv", nbytes=mib_per_peer << 20)
    for peer in range(1, 8):
        b.program(gpu=0, wg=0).write(dst=peer, buffer="recv", offset=0, nbytes=mib_per_peer << 20)
    return b.build()


def _burst_ns(model: str, issue: str) -> float:
    from conftest import REPO
    plat = eidola.load_platform(REPO / "platforms" / "mi300x-8gpu.yaml",
                                overrides={"gpus.launch": "0ns", "fabric.model": model, "fabric.flow.issue": issue})
    return eidola.simulate(plat, _burst(1)).kernel_time_ns


def test_issue_gates_serialise_one_workgroups_burst_as_the_packet_gpu_does():
    # mi300x-8gpu: a link per peer, 64 GB/s, 256 B packets with 85 B of header; the GPU's injection
    # buffer holds switch.buffer x (2 + 7 outputs) = 1152 packets; max_outstanding 2048 is far above
    # rate x round trip (~190 packets), so the buffer is the gate.
    packets, buffer, packet_ns = 4096, 128 * (2 + 7), 341 / 64
    wire = packets * packet_ns
    # queue: the seven writes go at once, each on its own link: one write's wire time and a tail
    # (first packet's trip, the last acknowledgement back) under a microsecond.
    queue = _burst_ns("flow", "queue")
    assert wire < queue < wire + 1000
    tail = queue - wire
    # gates: a posted write is done once its last packet is in the buffer, so the workgroup's next
    # write starts when the buffer holds the last 1152 packets of this one; those drain on their
    # link while the next write fills what they free and its own link drains it: every write costs
    # (4096 - 1152) packet times of issue, and the last one's 1152 then drain.
    gates = (7 * (packets - buffer) + buffer) * packet_ns + tail
    assert _burst_ns("flow", "gates") == pytest.approx(gates, rel=1e-3)
    assert _burst_ns("packet", "gates") == pytest.approx(gates, rel=1e-3)  # the outside reference


def test_the_packet_fabric_ignores_flow_issue():
    # One platform file serves both fabrics (perf --fabric auto), so the packet fabric must not move.
    assert _burst_ns("packet", "queue") == _burst_ns("packet", "gates")


def test_the_protocol_checker_passes_the_gates_ignorable_phase():
    # With flow.issue: gates the flow fabric tells a GPU its posted write is issued with FLOW_SENT, an
    # ignorable phase on the backward path. The base-protocol checker (check_protocol: true) must pass
    # it on and raise nothing, and, adding no time, leave the kernel time exactly as without it (it
    # reported a "phase sequence" violation until 2026-12-05).
    from conftest import REPO
    def run(check: bool) -> float:
        plat = eidola.load_platform(REPO / "platforms" / "mi300x-8gpu.yaml", overrides={
            "gpus.launch": "0ns", "fabric.model": "flow", "fabric.flow.issue": "gates", "check_protocol": check})
        return eidola.simulate(plat, _burst(1)).kernel_time_ns
    assert run(True) == run(False)


# ---- flow.issue: queue, a queue per destination ----------------------------------------------------

def _two_workgroups_one_late(nbytes: int, late_ns: float, dsts: tuple[int, int]):
    """GPU 0's workgroup 0 writes `nbytes` to GPU dsts[0] at once, workgroup 1 to dsts[1] `late_ns` later."""
    b = ProfileBuilder(gpus=3, workgroups=2, name="late")
    b.buffer("data", nbytes=nbytes)
    b.program(gpu=0, wg=0).write(dst=dsts[0], buffer="data", offset=0, nbytes=nbytes)
    b.program(gpu=0, wg=1).compute(ns=late_ns).write(dst=dsts[1], buffer="data", offset=0, nbytes=nbytes)
    return b.build()


def test_queue_serves_writes_to_one_gpu_in_turn_and_to_others_side_by_side(write_platform):
    # Two 1 MiB writes through GPU 0's one uplink to the switch, the second issued 100 ns after the first.
    # To the same GPU they queue: the first goes alone at the link's payload rate R, the second after it. To two
    # GPUs (a queue per destination, as the packet fabric's virtual output queues) they share the uplink: the
    # first goes alone for 100 ns, then both at R / 2, so it ends N / R - 100 ns later than when they queue,
    # while the second ends at 2N / R either way (the uplink is never idle and its bytes go last). A finish's
    # tail (the last packet's trip over two hops, memory, acknowledgement) is the same in both, but for where
    # the last packet starts: one packet time before the flow's end at its final rate, R / 2 for the first
    # when they share (one packet's wire time later than at R). So the differences are exact.
    n, late = 1 << 20, 100.0
    rate = B * P / (P + H) / 1e9  # payload bytes per ns
    plat = _platform(write_platform, 3, "switch", issue="queue")
    finish = {}
    for case, dsts in (("same", (1, 1)), ("other", (1, 2))):
        wgs = eidola.simulate(plat, _two_workgroups_one_late(n, late, dsts)).workgroups
        finish[case] = [float(wgs[(wgs["gpu"] == 0) & (wgs["wg"] == w)]["finish_ns"][0]) for w in (0, 1)]
    assert finish["other"][0] - finish["same"][0] == pytest.approx(n / rate - late - ser_ns(P + H), abs=0.01)
    assert finish["other"][1] == pytest.approx(finish["same"][1], abs=0.01)


def test_queue_lets_a_late_write_beside_an_earlier_one_once_the_window_binds_and_the_gpu_writes_elsewhere(
        write_platform):
    # As above, with a window of 1,024 packets (256 KiB: above the bandwidth-delay product of the uplink, about
    # 64 KB, so the link and not the window sets the rates) and 1 MiB writes, so the window binds: the GPU cannot
    # issue a write whole. Then the packet GPU hands its window's slots to its workgroups in turn, and a write
    # issued behind another to the same GPU takes its turns beside it (FlowFabric::shares_window_turns), but only
    # where the GPU also writes to another GPU on that link. Workgroup 0 writes to GPU 1 at once, workgroup 1 to
    # GPU 1 100 ns later; "elsewhere" adds workgroup 2 writing to GPU 2 at once.
    #  - alone: first come, first served as before: workgroup 0 ends at N / R, workgroup 1 at 2N / R.
    #  - elsewhere: workgroups 0 and 2 share the uplink at R / 2 for 100 ns, then all three at R / 3. Workgroups 0
    #    and 2 end at 100 + 3 (N - 50 R) / R = 3N / R - 50 ns, their last packet starting one packet time at R / 3
    #    before that (three at R), and workgroup 1, last of 3N bytes on a link never idle, at 3N / R; served first
    #    come, first served it would have ended the same, but workgroups 0 and 2 at 2N / R (that build: 17,354.5
    #    ns earlier). The tails cancel in the differences, which come out exact.
    n, late = 1 << 20, 100.0
    rate = B * P / (P + H) / 1e9  # payload bytes per ns
    plat = _platform(write_platform, 3, "switch", issue="queue", max_outstanding=1024)
    finish = {}
    for case, wgs_of in (("alone", 2), ("elsewhere", 3)):
        b = ProfileBuilder(gpus=3, workgroups=3, name="late")
        b.buffer("data", nbytes=n)
        b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=n)
        b.program(gpu=0, wg=1).compute(ns=late).write(dst=1, buffer="data", offset=0, nbytes=n)
        if wgs_of == 3:
            b.program(gpu=0, wg=2).write(dst=2, buffer="data", offset=0, nbytes=n)
        wgs = eidola.simulate(plat, b.build()).workgroups
        finish[case] = [float(wgs[(wgs["gpu"] == 0) & (wgs["wg"] == w)]["finish_ns"][0]) for w in range(wgs_of)]
    assert finish["alone"][1] - finish["alone"][0] == pytest.approx(n / rate, abs=0.01)
    packet = ser_ns(P + H)
    assert finish["elsewhere"][0] - finish["alone"][0] == pytest.approx(2 * n / rate - 50 - 2 * packet, abs=0.01)
    assert finish["elsewhere"][2] == pytest.approx(finish["elsewhere"][0], abs=0.01)
    assert finish["elsewhere"][1] - finish["alone"][1] == pytest.approx(n / rate, abs=0.01)
