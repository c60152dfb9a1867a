"""Per protocol, the simulated ring all-reduce against the library's own cost model (issue 26's bumps).

The tuner (bridge/eidola/workload/nccl/tuner.py) ranks protocols by the library's model
T = latency + S / algbw (NCCL ``src/graph/tuning.cc`` of the calibration points' versions; RCCL's
``rcclTuningModel`` / ``tuning_model_5`` for 8 MI300X). Where the curves bump (GB200 at 4 MiB,
MI300X at 512 KiB-1 MiB) the question is whether the simulation's protocols relate to each other as
the library's model says they do. For each platform and protocol this forces ring, the protocol and
the library's full channel count (as the model assumes) and simulates three sizes, all on the packet
fabric (no switch of fabric inside a protocol):

- latency: the time at 1 KiB (launch included, as the library's base latency includes its start);
- latency per hop: (T(1 KiB on k GPUs) - T(1 KiB on k/2)) / (2(k-1) - 2(k/2-1)), the library's hwLat;
- bandwidth near the switch: (S_switch - 1 KiB) / (T(S_switch) - T(1 KiB)), as bus bandwidth;
- bandwidth above it: (32 S_switch - 8 S_switch) / (T(32 S_switch) - T(8 S_switch)), as bus bandwidth: where
  the per-step latencies are amortised, the protocol's throughput.

Nothing is fitted: every figure is two simulated times. Beside them the model's latency and bus
bandwidth, and each protocol's ratio to LL (latency) and to Simple (bandwidth). Then the "bump" as
each sees it: the chosen protocol's time at the switch size over the alpha-beta line through that
same model's (or simulation's) 1 KiB and largest calibration size.

Run: .venv/bin/python experiments/protocol_steps.py [platform ...]   (writes experiments/protocol_steps.csv)
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from eidola.run.perf import Fabrics, run_sizes
from eidola.workload.nccl.protocols import PROTOCOL_NAMES
from eidola.workload.nccl.system import System
from eidola.workload.nccl.tuner import HOP_LAT, choose, predict

ROOT = Path(__file__).resolve().parent.parent
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
OUT = ROOT / "experiments" / "protocol_steps.csv"


@dataclass(frozen=True)
class Case:
    """One platform: its GPU count, the size where the bump is, its largest calibration size."""

    platform: str
    gpus: int
    switch: int  # bytes: where the curve bumps
    largest: int  # bytes: the large calibration point's size


CASES = (Case("gb200-nvl4", 4, 4 * MiB, 8 * GiB), Case("mi300x-8gpu", 8, 512 * KiB, 16 * GiB))
SMALL = KiB


def bus_factor(k: int) -> float:
    """nccl-tests' all-reduce bus factor 2(k-1)/k."""
    return 2 * (k - 1) / k


@dataclass(frozen=True)
class Row:
    """One protocol of one platform: simulated and model figures."""

    platform: str
    proto: str
    sim_lat_us: float       # T(1 KiB)
    sim_hop_us: float       # per ring step, from k and k/2 GPUs at 1 KiB
    sim_bus_near: float     # GB/s, 1 KiB .. switch
    sim_bus_above: float    # GB/s, 8 x switch .. 32 x switch
    sim_switch_us: float    # T(switch)
    model_lat_us: float
    model_hop_us: float
    model_bus: float        # GB/s
    model_switch_us: float


