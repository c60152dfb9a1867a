"""Issue 25's "cost per flow event flat from 8 to 1,024 GPUs within 2x", in C++ alone, lockstep and skewed.

Runs `build/cpp/eidola_flow_scale_driver` (bench/flow_scale_driver.cpp: bench/flow_fabric.py's scaling case
without Python; `bash scripts/test.sh` or `cmake --build build/cpp` builds it) at 8 and 1,024 GPUs, each for R
and 2R rounds, in two kinds of traffic:
- lockstep: every workgroup writes 64 KiB to each of 4 neighbours, signals and waits, all GPUs in step;
- skewed: each workgroup first computes a fixed pseudo-random 0-1 us, and writes 1 MiB, so flows start and end
  out of step and the solver's incremental path does the work.

Cost per event = the 2R run's extra CPU seconds over its extra events (building the platform is left out); the
ratio is against 8 GPUs in the same run. The cases run in turn, `--repeats` times, and each keeps its least
CPU time: the machine is shared and noisy, and the least is the run least disturbed.
`python bench/flow_scale.py` measures it and replaces its section of bench/RESULTS.md.

`--instructions` runs the same cases under valgrind's callgrind instead, with its cache simulation sized to this
machine's L2 (a last-level cache of that size), and reports instructions and simulated L2 misses per event: the
work per event apart from the memory hierarchy. Both are deterministic (the same binary gives the same counts,
however loaded the machine), and they tell a solver that does more per event at scale from one that does the same
work out of a cache it no longer fits. Takes about 20 minutes on this machine; replaces its own section.

`--curve` measures the lockstep cost per event at GPU counts between 8 and 1,024 (rounds scaled to keep the events
about equal), a median over `--repeats` passes that each run every size in turn: where between the two ends the
cost leaves the 8-GPU figure shows how large the state may grow before it stops fitting this machine's caches.
Takes about 10 seconds a repeat; replaces its own section.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from results_md import stamp, write_section  # bench/ is on sys.path when this file runs as a script

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "build" / "cpp" / "eidola_flow_scale_driver"
HEADING = "## Issue 25: cost per flow event from 8 to 1,024 GPUs, lockstep and skewed (bench/flow_scale.py)"
COUNTS_HEADING = ("## Issue 25: instructions and simulated L2 misses per flow event, 8 to 1,024 GPUs "
                  "(bench/flow_scale.py --instructions)")
CURVE_HEADING = "## Issue 25: cost per lockstep flow event against GPU count (bench/flow_scale.py --curve)"
CURVE_GPUS = [8, 128, 256, 384, 512, 768, 1024]
L2 = Path("/sys/devices/system/cpu/cpu0/cache/index2")
# (traffic, GPUs, R): the rounds keep the event count about equal at both sizes.
CASES = [("lockstep", 8, 512), ("lockstep", 1024, 4), ("skewed", 8, 256), ("skewed", 1024, 2)]
SKEW = ["1000", str(1 << 20)]  # the driver's SKEW_NS and BYTES for the skewed traffic


def _run(traffic: str, gpus: int, rounds: int, responses: str = "first") -> dict:
    """The driver's JSON line for one case (`responses`: its fabric.flow.responses, the default first)."""
    args = [str(DRIVER), str(gpus), str(rounds)] + (SKEW if traffic == "skewed" else ["0", str(64 << 10)]) + [responses]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def per_event_us(one: dict, two: dict) -> float:
    """CPU microseconds per event: the 2R run's extra CPU over its extra events (setup cancels out)."""
    return (two["cpu_seconds"] - one["cpu_seconds"]) / (two["events"] - one["events"]) * 1e6


def _l2() -> tuple[int, int, int]:
    """This machine's L2 (size, ways, line bytes), as callgrind's --LL takes it."""
    size = (L2 / "size").read_text().strip()
    scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
    return (int(size.rstrip("KM")) * scale, int((L2 / "ways_of_associativity").read_text()),
            int((L2 / "coherency_line_size").read_text()))


