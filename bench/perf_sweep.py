"""Issue 26's sweep target: `eidola perf` all-reduce from 8 B to 8 GiB by factors of 2 on dgx-h200 in under 60 s.

Measures the command as a user runs it (a child process: start-up, profile builds, every simulation),
with --fabric auto (packet while a collective writes at most 64 MiB, flow above), and as its baseline
in the same run the same sweep with --fabric flow for every size: the ratio is what the packet fabric's
sizes cost. Also lists the slowest sizes of the auto sweep (its per-size wall times, from the rows).
`python bench/perf_sweep.py` measures it and replaces its section of bench/RESULTS.md; bench/run.py includes it
(not with --quick).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

from results_md import stamp, write_section  # bench/ is on sys.path when this file runs as a script

from eidola.report.perf_command import PerfOptions, perf

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PLATFORM = ROOT / "platforms" / "dgx-h200.yaml"
HEADING = "## Issue 26: an 8 B to 8 GiB all-reduce sweep on dgx-h200 (`eidola perf`)"
EIDOLA = Path(sys.executable).parent / "eidola"


def _cli(fabric: str) -> tuple[float, int]:
    """Wall seconds of the command and the number of sizes it printed."""
    start = time.perf_counter()
    r = subprocess.run([str(EIDOLA), "perf", str(PLATFORM), "--op", "all_reduce", "-b", "8", "-e", "8G", "-f", "2",
                        "--fabric", fabric], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    return wall, sum(1 for line in r.stdout.splitlines() if line.strip() and not line.startswith("#"))


def section() -> list[str]:
    """Measures and returns the section's Markdown lines."""
    load = os.getloadavg()[0]
    # best of two, alternating, so that other jobs on the shared cores weigh on both alike
    runs = [(_cli("auto"), _cli("flow")) for _ in range(2)]
    (auto, n_auto), (flow, n_flow) = min(r[0] for r in runs), min(r[1] for r in runs)
    rows = perf(PerfOptions(str(PLATFORM), "all_reduce", "8", "8G", "2", fabric="auto"), out=io.StringIO())
    slow = sorted(rows, key=lambda r: -r.wall_s)[:4]
    packet = [r for r in rows if r.fabric == "packet"]
    return [HEADING, "",
            f"{stamp()}; 2 shared cores (load average {load:.1f} at the start). "
            "`eidola perf platforms/dgx-h200.yaml --op all_reduce -b 8 -e 8G -f 2`, a child process each, "
            "start-up included, best of two; the baseline is the same sweep in the same run with `--fabric flow`.", "",
            "| sweep | sizes | wall s | against the flow-only sweep | target |", "|---|---|---|---|---|",
            f"| `--fabric auto` (packet up to 64 MiB written, flow above) | {n_auto} | {auto:.1f} | "
            f"**{auto / flow:.2f}x** | < 60 s |",
            f"| `--fabric flow` (baseline) | {n_flow} | {flow:.1f} | 1.00x | |", "",
            f"In the auto sweep {len(packet)} sizes ran on the packet fabric (up to "
            f"{_size(max(r.size for r in packet))}, {sum(r.wall_s for r in packet):.1f} s of simulation wall "
            "time together). The slowest sizes (simulation wall time, build excluded): "
            + ", ".join(f"{_size(r.size)} {r.fabric} {r.wall_s:.2f} s" for r in slow)
            + " (the first size's includes loading the simulator in this process).", ""]


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def main() -> int:
    write_section(section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
