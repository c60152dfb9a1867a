"""NCCL's rings on fabrics of direct neighbour links (topology ring, mesh2d, torus2d).

NCCL's ring search (``src/graph/search.cc``, ``followPath``) takes a ring's bandwidth from each link it
crosses in that direction only, so on a bidirectional ring of links it finds a ring each way, and on a
torus as many Hamiltonian cycles as the links out of a GPU allow. The collectives' rings here are
directed Hamiltonian cycles of the GPUs' neighbour links that share no directed link
(`System.rings`). Checked: the neighbour graph the rings are drawn from is the one the C++ topology
builds (read from a run's link table, not from our Python), the rings' structure, the bus bandwidth
of a large all-gather against the wire arithmetic of one and of two directions of the ring's links, and
that of a large all-reduce against every ring's link rate less headers and acknowledgements.
"""

from __future__ import annotations

import pytest

import eidola
from eidola.profile import ProfileBuilder
from eidola.run.perf import Fabrics, run_sizes
from eidola.workload.nccl.system import System, direct_rings, link_cycles, neighbours

MIB = 1 << 20


def _platform_text(gpus: int, topology: str, extra: str = "") -> str:
    return (f"eidola: 1\ngpus: {{count: {gpus}, workgroups: 16, max_payload: 256B}}\n"
            f"fabric:\n  model: flow\n  topology: {topology}\n{extra}"
            "  link: {bandwidth: 64GB/s, latency: 100ns, header: 16B}\n  switch: {latency: 50ns}\n")


def _cpp_links(write_platform, gpus: int, topology: str, fab: dict) -> set[tuple[int, int]]:
    """The GPU-to-GPU links of the C++ topology with the `fab` keys: every link of a run's link table (GPU nodes
    are 0..gpus-1)."""
    extra = "".join(f"  {key}: {str(value).lower() if isinstance(value, bool) else value}\n"
                    for key, value in fab.items())
    plat = eidola.load_platform(write_platform(_platform_text(gpus, topology, extra)))
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="one write")
    b.buffer("data", nbytes=256)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=256)
    res = eidola.simulate(plat, b.build())
    return {(int(r["src"]), int(r["dst"])) for r in res.links}


@pytest.mark.parametrize("gpus, topology, fab", [
    (8, "ring", {}),
    (8, "ring", {"bidirectional": False}),
    (2, "ring", {}),
    (3, "ring", {}),
    (16, "mesh2d", {"dims": [4, 4]}),
    (6, "mesh2d", {"dims": [3, 2]}),
    (12, "mesh2d", {}),             # no dims: the squarest split, the larger factor along x (4 x 3)
    (16, "torus2d", {"dims": [4, 4]}),
    (8, "torus2d", {"dims": [2, 4]}),  # a torus dimension of 2: one link pair, no wrap
    (9, "torus2d", {"dims": [3, 3]}),
])
def test_neighbours_are_the_links_the_topology_builds(write_platform, gpus, topology, fab):
    graph = neighbours(topology, gpus, fab)
    assert graph is not None
    ours = {(u, v) for u, vs in enumerate(graph) for v in vs}
    assert ours == _cpp_links(write_platform, gpus, topology, fab)


def _arcs(ring: list[int]) -> list[tuple[int, int]]:
    return [(ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring))]


@pytest.mark.parametrize("platform, cycles", [
    ("ring-8gpu", 2),      # a ring each way
    ("mesh2d-16gpu", 2),   # a corner GPU has two links out
    ("torus2d-16gpu", 4),  # four links out of every GPU, each in one ring
])
def test_rings_are_link_disjoint_hamiltonian_cycles(repo, platform, cycles):
    sys = System.of(eidola.load_platform(repo / "platforms" / f"{platform}.yaml"))
    assert sys.neighbours is not None
    links = {(u, v) for u, vs in enumerate(sys.neighbours) for v in vs}
    found = direct_rings(sys.neighbours, sys.gpus)
    assert found is not None and len(found) == cycles
    arcs = [a for ring in found for a in _arcs(ring)]
    for ring in found:
        assert sorted(ring) == list(range(sys.gpus))           # every GPU once
    assert set(arcs) <= links and len(arcs) == len(set(arcs))  # over links, none twice
    # 16 channels take the cycles in turn, as NCCL duplicates its rings over its channels
    rings = sys.rings(sys.gpus, 16)
    assert rings == [found[c % cycles] for c in range(16)]
    # the tuner's bandwidth out of a GPU: one link per ring
    assert sys.gpu_bw == cycles * 64e9