def _count(traffic: str, gpus: int, rounds: int, l2: tuple[int, int, int]) -> dict:
    """One run under callgrind: the driver's JSON line, with its instructions and simulated L2 (LL) misses."""
    args = ["valgrind", "--tool=callgrind", "--cache-sim=yes", f"--LL={l2[0]},{l2[1]},{l2[2]}",
            "--callgrind-out-file=/dev/null", str(DRIVER), str(gpus), str(rounds)] + (SKEW if traffic == "skewed" else [])
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    run = json.loads(done.stdout.strip().splitlines()[-1])

    def total(label: str) -> int:
        match = re.search(rf"{label}:\s+([\d,]+)", done.stderr)
        if not match:
            raise RuntimeError(f"callgrind printed no '{label}' line:\n{done.stderr}")
        return int(match.group(1).replace(",", ""))

    run["instructions"], run["l2_misses"] = total("I +refs"), total("LL misses")
    return run


def counts_section(l2: tuple[int, int, int]) -> list[str]:
    """Instructions and simulated L2 misses per event, as differences of the R and 2R runs (setup left out)."""
    lines = [COUNTS_HEADING, "",
             f"{stamp()}; valgrind callgrind with its last-level cache set to this machine's L2 "
             f"({l2[0] >> 10} KiB, {l2[1]}-way, {l2[2]}-byte lines). Per event: the 2R run's extra over the R run's, "
             "whole process (the driver's setup cancels out).", "",
             "| traffic | GPUs | events (R / 2R) | instructions per event | ratio | L2 misses per event | ratio |",
             "|---|---|---|---|---|---|---|"]
    base: dict[str, tuple[float, float]] = {}
    for traffic, gpus, rounds in CASES:
        one, two = (_count(traffic, gpus, r, l2) for r in (rounds, 2 * rounds))
        events = two["events"] - one["events"]
        ins = (two["instructions"] - one["instructions"]) / events
        miss = (two["l2_misses"] - one["l2_misses"]) / events
        base.setdefault(traffic, (ins, miss))
        lines.append(f"| {traffic} | {gpus:,} | {one['events']:,} / {two['events']:,} | {ins:,.0f} | "
                     f"**{ins / base[traffic][0]:.2f}x** | {miss:.2f} | {miss / base[traffic][1]:.1f}x |")
    return lines + ["", READING]


#: How to read the counts beside the wall-time section (the same words every run: no figures to go stale).
READING = ("How to read it: instructions per event are the work the solver, the models and the kernel do per event, "
           "whatever the cache; the misses are where that work's data comes from. Flat instructions beside a wall-time "
           "ratio above 1 (the section above) mean the solver does no more work per event at 1,024 GPUs and the extra "
           "time is the memory hierarchy: every round of this traffic touches every GPU's workgroups, flows, links and "
           "flags once, so at 1,024 GPUs what is touched between two visits to one GPU is far larger than the L2, and "
           "each event's few dozen cache lines come from L3 or memory. No single function holds the misses (the top "
           "one had under 4% in callgrind's per-function listing, 2026-12-02), so the gap is the size of the state, "
           "not a hot spot.")


def measure(repeats: int) -> dict[tuple[str, int, int], list[dict[str, Any]]]:
    """Every run of each (traffic, GPUs, rounds), for R and 2R, in the order they ran."""
    runs: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for _ in range(repeats):
        for traffic, gpus, rounds in CASES:
            for r in (rounds, 2 * rounds):
                runs.setdefault((traffic, gpus, r), []).append(_run(traffic, gpus, r))
    return runs


