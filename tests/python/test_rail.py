"""The rail-optimised topology and its NICs against numbers derived by hand, on the packet and the
flow fabric.

The test platform: 2 nodes of 4 fully connected GPUs (64 GB/s, 100 ns, 16 B header); each GPU has
its own NIC (nic.count 4) behind its PCIe link (80 GB/s, 200 ns, the GPU's 16 B header); NIC r of
each node is on rail switch r (50 GB/s, 1 us); each rail switch has a link each way to each of 2
spines (100 GB/s, 500 ns); routers 50 ns; memory 300 ns. NIC and network links frame a message in
network packets of nic.mtu = 4096 B of data, each with nic.header = 78 B; a read request and a
write's acknowledgement are one network packet per message (its first, respectively last, GPU
packet carries the header; the others carry none there).

Node numbers (topology.cpp): GPUs 0-7 (node 0: 0-3, node 1: 4-7), NICs 8-15 (n0.nic0-3, then
n1.nic0-3), rail switches 16-19, spines 20-21.

Zero-load latency of one packet (cut-through, docs/router.md): over links of wire w_k, bandwidth
b_k, latency l_k, the head moves on after one flit (16 B / b_k) + l_k + router, and the tail
leaves link k at max(head_k + w_k / b_k, tail_(k-1) + last flit / b_k); a message's first packet
waits nic.message_overhead at its NIC before the NIC link.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from zero_load import zero_load_ns

import eidola
from eidola.platform.memory import fabric_links
from eidola.profile import ProfileBuilder

FLIT, SW, M, MEM_BW = 16, 50.0, 300.0, 5.3e12
PCIE = (80e9, 200.0)     # GPU <-> NIC
NIC = (50e9, 1000.0)     # NIC <-> rail switch
NET = (100e9, 500.0)     # rail switch <-> spine
HDR, NIC_HDR, MTU = 16, 78, 4096
GPUS, PER = 8, 4
FIRST_NIC, FIRST_RAIL, FIRST_SPINE = 8, 16, 20


def _platform(write_platform, model="packet", overhead_ns=0.0, extra=None):
    path = write_platform(f"""
        eidola: 1
        name: rail-test
        gpus: {{count: {GPUS}, workgroups: 1, max_outstanding: 4096, max_payload: 256B,
               memory: {{latency: {M:g}ns, bandwidth: 5.3TB/s}}}}
        fabric:
          model: packet
          topology: rail
          rail: {{gpus_per_node: {PER}, intra: fully_connected, spines: 2}}
          link: {{bandwidth: 64GB/s, latency: 100ns, header: {HDR}B}}
          nic: {{bandwidth: 50GB/s, latency: 1us, mtu: {MTU}B, header: {NIC_HDR}B, message_overhead: {overhead_ns:g}ns,
                pcie: {{bandwidth: 80GB/s, latency: 200ns}}}}
          network: {{bandwidth: 100GB/s, latency: 500ns}}
          switch: {{latency: {SW:g}ns, buffer: 4MiB}}
        """)
    return eidola.load_platform(path, {"fabric.model": model, **(extra or {})})


def _writes(pairs, nbytes, count=1):
    """`count` writes of `nbytes` from each (src, dst), one workgroup each source."""
    b = ProfileBuilder(gpus=GPUS, workgroups=1, name="writes")
    b.buffer("data", nbytes=max(nbytes, 4096))
    for src, dst in pairs:
        p = b.program(gpu=src, wg=0)
        for _ in range(count):
            p.write(dst=dst, buffer="data", offset=0, nbytes=nbytes)
    return b.build()


def _link(res, src, dst):
    rows = res.links[(res.links["src"] == src) & (res.links["dst"] == dst)]
    assert len(rows) == 1, (src, dst)
    return rows[0]


def _zero_load_ns(hops, overhead_ns=0.0, overhead_at=-1):
    """One packet over `hops` at zero load, with this platform's switch latency (zero_load.py)."""
    return zero_load_ns(hops, SW, FLIT, overhead_ns, overhead_at)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_same_rail_write_crosses_only_its_rail_with_one_header_per_mtu(write_platform, model):
    # n0.gpu3 -> n1.gpu3 (GPU 3 -> GPU 7), 10,000 bytes: 40 GPU packets (39 x 256 + 16) and
    # ceil(10000 / 4096) = 3 network packets. Its path is gpu3 -> n0.nic3 -> rail3 -> n1.nic3 -> gpu7.
    S = 10_000
    res = eidola.simulate(_platform(write_platform, model), _writes([(3, 7)], S))
    nic0, rail, nic1 = FIRST_NIC + 3, FIRST_RAIL + 3, FIRST_NIC + 4 + 3
    frames = math.ceil(S / MTU)
    for src, dst in ((nic0, rail), (rail, nic1)):       # data: S + 3 x 78 on each NIC link
        link = _link(res, src, dst)
        assert (link["bytes"], link["wire_bytes"], link["packets"]) == (S, S + frames * NIC_HDR, 40)
    for src, dst in ((rail, nic0), (nic1, rail)):       # back: 40 acknowledgements, one header per message
        link = _link(res, src, dst)
        assert (link["bytes"], link["wire_bytes"], link["packets"]) == (0, NIC_HDR, 40)
    for src, dst in ((3, nic0), (nic1, 7)):             # PCIe: the GPU's own header per GPU packet
        assert _link(res, src, dst)["wire_bytes"] == S + 40 * HDR
    assert _link(res, 7, nic1)["wire_bytes"] == 40 * HDR  # acknowledgements: a header each (link.ack 0)
    # No other NIC, rail or spine link carries anything.
    touched = {(3, nic0), (nic0, rail), (rail, nic1), (nic1, 7), (7, nic1), (nic1, rail), (rail, nic0), (nic0, 3)}
    others = [r for r in res.links if (int(r["src"]), int(r["dst"])) not in touched]
    assert sum(int(r["wire_bytes"]) for r in others) == 0
    # The NIC link is the bottleneck: busy for its wire bytes at 50 GB/s.
    assert _link(res, nic0, rail)["busy_ns"] == pytest.approx((S + frames * NIC_HDR) / NIC[0] * 1e9, abs=1e-3)


