"""Issue 25's "gigabyte collectives in seconds, on every topology": each shipped packet platform as flows at 1 GiB.

For every platform in platforms/ whose fabric is `packet`, one NCCL all-reduce and one all-to-all of 1 GiB
(nccl-tests' size; the tuner's algorithm, protocol and channels) through `eidola perf`'s own path, as
`eidola perf PLATFORM --op OP -b 1G -e 1G --fabric flow` runs them: wall seconds of the simulation (the profile's
build left out), kernel events and the simulated time. The baseline, measured first in the same run (after a
warm-up run of it that loads the simulator), is the ring all-reduce of the issue's 16 GiB target platform
(switch-8gpu) at 1 GiB; each row's wall time is also given as a ratio to it. `python bench/flow_platforms.py`
measures it and replaces its section of bench/RESULTS.md (about three minutes).
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import yaml
from results_md import stamp, write_section  # bench/ is on sys.path when this file runs as a script

from eidola.report.perf_command import PerfOptions, perf
from eidola.run.perf import PerfRow

ROOT = Path(__file__).resolve().parent.parent
HEADING = "## Issue 25: a 1 GiB all-reduce and all-to-all on every shipped packet platform, as flows"
BASELINE = ROOT / "platforms" / "switch-8gpu.yaml"
SIZE = 1 << 30
OPS = ("all_reduce", "alltoall")


def packet_platforms() -> list[Path]:
    """The shipped platforms whose fabric is the packet fabric (the ones `--fabric flow` can switch)."""
    return [p for p in sorted((ROOT / "platforms").glob("*.yaml"))
            if (yaml.safe_load(p.read_text()).get("fabric") or {}).get("model") == "packet"]


def run(platform: Path, op: str) -> PerfRow:
    """One collective of SIZE on `platform` as flows, as `eidola perf --fabric flow` runs it."""
    (row,) = perf(PerfOptions(str(platform), op, str(SIZE), str(SIZE), fabric="flow"), out=io.StringIO())
    return row


def section() -> list[str]:
    """Measures and returns the section's Markdown lines."""
    load = os.getloadavg()[0]
    run(BASELINE, "all_reduce")  # loads the simulator into this process, which the baseline must not count
    base = run(BASELINE, "all_reduce")
    rows = [(p, op, run(p, op)) for p in packet_platforms() for op in OPS]
    lines = [HEADING, "",
             f"{stamp()}; 2 shared cores (load average {load:.1f} at the start); `python "
             "bench/flow_platforms.py`. Each shipped packet platform with `fabric.model: flow`, one collective of "
             "1 GiB (nccl-tests' size), the tuner's plan; wall seconds of `simulate` alone, one run each. Baseline "
             "(measured first, after a warm-up run): switch-8gpu's all-reduce, "
             f"{base.wall_s:.2f} s wall, {base.events:,} events.", "",
             "| platform | collective | plan | wall s | against the baseline | events | simulated us |",
             "|---|---|---|---|---|---|---|"]
    for platform, op, r in rows:
        lines.append(f"| {platform.name} | {op} | {r.plan.algo} {r.plan.proto} x{r.plan.channels} | {r.wall_s:.2f} | "
                     f"{r.wall_s / base.wall_s:.1f}x | {r.events:,} | {r.time_us:,.1f} |")
    slowest = max(rows, key=lambda row: row[2].wall_s)
    lines += ["", f"Slowest: {slowest[0].name} {slowest[1]}, {slowest[2].wall_s:.1f} s.", ""]
    return lines


def main() -> int:
    write_section(section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
