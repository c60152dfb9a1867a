"""mi300x-rail and dgx-h100-rail (docs/validation.md, "Many nodes") against their derivations.

mi300x-rail takes one parameter from its system's small calibration point (collectives.proxy_launch);
its 16 GiB point sets nothing and is checked by experiments/validation_multinode.py (a 16 GiB
simulation takes about a minute, too long for the suite). Here: the small point, the tuner's picks at
both points as tuning.cc's arithmetic gives them, and the rail platforms' node structure.
"""

import csv
from pathlib import Path

import pytest

from eidola.platform import load_platform
from eidola.run.perf import Fabrics, run_sizes
from eidola.workload.nccl import System, tuner

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "experiments" / "validation" / "calibration.csv"


def _point(size: int) -> float:
    with DATA.open() as f:
        (row,) = [r for r in csv.DictReader(f) if r["platform"] == "mi300x-rail" and int(r["size_bytes"]) == size]
    return float(row["time_us"])


def test_small_point_within_5_percent():
    fabrics = Fabrics(str(ROOT / "platforms" / "mi300x-rail.yaml"), {})
    (row,) = run_sizes(fabrics, "all_reduce", [(1024, 256)], 16)
    assert (row.plan.algo, row.plan.proto) == ("tree", "LL")
    assert row.time_us == pytest.approx(_point(1024), rel=0.05)


def test_tuner_picks_on_two_mi300x_nodes():
    # RCCL's own model across nodes (tuning_model_5), 2 nodes x 8: ring LL 12 + 26 x max(0.8, RCCL's 2 us net
    # overhead) + 2 x 2 x 9.5 = 102 us; tree LL 12 + 2 x (7 x 0.9 + 1 x 10.5) = 45.6 us: tree LL at 1 KiB. At 16 GiB
    # Simple: ring 7 x 64 GB/s x 16/30 = 239 GB/s (its correction 1.0 from 1 GiB) against the tree's 0.11 x 448 / 2 =
    # 24.6 (x 0.8 past 2 GiB): ring.
    sys = System.of(load_platform(str(ROOT / "platforms" / "mi300x-rail.yaml")))
    assert (sys.gpus_per_node, sys.nics_per_node, sys.nic_bw) == (8, 8, 8 * 50e9)
    assert tuner.predict(sys, "all_reduce", 16, "ring", "LL", 16).latency_us == pytest.approx(102.0)
    assert tuner.predict(sys, "all_reduce", 16, "tree", "LL", 16).latency_us == pytest.approx(45.6)
    assert tuner.predict(sys, "all_reduce", 16, "ring", "Simple", 16).algbw_GBps == pytest.approx(448 * 16 / 30)
    assert tuner.predict(sys, "all_reduce", 16, "tree", "Simple", 16).algbw_GBps == pytest.approx(0.11 * 448 / 2)
    assert tuner.choose(sys, "all_reduce", 1024, 16)[:2] == ("tree", "LL")
    assert tuner.choose(sys, "all_reduce", 16 << 30, 16) == ("ring", "Simple", 16)


@pytest.mark.parametrize("name, gpus, nodes", [("mi300x-rail", 64, 8), ("dgx-h100-rail", 32, 4)])
def test_node_count_follows_gpu_count(name, gpus, nodes):
    sys = System.of(load_platform(str(ROOT / "platforms" / f"{name}.yaml"), {"gpus.count": gpus}))
    assert sys.nodes(gpus) == nodes and sys.gpus_per_node == 8
    for ring in sys.rings(gpus, 8):  # every crossing on one rail
        crossings = [(a, b) for a, b in zip(ring, ring[1:] + ring[:1]) if a // 8 != b // 8]
        assert len(crossings) == nodes and all(a % 8 == b % 8 for a, b in crossings)
