"""Latency-load sweep benchmark: a 10-point `netsweep` on the 4 x 4 mesh (target: under 10 s).

Baseline, measured in the same run: one point of the same traffic built the old way, one workgroup
per packet (a compute delay to its Bernoulli creation time, then the write) with ProfileBuilder,
built and simulated. bench/run.py includes this section in bench/RESULTS.md;
`python bench/netsweep_bench.py` measures it alone and replaces the section there.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from results_md import write_section  # bench/ is on sys.path when this file runs as a script

import eidola
from eidola.generators import synthetic
from eidola.run.netsweep import netsweep

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MESH = ROOT / "platforms" / "mesh2d-16gpu.yaml"
HEADING = "## Latency-load sweep (synthetic traffic)"
RATES = [round(0.02 * i, 2) for i in range(1, 11)]   # 0.02 .. 0.20 packets per GPU per ns
TRAFFIC = {"pattern": "uniform", "packet": 256, "duration": "10us", "warmup": "2us"}


def _workgroup_per_packet(rate: float, gpus: int, horizon_ns: float, seed: int = 1) -> eidola.Profile:
    """The same uniform Bernoulli traffic as a profile: one workgroup per packet (the pre-generator way)."""
    rng = random.Random(seed)
    times = {g: [c for c in range(int(horizon_ns)) if rng.random() < rate] for g in range(gpus)}
    b = eidola.ProfileBuilder(gpus=gpus, workgroups=max(len(t) for t in times.values()), name="wg-per-packet")
    b.buffer("data", nbytes=4096)
    for g, created in times.items():
        for w, t in enumerate(created):
            dst = rng.randrange(gpus - 1)
            b.program(gpu=g, wg=w).compute(ns=t).write(dst=dst + (dst >= g), buffer="data", offset=0, nbytes=256)
    return b.build()


def netsweep_section() -> list[str]:
    """Measures and returns the section's Markdown lines."""
    plat = eidola.load_platform(MESH)
    eidola.simulate(plat, synthetic(gpus=16, rate=0.01, duration="1us"))  # loads the models; not measured
    start = time.perf_counter()
    rows = netsweep(plat, RATES, **TRAFFIC)
    sweep_s = time.perf_counter() - start
    base_rate = 0.08
    start = time.perf_counter()
    prof = _workgroup_per_packet(base_rate, 16, 12_000)
    built = time.perf_counter()
    wide = eidola.load_platform(MESH, overrides={"gpus.workgroups": prof.workgroups})
    eidola.simulate(wide, prof)
    base_s = time.perf_counter() - start
    point = next(r for r in rows if r["rate"] == base_rate)
    sat = max(r["accepted"] for r in rows)
    return [HEADING, "",
            "`eidola netsweep platforms/mesh2d-16gpu.yaml --rates 0.02:0.2:0.02` (uniform, 256 B writes, 10 us "
            "measured after 2 us), run as `eidola.run.netsweep.netsweep` in one process.", "",
            "| what | wall s | figure |", "|---|---|---|",
            f"| baseline: one point (0.08/ns) as one workgroup per packet ({prof.workgroups} workgroups x 16 GPUs): "
            f"build {built - start:.2f} s + simulate | {base_s:.2f} | 1.0x |",
            f"| the same point from the C++ generator | {point['wall_s']:.2f} | "
            f"**{base_s / point['wall_s']:.0f}x** faster |",
            f"| 10-point sweep, 0.02-0.20 (target < 10 s) | {sweep_s:.2f} | **{sweep_s / 10:.2f} s a point** |",
            "",
            f"Highest accepted load in the sweep: {sat:.3f} packets per GPU per ns (saturation: latency rises from "
            f"{rows[0]['latency_mean_ns']:.0f} ns to {rows[-1]['latency_mean_ns']:.0f} ns).", ""]


def main() -> int:
    write_section(netsweep_section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
