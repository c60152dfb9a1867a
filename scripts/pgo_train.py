"""The training run of the profile-guided build (scripts/setup.sh): a few simulations that take the paths users' runs take.

Run with the library built with EIDOLA_PGO=generate installed; each case runs in a process of its own
(a SystemC kernel elaborates once per process) and in that process, not in simulate's forked child,
because a process records its profile when it exits normally and the child exits at once. The cases:
NCCL's tree all-reduce over 16 nodes of mi300x-rail on the flow fabric (NICs, the solver, flags), a ring
on mi300x-8gpu on the flow fabric, LL128 rings on switch-8gpu on the packet fabric (routers, credits)
and on the ideal fabric, and NVLS on dgx-h200's packet switch. About 15 s with the instrumented library.

    python scripts/pgo_train.py          (runs every case, one process each)
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
# (platform, GPUs, all-reduce bytes, fabric, algorithm)
CASES = [
    ("mi300x-rail", 128, 256 * MIB, "flow", "auto"),
    ("mi300x-8gpu", 8, 64 * MIB, "flow", "auto"),
    ("switch-8gpu", 8, 4 * MIB, "packet", "auto"),
    ("switch-8gpu", 8, 4 * MIB, "ideal", "auto"),
    ("dgx-h200", 8, 8 * MIB, "packet", "nvls"),
]


def run_case(platform: str, gpus: int, nbytes: int, fabric: str, algo: str) -> None:
    """Simulates one case in this process."""
    from eidola.run.perf import Fabrics
    from eidola.run.simulate import simulate
    from eidola.workload.nccl import build_collective

    # On the ideal fabric the packet fabric's keys are ignored with a warning, expected here.
    with contextlib.redirect_stderr(io.StringIO()) if fabric == "ideal" else contextlib.nullcontext():
        fabrics = Fabrics(str(ROOT / "platforms" / f"{platform}.yaml"), {"gpus.count": gpus}, fabric)
        fabrics.platform(fabric)
    profile, plan = build_collective(fabrics.base, "all_reduce", nbytes, gpus, algo, "auto", 0, steady=True)
    result = simulate(fabrics.harnessed(fabric), profile, in_process=True)
    print(f"pgo_train: {platform} x {gpus}, {nbytes >> 20} MiB, {fabric}, {plan.algo} {plan.proto}: "
          f"{result.kernel_time_ns / 1000:.2f} us")


def main() -> None:
    """Runs each case in a child interpreter; a failed case fails the training."""
    if len(sys.argv) == 6:
        platform, gpus, nbytes, fabric, algo = sys.argv[1:]
        run_case(platform, int(gpus), int(nbytes), fabric, algo)
        return
    for case in CASES:
        subprocess.run([sys.executable, __file__, *map(str, case)], check=True)


if __name__ == "__main__":
    main()
