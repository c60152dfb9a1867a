"""The flow fabric against the packet fabric: the same all-reduce, the same platform file.

Each row runs one all-reduce on one platform twice in this run, with `fabric.model: packet` and
`fabric.model: flow`, and reports how much faster the flow fabric simulates it (wall time ratio)
and how far its kernel time is from the packet fabric's (the packet fabric is the reference).
Then the issue's speed targets, flow fabric only (per packet they take minutes):
a 16 GiB ring all-reduce on switch-8gpu.yaml and a 1 GiB direct all-reduce on
hierarchical-16gpu.yaml. Profiles wait with SyncMon (polling waits cost events of their own,
whatever the fabric); `stats.bin` is 100 us for the large runs (1 us bins over hundreds of
milliseconds are millions of result rows, which cost more than the simulation).

Run: .venv/bin/python bench/flow_fabric.py [--quick]
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path
from typing import Any

import eidola
from eidola.generators import all_gather, direct_allreduce, ring_allreduce
from eidola.platform import FLOW_COUNTERPART
from eidola.profile import ProfileBuilder

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
WORKGROUPS = 32


def _run(platform: str, overrides: dict[str, Any], profile: Any) -> tuple[float, float, int]:
    """(wall s of eidola.simulate, kernel ns, events)."""
    plat = eidola.load_platform(ROOT / "platforms" / platform, overrides=overrides)
    start = time.perf_counter()
    result = eidola.simulate(plat, profile)
    return time.perf_counter() - start, result.kernel_time_ns, result.events


def flow_fabric_section(quick: bool = False) -> list[str]:
    """Measures and returns the section's Markdown lines."""
    _run("mi300x-8gpu.yaml", {"fabric.model": "flow"}, direct_allreduce(gpus=8, nbytes=MIB))  # warm up
    mib = 4 if quick else 16
    cases = [("ring", "mi300x-8gpu.yaml", {}, 8), ("direct", "mi300x-8gpu.yaml", {}, 8),
             ("ring", "switch-8gpu.yaml", {}, 8), ("direct", "switch-8gpu.yaml", {}, 8),
             ("direct", "hierarchical-16gpu.yaml", {}, 16)]
    rows = ["## Flow fabric against the packet fabric", "",
            f"All-reduce of {mib} MiB per GPU, {WORKGROUPS} workgroups per GPU, SyncMon waits; each row runs the "
            "packet fabric and the flow fabric in this run (`fabric.model` switched, nothing else), "
            "on the platform files as shipped (switch-8gpu: 4 lanes a link, a queue per output), the flow fabric with "
            "the GPU's issue gates and acknowledgements served first (the defaults; mi300x-8gpu sets queue and fair).",
            "", "| all-reduce | platform | packet: wall s | flow: wall s | faster | kernel time, packet | flow | "
            "difference | events, packet | flow |", "|---|---|---|---|---|---|---|---|---|---|"]
    for algorithm, platform, overrides, gpus in cases:
        generator = ring_allreduce if algorithm == "ring" else direct_allreduce
        profile = generator(gpus, mib * MIB, workgroups=WORKGROUPS, mode="syncmon")
        wp, kp, ep = _run(platform, {**overrides, "fabric.model": "packet"}, profile)
        # the packet fabric's counterpart (tests/python/test_flow_validation.py), also where the platform sets queue
        # and fair for its calibration (mi300x-8gpu)
        wf, kf, ef = _run(platform, {**FLOW_COUNTERPART, **overrides, "fabric.model": "flow"}, profile)
        rows.append(f"| {algorithm} | {platform} | {wp:.2f} | {wf:.3f} | **{wp / wf:.0f}x** | {kp / 1e3:.1f} us | "
                    f"{kf / 1e3:.1f} us | {kf / kp - 1:+.2%} | {ep:,} | {ef:,} |")
    big = [("ring", "switch-8gpu.yaml", 8, (1 if quick else 16) << 30, 10.0),
           ("direct", "hierarchical-16gpu.yaml", 16, (64 << 20) if quick else (1 << 30), 5.0)]
    rows += ["", "| flow fabric only | platform | message | wall s | target | kernel time | events |",
             "|---|---|---|---|---|---|---|"]
    for algorithm, platform, gpus, nbytes, target in big:
        generator = ring_allreduce if algorithm == "ring" else direct_allreduce
        profile = generator(gpus, nbytes, workgroups=WORKGROUPS, mode="syncmon")
        wall, kernel, events = _run(platform, {"fabric.model": "flow", "fabric.stats.bin": "100us"}, profile)
        rows.append(f"| {algorithm} all-reduce | {platform} | {nbytes / MIB:,.0f} MiB | {wall:.2f} | <= {target:g} s | "
                    f"{kernel / 1e6:.3f} ms | {events:,} |")
    return rows + [""]


def _neighbour_rounds(gpus: int, rounds: int, workgroups: int = 4, neighbours: int = 4) -> Any:
    """Each workgroup, `rounds` times: a 64 KiB write to each of the next `neighbours` GPUs, a signal
    to each, then a wait for its neighbours' signals: the same flows per GPU and round at any size."""
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name=f"neighbours-{gpus}")
    chunk = 64 << 10
    b.buffer("halo", nbytes=neighbours * workgroups * chunk)
    for w in range(workgroups):
        b.flag(f"got{w}")
    for g in range(gpus):
        for w in range(workgroups):
            p = b.program(gpu=g, wg=w)
            for r in range(rounds):
                for k in range(1, neighbours + 1):
                    p.write(dst=(g + k) % gpus, buffer="halo", offset=((k - 1) * workgroups + w) * chunk, nbytes=chunk)
                    p.signal(dst=(g + k) % gpus, flag=f"got{w}", op="add", value=1)
                p.wait(flag=f"got{w}", cond=">=", value=neighbours * (r + 1), mode="syncmon")
    return b.build()