def least(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the least CPU time: the one the shared machine disturbed least."""
    return min(runs, key=lambda run: run["cpu_seconds"])


def paired_ratios(runs: dict[tuple[str, int, int], list[dict[str, Any]]], traffic: str) -> list[float]:
    """Per repeat, the 1,024-GPU cost per event over the 8-GPU one, each from that repeat's own R and 2R runs: a
    spell of load falls on the cases run close together, so a repeat's ratio is steadier than its parts."""
    (small, r_small), (large, r_large) = [(g, r) for t, g, r in CASES if t == traffic]
    return [per_event_us(a, b) / per_event_us(c, d)
            for a, b, c, d in zip(runs[(traffic, large, r_large)], runs[(traffic, large, 2 * r_large)],
                                  runs[(traffic, small, r_small)], runs[(traffic, small, 2 * r_small)])]


def section(runs: dict[tuple[str, int, int], list[dict[str, Any]]], repeats: int) -> list[str]:
    lines = [HEADING, "",
             f"{stamp()}; load average {os.getloadavg()[0]:.1f} at the end; the least CPU time of "
             f"{repeats} runs per case (cases in turn). CPU seconds of `Simulation::run` in the C++ driver; "
             "peak memory is the driver process's peak resident set (its op array included).", "",
             "| traffic | GPUs | rounds R / 2R | CPU s (R / 2R) | events (2R) | us per event | ratio to 8 GPUs | "
             "peak memory (R) |",
             "|---|---|---|---|---|---|---|---|"]
    base: dict[str, float] = {}
    best = {key: least(value) for key, value in runs.items()}
    for traffic, gpus, rounds in CASES:
        one, two = best[(traffic, gpus, rounds)], best[(traffic, gpus, 2 * rounds)]
        per_event = per_event_us(one, two)
        base.setdefault(traffic, per_event)
        lines.append(f"| {traffic} | {gpus:,} | {rounds} / {2 * rounds} | {one['cpu_seconds']:.3f} / "
                     f"{two['cpu_seconds']:.3f} | {two['events']:,} | {per_event:.3f} | "
                     f"**{per_event / base[traffic]:.2f}x** | {one['max_rss_kb'] / 1024:.1f} MiB |")
    lines += ["", "Target: within 2x. Kernel times (ns) of the 2R runs, for checking that a change moved no result: "
              + ", ".join(f"{t} {g:,} GPUs {best[(t, g, 2 * r)]['kernel_ns']:.3f}" for t, g, r in CASES) + "."]
    for traffic in dict.fromkeys(t for t, _, _ in CASES):
        ratios = sorted(paired_ratios(runs, traffic))
        lines.append(f"Paired, {traffic}: each repeat's 1,024-GPU cost per event over its own 8-GPU one, "
                     f"median **{statistics.median(ratios):.2f}x**, all {repeats}: "
                     + ", ".join(f"{x:.2f}x" for x in ratios) + ".")
    return lines


def curve_rounds(gpus: int) -> int:
    """R for `gpus` in the curve: events about equal at every size (8 GPUs x 512 rounds, as CASES)."""
    return max(4, 4096 // gpus)


def curve_section(repeats: int) -> list[str]:
    """The lockstep cost per event at each of CURVE_GPUS: the median of `repeats` passes, each over every size."""
    costs: dict[int, list[float]] = {g: [] for g in CURVE_GPUS}
    memory: dict[int, float] = {}
    for _ in range(repeats):
        for gpus in CURVE_GPUS:
            one, two = (_run("lockstep", gpus, r) for r in (curve_rounds(gpus), 2 * curve_rounds(gpus)))
            costs[gpus].append(per_event_us(one, two))
            memory[gpus] = one["max_rss_kb"] / 1024
    base = statistics.median(costs[CURVE_GPUS[0]])
    lines = [CURVE_HEADING, "",
             f"{stamp()}; load average {os.getloadavg()[0]:.1f} at the end; CPU microseconds per event of "
             f"`Simulation::run` (the 2R run's extra over the R run's), the median of {repeats} passes that each ran "
             "every size in turn. Lockstep traffic as in the section above.", "",
             "| GPUs | rounds R | us per event (median) | all passes | ratio to 8 GPUs | peak memory (R) |",
             "|---|---|---|---|---|---|"]
    for gpus in CURVE_GPUS:
        median = statistics.median(costs[gpus])
        lines.append(f"| {gpus:,} | {curve_rounds(gpus)} | {median:.3f} | "
                     + ", ".join(f"{x:.3f}" for x in costs[gpus])
                     + f" | **{median / base:.2f}x** | {memory[gpus]:.1f} MiB |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3, help="runs per case; the least CPU time is kept")
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions and simulated L2 misses per event under callgrind instead")
    parser.add_argument("--curve", action="store_true",
                        help="the lockstep cost per event at GPU counts from 8 to 1,024 instead")
    args = parser.parse_args()
    if not DRIVER.exists():
        print(f"{DRIVER} not built: run `cmake --build build/cpp` (or bash scripts/test.sh) first", file=sys.stderr)
        return 2
    if args.instructions:
        if not shutil.which("valgrind"):
            print("--instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
            return 2
        write_section(counts_section(_l2()))
        return 0
    if args.curve:
        write_section(curve_section(args.repeats))
        return 0
    write_section(section(measure(args.repeats), args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
