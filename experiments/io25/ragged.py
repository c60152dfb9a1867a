"""Per-step release times of GPU 0's 24 ring workgroups on dgx-h200, 16 MiB, both fabrics (io25 NOTES.md).

Run: .venv/bin/python experiments/io25/ragged.py
"""

import numpy as np

import eidola
from eidola.generators import ring_allreduce

W = 24
for fab in ("packet", "flow"):
    p = eidola.load_platform("platforms/dgx-h200.yaml", {"fabric.model": fab, "gpus.max_outstanding": 16384,
                                                         "fabric.switch.nvls.reduce_bandwidth": "0GB/s"})
    prof = ring_allreduce(8, 16 << 20, workgroups=W, mode="syncmon")
    r = eidola.simulate(p, prof, trace=True)
    g0 = r.ops[r.ops["gpu"] == 0]
    ends = np.array([g0["end_ns"][g0["wg"] == w].max() for w in range(W)]) / 1e3
    program = prof.program(0, 0)
    signals = [i for i in range(len(program)) if program[i].kind == "signal"]
    steps = []
    for i in signals:
        e = np.array([g0["end_ns"][(g0["wg"] == w) & (g0["op"] == i)][0] for w in range(W)]) / 1e3
        steps.append((round(float(e.min()), 1), round(float(e.max()), 1)))
    print(fab, "kernel", round(r.kernel_time_ns / 1e3, 1), "wg end min/max", round(ends.min(), 1), round(ends.max(), 1))
    print("  release ends per step (min, max):", steps)
