"""The protocol switches of the real-node curves against the libraries' own cost models (docs/validation.md,
"Where the curves are not smooth, and why"; experiments/protocol_steps.py).

The tuner ranks protocols by the library's model T = latency + S / algbw; the simulation times the one it
picks. Every expected figure here is worked out by hand from the libraries' constants (NCCL 2.25.1
``src/graph/tuning.cc`` for GB200; RCCL's ``tuning_model_5`` for 8 MI300X) and the calibration points:

- the models' per-protocol latency and bus bandwidth, and each model's own bump: its chosen protocol's time
  at the switch size over the alpha-beta line through its own times at 1 KiB and at the large point;
- the simulation where it agrees with the model: RCCL's Simple / LL latency ratio at zero size, and NCCL's
  ring LL time at 4 MiB on 4 GB200s;
- the simulated bump over the calibration points' alpha-beta line is smaller than the model's own.
"""

import csv
from pathlib import Path

import pytest

from eidola.platform import load_platform
from eidola.run.perf import Fabrics, run_sizes
from eidola.workload.nccl.system import System
from eidola.workload.nccl.tuner import choose, predict

ROOT = Path(__file__).resolve().parents[2]
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def _sys(platform: str) -> System:
    return System.of(load_platform(ROOT / "platforms" / f"{platform}.yaml"))


