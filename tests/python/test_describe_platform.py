"""`eidola describe PLATFORM`: an architect's figures, each derived here by hand from the platform file.

Notation: b a lane's bandwidth, lat a link's latency, sw fabric.switch.latency, F the flit (16 B), L a full packet's
wire bytes (gpus.max_payload 256 B + fabric.link.header), H hops. Zero load, cut-through (docs/router.md, "A hop"):
L/b + H (lat + sw) + (H - 1) F/b. A write's round trip adds the target's memory (latency + 256 B / bandwidth) and
the acknowledgement back (link.ack bytes, or the header where it is 0B, over the same H hops).
"""

from __future__ import annotations

import json
import math

import pytest

import eidola
from eidola.platform.figures import platform_figures

MEMORY_NS = 300 + 256 / 5.3e12 * 1e9  # switch-8gpu, ring-8gpu, torus2d-16gpu: 300ns, 5.3TB/s


def _cut_through_ns(wire: float, gbps: float, lat: float, sw: float, hops: int) -> float:
    return wire / gbps + hops * (lat + sw) + (hops - 1) * 16 / gbps


def _figures(repo, name: str, **overrides: str) -> dict:
    return platform_figures(eidola.load_platform(repo / "platforms" / f"{name}.yaml", overrides or None))


# switch-8gpu: link {bandwidth: 100GB/s, latency: 150ns, header: 16B, count: 4}, switch {latency: 100ns,
# buffer: 192}, gpus {max_outstanding: 2048, max_payload: 256B}. GPU to GPU is 2 hops (in, out of the switch).
SW8_ONE_WAY = _cut_through_ns(272, 100, 150, 100, 2)  # 2.72 + 500 + 0.16 = 502.88 ns
SW8_ACK = _cut_through_ns(16, 100, 150, 100, 2)       # 0.16 + 500 + 0.16 = 500.32 ns
SW8_ROUND_TRIP = SW8_ONE_WAY + MEMORY_NS + SW8_ACK    # 1303.25 ns


def test_switch_8gpu_figures_by_hand(repo):
    f = _figures(repo, "switch-8gpu")
    assert f["injection_Bps"] == [400e9, 400e9]               # 4 lanes x 100 GB/s
    assert f["payload_share"] == pytest.approx(256 / 272)     # 94.1%
    for pair in (f["nearest"], f["farthest"]):                # every pair crosses the one switch
        assert pair["hops"] == 2
        assert pair["one_way_s"] * 1e9 == pytest.approx(SW8_ONE_WAY, abs=1e-3)
        assert pair["round_trip_s"] * 1e9 == pytest.approx(SW8_ROUND_TRIP, abs=1e-3)
    assert f["bisection"]["Bps"] == 4 * 400e9                 # half the GPUs' ports: 1.6 TB/s
    # The file's comment: (272 B / 100 GB/s + 2 x 150 ns + 100 ns) x 100 GB/s / 272 B = 148.06, so 149 whole
    # packets (the comment rounds to 148), against 192.
    [buffer] = f["buffers"]
    assert (buffer["links"], buffer["given"], buffer["needed"], buffer["covered"]) == ("fabric.link", 192, 149, True)
    assert buffer["round_trip_s"] * 1e9 == pytest.approx(2.72 + 300 + 100)
    # One port: 400 GB/s x 1303.25 ns / 272 B = 1916.5 packets in flight, under the window of 2048.
    assert f["window"]["needed"] == math.ceil(400 * SW8_ROUND_TRIP / 272) == 1917
    assert f["window"]["covered"]


