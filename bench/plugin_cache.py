"""The compiled-plugin cache: a third-party interconnect's first run, a cached run, and our own fabric.

Each is a fresh `eidola run` process, as a user starts it, so the times include Python, cppyy and
the models loading. Baseline: the same platform size on the ideal fabric, in the same run. The
first plugin run compiles the wrapper (a cache under a temporary EIDOLA_CACHE_DIR, empty at the
start); the next ones load it.

    python bench/plugin_cache.py        # prints the section; bench/run.py includes it in RESULTS.md
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CROSSBAR = ROOT / "examples" / "vendor_ip" / "crossbar-4gpu.yaml"
IDEAL = ROOT / "platforms" / "gemv-allreduce-4gpu.yaml"


def _run(platform: Path, env: dict[str, str], out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "eidola", "run", str(platform), "--out", str(out)], env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def plugin_cache_section(repeats: int = 3) -> list[str]:
    """Markdown rows: ideal-fabric run (baseline), first plugin run, cached plugin runs."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "EIDOLA_CACHE_DIR": str(Path(tmp) / "cache")}
        out = Path(tmp) / "out"
        first = _run(CROSSBAR, env, out)  # compiles: the cache is empty
        cached = statistics.median(_run(CROSSBAR, env, out) for _ in range(repeats))
        ideal = statistics.median(_run(IDEAL, env, out) for _ in range(repeats))
    return [
        "## Compiled-plugin cache", "",
        "A fresh `eidola run` process each time (Python, cppyy and the models load in each). The plugin is "
        "`examples/vendor_ip/crossbar-4gpu.yaml` (acme::Crossbar behind protocol checkers); the baseline is the "
        f"4-GPU default platform on the ideal fabric. Medians of {repeats}.", "",
        "| run | wall s | against the ideal-fabric run |",
        "|---|---|---|",
        f"| baseline: ideal fabric, 4 GPUs | {ideal:.2f} | 1.00x |",
        f"| plugin, first run (compiles the wrapper) | {first:.2f} | {first / ideal:.2f}x |",
        f"| plugin, cached | {cached:.2f} | {cached / ideal:.2f}x ({cached - ideal:+.2f} s) |", "",
    ]


if __name__ == "__main__":
    print("\n".join(plugin_cache_section()))
