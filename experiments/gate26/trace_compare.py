"""GPU 0's writes, signals and waits, op by op, on the packet and the flow fabric side by side.

How the issue-order gap was found (README.md): a posted write's trace row ends when its workgroup goes
on, which on the packet fabric is when its last packet is issued into the injection buffer.

Run: python experiments/gate26/trace_compare.py PLATFORM GPUS BYTES ring|direct|a2a WORKGROUPS [ROWS]
e.g. python experiments/gate26/trace_compare.py switch-8gpu.yaml 8 16777216 ring 8 60
"""

from __future__ import annotations

import sys
from pathlib import Path

import eidola
from eidola.generators import all_to_all, direct_allreduce, ring_allreduce

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = {"ring": ring_allreduce, "direct": direct_allreduce, "a2a": all_to_all}


def main() -> None:
    platform, gpus, nbytes, kind, workgroups = sys.argv[1:6]
    rows = int(sys.argv[6]) if len(sys.argv) > 6 else 60
    profile = GENERATORS[kind](int(gpus), int(nbytes), workgroups=int(workgroups))
    ops = {}
    for model in ("packet", "flow"):
        plat = eidola.load_platform(ROOT / "platforms" / platform, overrides={"gpus.launch": "0ns", "fabric.model": model})
        result = eidola.simulate(plat, profile, trace=True)
        print(f"{model}: kernel {result.kernel_time_ns:.3f} ns")
        # ops_table rows: (gpu, workgroup, op, start ns, end ns, kind, peer, flag, detail)
        ops[model] = [
            (o[1], o[2], o[3], o[4], o[5]) for o in result.ops_table() if o[0] == 0 and o[5] in ("write", "wait", "signal")
        ]
    pairs = sorted(zip(ops["packet"], ops["flow"]), key=lambda ab: (ab[0][0], ab[0][1]))
    for a, b in pairs[:rows]:
        print(
            f"wg{a[0]} op{a[1]:3d} {a[4]:6s} packet {a[2] / 1e3:8.3f}-{a[3] / 1e3:8.3f} us"
            f"   flow {b[2] / 1e3:8.3f}-{b[3] / 1e3:8.3f} us"
        )


if __name__ == "__main__":
    main()