def test_switch_8gpu_prints_the_figures(cli, repo):
    r = cli("describe", repo / "platforms" / "switch-8gpu.yaml")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "switch-8gpu: 8 GPUs on PacketFabric"
    # The figures of test_switch_8gpu_figures_by_hand as printed, key column aligned.
    expected = {
        "injection": "400 GB/s per GPU per direction (GPU 0: fabric.link 4 lanes x 100 GB/s)",
        "payload share": "94.1%, 256 B of a 272 B packet: 376.5 GB/s of payload",  # 400 x 256 / 272 = 376.47
        "latency nearest": "502.9 ns, 2 hops (gpu0 to gpu1), a full packet at zero load",
        "latency farthest": "502.9 ns, 2 hops (gpu0 to gpu1), a full packet at zero load",
        "write round trip": "1303.2 ns nearest, 1303.2 ns farthest (there, memory 300.0 ns, acknowledgement back)",
        "bisection": "1.6 TB/s per direction (4 GPUs' links)",
        "buffer": "fabric.link: 192 packets per lane and channel; its credit round trip, 402.7 ns, needs 149: covered",
        "window": "2048 packets per GPU; its links busy over their farthest round trips need 1917: covered",
    }
    rows = {line[2:19].strip(): line[20:] for line in lines[1:]}
    assert rows == expected


def test_ring_8gpu_figures_by_hand(repo):
    """ring-8gpu: bidirectional, link {64GB/s, 100ns, 16B}, switch {50ns, buffer 64}, max_outstanding 1024."""
    f = _figures(repo, "ring-8gpu")
    assert f["injection_Bps"] == [128e9, 128e9]              # a link to each neighbour
    near, far = f["nearest"], f["farthest"]
    assert (near["hops"], far["hops"]) == (1, 4)              # the opposite GPU is 8/2 hops either way
    assert near["one_way_s"] * 1e9 == pytest.approx(4.25 + 150)                 # 154.25 ns
    assert far["one_way_s"] * 1e9 == pytest.approx(4.25 + 4 * 150 + 3 * 0.25)  # 605.0 ns
    round_trip = {h: _cut_through_ns(272, 64, 100, 50, h) + MEMORY_NS + _cut_through_ns(16, 64, 100, 50, h)
                  for h in (3, 4)}  # 1205.55 and 1506.05 ns
    assert far["round_trip_s"] * 1e9 == pytest.approx(round_trip[4], abs=1e-3)
    assert f["bisection"]["Bps"] == 2 * 64e9                  # a cut crosses two links each way
    [buffer] = f["buffers"]
    assert buffer["needed"] == math.ceil((4.25 + 200 + 50) / 4.25) == 60  # the file's comment: 60 packets
    # Each link busy over its farthest round trip: one side's link reaches the opposite GPU (4 hops), the
    # other's at most 3: 64 GB/s x (1506.05 + 1205.55) ns / 272 B = 638.0.
    assert f["window"]["needed"] == math.ceil(64 * (round_trip[4] + round_trip[3]) / 272) == 639
    assert f["window"]["covered"]


def test_torus2d_16gpu_figures_by_hand(repo):
    """torus2d-16gpu: 4 x 4, the ring's links; the farthest GPU is 2 + 2 hops away."""
    f = _figures(repo, "torus2d-16gpu")
    assert f["injection_Bps"] == [256e9, 256e9]               # four neighbours
    assert f["farthest"]["hops"] == 4
    assert f["farthest"]["one_way_s"] * 1e9 == pytest.approx(605.0)
    assert f["bisection"]["Bps"] == 8 * 64e9                  # 4 rows cut twice (the wrap links)
    # Dimension order, x first: out of +x up to 2 + 2 hops, -x 1 + 2, +y 2, -y 1 (ties go one way).
    rtt = [_cut_through_ns(272, 64, 100, 50, h) + MEMORY_NS + _cut_through_ns(16, 64, 100, 50, h) for h in (4, 3, 2, 1)]
    assert f["window"]["needed"] == math.ceil(64 * sum(rtt) / 272) == 994


def test_bisection_of_the_other_topologies(repo):
    # A 4 x 4 mesh: four links cross the middle each way.
    assert _figures(repo, "mesh2d-16gpu")["bisection"]["Bps"] == 4 * 64e9
    # mi300x-8gpu, fully connected: 4 x 4 links of 64 GB/s cross.
    assert _figures(repo, "mi300x-8gpu")["bisection"]["Bps"] == 16 * 64e9
    # hierarchical-16gpu, 2 nodes: one node's 8 NICs of 50 GB/s (400) are narrower than its leaf's 2 x 400 GB/s
    # spine links.
    assert _figures(repo, "hierarchical-16gpu")["bisection"]["Bps"] == 400e9
    # rail-16gpu, 2 nodes: one node's 8 NICs of 50 GB/s.
    assert _figures(repo, "rail-16gpu")["bisection"]["Bps"] == 400e9
    assert "not computed" in _figures(repo, "custom-4gpu")["bisection"]["why"]


