"""What `fabric.flow.responses: first` costs against `fair`: the solver's extra fills, per event and per run.

Served first, a write's acknowledgements take their load at their flow's rate, which the fill is finding: the
solver fills again with the rates it found until they settle (tlm_models/src/flow_solver.cpp, settle()). This
measures what that costs, in the same run, as ratios first / fair:
- CPU per event of bench/flow_scale.py's C++ driver (lockstep and skewed traffic, 8 and 1,024 GPUs; per event:
  the 2R run's extra CPU over its extra events, the least of `--repeats` runs, the settings alternating);
- wall time and events of issue 25's two large flow runs (16 GiB ring all-reduce on switch-8gpu, 1 GiB direct
  all-reduce on hierarchical-16gpu), with their kernel times, which the two settings may set apart.

Run: .venv/bin/python bench/flow_responses.py [--repeats N]; replaces its section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from flow_scale import CASES, DRIVER, _run, per_event_us  # bench/ is on sys.path when this file runs as a script
from results_md import stamp, write_section

import eidola
from eidola.generators import direct_allreduce, ring_allreduce

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Issue 25: flow.responses first against fair, the solver's cost (bench/flow_responses.py)"
SETTINGS = ("fair", "first")


def _per_event(repeats: int) -> dict[tuple[str, int, str], tuple[float, int, float]]:
    """(traffic, GPUs, responses) -> (us of CPU per event, events of the 2R run, kernel ns of the 2R run)."""
    best: dict[tuple[str, int, int, str], dict] = {}
    for _ in range(repeats):
        for traffic, gpus, rounds in CASES:
            for r in (rounds, 2 * rounds):
                for responses in SETTINGS:
                    run = _run(traffic, gpus, r, responses)
                    key = (traffic, gpus, r, responses)
                    if key not in best or run["cpu_seconds"] < best[key]["cpu_seconds"]:
                        best[key] = run
    out = {}
    for traffic, gpus, rounds in CASES:
        for responses in SETTINGS:
            one, two = best[(traffic, gpus, rounds, responses)], best[(traffic, gpus, 2 * rounds, responses)]
            out[(traffic, gpus, responses)] = (per_event_us(one, two), two["events"], two["kernel_ns"])
    return out


def _large(responses: str, platform: str, profile) -> tuple[float, int, float]:
    """(wall s, events, kernel ns) of one flow run."""
    plat = eidola.load_platform(ROOT / "platforms" / platform, overrides={
        "fabric.model": "flow", "fabric.stats.bin": "100us", "fabric.flow.responses": responses})
    start = time.perf_counter()
    res = eidola.simulate(plat, profile)
    return time.perf_counter() - start, res.events, res.kernel_time_ns


def section(repeats: int) -> list[str]:
    lines = [HEADING, "", f"{stamp()}; load average {os.getloadavg()[0]:.1f} at the end. The ratios are "
             "the figures (both settings measured in this run); the absolute times stand beside them.", "",
             "| traffic | GPUs | fair: us per event | first: us per event | first / fair | events (2R), fair / first | "
             "kernel ns (2R), fair / first |", "|---|---|---|---|---|---|---|"]
    costs = _per_event(repeats)
    for traffic, gpus, _ in CASES:
        (uf, ef, kf), (us, es, ks) = costs[(traffic, gpus, "fair")], costs[(traffic, gpus, "first")]
        lines.append(f"| {traffic} | {gpus:,} | {uf:.3f} | {us:.3f} | **{us / uf:.2f}x** | {ef:,} / {es:,} | "
                     f"{kf:,.3f} / {ks:,.3f} |")
    lines += ["", "| flow run | fair: wall s | first: wall s | first / fair | events, fair / first | "
              "kernel time, fair / first |", "|---|---|---|---|---|---|"]
    big = [("16 GiB ring all-reduce, switch-8gpu", "switch-8gpu.yaml", ring_allreduce(8, 16 << 30, workgroups=32,
                                                                                        mode="syncmon")),
           ("1 GiB direct all-reduce, hierarchical-16gpu", "hierarchical-16gpu.yaml",
            direct_allreduce(16, 1 << 30, workgroups=32, mode="syncmon"))]
    for name, platform, profile in big:
        runs = {r: min((_large(r, platform, profile) for _ in range(repeats)), key=lambda t: t[0]) for r in SETTINGS}
        (wf, ef, kf), (ws, es, ks) = runs["fair"], runs["first"]
        lines.append(f"| {name} | {wf:.2f} | {ws:.2f} | **{ws / wf:.2f}x** | {ef:,} / {es:,} | "
                     f"{kf / 1e3:,.2f} / {ks / 1e3:,.2f} us |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2, help="runs per case; the least CPU or wall time is kept")
    args = parser.parse_args()
    if not DRIVER.exists():
        print(f"{DRIVER} not built: run `cmake --build build/cpp` (or bash scripts/test.sh) first", file=sys.stderr)
        return 2
    write_section(section(args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
