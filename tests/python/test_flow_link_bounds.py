"""No link of the flow fabric is busier than the run is long, on every shipped platform.

A link's busy time in the results is its wire bytes (payload, headers, acknowledgements: the per-link counts that
equal the packet fabric's) at its rate, worked out from the bytes alone; the kernel time is what the fluid's rates
made of the traffic. So busy time over the kernel time (the links table's utilization, and its busiest lane's) is
at most 1 for any traffic whatever the rates are, unless the fluid has carried bytes faster than a link allows or
ended transfers before their bytes crossed. That is the check: every shipped platform with a packet fabric, run
as flows, NCCL's own collectives as `eidola perf` builds them.

It assumes every byte has landed when the kernel ends. NCCL's collectives wait on a flag behind every write, so
they meet it; a profile of posted writes that no one waits for would leave links busy after its last GPU finishes,
and its utilization could pass 1 with nothing wrong. That is why this is a test of the shipped collectives and not
a check `eidola perf` makes on any run.

Why a test of its own: the flow fabric ends a queued write at its place in its GPU's output queue (flow_issue.cpp),
not at its flow's last byte, so a bookkeeping slip there runs a collective faster than its slowest link while
every rate the solver gave is within capacity. With `fabric.flow.injection: free` it did (custom-4gpu's NCCL
all-to-all at 2.6x its 32 GB/s link between the switches, fixed 2026-12-07), and no test compared a run with its
links' wire time.
"""

from __future__ import annotations

import pytest

from eidola.run.perf import Fabrics, build_collective
from eidola.run.simulate import simulate

PLATFORMS = ["switch-8gpu", "ring-8gpu", "custom-4gpu", "mesh2d-16gpu", "torus2d-16gpu", "hierarchical-16gpu",
             "rail-16gpu", "dgx-a100", "dgx-h100", "dgx-h200", "gb200-nvl4", "mi300x-8gpu", "dgx-h100-rail",
             "mi300x-rail"]
OPS = ["all_reduce", "all_gather", "alltoall", "scatter"]
SIZE = 8 << 20  # bytes, nccl-tests' size: several units per channel on every platform
SLACK = 1e-6    # rounding of the busy times' picoseconds


def _assert_no_link_busier(repo, platform: str, op: str, overrides: dict) -> None:
    """`op` on `platform` as flows: no link's busy time, nor its busiest lane's, above the kernel time."""
    fabrics = Fabrics(str(repo / "platforms" / f"{platform}.yaml"), overrides, "flow")
    gpus = len(fabrics.base.gpus())
    profile, _ = build_collective(fabrics.base, op, SIZE, gpus, "auto", "auto", 0, steady=True, root=0)
    links = simulate(fabrics.harnessed("flow"), profile).links
    worst = max(links, key=lambda row: max(row["utilization"], row["lane_utilization_max"]))
    utilization, lane = float(worst["utilization"]), float(worst["lane_utilization_max"])
    assert utilization <= 1 + SLACK and lane <= 1 + SLACK, \
        f"link {int(worst['src'])} -> {int(worst['dst'])}: utilization {utilization:.4f}, lane {lane:.4f}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("platform", PLATFORMS)
def test_no_link_busier_than_the_run(repo, platform, op):
    _assert_no_link_busier(repo, platform, op, {})


@pytest.mark.parametrize("platform", ["custom-4gpu", "hierarchical-16gpu", "rail-16gpu", "torus2d-16gpu"])
def test_no_link_busier_than_the_run_without_head_of_line_blocking(repo, platform):
    # flow.injection: free, each write at its own rate: where the bug was (custom-4gpu read 2.55).
    _assert_no_link_busier(repo, platform, "alltoall", {"fabric.flow.injection": "free"})
