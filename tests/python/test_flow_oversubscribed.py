"""An all-to-all over an oversubscribed spine: the spine link's rate bounds the time on any fabric (an architect's
trial, 2026-12-07, found the flow fabric 36% under that bound, and its own over-run check saying so).

rail-16gpu with one spine: 2 nodes of 8 GPUs, NIC r of each node on rail switch r, one 50 GB/s link from each rail
switch to the spine. NCCL's all-to-all of S bytes a GPU sends S/16 to every GPU; between the nodes, GPU r's 7
peers on other rails are reached through its rail switch's spine link (same-rail peers go across the rail switch
alone). So each rail switch's uplink carries the cross-rail traffic of its two NICs, 2 x 7 x S/16 = 14/16 S, in
network packets of 4,096 B + 78 B header: T >= 14/16 S x 4174/4096 / 50 GB/s (299.2 us at 16 MiB).
"""

from __future__ import annotations

import pytest
from conftest import REPO

import eidola
from eidola.platform import FLOW_COUNTERPART
from eidola.workload.nccl import build_collective

S = 16 << 20
BOUND_NS = 14 / 16 * S * (4096 + 78) / 4096 / 50e9 * 1e9


def _time_ns(model: str) -> float:
    overrides = {"fabric.rail.spines": 1, "fabric.model": model, **(FLOW_COUNTERPART if model == "flow" else {})}
    plat = eidola.load_platform(REPO / "platforms" / "rail-16gpu.yaml", overrides=overrides)
    prof, plan = build_collective(plat, "alltoall", S)
    assert plan.algo == "p2p"
    return eidola.simulate(plat, prof).kernel_time_ns


@pytest.fixture(scope="module")
def packet_ns() -> float:
    return _time_ns("packet")


def test_the_packet_fabric_keeps_to_the_spine_bound(packet_ns):
    # The outside reference: measured 320.09 us (2026-12-07), 7% over the bound (the window binds, its note says).
    assert BOUND_NS <= packet_ns <= BOUND_NS * 1.15


@pytest.mark.xfail(strict=True, reason=(
    "measured 204.12 us against the bound's 299.2 (-32%; packet 320.09 us), 2026-12-07: with flow.issue gates the "
    "flow fabric carries the cross-rail puts past the spine link's rate (its own check: link 32 -> 40 busy 1.466x "
    "the run); with flow.issue queue it takes 349.6 us. Not traced yet"))
def test_the_flow_fabric_keeps_to_the_spine_bound(packet_ns):
    flow = _time_ns("flow")
    assert flow >= BOUND_NS
    assert flow == pytest.approx(packet_ns, rel=0.05)  # the 5% for all-to-alls at 16 MiB and above
