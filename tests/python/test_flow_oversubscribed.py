"""An all-to-all over an oversubscribed spine: the spine link's rate bounds the time on any fabric (an architect's
trial, 2026-12-07, found the flow fabric 32% under that bound, and its own over-run check saying so; mended the same
day).

rail-16gpu with one spine: 2 nodes of 8 GPUs, NIC r of each node on rail switch r, one 50 GB/s link from each rail
switch to the spine. NCCL's all-to-all of S bytes a GPU sends S/16 to every GPU; between the nodes, GPU r's 7
peers on other rails are reached through its rail switch's spine link (same-rail peers go across the rail switch
alone). So each rail switch's uplink carries the cross-rail traffic of its two NICs, 2 x 7 x S/16 = 14/16 S, in
network packets of 4,096 B + 78 B header: T >= 14/16 S x 4174/4096 / 50 GB/s (299.2 us at 16 MiB).
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import REPO

import eidola
from eidola.platform import FLOW_COUNTERPART
from eidola.profile import ProfileBuilder
from eidola.workload.nccl import System, append_call, build_collective

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


def test_the_flow_fabric_keeps_to_the_spine_bound(packet_ns):
    # Measured 313.03 us (-2.2%). Until 2026-12-07 204.12 us, 32% under the bound: a GPU's cross-rail writes share its
    # NIC with its same-rail one, which goes faster, and ended at their place in its output queue, reached with the
    # same-rail write's bytes, their own rest dropped from the spine (FlowFabric::held_further_on).
    flow = _time_ns("flow")
    assert flow >= BOUND_NS
    assert flow == pytest.approx(packet_ns, rel=0.05)  # the 5% for all-to-alls at 16 MiB and above


def _flow_64_gpus_ns(nbytes: int, apart: bool = True) -> float:
    """The flow fabric's 64-GPU all-to-all as perf runs it; `apart` False: each channel's sends and receives on one
    workgroup, as before 2026-12-07."""
    plat = eidola.load_platform(REPO / "platforms" / "rail-16gpu.yaml",
                                overrides={"gpus.count": 64, "fabric.model": "flow", **FLOW_COUNTERPART})
    prof, plan = build_collective(plat, "alltoall", nbytes)
    assert plan.algo == "p2p" and plan.split
    if not apart:
        together = dataclasses.replace(plan, split=False)
        b = ProfileBuilder(gpus=64, workgroups=together.workgroups, name="together")
        append_call(b, System.of(plat), "alltoall", nbytes, 64, together, "")
        prof = b.build()
    return eidola.simulate(plat, prof).kernel_time_ns


def _bound_64_gpus_ns(nbytes: int) -> float:
    # The shipped file at 64 GPUs: 8 nodes on the 8 rails, 4 spines, so each rail switch has 8 NICs (400 GB/s) under
    # 4 x 50 GB/s up: 2:1. A GPU's peers on other nodes and other rails, 7 x 7 = 49 of its 64, are reached over its
    # rail switch's uplinks (spread evenly over the spines): 8 x 49 x S/64 up per rail switch, in 4 KiB + 78 B packets.
    return 8 * 49 * nbytes / 64 * (4096 + 78) / 4096 / 200e9 * 1e9


def test_the_flow_fabric_keeps_to_the_spine_bound_at_64_gpus():
    # Measured 536.80 us against the bound's 523.59 (+2.5%); 333.49 us, 36% under it, before the mend.
    assert _flow_64_gpus_ns(16 << 20) >= _bound_64_gpus_ns(16 << 20)


def test_the_flow_fabric_keeps_to_the_spine_bound_at_64_gpus_and_64_mib():
    # Measured 2,108.02 us against the bound's 2,094.35 (+0.65%) since NCCL's all-to-all runs each channel's sends and
    # receives on workgroups of their own (2026-12-07, nccl.Plan.split). The packet fabric takes some 20 minutes
    # here, so the comparison is with the bound.
    assert _flow_64_gpus_ns(64 << 20) >= _bound_64_gpus_ns(64 << 20)


def test_the_flow_fabric_keeps_to_the_spine_bound_with_sends_and_receives_together():
    # Measured 2,117.37 us (+1.10%) since a write that a faster one of its output has outpaced goes on to its own
    # last byte (FlowFabric::mark_outpaced, 2026-12-07). Before, 2,074.54 us, 0.95% under the bound: such a write
    # reached its place in its output queue with its own bytes not all carried after the faster write had finished,
    # where held_further_on, which looked only at the writes still sending, let it end there, and its rest never
    # crossed the spine. Holding every such write to its own bytes gave 2,119.37 us, but took 24 of the flow test
    # files' comparisons with the packet fabric out of bounds.
    assert _flow_64_gpus_ns(64 << 20, apart=False) >= _bound_64_gpus_ns(64 << 20)
