"""Sweep benchmarks: local workers' speed-up and small simulations per second in a sweep.

Both figures are ratios against a baseline measured in the same run: 2 workers against 1 on a
40-point sweep of the default platform, and a sweep of small simulations against the same
simulations run one after another with eidola.simulate. bench/run.py includes this section in
bench/RESULTS.md; `python bench/sweep_bench.py` measures it alone and replaces the section there.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from results_md import write_section  # bench/ is on sys.path when this file runs as a script

import eidola
from eidola.run.sweep import spec_from_dict

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT = ROOT / "platforms" / "gemv-allreduce-4gpu.yaml"
HEADING = "## Sweeps"


def _timed_sweep(spec: dict, workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        table = eidola.sweep(spec_from_dict(spec, source=str(HERE / "bench-sweep.yaml")), out=tmp, workers=workers)
        wall = time.perf_counter() - start
    assert (table["status"] == "ok").all(), table[table["status"] != "ok"]
    return wall, len(table)


def _ping(tmp: Path) -> Path:
    b = eidola.ProfileBuilder(gpus=2, workgroups=1, name="ping")
    b.flag("ready")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).compute(ns=1000).write(dst=1, buffer="data", offset=0, nbytes=4096) \
        .signal(dst=1, flag="ready", op="add", value=1)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="poll", interval_ns=100)
    path = tmp / "ping.yaml"
    b.build().save(path)
    return path


def sweep_section() -> list[str]:
    """Measures and returns the section's Markdown lines."""
    cores = len(os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    default = {"sweep": 1, "platform": str(DEFAULT), "grid": {"seed": {"start": 1, "stop": 40}},
               "metrics": ["kernel_time_ns", "flag_reads"]}
    _timed_sweep({**default, "grid": {"seed": [1, 2]}}, 1)  # loads the models; not measured
    one = min(_timed_sweep(default, 1)[0] for _ in range(2))
    two = min(_timed_sweep(default, 2)[0] for _ in range(2))
    with tempfile.TemporaryDirectory() as tmp:
        ping = _ping(Path(tmp))
        plat = eidola.load_platform(DEFAULT, overrides={"gpus.count": 2, "gpus.workgroups": 1})
        start = time.perf_counter()
        for seed in range(1, 101):
            eidola.simulate(plat, ping, seed=seed)
        loop = time.perf_counter() - start
        small = {"sweep": 1, "platform": str(DEFAULT), "profile": str(ping),
                 "set": {"gpus.count": 2, "gpus.workgroups": 1}, "grid": {"seed": {"start": 1, "stop": 200}},
                 "metrics": ["kernel_time_ns"]}
        wall, n = min(_timed_sweep(small, cores) for _ in range(2))
    rate, loop_rate = n / wall, 100 / loop
    # A worker speed-up needs idle cores: the load average says whether other work shared them.
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {cores} cores"
    return [HEADING, "",
            f"`eidola sweep` on this machine ({load}), local backend; best of two runs each.", "",
            "| what | baseline (same run) | wall s | figure |", "|---|---|---|---|",
            f"| 40-point sweep of the default platform (seeds 1-40), 2 workers | the same sweep, 1 worker: "
            f"{one:.2f} s | {two:.2f} | **{one / two:.2f}x** faster |",
            f"| 200 small simulations (2 GPUs, ping) in a sweep, {cores} workers | eidola.simulate one after "
            f"another: {loop_rate:.1f}/s | {wall:.2f} | **{rate:.0f} simulations/s** ({rate / loop_rate:.1f}x) |",
            "",
            "A point costs building its platform and workload in the worker, one fork of the loaded simulator, "
            "the elaboration and simulation in the child, and writing its folder (summary.json, CSV tables, row.json).", ""]


def main() -> int:
    write_section(sweep_section())
    return 0


if __name__ == "__main__":
    sys.exit(main())