@pytest.mark.parametrize("model", ["packet", "flow"])
@pytest.mark.parametrize("overhead_ns", [0.0, 250.0])
def test_one_inter_node_write_takes_the_zero_load_latency(write_platform, model, overhead_ns):
    # One 256-byte write n0.gpu3 -> n1.gpu3: PCIe (256 + 16 B), NIC link (256 + 78 B: one network
    # packet), NIC link, PCIe; the message's processing time at n0.nic3 comes before its NIC link.
    # It completes when its acknowledgement is back: memory (300 ns + 256 B at 5.3 TB/s), then
    # 16 B on PCIe, 78 B (the message's one acknowledgement) on the NIC links, 16 B on PCIe.
    res = eidola.simulate(_platform(write_platform, model, overhead_ns), _writes([(3, 7)], 256))
    there = _zero_load_ns([(256 + HDR, *PCIE), (256 + NIC_HDR, *NIC), (256 + NIC_HDR, *NIC), (256 + HDR, *PCIE)],
                          overhead_ns, overhead_at=1)
    back = _zero_load_ns([(HDR, *PCIE), (NIC_HDR, *NIC), (NIC_HDR, *NIC), (HDR, *PCIE)])
    pair = res.pairs[(res.pairs["src"] == 3) & (res.pairs["dst"] == 7)][0]
    assert pair["latency_mean_ns"] == pytest.approx(there, abs=2e-3)
    assert res.kernel_time_ns == pytest.approx(there + M + 256 / MEM_BW * 1e9 + back, abs=4e-3)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_pcie_header_is_its_own_on_the_gpu_to_nic_hop(write_platform, model):
    # nic.pcie.header 26 B (a 64-bit memory write TLP: 16 B header, 2 B sequence number, 4 B LCRC, 4 B framing): the
    # 40 GPU packets of 10,000 bytes n0.gpu3 -> n1.gpu3 carry 26 B each on both PCIe hops, the GPU links keep their
    # 16 B (n0.gpu0 -> n0.gpu1), the NIC links their 78 B per network packet. A 256-byte write's zero-load latency
    # takes 282 B on each PCIe hop.
    S, PCIE_HDR = 10_000, 26
    plat = _platform(write_platform, model, extra={"fabric.nic.pcie.header": f"{PCIE_HDR}B"})
    res = eidola.simulate(plat, _writes([(3, 7), (0, 1)], S))
    nic0, rail, nic1 = FIRST_NIC + 3, FIRST_RAIL + 3, FIRST_NIC + 4 + 3
    for src, dst in ((3, nic0), (nic1, 7)):
        assert _link(res, src, dst)["wire_bytes"] == S + 40 * PCIE_HDR
    assert _link(res, 0, 1)["wire_bytes"] == S + 40 * HDR
    assert _link(res, nic0, rail)["wire_bytes"] == S + math.ceil(S / MTU) * NIC_HDR
    one = eidola.simulate(plat, _writes([(3, 7)], 256))
    there = _zero_load_ns([(256 + PCIE_HDR, *PCIE), (256 + NIC_HDR, *NIC), (256 + NIC_HDR, *NIC),
                           (256 + PCIE_HDR, *PCIE)])
    assert one.pairs[0]["latency_mean_ns"] == pytest.approx(there, abs=2e-3)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_cross_rail_goes_through_a_spine(write_platform, model):
    # n0.gpu0 -> n1.gpu1 (GPU 0 -> GPU 5): rail 0 up to a spine, down rail 1; without spreading
    # the first spine (spine0) takes it all. Zero load: PCIe, NIC, network, network, NIC, PCIe.
    res = eidola.simulate(_platform(write_platform, model), _writes([(0, 5)], 256))
    path = [(0, FIRST_NIC), (FIRST_NIC, FIRST_RAIL), (FIRST_RAIL, FIRST_SPINE), (FIRST_SPINE, FIRST_RAIL + 1),
            (FIRST_RAIL + 1, FIRST_NIC + 4 + 1), (FIRST_NIC + 4 + 1, 5)]
    for src, dst in path:
        assert _link(res, src, dst)["bytes"] == 256, (src, dst)
    assert _link(res, FIRST_RAIL, FIRST_SPINE + 1)["packets"] == 0
    there = _zero_load_ns([(256 + HDR, *PCIE), (256 + NIC_HDR, *NIC), (256 + NIC_HDR, *NET), (256 + NIC_HDR, *NET),
                           (256 + NIC_HDR, *NIC), (256 + HDR, *PCIE)])
    assert res.pairs[(res.pairs["src"] == 0) & (res.pairs["dst"] == 5)][0]["latency_mean_ns"] == pytest.approx(
        there, abs=2e-3)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_pxn_crosses_the_node_to_the_peers_rail_instead_of_a_spine(write_platform, model):
    # NCCL's PXN (fabric.rail.pxn): n0.gpu0 -> n1.gpu1 (GPU 0 -> GPU 5, rail 0 -> rail 1) goes over the node's link to
    # n0.gpu1, the GPU on rail 1, then n0.nic1 -> rail1 -> n1.nic1 -> gpu5; the spines stay idle though there are
    # two. Zero load: link, PCIe, NIC, NIC, PCIe. A same-rail write (GPU 2 -> GPU 6) keeps its own NIC.
    res = eidola.simulate(_platform(write_platform, model, extra={"fabric.rail.pxn": True}),
                          _writes([(0, 5), (2, 6)], 256))
    path = [(0, 1), (1, FIRST_NIC + 1), (FIRST_NIC + 1, FIRST_RAIL + 1), (FIRST_RAIL + 1, FIRST_NIC + 4 + 1),
            (FIRST_NIC + 4 + 1, 5)]
    for src, dst in path + [(2, FIRST_NIC + 2), (FIRST_NIC + 2, FIRST_RAIL + 2)]:
        assert _link(res, src, dst)["bytes"] == 256, (src, dst)
    spines = res.links[(res.links["src"] >= FIRST_SPINE) | (res.links["dst"] >= FIRST_SPINE)]
    assert len(spines) == 2 * 2 * 4 and int(spines["wire_bytes"].sum()) == 0
    assert _link(res, 0, FIRST_NIC)["bytes"] == 0
    there = _zero_load_ns([(256 + HDR, 64e9, 100.0), (256 + HDR, *PCIE), (256 + NIC_HDR, *NIC),
                           (256 + NIC_HDR, *NIC), (256 + HDR, *PCIE)])
    assert res.pairs[(res.pairs["src"] == 0) & (res.pairs["dst"] == 5)][0]["latency_mean_ns"] == pytest.approx(
        there, abs=2e-3)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_pxn_with_shared_nics_forwards_through_the_first_gpu_of_the_peers_nic(write_platform, model):
    # nic.count 2 (GPUs 0-1 on NIC 0, GPUs 2-3 on NIC 1; NICs 8-11, rails 12-13, spines 14-15) with two spines and
    # PXN: n0.gpu0 -> n1.gpu2 (GPU 0 -> GPU 6, NIC 1's rail) crosses the node to n0.gpu2, the first GPU of NIC 1,
    # then n0.nic1 -> rail1 -> n1.nic1 -> gpu6; the spines carry nothing.
    plat = _platform(write_platform, model, extra={"fabric.nic.count": 2, "fabric.rail.pxn": True})
    res = eidola.simulate(plat, _writes([(0, 6)], 4096))
    for src, dst in ((0, 2), (2, 9), (9, 13), (13, 11), (11, 6)):
        assert _link(res, src, dst)["bytes"] == 4096, (src, dst)
    assert int(res.links[(res.links["src"] >= 14) | (res.links["dst"] >= 14)]["wire_bytes"].sum()) == 0


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_spreading_alternates_the_spines(write_platform, model):
    # 8,192 bytes cross rails as 32 GPU packets in 2 network packets: with routing.spread the rail
    # switch alternates its two spines, 16 packets and 4,096 bytes each; the headers stay 2 x 78.
    res = eidola.simulate(_platform(write_platform, model, extra={"fabric.routing.spread": True}),
                          _writes([(0, 5)], 8192))
    up = [_link(res, FIRST_RAIL, FIRST_SPINE + s) for s in range(2)]
    assert [int(u["packets"]) for u in up] == [16, 16]
    assert [int(u["bytes"]) for u in up] == [4096, 4096]
    assert sum(int(u["wire_bytes"]) for u in up) == 8192 + 2 * NIC_HDR


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_message_overhead_is_serialised_in_the_sending_nic(write_platform, model):
    # 32 separate 256-byte writes n0.gpu3 -> n1.gpu3, 1 us of NIC processing each: the NIC link
    # is busy 32 x (1 us + 334 B / 50 GB/s), and the last write cannot arrive before that.
    ov = 1000.0
    res = eidola.simulate(_platform(write_platform, model, ov), _writes([(3, 7)], 256, count=32))
    busy = 32 * (ov + (256 + NIC_HDR) / NIC[0] * 1e9)
    assert _link(res, FIRST_NIC + 3, FIRST_RAIL + 3)["busy_ns"] == pytest.approx(busy, abs=1e-3)
    assert _link(res, FIRST_NIC + 3, FIRST_RAIL + 3)["wire_bytes"] == 32 * (256 + NIC_HDR)
    assert busy < res.kernel_time_ns < busy + 10_000


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_shared_nics_and_no_spines(write_platform, model):
    # nic.count 2: GPUs 0-1 of a node use NIC 0, GPUs 2-3 NIC 1 (NICs 8-11, rails 12-13). Without
    # spines, n0.gpu0 -> n1.gpu2 (GPU 0 -> GPU 6, rail 0 -> rail 1) first crosses its node to
    # n0.gpu2, the first GPU on rail 1, then n0.nic1 -> rail1 -> n1.nic1 -> gpu6.
    plat = _platform(write_platform, model, extra={"fabric.nic.count": 2, "fabric.rail.spines": 0})
    res = eidola.simulate(plat, _writes([(0, 6), (1, 5)], 4096))
    for src, dst in ((0, 2), (2, 9), (9, 13), (13, 11), (11, 6)):
        assert _link(res, src, dst)["bytes"] == 4096, (src, dst)
    for src, dst in ((1, 8), (8, 12), (12, 10), (10, 5)):  # same rail, shared NIC 0
        assert _link(res, src, dst)["bytes"] == 4096, (src, dst)
    assert len(res.links) == 2 * (4 * 3 + 2 * 4 + 2 * 2)  # per node: 12 GPU links, 4 PCIe and 2 NIC links each way
    # The memory estimate counts the same links and routers (8 GPUs, 4 NICs, 2 rail switches).
    assert fabric_links(plat.components["fabric"].resolved(), GPUS) == (len(res.links), 14)
    assert len(res.node_names) == 14


