import sys, numpy as np, eidola
from eidola.generators import ring_allreduce
for fab in ("packet", "flow"):
    p = eidola.load_platform("platforms/dgx-h200.yaml", {"fabric.model": fab, "gpus.max_outstanding": 16384, "fabric.switch.nvls.reduce_bandwidth": "0GB/s"})
    prof = ring_allreduce(8, 16 << 20, workgroups=24, mode="syncmon")
    r = eidola.simulate(p, prof, trace=True)
    o = r.ops
    g0 = o[o["gpu"] == 0]
    ends = np.array([g0["end_ns"][g0["wg"] == w].max() for w in range(24)]) / 1e3
    # per-step: end time of each signal op (the releases) on gpu0 per wg
    kinds = [prof.program(0, 0)[i].kind for i in range(len(prof.program(0, 0)))]
    sig = [i for i, k in enumerate(kinds) if k == "signal"]
    steps = []
    for i in sig:
        e = np.array([g0["end_ns"][(g0["wg"] == w) & (g0["op"] == i)][0] for w in range(24)]) / 1e3
        steps.append((round(e.min(), 1), round(e.max(), 1)))
    print(fab, "kernel", round(r.kernel_time_ns / 1e3, 1), "wg end min/max", round(ends.min(), 1), round(ends.max(), 1))
    print("  release ends per step (min,max):", steps)
