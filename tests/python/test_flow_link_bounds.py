"""No link of the flow fabric, nor of the packet fabric, is busier than the run is long, on every shipped platform.

A link's busy time in the results is its wire bytes (payload, headers, acknowledgements: the per-link counts that
equal the packet fabric's) at its rate, worked out from the bytes alone; the kernel time is what the fluid's rates
made of the traffic. So busy time over the kernel time (the links table's utilization, and its busiest lane's) is
at most 1 for any traffic whatever the rates are, unless the fluid has carried bytes faster than a link allows or
ended transfers before their bytes crossed. That is the check: every shipped platform with a packet fabric, run
as flows (and per packet at a smaller size), NCCL's own collectives as `eidola perf` builds them.

It holds because every byte has crossed its links when the kernel ends: a workgroup's posted writes are all
acknowledged before it finishes (the release at the end of a kernel). So the run summary warns of it on any run
(run/fabric_notes.py); this test is what keeps the shipped platforms from it, and the test below checks that warning.

Why a test of its own: the flow fabric ends a queued write at its place in its GPU's output queue (flow_issue.cpp),
not at its flow's last byte, so a bookkeeping slip there runs a collective faster than its slowest link while
every rate the solver gave is within capacity. With `fabric.flow.injection: free` it did (custom-4gpu's NCCL
all-to-all at 2.6x its 32 GB/s link between the switches, fixed 2026-12-07), and no test compared a run with its
links' wire time.
"""

from __future__ import annotations

import dataclasses

import pytest

import eidola
from eidola.profile import ProfileBuilder
from eidola.run.fabric_notes import fabric_notes
from eidola.run.perf import Fabrics, build_collective
from eidola.run.simulate import simulate

PLATFORMS = ["switch-8gpu", "ring-8gpu", "custom-4gpu", "mesh2d-16gpu", "torus2d-16gpu", "hierarchical-16gpu",
             "rail-16gpu", "dgx-a100", "dgx-h100", "dgx-h200", "gb200-nvl4", "mi300x-8gpu", "dgx-h100-rail",
             "mi300x-rail"]
OPS = ["all_reduce", "all_gather", "alltoall", "scatter"]
SIZE = 8 << 20  # bytes, nccl-tests' size: several units per channel on every platform
SLACK = 1e-6    # rounding of the busy times' picoseconds


def _assert_no_link_busier(repo, platform: str, op: str, overrides: dict, fabric: str = "flow",
                           size: int = SIZE) -> None:
    """`op` on `platform` on `fabric`: no link's busy time, nor its busiest lane's, above the kernel time."""
    fabrics = Fabrics(str(repo / "platforms" / f"{platform}.yaml"), overrides, fabric)
    gpus = len(fabrics.base.gpus())
    profile, _ = build_collective(fabrics.base, op, size, gpus, "auto", "auto", 0, steady=True, root=0)
    links = simulate(fabrics.harnessed(fabric), profile).links
    worst = max(links, key=lambda row: max(row["utilization"], row["lane_utilization_max"]))
    utilization, lane = float(worst["utilization"]), float(worst["lane_utilization_max"])
    assert utilization <= 1 + SLACK and lane <= 1 + SLACK, \
        f"link {int(worst['src'])} -> {int(worst['dst'])}: utilization {utilization:.4f}, lane {lane:.4f}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_no_link_busier_than_the_run(repo, platform, op):
    _assert_no_link_busier(repo, platform, op, {})


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_no_link_busier_than_the_run_per_packet(repo, platform, op):
    # The same bound on the packet fabric, whose busy time is counted packet by packet on each lane: what a slip in
    # its lanes' bookkeeping would break (lanes through a switch once passed every derived test). At 1 MiB, where it
    # takes 0.1-1.4 s a case.
    _assert_no_link_busier(repo, platform, op, {}, "packet", 1 << 20)


@pytest.mark.parametrize("platform", ["custom-4gpu", "hierarchical-16gpu", "rail-16gpu", "torus2d-16gpu"])
def test_no_link_busier_than_the_run_without_head_of_line_blocking(repo, platform):
    # flow.injection: free, each write at its own rate: where the bug was (custom-4gpu read 2.55).
    _assert_no_link_busier(repo, platform, "alltoall", {"fabric.flow.injection": "free"})


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_the_summary_warns_of_a_link_busier_than_the_run(repo, model):
    # The premise first: a posted write that nothing waits for has still crossed its links when the kernel ends (its
    # workgroup's release at the end), so a link busy all along reads at most 1 and no warning. 16 MiB from GPU 0 to
    # GPU 1 on switch-8gpu: its uplink is busy for 65,536 packets of 272 wire bytes on 4 lanes of 100 GB/s, 44.56 us,
    # within the run.
    b = ProfileBuilder(gpus=8, workgroups=1, name="posted")
    b.buffer("data", nbytes=16 << 20)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=16 << 20)
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml", overrides={"fabric.model": model})
    result = simulate(plat, b.build())
    busy_ns = 65536 * 272 / (4 * 100e9) * 1e9
    uplink = (result.links["src"] == 0) & (result.links["dst"] == 8)
    assert float(result.links["busy_ns"][uplink][0]) / 4 == pytest.approx(busy_ns, rel=1e-3)
    assert busy_ns < result.kernel_time_ns
    assert not [n for n in fabric_notes(result) if n.startswith("warning")]
    # The same run's tables claiming half its time (each link's utilization twice what it was): the uplink, busy
    # 97% of the run, is now busier than it and named.
    links = result.links.copy()
    links["utilization"] *= 2
    links["lane_utilization_max"] *= 2
    halved = dataclasses.replace(result, kernel_time_ns=result.kernel_time_ns / 2, links=links)
    warnings = [n for n in fabric_notes(halved) if n.startswith("warning")]
    assert len(warnings) == 1 and "link 0 -> 8 " in warnings[0] and "fault of the fabric model" in warnings[0]