def test_ideal_fabric_takes_a_rail_platform(write_platform, repo):
    plat = eidola.load_platform(repo / "platforms" / "rail-16gpu.yaml", {"fabric.model": "ideal"})
    b = ProfileBuilder(gpus=16, workgroups=1, name="one")
    b.buffer("data", nbytes=4096)
    b.program(gpu=3, wg=0).write(dst=11, buffer="data", offset=0, nbytes=4096)
    res = eidola.simulate(plat, b.build())
    assert res.summary["fabric"] == "IdealFabric"
    assert int(res.gpus["bytes_received"][11]) == 4096


@pytest.mark.parametrize("override, says", [
    ({"gpus.count": 12}, r"fabric\.rail\.gpus_per_node: 12 GPUs do not fill nodes of 8"),
    ({"fabric.nic.count": 3}, r"fabric\.nic\.count: 3 NICs per node do not divide rail\.gpus_per_node 8"),
    ({"fabric.rail.spine": 2}, r"fabric\.rail\.spine: \w+Fabric has no parameter 'rail\.spine'"),
    ({"fabric.nic.mtu": "0B"}, r"fabric\.nic\.mtu"),
])
@pytest.mark.parametrize("model", ["packet", "flow"])
def test_bad_rail_settings_name_the_key(repo, override, says, model):
    with pytest.raises(eidola.ConfigError, match=says):
        eidola.load_platform(repo / "platforms" / "rail-16gpu.yaml", {"fabric.model": model, **override})


