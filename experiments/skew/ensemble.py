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

import dataclasses
import statistics
import sys
from pathlib import Path

import numpy as np

import eidola
from eidola.generators import all_gather, all_to_all, direct_allreduce, ring_allreduce
from eidola.platform import FLOW_COUNTERPART
from eidola.workload.variability import Delay, Variability

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
MAX_SKEW_NS = 8.0
# name: (platform, profile, GPUs): the validation cases where the fabrics or the two settings part.
CASES = {
    "direct16": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=8), 8),
    "direct1": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, MIB, workgroups=8), 8),
    "hier1": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, MIB, workgroups=8), 16),
    "hier4": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, 4 * MIB, workgroups=8), 16),
    "allgather1": ("mi300x-8gpu.yaml", lambda: all_gather(8, MIB, workgroups=8), 8),
    "ring32": ("switch-8gpu.yaml", lambda: ring_allreduce(8, 16 * MIB, workgroups=32, mode="syncmon"), 8),
    "ring2": ("switch-8gpu.yaml", lambda: ring_allreduce(8, 16 * MIB, workgroups=2), 8),
    "a2a8": ("mi300x-8gpu.yaml", lambda: all_to_all(8, 16 * MIB, workgroups=8), 8),
    "a2a7": ("mi300x-8gpu.yaml", lambda: all_to_all(8, 16 * MIB, workgroups=7), 8),
    "switchdirect16": ("switch-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=8), 8),
    # bench/flow_fabric.py's rows: 32 workgroups, SyncMon waits
    "direct16w32": ("mi300x-8gpu.yaml", lambda: direct_allreduce(8, 16 * MIB, workgroups=32, mode="syncmon"), 8),
    "hier16w32": ("hierarchical-16gpu.yaml", lambda: direct_allreduce(16, 16 * MIB, workgroups=32, mode="syncmon"), 16),
}
RUNS = (("packet", "packet", "first"), ("fair", "flow", "fair"), ("first", "flow", "first"))


def skewed(profile, gpus: int, seed: int):
    """`profile` with seed `seed`'s start skews (seed 0: in step)."""
    if seed == 0:
        return profile
    delays = np.random.default_rng(seed).uniform(0, MAX_SKEW_NS, gpus).round(3)
    delays -= delays.min()
    held = tuple(Delay(g, float(ns)) for g, ns in enumerate(delays) if ns > 0)
    return dataclasses.replace(profile, variability=Variability(delays=held))


def main() -> None:
    k = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    names = sys.argv[2:] or list(CASES)
    print(f"flow / packet - 1 per run (seed 0 in step, 1..{k - 1} skewed 0-{MAX_SKEW_NS:g} ns), then mean (range)")
    for name in names:
        platform, make, gpus = CASES[name]
        base = make()
        times: dict[str, list[float]] = {label: [] for label, _, _ in RUNS}
        for seed in range(k):
            profile = skewed(base, gpus, seed)
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