def _sim(platform: str, size: int, gpus: int, proto: str = "auto") -> float:
    fabrics = Fabrics(str(ROOT / "platforms" / f"{platform}.yaml"), {}, "packet")
    (row,) = run_sizes(fabrics, "all_reduce", [(size, size // 4)], gpus, "ring", proto)
    return row.time_us


def _points(platform: str) -> list[tuple[int, float]]:
    with (ROOT / "experiments" / "validation" / "calibration.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["platform"] == platform and r["algorithm"] != "NVLS"]
    return sorted((int(r["size_bytes"]), float(r["time_us"])) for r in rows)


def _line(points: list[tuple[int, float]], size: int) -> float:
    (s1, t1), (s2, t2) = points
    return t1 + (t2 - t1) * (size - s1) / (s2 - s1)


# GB200 x4, NCCL 2.25.1 ring all-reduce, 2(k-1) = 6 steps, 32 channels of 900 / 32 GB/s (18 x 50 GB/s a GPU):
# latency baseLat + 6 hwLat (NVLink ring LL 6.6 + 6 x 0.6, LL128 14 + 6 x 1.9, Simple 8.4 + 6 x 3.4);
# bus bandwidth LL min(llMaxBw 282, 900 / 2), LL128 min(0.92 x 900, 32 x 73.4), Simple 900.
GB200 = {"LL": (10.2, 282.0), "LL128": (25.4, 828.0), "Simple": (28.8, 900.0)}
# MI300X x8, RCCL tuning_model_5, 14 steps over xGMI, 448 GB/s a GPU (7 x 64): LL 12 + 14 x 0.8 at 0.08 x 448,
# Simple 17 + 14 x 2.1 at 448.
MI300X = {"LL": (23.2, 0.08 * 448), "Simple": (46.4, 448.0)}


@pytest.mark.parametrize("platform, k, expected", [("gb200-nvl4", 4, GB200), ("mi300x-8gpu", 8, MI300X)])
def test_the_models_per_protocol_figures(platform, k, expected):
    sys_ = _sys(platform)
    for proto, (lat, bus) in expected.items():
        m = predict(sys_, "all_reduce", k, "ring", proto, sys_.channels)
        assert m.latency_us == pytest.approx(lat, rel=1e-6)
        assert m.algbw_GBps * 2 * (k - 1) / k == pytest.approx(bus, rel=1e-6)


@pytest.mark.parametrize("platform, k, size, largest, proto, at_switch, line", [
    # GB200 4 MiB: LL 10.2 + 4 MiB / (282 x 4/6 GB/s) = 32.51 us (LL128 25.4 + 4 MiB / 552 = 33.00 loses);
    # the line through LL at 1 KiB (10.2 + 1024 / 188 GB/s) and Simple at 8 GiB (28.8 + 8 GiB / 600 GB/s)
    ("gb200-nvl4", 4, 4 * MiB, 8 * GiB, "LL", 10.2 + 4 * MiB / 188e3,
     (10.2 + KiB / 188e3) + (28.8 + 8 * GiB / 600e3 - 10.2 - KiB / 188e3) * (4 * MiB - KiB) / (8 * GiB - KiB)),
    # MI300X 512 KiB: Simple 46.4 + 512 KiB / 256 GB/s = 48.45 us (LL 23.2 + 512 KiB / 20.48 GB/s = 48.80 loses);
    # the line through LL at 1 KiB and Simple at 16 GiB (46.4 + 16 GiB / 256 GB/s)
    ("mi300x-8gpu", 8, 512 * KiB, 16 * GiB, "Simple", 46.4 + 512 * KiB / 256e3,
     (23.2 + KiB / 20.48e3) + (46.4 + 16 * GiB / 256e3 - 23.2 - KiB / 20.48e3) * (512 * KiB - KiB) / (16 * GiB - KiB)),
])
def test_each_models_own_curve_bumps_at_its_switch(platform, k, size, largest, proto, at_switch, line):
    sys_ = _sys(platform)
    _, chosen, _ = choose(sys_, "all_reduce", size, k, "ring")
    assert chosen == proto
    assert predict(sys_, "all_reduce", k, "ring", proto, sys_.channels).time_us(size) == pytest.approx(at_switch, 1e-6)
    # GB200 +89%, MI300X +91.5% over the model's own line: the library's curve has the bump itself
    assert at_switch / line - 1 == pytest.approx({"gb200-nvl4": 0.890, "mi300x-8gpu": 0.915}[platform], abs=0.002)


def test_mi300x_simple_over_ll_at_zero_size_is_rccls_ratio():
    # RCCL's model: (17 + 14 x 2.1) / (12 + 14 x 0.8) = 46.4 / 23.2 = 2.0 at zero size; the simulation's 1 KiB
    # calls (launch included, as the model's base latency includes the library's start) give the same ratio
    ratio = _sim("mi300x-8gpu", KiB, 8, "Simple") / _sim("mi300x-8gpu", KiB, 8, "LL")
    assert ratio == pytest.approx(46.4 / 23.2, rel=0.05)


def test_gb200_ll_at_4_mib_is_nccls_model():
    # the tuner keeps LL at 4 MiB on 4 GB200s; its time, simulated, is NCCL's model's for LL within 3%:
    # 10.2 us + 4 MiB / (282 x 4/6 GB/s) = 32.51 us
    assert _sim("gb200-nvl4", 4 * MiB, 4) == pytest.approx(10.2 + 4 * MiB / 188e3, rel=0.03)


@pytest.mark.parametrize("platform, k, size, model_bump", [("gb200-nvl4", 4, 4 * MiB, 0.890),
                                                           ("mi300x-8gpu", 8, 512 * KiB, 0.915)])
def test_the_simulated_bump_is_smaller_than_the_models_own(platform, k, size, model_bump):
    # the simulated curve (the tuner's pick) over the alpha-beta line through the two calibration points
    bump = _sim(platform, size, k) / _line(_points(platform), size) - 1
    assert 0.2 < bump < model_bump


@pytest.mark.parametrize("library, proto, data_per_step", [
    # NCCL: LL 8 lines x 512 threads of 8 B data; LL128 120 elements x 640 threads x 8 B of 128-byte lines, 120 B data each
    ("nccl", "LL", 8 * 512 * 8), ("nccl", "LL128", 120 * 640 * 8 // 128 * 120),
    # RCCL (device.h): 256 threads; LL 8 lines each; LL128 28 elements each, of 64-byte lines with 56 B data
    ("rccl", "LL", 8 * 256 * 8), ("rccl", "LL128", 28 * 256 * 8 // 64 * 56),
])
def test_fifo_steps_are_the_librarys(library, proto, data_per_step):
    from eidola.workload.nccl.protocols import NCCL_STEPS, protocol

    p = protocol(proto, library)
    assert p.step_data == data_per_step
    assert p.buffer == NCCL_STEPS * p.step_wire
    assert {("nccl", "LL"): 32 * KiB, ("rccl", "LL"): 16 * KiB, ("nccl", "LL128"): 576_000,
            ("rccl", "LL128"): 50_176}[library, proto] == data_per_step
