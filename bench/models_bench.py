"""The C++ models' throughput against the kernel ceiling, for this build and a baseline build, in one run.

Issue 17's model figures: transactions/s of the ideal fabric's 64-GPU all-to-all and packet-hops/s of the
8x8 torus all-to-all, both over the bare SystemC AT ping-pong (bench/ceiling.cpp) measured in the same run,
and the cost per transaction of the neighbour exchange from 8 to 1,024 GPUs. Each figure is measured for
both builds in alternation, `--repeat` times, and reported as a range, because the machine is shared.

Run: .venv/bin/python bench/models_bench.py --baseline OLD_BUILD_DIR [--baseline-bridge OLD_BRIDGE] [--repeat 3]
(OLD_BUILD_DIR: a CMake build of the baseline revision holding libeidola_tlm.so; OLD_BRIDGE: that
revision's bridge/ folder, when the Python side changed too. By default both use this tree's bridge.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, sys
import eidola
from eidola.generators import all_to_all, neighbor_exchange
root = sys.argv[1]
def ideal(p, w): return eidola.load_platform(root + "/platforms/gemv-allreduce-4gpu.yaml", {"gpus.count": p, "gpus.workgroups": w})
out = {}
r = eidola.simulate(ideal(64, 1), all_to_all(gpus=64, nbytes=64 * 1024, mode="syncmon"))
out["ideal64"] = int(r.gpus["packets_sent"].sum()) / r.meta["simulate_s"]
plat = eidola.load_platform(root + "/platforms/torus2d-16gpu.yaml", {"gpus.count": 64, "gpus.workgroups": 1, "fabric.dims": [8, 8]})
r = eidola.simulate(plat, all_to_all(gpus=64, nbytes=64 * 1024, mode="syncmon"))
out["torus64"] = int(r.links["packets"].sum()) / r.meta["simulate_s"]
for p in (8, 1024):
    r = eidola.simulate(ideal(p, 4), neighbor_exchange(gpus=p, nbytes=512 << 10, neighbors=4, workgroups=4))
    out[f"nx{p}"] = r.meta["simulate_s"] / int(r.gpus["packets_sent"].sum())
print(json.dumps(out))
"""


def ceiling_at(binary: Path) -> float:
    env = {**os.environ, "SYSTEMC_DISABLE_COPYRIGHT_MESSAGE": "1"}
    r = json.loads(subprocess.run([str(binary), "at", "2000000"], check=True, capture_output=True, text=True,
                                  env=env).stdout)
    return float(r["count"]) / float(r["seconds"])


def models(native_dir: Path, bridge: Path) -> dict[str, float]:
    env = {**os.environ, "EIDOLA_NATIVE_DIR": str(native_dir), "PYTHONPATH": str(bridge)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], check=True, capture_output=True, text=True,
                         env=env).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def span(values: list[float], fmt: str) -> str:
    """The range and, in brackets, the median."""
    ordered = sorted(values)
    lo, hi, mid = ordered[0], ordered[-1], ordered[len(ordered) // 2]
    return f"{format(lo, fmt)}-{format(hi, fmt)} ({format(mid, fmt)})"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", type=Path, required=True, help="build directory of the baseline revision")
    parser.add_argument("--baseline-bridge", type=Path, default=ROOT / "bridge",
                        help="the baseline revision's bridge/ folder (default: this tree's)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    builds = {"baseline": (args.baseline.resolve(), args.baseline_bridge.resolve()),
              "this build": (ROOT / "build" / "cpp", ROOT / "bridge")}
    rows: dict[str, dict[str, list[float]]] = {name: {} for name in builds}
    for _ in range(args.repeat):
        for name, (native, bridge) in builds.items():
            ceiling = ceiling_at(ROOT / "build" / "cpp" / "eidola_ceiling")
            m = models(native, bridge)
            r = rows[name]
            r.setdefault("ideal64", []).append(m["ideal64"] / ceiling)
            r.setdefault("torus64", []).append(m["torus64"] / ceiling)
            r.setdefault("growth", []).append(m["nx1024"] / m["nx8"])
            r.setdefault("ceiling", []).append(ceiling / 1e6)
    print("| build | AT ceiling (M tx/s) | ideal 64-GPU all-to-all, tx/s over ceiling (goal >= 0.40) | "
          "8x8 torus all-to-all, packet-hops/s over ceiling (goal >= 0.30) | "
          "cost per transaction, 1,024 vs 8 GPUs (goal <= 1.5x) |")
    print("|---|---|---|---|---|")
    for name, r in rows.items():
        print(f"| {name} | {span(r['ceiling'], '.2f')} | {span(r['ideal64'], '.2f')} | {span(r['torus64'], '.2f')} | "
              f"{span(r['growth'], '.2f')}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