def test_ring_platform_runs_a_ring_each_way(repo):
    sys = System.of(eidola.load_platform(repo / "platforms" / "ring-8gpu.yaml"))
    assert direct_rings(sys.neighbours, 8) == [list(range(8)), [0, 7, 6, 5, 4, 3, 2, 1]]


def test_without_a_hamiltonian_cycle_the_rings_follow_gpu_order(repo):
    # A 3 x 3 mesh is bipartite with 9 GPUs: no cycle through all of them; the first 4 GPUs of a ring
    # of 8 are a path (3 -> 0 is not a link).
    mesh = neighbours("mesh2d", 9, {"dims": [3, 3]})
    assert mesh is not None and direct_rings(mesh, 9) is None
    sys = System.of(eidola.load_platform(repo / "platforms" / "ring-8gpu.yaml"))
    assert direct_rings(sys.neighbours, 4) is None
    assert sys.rings(4, 3) == [[0, 1, 2, 3]] * 3
    assert link_cycles(((1,), (0,)), 2) is None  # two cycles over one link each way cannot share none


def test_all_gather_on_a_bidirectional_ring_uses_both_directions(repo):
    # Each GPU sends (k-1)/k S through its two links out, one ring each. One direction's wire bound is
    # 64 GB/s x 256/272 (16-byte headers) = 60.2 GB/s of bus bandwidth, two directions' 120.5 GB/s;
    # the rings each way (NCCL's search) must beat the first and cannot beat the second.
    size = 64 * MIB
    (point,) = run_sizes(Fabrics(str(repo / "platforms" / "ring-8gpu.yaml"), {}, "flow"), "all_gather",
                         [(size, size // 4)], 8)
    one_way = 64e9 * 256 / 272 / 1e9
    assert point.plan.algo == "ring"
    assert 1.5 * one_way < point.busbw < 2 * one_way, point


# The packet fabric's bus bandwidth on the same runs (64 MiB, the tuner's ring Simple on 16 channels; measured
# 2026-12-03, revision d6b1a21's packet fabric, 9 to 25 s of wall time each, too long for this suite): the
# reference the flow fabric is held to, beside the wire bound it cannot pass.
PACKET_BUSBW = {"ring-8gpu": 110.11, "mesh2d-16gpu": 106.57, "torus2d-16gpu": 200.75}


@pytest.mark.parametrize("platform, gpus, rings", [("ring-8gpu", 8, 2), ("mesh2d-16gpu", 16, 2),
                                                  ("torus2d-16gpu", 16, 4)])
def test_all_reduce_fills_every_ring_link_direction(repo, platform, gpus, rings):
    # A ring all-reduce's bus bandwidth is what one ring carries per GPU: each ring's link out of a GPU
    # carries its data (256 B + a 16-byte header a packet) and the 16-byte acknowledgements of the ring
    # running the other way over the same link, 64 GB/s x 256 / 288 = 56.9 GB/s; the rings share no
    # directed link, so together they give `rings` times that, which no fabric may pass. At 64 MiB the
    # packet fabric reaches 96.8% / 93.7% / 88.2% of it (pipeline fill, and the GPU's issue gates: a
    # single ring's share would be at most 1 / `rings` of it), and the flow fabric must come within 3% of
    # the packet fabric.
    size = 64 * MIB
    (point,) = run_sizes(Fabrics(str(repo / "platforms" / f"{platform}.yaml"), {}, "flow"), "all_reduce",
                         [(size, size // 4)], gpus)
    bound = rings * 64e9 * 256 / 288 / 1e9
    assert point.plan.algo == "ring"
    assert point.busbw < bound, (point, bound)
    assert abs(point.busbw / PACKET_BUSBW[platform] - 1) <= 0.03, (point, PACKET_BUSBW[platform])
