"""Packet trains (gpus.train) against per-packet simulation and hand-derived link counters.

A train is one TLM transaction standing for up to `train` packets of one write or read. It must
give the same traffic as the packets sent one by one (every packet's header, credits and
acknowledgement), in far fewer events, and the same timing: exactly where nothing contends, within
1% where workgroups share links (the issue's bound). Link arithmetic: a 256-byte packet with a
16-byte header on a 64 GB/s link serialises in 272 / 64 = 4.25 ns; an acknowledgement is the
header alone, 0.25 ns; a signal is 8 + 16 bytes, 0.375 ns.
"""

import numpy as np
import pytest

import eidola
from eidola.generators import direct_allreduce
from eidola.profile import ProfileBuilder

MIB = 1 << 20
PACKETS = MIB // 256  # a 1 MiB transfer in 256-byte packets


def _platform(write_platform, topology="fully_connected", gpus=2, workgroups=1, max_outstanding=4096,
              buffer="1024", flow="cut_through", fabric=None):
    fabric = fabric or f"""
          model: packet
          topology: {topology}
          link: {{bandwidth: 64GB/s, latency: 100ns, header: 16B}}
          switch: {{latency: 50ns, buffer: {buffer}, flow_control: {flow}}}"""
    return write_platform(f"""
        eidola: 1
        name: trains
        gpus: {{count: {gpus}, workgroups: {workgroups}, max_outstanding: {max_outstanding}, max_payload: 256B,
               memory: {{latency: 300ns, bandwidth: 5.3TB/s}}}}
        fabric:{fabric}
        """)


def _transfers(gpus, pairs, nbytes, kind="write", workgroups=1):
    """Each (src, dst) pair: every workgroup of src moves nbytes with dst, then signals it; dst waits for all."""
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="trains")
    b.buffer("data", nbytes=nbytes * workgroups)
    b.flag("done")
    for src, dst in pairs:
        for w in range(workgroups):
            p = b.program(gpu=src, wg=w)
            getattr(p, kind)(dst=dst, buffer="data", offset=w * nbytes, nbytes=nbytes)
            p.signal(dst=dst, flag="done", op="add", value=1, scope="peer")
    for dst in sorted({d for _, d in pairs}):
        expected = workgroups * sum(1 for _, d in pairs if d == dst)
        b.program(gpu=dst, wg=0).wait(flag="done", cond=">=", value=expected)
    return b.build()


def _both(path, profile, train=64, trace=False, **overrides):
    """The per-packet result and the train result of one platform and profile (a failed run raises)."""
    return [eidola.simulate(eidola.load_platform(path, {**overrides, "gpus.train": t}), profile, trace=trace)
            for t in (1, train)]


def _op_ends(result, gpu):
    """End times (ns) of GPU `gpu`'s ops, in op order (needs trace=True)."""
    ops = np.sort(result.ops[result.ops["gpu"] == gpu], order=["wg", "op"])
    return ops["end_ns"].tolist()


def _same_tables(a, b):
    """Every result table of two results is equal bit for bit (but the count of refused trains)."""
    for table in ("gpus", "workgroups", "links", "pairs", "link_bins"):
        x, y = getattr(a, table), getattr(b, table)
        if table == "gpus":
            kept = [n for n in x.dtype.names if n != "trains_refused"]
            x, y = x[kept], y[kept]
        assert np.array_equal(x, y), table


def _link(result, src, dst):
    links = result.links
    return links[(links["src"] == src) & (links["dst"] == dst)][0]


@pytest.mark.parametrize("kind", ["write", "read"])
def test_a_train_on_one_link_times_and_counts_as_its_packets(write_platform, kind):
    per_packet, train = _both(_platform(write_platform), _transfers(2, [(0, 1)], MIB, kind), trace=True)
    assert train.kernel_time_ns == pytest.approx(per_packet.kernel_time_ns, rel=1e-5)
    # A train completes with its last acknowledgement, not its first: the write's release and the
    # read's completion come when the last packet is answered, and the signal after them goes
    # then. The kernel time alone would not show an early completion (the signal then queues on
    # the link behind the train's tail), so the signal's time is checked: a train of 32 packets
    # completing on its first acknowledgement would send it 31 x 4.25 = 132 ns early. Per packet,
    # after the write, by hand: the last packet's tail leaves at 4,096 x 4.25 ns, crosses the link
    # and router (100 + 50), is written (300 + 256 B at 5.3 TB/s) and acknowledged (100 + 0.25 + 50).
    signal_at = _op_ends(per_packet, 0)[1]
    if kind == "write":
        assert signal_at == pytest.approx(PACKETS * 4.25 + 150 + 300 + 256 / 5.3e3 + 150.25, abs=1e-3)
    assert _op_ends(train, 0)[1] == pytest.approx(signal_at, abs=5)  # trains space acknowledgements evenly
    # GPU 0 -> 1 carries the 4,096 writes (or the read requests, header only) and the signal;
    # 1 -> 0 the acknowledgements of both (or the 4,096 read responses and the signal's ack).
    if kind == "write":
        forward, backward = (PACKETS * 272 + 24, PACKETS * 4.25 + 0.375), ((PACKETS + 1) * 16, (PACKETS + 1) * 0.25)
    else:
        forward, backward = (PACKETS * 16 + 24, PACKETS * 0.25 + 0.375), (PACKETS * 272 + 16, PACKETS * 4.25 + 0.25)
    for r in (per_packet, train):
        for (src, dst), (wire, busy) in (((0, 1), forward), ((1, 0), backward)):
            link = _link(r, src, dst)
            assert link["packets"] == PACKETS + 1
            assert link["wire_bytes"] == wire
            assert link["busy_ns"] == pytest.approx(busy, abs=1e-3)
        assert r.gpus["packets_sent"][0] == PACKETS + 1
    # 4,096 packets become 64 transactions: far fewer events.
    assert train.events * 10 < per_packet.events