def test_datasheet_link_bandwidths(repo):
    # H100 SXM datasheet: NVLink 900 GB/s, both directions together; dgx-h100.yaml's 18 links of 25 GB/s.
    assert 2 * _figures(repo, "dgx-h100")["injection_Bps"][1] == 900e9
    # A100 SXM datasheet: NVLink 600 GB/s, both directions; dgx-a100.yaml's 12 links of 25 GB/s.
    assert 2 * _figures(repo, "dgx-a100")["injection_Bps"][1] == 600e9
    # MI300X datasheet: 896 GB/s peak aggregate Infinity Fabric bandwidth, both directions; 7 links of 64 GB/s.
    assert 2 * _figures(repo, "mi300x-8gpu")["injection_Bps"][1] == 896e9


def test_custom_and_rail_paths(repo):
    f = _figures(repo, "custom-4gpu")
    # gpu0 -> s0 -> gpu1: 2 hops at 64 GB/s, 100 ns: 4.25 + 2 x 150 + 0.25 = 304.5 ns. gpu0 -> s0 -> s1 -> gpu2
    # crosses the slow link (32 GB/s, 500 ns), where the links differ, so hop by hop (docs/router.md's table): the
    # head moves on one flit's time + lat + sw after it starts; the tail leaves a link no sooner than the head plus
    # the packet's serialisation there, nor than the tail's arrival plus its last flit's.
    assert (f["nearest"]["hops"], f["farthest"]["hops"]) == (2, 3)
    assert f["nearest"]["one_way_s"] * 1e9 == pytest.approx(304.5)
    head, tail = 0.25 + 150, 4.25 + 150                                   # at s0
    head, tail = head + 0.5 + 550, max(head + 8.5, tail + 0.5) + 550      # at s1: 700.75, 708.75
    tail = max(head + 4.25, tail + 0.25) + 150                            # into gpu2: 859.0
    assert f["farthest"]["one_way_s"] * 1e9 == pytest.approx(tail)
    r = _figures(repo, "rail-16gpu")
    # Same node: one xGMI-like link, 341 B / 64 GB/s + 250 + 100 ns.
    assert r["nearest"]["hops"] == 1 and r["nearest"]["one_way_s"] * 1e9 == pytest.approx(341 / 64 + 350)
    # Another node, another rail: PCIe, NIC, rail switch to spine, spine to rail switch, NIC, PCIe.
    assert r["farthest"]["hops"] == 6


def test_ideal_and_plugin_fabrics(cli, repo):
    r = cli("describe", repo / "platforms" / "gemv-allreduce-4gpu.yaml")
    assert r.returncode == 0, r.stderr
    # fabric.latency 500ns each way; memory 300 ns + 256 B / 5.3 TB/s.
    assert "  latency           500.0 ns one way on every request and response" in r.stdout
    assert "  write round trip  1300.0 ns: 2 x 500.0 ns and memory 300.0 ns" in r.stdout
    r = cli("describe", repo / "examples" / "vendor_ip" / "crossbar-4gpu.yaml")
    assert r.returncode == 0, r.stderr
    assert "plugin fabric: its figures are its own (not computed)" in r.stdout


def test_json_and_bad_input(cli, repo):
    r = cli("describe", repo / "platforms" / "ring-8gpu.yaml", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["platform"] == "ring-8gpu" and data["farthest"]["hops"] == 4
    r = cli("describe", "PacketFabric", "--json")
    assert r.returncode == 2 and "--json" in r.stderr
    r = cli("describe", repo / "platforms" / "custom-4gpu.yaml", "--set", "fabric.custom.switches=1")
    assert r.returncode == 2 and "custom-4gpu.yaml" in r.stderr and "fabric.custom.edges[2]" in r.stderr