SCALING_REPEATS = 5  #: rounds of the scaling table: every size runs R and 2R once per round, sizes in turn


def _child_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished children: eidola.simulate runs in a
    forked child, so the difference around one call is that run's CPU time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(plat: Any, profile: Any) -> tuple[float, float, int]:
    """(wall s of the simulation, CPU s of the child, events) of one run."""
    cpu = _child_cpu_s()
    res = eidola.simulate(plat, profile)
    return res.wall_s, _child_cpu_s() - cpu, res.events


def scaling_section(quick: bool = False) -> list[str]:
    """Cost per event of the flow fabric from 8 to 1,024 GPUs on a switch, and the event count
    against the packet fabric at 256 MiB."""
    sizes = (8, 64, 256) if quick else (8, 64, 256, 1024)
    repeats = 2 if quick else SCALING_REPEATS
    plats, profiles = {}, {}
    for gpus in sizes:
        rounds = max(1, 4096 // gpus // (4 if quick else 1))
        plats[gpus] = eidola.load_platform(ROOT / "platforms" / "switch-8gpu.yaml", overrides={
            "fabric.model": "flow", "gpus.count": gpus, "fabric.stats.bin": "100us"})
        profiles[gpus] = (rounds, _neighbour_rounds(gpus, rounds), _neighbour_rounds(gpus, 2 * rounds))
    # runs[gpus] = one (R, 2R) pair of (wall, cpu, events) per repeat; sizes run in turn, so a busy
    # spell of the shared machine falls on every size, not on one.
    runs: dict[int, list[tuple[tuple[float, float, int], tuple[float, float, int]]]] = {g: [] for g in sizes}
    for _ in range(repeats):
        for gpus in sizes:
            _, once, twice = profiles[gpus]
            runs[gpus].append((_timed(plats[gpus], once), _timed(plats[gpus], twice)))

    def cost(pair: tuple[tuple[float, float, int], tuple[float, float, int]], which: int) -> float:
        (a, b) = pair
        return (b[which] - a[which]) / (b[2] - a[2]) * 1e6

    rows = ["## Flow fabric: cost per event from 8 to 1,024 GPUs", "",
            "switch-8gpu.yaml with `gpus.count` set, flow fabric; every GPU's 4 workgroups write 64 KiB to each of "
            "the next 4 GPUs, signal them and wait for theirs, for R = 4,096 / GPUs rounds and again for 2R (the "
            "same number of flows at every size). Cost per event: the extra time of the 2R run over its extra "
            "kernel events, so building the platform and reading results, which grow with the GPUs, are left out. "
            f"{repeats} rounds, every size in turn in each; each figure is the size's quietest round (its least "
            "time), and the ratio is against 8 GPUs in this run. Wall is the simulation's wall time (`res.wall_s`); "
            "CPU is the forked child's CPU time (user + system), which other processes on the machine disturb "
            "less. The spread is the least and the most of the CPU ratio over the rounds (each round against "
            "that round's 8 GPUs).", "",
            "| GPUs | rounds | events (2R) | wall us per event | ratio | CPU us per event | ratio | spread of CPU ratio |",
            "|---|---|---|---|---|---|---|---|"]
    base_wall = min(cost(p, 0) for p in runs[sizes[0]])
    base_cpu = min(cost(p, 1) for p in runs[sizes[0]])
    for gpus in sizes:
        wall = min(cost(p, 0) for p in runs[gpus])
        cpu = min(cost(p, 1) for p in runs[gpus])
        ratios = [cost(p, 1) / cost(b, 1) for p, b in zip(runs[gpus], runs[sizes[0]])]
        rounds = profiles[gpus][0]
        rows.append(f"| {gpus:,} | {rounds} / {2 * rounds} | {runs[gpus][0][1][2]:,} | {wall:.3f} | "
                    f"**{wall / base_wall:.2f}x** | {cpu:.3f} | **{cpu / base_cpu:.2f}x** | "
                    f"{min(ratios):.2f}-{max(ratios):.2f}x |")
    mib = 16 if quick else 256
    profile = all_gather(8, mib * MIB, workgroups=WORKGROUPS, mode="syncmon")
    wp, kp, ep = _run("mi300x-8gpu.yaml", {"fabric.model": "packet"}, profile)
    wf, kf, ef = _run("mi300x-8gpu.yaml", {**FLOW_COUNTERPART, "fabric.model": "flow"}, profile)
    rows += ["", f"Kernel events at {mib} MiB (ring all-gather, mi300x-8gpu.yaml, {WORKGROUPS} workgroups, SyncMon): "
             f"packet {ep:,} ({wp:.1f} s), flow {ef:,} ({wf:.2f} s): **{ep / ef:,.0f}x fewer** "
             f"(kernel time {kp / 1e3:.1f} us against {kf / 1e3:.1f} us, {kf / kp - 1:+.2%}).", ""]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller messages, for a smoke test")
    parser.add_argument("--scaling-only", action="store_true", help="only the cost per event and the event count")
    args = parser.parse_args()
    rows = [] if args.scaling_only else flow_fabric_section(args.quick)
    print("\n".join(rows + scaling_section(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