@pytest.mark.parametrize("topology, gpus", [("switch", 4), ("torus2d", 4), ("ring", 4)])
def test_where_flows_meet_trains_are_refused_and_packets_go(write_platform, topology, gpus):
    # Through a switch, or on GPUs that forward each other's packets (ring, torus), the fabric
    # refuses a train (TLM_BURST_ERROR_RESPONSE) and the GPU sends that peer packets instead:
    # every table, and the event count, equals per-packet simulation bit for bit. GPUs 0 and 2
    # write to GPU 1 (on the 2x2 torus x-first: 2 -> 3 -> 1; on the ring 2 -> 1 is one hop, but
    # GPUs 1 and 2 forward others' packets).
    per_packet, train = _both(_platform(write_platform, topology, gpus=gpus), _transfers(gpus, [(0, 1), (2, 1)], MIB))
    assert train.kernel_time_ns == per_packet.kernel_time_ns
    assert train.events == per_packet.events
    _same_tables(train, per_packet)
    # GPUs 0 and 2 were each refused trains towards one peer, GPU 1 (the summary says so).
    assert list(train.gpus["trains_refused"]) == [1, 0, 1, 0]
    assert list(per_packet.gpus["trains_refused"]) == [0] * 4
    assert any("gpus.train" in note and "2 GPU-to-peer route(s)" in note for note in train.summary()["notes"])
    # GPU 1's incoming links carry both writes and signals (4,097 packets each), and nothing else:
    # its acknowledgements leave it.
    into_gpu1 = train.links[train.links["dst"] == 1]
    assert into_gpu1["packets"].sum() == 2 * (PACKETS + 1)


def test_a_window_too_small_for_trains_changes_nothing(write_platform):
    # A train is at most 1/128 of max_outstanding: with 64 slots every packet goes alone, and the
    # results are those of per-packet simulation bit for bit.
    per_packet, train = _both(_platform(write_platform, max_outstanding=64), _transfers(2, [(0, 1)], MIB))
    assert train.events == per_packet.events
    _same_tables(train, per_packet)


@pytest.mark.parametrize("fabric, flow, buffer", [
    ("ideal", None, None),                     # no bandwidth: a train arrives whole after the latency
    ("packet", "store_and_forward", "1024"),   # a train's first packet leads, not its tail
    ("packet", "cut_through", "16"),           # 16 packets per buffer: the credit loop paces the train
    ("packet", "wormhole", "128B"),            # packets longer than the buffer: sent one by one
])
def test_flow_control_and_fabrics_keep_train_timing(write_platform, fabric, flow, buffer):
    text = "\n          model: ideal\n          latency: 500ns" if fabric == "ideal" else None
    path = _platform(write_platform, flow=flow or "cut_through", buffer=buffer or "1024", fabric=text)
    per_packet, train = _both(path, _transfers(2, [(0, 1)], MIB))
    assert train.kernel_time_ns == pytest.approx(per_packet.kernel_time_ns, rel=1e-3)
    assert train.gpus["bytes_sent"].sum() == per_packet.gpus["bytes_sent"].sum()
    if flow == "wormhole":  # the fabric refuses the train, so this is per-packet simulation bit for bit
        assert train.events == per_packet.events
        _same_tables(train, per_packet)


def test_large_message_all_reduce_is_within_one_percent_of_per_packet(repo):
    # The large-message check on a smaller size: an 8 MiB direct all-reduce on the MI300X
    # node (32 workgroups, 7 links per GPU shared by 32 workgroups). Each GPU sends 2 (P-1)/P * S
    # of data, 14 MiB.
    path = repo / "platforms/mi300x-8gpu.yaml"
    profile = direct_allreduce(gpus=8, nbytes=8 * MIB, workgroups=32)
    per_packet, train = _both(path, profile, **{"gpus.workgroups": 32})
    assert abs(train.kernel_time_ns / per_packet.kernel_time_ns - 1) < 0.01
    signals = 32 * 2 * 7  # per GPU: each workgroup signals each peer once per stage, 8 bytes each
    for r in (per_packet, train):
        assert (r.gpus["bytes_sent"] == 2 * 7 * MIB + 8 * signals).all()
    assert np.array_equal(train.links["wire_bytes"], per_packet.links["wire_bytes"])
    assert train.events * 5 < per_packet.events


def test_train_length_is_checked(write_platform):
    with pytest.raises(eidola.ConfigError, match="train"):
        eidola.load_platform(_platform(write_platform), {"gpus.train": 0})
    # 4,096 packets of 512 KiB would be a 2 GiB transaction: refused before the model allocates it.
    with pytest.raises(eidola.ConfigError, match=r"gpus.train \(4096\) x gpus.max_payload \(524288 B\)") as info:
        eidola.load_platform(_platform(write_platform), {"gpus.train": 4096, "gpus.max_payload": "512KiB"})
    assert f"= {2 << 30} bytes; a train may carry at most {1 << 30} bytes" in str(info.value)
    # Exactly 1 GiB (4,096 packets of 256 KiB) fits.
    eidola.load_platform(_platform(write_platform), {"gpus.train": 4096, "gpus.max_payload": "256KiB"})