def simulate(case: Case, proto: str, sizes: list[int], gpus: int = 0) -> list[float]:
    """Forced ring `proto` on the library's full channel count, packet fabric: time (us) per size (on `gpus`
    GPUs, default the case's)."""
    fabrics = Fabrics(str(ROOT / "platforms" / f"{case.platform}.yaml"), {}, "packet")
    channels = System.of(fabrics.base).channels
    rows = run_sizes(fabrics, "all_reduce", [(s, s // 4) for s in sizes], gpus or case.gpus, "ring", proto,
                      channels)
    return [r.time_us for r in rows]


def measure(case: Case) -> list[Row]:
    """Every protocol the platform enables, simulated and modelled."""
    fabrics = Fabrics(str(ROOT / "platforms" / f"{case.platform}.yaml"), {}, "packet")
    sys_ = System.of(fabrics.base)
    k, f = case.gpus, bus_factor(case.gpus)
    out = []
    for proto in sys_.protocols:
        t1, t2, t3, t4 = simulate(case, proto, [SMALL, case.switch, 8 * case.switch, 32 * case.switch])
        m = predict(sys_, "all_reduce", k, "ring", proto, sys_.channels)
        (half,) = simulate(case, proto, [SMALL], k // 2)
        hop = (t1 - half) / (2 * (k - 1) - 2 * (k // 2 - 1))
        lib_hop = HOP_LAT[sys_.link_type]["ring"][PROTOCOL_NAMES.index(proto)]
        out.append(Row(case.platform, proto, t1, hop, (case.switch - SMALL) / (t2 - t1) / 1e3 * f,
                       24 * case.switch / (t4 - t3) / 1e3 * f, t2, m.latency_us, lib_hop,
                       m.algbw_GBps * f,
                       m.time_us(case.switch)))
        print(f"  {case.platform} {proto}: {t1:.2f} {t2:.2f} {t3:.2f} {t4:.2f} us", flush=True)
    return out


def model_bump(case: Case) -> tuple[str, float, float]:
    """The library model's own bump: (its choice at the switch size, its time there, its alpha-beta line there)
    through its own times at 1 KiB and at the largest calibration size (ring, as the curves)."""
    fabrics = Fabrics(str(ROOT / "platforms" / f"{case.platform}.yaml"), {})
    sys_ = System.of(fabrics.base)

    def t(size: int) -> tuple[str, float]:
        _, proto, _ = choose(sys_, "all_reduce", size, case.gpus, "ring")
        return proto, predict(sys_, "all_reduce", case.gpus, "ring", proto, sys_.channels).time_us(size)

    (_, a), (_, b) = t(SMALL), t(case.largest)
    proto, at = t(case.switch)
    line = a + (b - a) * (case.switch - SMALL) / (case.largest - SMALL)
    return proto, at, line


def main(names: list[str]) -> None:
    """Simulate, print the comparison and write experiments/protocol_steps.csv."""
    rows: list[Row] = []
    for case in CASES:
        if names and case.platform not in names:
            continue
        print(f"{case.platform} ({case.gpus} GPUs, switch size {case.switch // KiB} KiB):", flush=True)
        got = measure(case)
        rows += got
        ll = next(r for r in got if r.proto == "LL")
        simple = next(r for r in got if r.proto == "Simple")
        print("| proto | sim T(1 KiB) us | model lat us | lat / LL sim | lat / LL model | sim hop us | model hop us | "
              "sim busbw near | sim busbw above | model busbw | bw / Simple sim (above) | bw / Simple model |")
        for r in got:
            print(f"| {r.proto} | {r.sim_lat_us:.2f} | {r.model_lat_us:.2f} | {r.sim_lat_us / ll.sim_lat_us:.2f} | "
                  f"{r.model_lat_us / ll.model_lat_us:.2f} | {r.sim_hop_us:.2f} | {r.model_hop_us:.2f} | "
                  f"{r.sim_bus_near:.1f} | {r.sim_bus_above:.1f} | "
                  f"{r.model_bus:.1f} | {r.sim_bus_above / simple.sim_bus_above:.3f} | "
                  f"{r.model_bus / simple.model_bus:.3f} |")
        proto, at, line = model_bump(case)
        print(f"model at {case.switch // KiB} KiB: {proto} {at:.2f} us against its own alpha-beta line {line:.2f} us "
              f"({at / line - 1:+.1%}); at the switch size per protocol, sim / model: "
              + ", ".join(f"{r.proto} {r.sim_switch_us:.2f} / {r.model_switch_us:.2f}" for r in got))
    with OUT.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["platform", "proto", "sim_lat_us", "sim_hop_us", "model_hop_us", "sim_busbw_near_GBps",
                    "sim_busbw_above_GBps", "sim_switch_us",
                    "model_lat_us", "model_busbw_GBps", "model_switch_us"])
        for r in rows:
            w.writerow([r.platform, r.proto, f"{r.sim_lat_us:.3f}", f"{r.sim_hop_us:.3f}", f"{r.model_hop_us:.2f}",
                        f"{r.sim_bus_near:.2f}", f"{r.sim_bus_above:.2f}",
                        f"{r.sim_switch_us:.3f}", f"{r.model_lat_us:.3f}", f"{r.model_bus:.2f}",
                        f"{r.model_switch_us:.3f}"])


if __name__ == "__main__":
    main(sys.argv[1:])
