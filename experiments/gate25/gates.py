"""The packet fabric with its GPU's issue gates lifted, against the flow fabric (docs/fabrics.md, "The GPU's issue gates").

For each case: flow, then packet as shipped, with `fabric.switch.buffer` lifted (the GPU's shared
injection buffer, and every router's buffers with it), with `gpus.max_outstanding` lifted, and
with both; kernel times in microseconds, launch 0. Takes about a minute.

Run: .venv/bin/python experiments/gate25/gates.py
"""

from __future__ import annotations

from pathlib import Path

import eidola
from eidola.generators import all_to_all, direct_allreduce, ring_allreduce

MIB = 1 << 20
PLATFORMS = Path(__file__).resolve().parents[2] / "platforms"
BUFFER = {"fabric.switch.buffer": 100_000}
WINDOW = {"gpus.max_outstanding": 1_000_000}
CASES = [
    ("direct all-reduce, MI300X, 16 MiB, 8 workgroups", "mi300x-8gpu.yaml", direct_allreduce(8, 16 * MIB, workgroups=8)),
    ("all-to-all, MI300X, 16 MiB, 8 workgroups", "mi300x-8gpu.yaml", all_to_all(8, 16 * MIB, workgroups=8)),
    ("ring all-reduce, switch, 16 MiB, 2 workgroups", "switch-8gpu.yaml", ring_allreduce(8, 16 * MIB, workgroups=2)),
    ("ring all-reduce, switch, 16 MiB, 32 workgroups, SyncMon", "switch-8gpu.yaml",
     ring_allreduce(8, 16 * MIB, workgroups=32, mode="syncmon")),
    ("direct all-reduce, MI300X, 1 MiB, 8 workgroups", "mi300x-8gpu.yaml", direct_allreduce(8, MIB, workgroups=8)),
]


def kernel_us(platform: str, profile: eidola.Profile, model: str, overrides: dict[str, object]) -> float:
    """Kernel time of `profile` on `platform` with `fabric.model` = `model` and `overrides`, in microseconds."""
    plat = eidola.load_platform(PLATFORMS / platform,
                                overrides={"gpus.launch": "0ns", **overrides, "fabric.model": model})
    return eidola.simulate(plat, profile).kernel_time_ns / 1e3


if __name__ == "__main__":
    print("case | flow | packet | buffer lifted | window lifted | both lifted")
    for name, platform, profile in CASES:
        flow = kernel_us(platform, profile, "flow", {})
        packets = [kernel_us(platform, profile, "packet", o) for o in ({}, BUFFER, WINDOW, {**BUFFER, **WINDOW})]
        print(f"{name} | {flow:.2f} | " + " | ".join(f"{p:.2f} ({flow / p - 1:+.2%})" for p in packets))