def test_bad_rail_setting_exits_2_with_one_line(repo):
    out = subprocess.run([sys.executable, "-m", "eidola", "validate", str(repo / "platforms" / "rail-16gpu.yaml"),
                          "--set", "fabric.nic.count=5"], capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "fabric.nic.count" in out.stderr


def test_512_gpus_build_and_run_on_the_flow_fabric(repo):
    # 64 nodes of 8 on 8 rails: a ring across nodes on rail 0 (GPU 8n -> 8(n+1)), 1 MiB each, crosses
    # only rail 0: each of its 64 NIC uplinks carries 1 MiB + 256 headers, and the acknowledgement
    # (one header) of the message its GPU received; the rail switch sends each NIC the same.
    plat = eidola.load_platform(repo / "platforms" / "rail-16gpu.yaml", {"gpus.count": 512, "fabric.model": "flow"})
    S = 1 << 20
    b = ProfileBuilder(gpus=512, workgroups=1, name="rail0-ring")
    b.buffer("data", nbytes=S)
    for n in range(64):
        b.program(gpu=8 * n, wg=0).write(dst=8 * ((n + 1) % 64), buffer="data", offset=0, nbytes=S)
    res = eidola.simulate(plat, b.build())
    first_nic, rails = 512, 512 + 64 * 8
    uplinks = res.links[(res.links["src"] >= first_nic) & (res.links["src"] < rails) & (res.links["dst"] == rails)]
    assert len(uplinks) == 64
    assert np.all(uplinks["wire_bytes"] == S + S // MTU * 78 + 78)
    assert int(res.links[res.links["src"] >= rails]["wire_bytes"].sum()) == 64 * (S + S // MTU * 78 + 78)


def test_results_and_describe_name_the_rail_nodes(write_platform, repo, tmp_path):
    res = eidola.simulate(_platform(write_platform, "packet"), _writes([(3, 7)], 256))
    names = [res.node_name(n) for n in (3, FIRST_NIC + 3, FIRST_NIC + 7, FIRST_RAIL + 3, FIRST_SPINE + 1)]
    assert names == ["gpu3", "n0.nic3", "n1.nic3", "rail3", "spine1"]
    res.save(tmp_path / "run")
    assert (tmp_path / "run" / "nodes.csv").read_text().splitlines()[FIRST_NIC + 4 + 1] == f"{FIRST_NIC + 4},n1.nic0"
    out = subprocess.run([sys.executable, "-m", "eidola", "describe", str(repo / "platforms" / "rail-16gpu.yaml"),
                          "--set", "gpus.count=64", "--set", "fabric.rail.spines=1"], capture_output=True, text=True)
    assert out.returncode == 0
    # 8 nodes x 50 GB/s per rail switch against one 50 GB/s spine link: 8:1.
    assert "rail: 8 node(s) x 8 GPUs" in out.stdout and "(8.00:1 oversubscribed)" in out.stdout


def test_rail_keys_on_another_topology_are_accepted_with_one_warning(repo):
    # fabric.rail.pxn and fabric.nic.pcie.header change nothing on dgx-h100's switch: accepted, as every packet key
    # is on every topology, but said so; the same keys on a rail platform are not warned about.
    out = subprocess.run([sys.executable, "-m", "eidola", "validate", str(repo / "platforms" / "dgx-h100.yaml"),
                          "--set", "fabric.rail.pxn=true", "--set", "fabric.nic.pcie.header=26B"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "fabric: rail.pxn, nic.pcie.header ignored by topology: switch (they are the rail topology's)" in out.stderr
    out = subprocess.run([sys.executable, "-m", "eidola", "validate", str(repo / "platforms" / "rail-16gpu.yaml"),
                          "--set", "fabric.rail.pxn=true"], capture_output=True, text=True)
    assert out.returncode == 0 and "ignored by topology" not in out.stderr, out.stderr
