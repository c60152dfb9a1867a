"""Why the 1 MiB direct all-reduce on MI300X is +3.8% on the flow fabric (docs/fabrics.md, "The GPU's issue gates").

Runs `direct_allreduce(8, 1 MiB, workgroups=8)` on mi300x-8gpu.yaml (launch 0) on both fabrics,
traced, and prints per workgroup of GPU 7: how long its first reduce-scatter wait took (the flag
of GPU 0, whose write to GPU 7 is that workgroup's k-th, k = (6 - w) mod 7), when it started its
all-gather, and when its first all-gather signal was released. The packet fabric's link queues
send a burst's writes in the order the GPU's round robin issued their packets (turn k of every
workgroup first), so the flags of early turns are in before the workgroups wait for them and six
of the eight workgroups start the all-gather 400 ns early; the flow fabric shares a link among
all the writes issued at once, so every write on a link ends with the last. Takes a few seconds.

Run: .venv/bin/python experiments/gate25/turns_1mib.py
"""

from __future__ import annotations

from pathlib import Path

import eidola
from eidola.generators import direct_allreduce

MIB = 1 << 20
PLATFORM = Path(__file__).resolve().parents[2] / "platforms" / "mi300x-8gpu.yaml"
GPU = 7


def _ops(model: str) -> tuple[float, dict[int, list[tuple[str, str, float, float]]]]:
    """Kernel time (ns) and GPU 7's ops per workgroup: (kind, detail, begin ns, end ns)."""
    plat = eidola.load_platform(PLATFORM, overrides={"gpus.launch": "0ns", "fabric.model": model})
    result = eidola.simulate(plat, direct_allreduce(8, MIB, workgroups=8), trace=True)
    ops = result.ops_table()
    assert ops is not None
    per_wg: dict[int, list[tuple[str, str, float, float]]] = {}
    for row in ops:
        if int(row["gpu"]) == GPU:
            per_wg.setdefault(int(row["wg"]), []).append(
                (str(row["kind"]), str(row["detail"]), float(row["begin_ns"]), float(row["end_ns"])))
    return result.kernel_time_ns, per_wg


if __name__ == "__main__":
    print("fabric | kernel us | per workgroup of GPU 7: k of its first flag, first wait ns, all-gather start ns, "
          "first all-gather signal released ns")
    for model in ("packet", "flow"):
        kernel, per_wg = _ops(model)
        cells = []
        for w, ops in sorted(per_wg.items()):
            waits = [o for o in ops if o[0] == "wait"]
            signals = [o for o in ops if o[0] == "signal"]
            first_wait = waits[0]
            ag_start = waits[6][3]  # the reduce-scatter's seven waits, then the all-gather's writes
            ag_signal = signals[7][3]
            cells.append(f"w{w} k={(6 - w) % 7} {first_wait[3] - first_wait[2]:.0f} {ag_start:.0f} {ag_signal:.0f}")
        print(f"{model} | {kernel / 1e3:.2f} | " + "; ".join(cells))
