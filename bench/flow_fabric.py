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
import sys
import time
from pathlib import Path
from typing import Any

import eidola
from eidola.generators import direct_allreduce, ring_allreduce

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
            "on the platform files as shipped (switch-8gpu: 4 lanes a link, a queue per output).",
            "", "| all-reduce | platform | packet: wall s | flow: wall s | faster | kernel time, packet | flow | "
            "difference | events, packet | flow |", "|---|---|---|---|---|---|---|---|---|---|"]
    for algorithm, platform, overrides, gpus in cases:
        generator = ring_allreduce if algorithm == "ring" else direct_allreduce
        profile = generator(gpus, mib * MIB, workgroups=WORKGROUPS, mode="syncmon")
        wp, kp, ep = _run(platform, {**overrides, "fabric.model": "packet"}, profile)
        wf, kf, ef = _run(platform, {**overrides, "fabric.model": "flow"}, profile)
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller messages, for a smoke test")
    args = parser.parse_args()
    print("\n".join(flow_fabric_section(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
