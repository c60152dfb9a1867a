"""Python-side speed: building a large profile, and small simulations one after another.

Both figures are ratios against the same measurement of a baseline git revision (default: where
this branch left main), taken in the same run: that revision's bridge/ is unpacked into a temporary
folder and timed in a subprocess beside the current one, alternating, so machine load hits both
alike. The compiled models are shared (build/cpp): only the Python side differs. Each figure is
the best of `repeats` alternating rounds; the range is printed too.

Run: .venv/bin/python bench/python_bench.py [--rev REV] [--repeats N]. bench/run.py does not run it (it
needs a baseline revision); paste its section into RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HEADING = "## Python side: profile build and small runs"

# Timed in a fresh interpreter with PYTHONPATH set to the revision's bridge/.
_BUILD = """
import json, time, gc
from eidola.generators import neighbor_exchange
t = time.perf_counter()
p = neighbor_exchange(gpus={gpus}, nbytes=304 * 4 * 256, neighbors=4, workgroups=304)
print(json.dumps({{"s": time.perf_counter() - t, "ops": p.ops_count()}}))
"""
_SMALL = """
import json, time, eidola
plat = eidola.load_platform({platform!r}); prof = eidola.load_profile(plat.profile)
eidola.simulate(plat, prof)
t = time.perf_counter()
for _ in range({n}):
    eidola.simulate(plat, prof)
print(json.dumps({{"s": time.perf_counter() - t, "n": {n}}}))
"""


def _unpack(rev: str, into: Path) -> Path:
    """The bridge/ folder of git revision `rev`, unpacked under `into` (with the headers cppyy reads)."""
    tar = subprocess.run(["git", "archive", rev, "bridge", "tlm_models/include"], cwd=ROOT, check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(tar)) as t:
        t.extractall(into, filter="data")
    return into / "bridge"


def _timed(bridge: Path, code: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(bridge), "EIDOLA_NATIVE_DIR": str(ROOT / "build" / "cpp"),
           "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE": "1"}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=env, cwd=ROOT)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _rounds(bridges: dict[str, Path], code: str, repeats: int) -> dict[str, list[dict[str, float]]]:
    """Alternating measurements of each bridge, `repeats` rounds."""
    out: dict[str, list[dict[str, float]]] = {k: [] for k in bridges}
    for _ in range(repeats):
        for name, bridge in bridges.items():
            out[name].append(_timed(bridge, code))
    return out


def python_section(rev: str | None = None, repeats: int = 3, gpus: int = 1024) -> list[str]:
    """Measures and returns the section's Markdown lines."""
    rev = rev or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() or "HEAD"
    short = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        bridges = {"baseline": _unpack(rev, Path(tmp)), "now": ROOT / "bridge"}
        build = _rounds(bridges, _BUILD.format(gpus=gpus), repeats)
        platform = str(ROOT / "platforms" / "gemv-allreduce-4gpu.yaml")
        small = _rounds(bridges, _SMALL.format(platform=platform, n=100), repeats)
    ops = int(build["now"][0]["ops"])
    b_base, b_now = (sorted(r["s"] for r in build[k]) for k in ("baseline", "now"))
    s_base, s_now = (sorted(r["n"] / r["s"] for r in small[k]) for k in ("baseline", "now"))
    return [HEADING, "",
            f"Baseline: revision {short} (where this branch left main), measured in the same run, alternating "
            f"with the current code; best of {repeats} (range in brackets). The compiled models are the same.", "",
            "| what | baseline | now | figure |", "|---|---|---|---|",
            f"| build neighbor_exchange({gpus} GPUs, 304 workgroups; {ops:,} ops) with ProfileBuilder | "
            f"{b_base[0]:.2f} s [{b_base[0]:.2f}-{b_base[-1]:.2f}] | {b_now[0]:.2f} s [{b_now[0]:.2f}-{b_now[-1]:.2f}] | "
            f"**{b_base[0] / b_now[0]:.1f}x** faster (target >= 5x) |",
            f"| 100 x the 4-GPU default, one after another (eidola.simulate) | {s_base[-1]:.1f}/s "
            f"[{s_base[0]:.1f}-{s_base[-1]:.1f}] | {s_now[-1]:.1f}/s [{s_now[0]:.1f}-{s_now[-1]:.1f}] | "
            f"**{s_now[-1] / s_base[-1]:.1f}x** (target >= 50/s) |", ""]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rev", help="the baseline git revision (default: merge-base with main)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gpus", type=int, default=1024, help="GPUs of the built profile (304 workgroups each)")
    args = parser.parse_args()
    print("\n".join(python_section(args.rev, args.repeats, args.gpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
