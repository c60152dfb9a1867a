"""Validation cases under start skews: the flow fabric's error against the packet fabric's for the same skew.

A case's in-step comparison can pass or fail on the knife edge of a wake order (README.md). This runs each case in
step and with K-1 pseudo-random start skews (seeds 1..K-1: every GPU's first communication held back a uniform 0-8
ns, the least held back 0; the profile's `variability.delays`), on the packet fabric and on the flow fabric with
`flow.responses` fair and first (`flow.issue: gates`, launch 0, as tests/python/test_flow_validation.py runs them),
and prints the flow fabric's error per run, then its mean and range per case (docs/fabrics.md, "Responses served
first", has the table).

Run: python experiments/skew/ensemble.py [K] [CASE ...]   (default K = 5, every case; about 10 minutes on 2 cores,
most of it the 16-GPU packet runs)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import eidola
from eidola.generators import all_gather, all_to_all, direct_allreduce, ring_allreduce
from eidola.platform import FLOW_COUNTERPART
from eidola.workload.variability import start_skews

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
MAX_SKEW_NS = 8.0
# name: (platform, profile): the validation cases where the fabrics or the two settings part.
CASES = {
    "direct16": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=8)),
    "direct1": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, MIB, workgroups=8)),
    "hier1": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, MIB, workgroups=8)),
    "hier4": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, 4 * MIB, workgroups=8)),
    "allgather1": ("mi300x-8gpu.yaml", lambda: all_gather(8, MIB, workgroups=8)),
    "ring32": ("switch-8gpu.yaml", lambda: ring_allreduce(8, 16 * MIB, workgroups=32, mode="syncmon")),
    "ring2": ("switch-8gpu.yaml", lambda: ring_allreduce(8, 16 * MIB, workgroups=2)),
    "a2a8": ("mi300x-8gpu.yaml", lambda: all_to_all(8, 16 * MIB, workgroups=8)),
    "a2a7": ("mi300x-8gpu.yaml", lambda: all_to_all(8, 16 * MIB, workgroups=7)),
    "switchdirect16": ("switch-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=8)),
    # bench/flow_fabric.py's rows: 32 workgroups, SyncMon waits
    "direct16w32": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=32, mode="syncmon")),
    "hier16w32": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, 16 * MIB, workgroups=32, mode="syncmon")),
}
RUNS = (("packet", "packet", "first"), ("fair", "flow", "fair"), ("first", "flow", "first"))


def main() -> None:
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    names = sys.argv[2:] or list(CASES)
    print(f"flow / packet - 1 per run (seed 0 in step, 1..{k - 1} skewed 0-{MAX_SKEW_NS:g} ns), then mean (range)")
    for name in names:
        platform, make = CASES[name]
        base = make()
        times: dict[str, list[float]] = {label: [] for label, _, _ in RUNS}
        for seed in range(k):
            profile = start_skews(base, seed, MAX_SKEW_NS)
            for label, model, responses in RUNS:
                plat = eidola.load_platform(ROOT / "platforms" / platform, overrides={
                    "gpus.launch": "0ns", **FLOW_COUNTERPART, "fabric.flow.responses": responses,
                    "fabric.model": model})
                times[label].append(eidola.simulate(plat, profile).kernel_time_ns)
        packet = times["packet"]
        line = [f"{name:15s} packet {min(packet) / 1e3:.2f}-{max(packet) / 1e3:.2f} us"]
        for label in ("fair", "first"):
            errors = [f / p - 1 for f, p in zip(times[label], packet)]
            mean = statistics.mean(times[label]) / statistics.mean(packet) - 1
            runs = " ".join(f"{e:+.2%}" for e in errors)
            line.append(f"{label} {mean:+.2%} ({min(errors):+.2%}..{max(errors):+.2%}) [{runs}]")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    main()
