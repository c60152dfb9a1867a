"""GPU 0's writes, signals and waits, op by op, on the packet and the flow fabric side by side.

How the issue-order gap was found (README.md): a posted write's trace row ends when its workgroup goes
on, which on the packet fabric is when its last packet is issued into the injection buffer.

Run: python experiments/gate26/trace_compare.py PLATFORM GPUS BYTES ring|direct|a2a|nccl:OP WORKGROUPS [ROWS]
e.g. python experiments/gate26/trace_compare.py switch-8gpu.yaml 8 16777216 ring 8 60
     python experiments/gate26/trace_compare.py mi300x-8gpu.yaml 8 8388608 nccl:all_gather 0 40
(nccl:OP is the collective as `eidola perf` builds it, the tuner's plan, one call; WORKGROUPS is then
ignored.) The last line gives each workgroup's last op end on both fabrics: where a collective's
channels part (NCCL's all-gather on MI300X, 2026-12-03: a few channels 5 us late on the flow
fabric), the first op that parts in one of them is the place to look.
"""

from __future__ import annotations

import sys
from pathlib import Path

import eidola
from eidola.generators import all_to_all, direct_allreduce, ring_allreduce
from eidola.workload.nccl import build_collective

ROOT = Path(__file__).resolve().parents[2]
GENERATORS = {"ring": ring_allreduce, "direct": direct_allreduce, "a2a": all_to_all}


def main() -> None:
    platform, gpus, nbytes, kind, workgroups = sys.argv[1:6]
    rows = int(sys.argv[6]) if len(sys.argv) > 6 else 60
    ops = {}
    for model in ("packet", "flow"):
        # flow.issue gates: the packet fabric's counterpart, also where the platform sets queue (mi300x-8gpu)
        plat = eidola.load_platform(ROOT / "platforms" / platform, overrides={
            "gpus.launch": "0ns", "fabric.flow.issue": "gates", "fabric.model": model})
        if kind.startswith("nccl:"):
            profile, plan = build_collective(plat, kind[5:], int(nbytes), int(gpus))
            print(f"{model}: {plan}")
        else:
            profile = GENERATORS[kind](int(gpus), int(nbytes), workgroups=int(workgroups))
        result = eidola.simulate(plat, profile, trace=True)
        print(f"{model}: kernel {result.kernel_time_ns:.3f} ns")
        # ops_table rows: (gpu, workgroup, op, start ns, end ns, kind, peer, flag, detail)
        ops[model] = [
            (o[1], o[2], o[3], o[4], o[5]) for o in result.ops_table() if o[0] == 0 and o[5] in ("write", "put", "wait", "signal")
        ]
    pairs = sorted(zip(ops["packet"], ops["flow"]), key=lambda ab: (ab[0][0], ab[0][1]))
    for a, b in pairs[:rows]:
        print(
            f"wg{a[0]} op{a[1]:3d} {a[4]:6s} packet {a[2] / 1e3:8.3f}-{a[3] / 1e3:8.3f} us"
            f"   flow {b[2] / 1e3:8.3f}-{b[3] / 1e3:8.3f} us"
        )
    last = {model: {} for model in ops}
    for model, rows_of in ops.items():
        for wg, _, _, end, _ in rows_of:
            last[model][wg] = max(last[model].get(wg, 0.0), end)
    print(
        "last op end per workgroup, packet / flow (us):",
        " ".join(f"wg{w}:{last['packet'][w] / 1e3:.2f}/{last['flow'][w] / 1e3:.2f}" for w in sorted(last["packet"])),
    )


if __name__ == "__main__":
    main()
