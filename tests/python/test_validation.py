"""The real-node platforms against their calibration points (experiments/validation/calibration.csv).

Each platform is set from datasheets, links.csv, library constants and at most its system's two
calibration points (docs/validation.md): one parameter from the small point (gpus.launch, the
fixed cost of a call on the GPU: kernel launch and the library's start) and, on the NVIDIA systems, one
from the large point (the per-packet overhead of NCCL's SM-issued NVLink writes). These tests
check that the same parameters reproduce both points within 5%, and that the parameters mean
what the platform files say they mean, each against its own derivation:

- the bandwidth plateau of a large ring all-reduce is the wire's payload share of the GPU's link
  bandwidth, lanes x rate x 256 / (256 + header + ack): the acknowledgements of the data a GPU
  receives share its port with the data it sends;
- one LL step costs NCCL's (RCCL's) per-hop LL latency, 0.6 us on NVLink (0.8 us on xGMI): the
  difference between a 1 KiB all-reduce on 8 and on 4 GPUs is 2(8-1) - 2(4-1) = 8 steps;
- dgx-h100 is dgx-h200's link, switch and launch with H100's memory: the same small-message kernel;
- a call costs max(host cost, launch + kernel) (harness.host_floor): the platforms give the small
  point's time to the GPU (no host cost), and a host cost binds only above the GPU's time.
"""

import csv
from pathlib import Path

import pytest

from eidola.platform import load_platform
from eidola.run.perf import Fabrics, run_sizes

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "experiments" / "validation" / "calibration.csv"
SINGLE_NODE = ("dgx-a100", "dgx-h200", "gb200-nvl4", "mi300x-8gpu")


def _points():
    with DATA.open() as f:
        rows = list(csv.DictReader(f))
    # the NVLS row has its own test (below); mi300x-rail is two nodes
    return [r for r in rows if r["platform"] in SINGLE_NODE and r["algorithm"] != "NVLS"]


NO_HOST = {"collectives.host_call": "0us"}  # the kernel's own time (plus the launch gap): no host to wait for


