"""Benchmarks, written to bench/RESULTS.md with the machine, date and git revision.

Every figure sits beside a baseline measured in the same run, because these machines are noisy.

- many_small_runs: the 100-seed variability experiment (4-GPU fused GEMV+AllReduce with skew and
  jitter, one simulation per seed) against the baseline of paying a fresh interpreter's start-up
  (import, cppyy, SystemC, models) for every run, measured on a few fresh processes.

Run: .venv/bin/python bench/run.py
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "experiments"))

FRESH_SAMPLES = 5


def _fresh_process_run_s() -> float:
    """Wall time of one simulation that pays the whole start-up: a new interpreter per run."""
    code = (
        "import eidola, sys\n"
        "from eidola.generators import gemv_allreduce\n"
        f"p = eidola.load_platform({str(ROOT / 'platforms/gemv-allreduce-4gpu.yaml')!r})\n"
        "prof = gemv_allreduce(gpus=4, workgroups=4, tile_ns=20000, reduce_ns=4000,\n"
        "    skew={'dist': 'normal', 'mean': 1.0, 'std': 0.1}, jitter={'dist': 'lognormal', 'mu': 0.0, 'sigma': 0.05})\n"
        "eidola.simulate(p, prof, seed=1, trace=True)\n"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ.copy())
    return time.perf_counter() - start


def many_small_runs() -> list[str]:
    """The 100-seed batch against 100 fresh start-ups (extrapolated from FRESH_SAMPLES of them)."""
    import variability

    fresh = sorted(_fresh_process_run_s() for _ in range(FRESH_SAMPLES))
    fresh_median = fresh[len(fresh) // 2]
    rows, batch_s = variability.run()
    n = len(rows)
    return [
        "## Many small runs: 100-seed variability experiment",
        "",
        "One loaded simulator, a forked child per simulation, against a fresh interpreter per simulation.",
        "",
        "| what | wall time | simulations/s | ratio |",
        "|---|---|---|---|",
        f"| baseline: fresh process per run (median of {FRESH_SAMPLES}) x {n} | {fresh_median * n:.1f} s "
        f"| {1 / fresh_median:.2f} | 1.0 |",
        f"| eidola: {n} seeds, fork per simulation | {batch_s:.1f} s | {n / batch_s:.1f} "
        f"| {fresh_median * n / batch_s:.1f}x faster |",
        "",
    ]


def main() -> int:
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    header = [
        "# Benchmark results",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"- git revision: {rev or 'unknown'}",
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        f"- python: {platform.python_version()}",
        "",
        "Figures are ratios against a baseline measured in the same run; absolute times only beside it.",
        "",
    ]
    body = many_small_runs()
    (HERE / "RESULTS.md").write_text("\n".join(header + body))
    print("\n".join(header + body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