def _time_us(platform: str, size: int, gpus: int, algo: str = "auto", overrides=None) -> float:
    fabrics = Fabrics(str(ROOT / "platforms" / f"{platform}.yaml"), overrides or {})
    (row,) = run_sizes(fabrics, "all_reduce", [(size, size // 4)], gpus, algo)
    return row.time_us


def test_every_single_node_system_has_its_two_points():
    points = _points()
    assert sorted({r["platform"] for r in points}) == sorted(SINGLE_NODE)
    assert len(points) == 2 * len(SINGLE_NODE)


@pytest.mark.parametrize("point", _points(), ids=lambda r: f"{r['platform']}-{r['size_bytes']}")
def test_calibration_point_within_5_percent(point):
    # the row's algorithm where it was forced (H200 16 GiB: NVLS off, ring; GB200: ring)
    algo = "ring" if "ring" in point["algorithm"] and "default" not in point["algorithm"] else "auto"
    size, measured = int(point["size_bytes"]), float(point["time_us"])
    simulated = _time_us(point["platform"], size, int(point["gpus"]), algo)
    assert simulated == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("platform, lanes, rate", [("dgx-h200", 18, 25.0), ("dgx-a100", 12, 25.0)])
def test_plateau_is_the_wires_payload_share(platform, lanes, rate):
    link = load_platform(ROOT / "platforms" / f"{platform}.yaml").shorthand["fabric"]["link"]
    header, ack = (int(str(link[k]).removesuffix("B")) for k in ("header", "ack"))
    wire = lanes * rate * 256 / (256 + header + ack)  # GB/s a GPU sends while it receives as much
    size = 1 << 30
    t = _time_us(platform, size, 8, "ring")
    busbw = size / t / 1e3 * 2 * 7 / 8
    # a 1 GiB ring runs 2(k-1) = 14 steps of pipeline fill and each channel's last slices: under 2% below
    assert wire * 0.98 <= busbw <= wire * 1.001


@pytest.mark.parametrize("platform, hop_us", [("dgx-h200", 0.6), ("dgx-a100", 0.6), ("mi300x-8gpu", 0.8)])
def test_one_ll_step_costs_the_librarys_per_hop_latency(platform, hop_us):
    steps = 2 * (8 - 1) - 2 * (4 - 1)
    per_step = (_time_us(platform, 1024, 8, overrides=NO_HOST) - _time_us(platform, 1024, 4, overrides=NO_HOST)) / steps
    assert per_step == pytest.approx(hop_us, rel=0.03)


def test_h100_is_h200s_link_and_launch():
    assert _time_us("dgx-h100", 1024, 8, overrides=NO_HOST) == pytest.approx(
        _time_us("dgx-h200", 1024, 8, overrides=NO_HOST), rel=0.01)


@pytest.mark.parametrize("platform, gpus", [("dgx-a100", 8), ("dgx-h200", 8), ("gb200-nvl4", 4), ("mi300x-8gpu", 8)])
def test_the_small_point_is_gpu_bound_and_a_host_cost_binds_only_above_it(platform, gpus):
    # The platforms put the small point's time on the GPU (gpus.launch + kernel) and no host cost per call
    # (collectives.host_call 0): a call of nccl-tests' back-to-back loop costs max(host, launch + kernel)
    # (harness.host_floor), so a host cost below the GPU's time changes nothing and one above it is the time.
    gpu = _time_us(platform, 1024, gpus)
    assert _time_us(platform, 1024, gpus, overrides={"collectives.host_call": f"{gpu / 2}us"}) == \
        pytest.approx(gpu, abs=1e-3)
    assert _time_us(platform, 1024, gpus, overrides={"collectives.host_call": f"{gpu * 2}us"}) == \
        pytest.approx(gpu * 2, abs=1e-3)


def test_h200_nvls_point_within_5_percent():
    # dgx-h200's one NVLS figure, the switch's reduction bandwidth R, is set from this point (the
    # platform file derives it): 8 GPUs' 16 GiB summed in 62,634.94 us. From 512 MiB on, each GPU and
    # channel walks 64 or more chunks, the switch's reduction binds, and every further byte costs k / R:
    # the time is a + 8 S / R. So the 16 GiB time is T(1 GiB) + 30 (T(1 GiB) - T(512 MiB)), which
    # checks `eidola perf ... -b 16G -e 16G --algo nvls` (62,537 us, docs/validation.md) in two short
    # runs instead of a 16 GiB one (a minute or more on the flow fabric).
    with DATA.open() as f:
        (point,) = [r for r in csv.DictReader(f) if r["platform"] == "dgx-h200" and r["algorithm"] == "NVLS"]
    size, measured = int(point["size_bytes"]), float(point["time_us"])
    nvls = load_platform(ROOT / "platforms" / "dgx-h200.yaml").shorthand["fabric"]["switch"]["nvls"]
    reduce_bw = float(str(nvls["reduce_bandwidth"]).removesuffix("TB/s")) * 1e12  # B/s
    assert size * 8 / reduce_bw * 1e6 == pytest.approx(measured, rel=0.01)  # the derivation the file gives
    half, one = (_time_us("dgx-h200", n, 8, "nvls") for n in (1 << 29, 1 << 30))
    assert one - half == pytest.approx(8 * (1 << 29) / reduce_bw * 1e6, rel=0.02)  # the switch's work binds
    assert one + (size // (1 << 29) - 2) * (one - half) == pytest.approx(measured, rel=0.05)


def test_nvls_off_is_the_ring_curve():
    # reduce_bandwidth 0 is NCCL_NVLS_ENABLE=0: at 16 MiB the tuner then picks what it picks without
    # NVLS, and with NVLS on it picks NVLS (from about 0.8 MB on 8 GPUs, docs/collectives.md).
    fabrics_off = Fabrics(str(ROOT / "platforms" / "dgx-h200.yaml"), {"fabric.switch.nvls.reduce_bandwidth": "0GB/s"})
    fabrics_on = Fabrics(str(ROOT / "platforms" / "dgx-h200.yaml"), {})
    size = 16 << 20
    (off,) = run_sizes(fabrics_off, "all_reduce", [(size, size // 4)], 8, "auto")
    (on,) = run_sizes(fabrics_on, "all_reduce", [(size, size // 4)], 8, "auto")
    assert off.plan.algo != "nvls" and on.plan.algo == "nvls"
