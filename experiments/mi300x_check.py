"""The packet fabric against published MI300X figures (platforms/mi300x-8gpu.yaml).

- 8-GPU all-to-all: payload bandwidth per xGMI link, against the 45-48 GB/s usable per link
  (64 GB/s raw; RCCL assumes 48 GB/s).
- Large all-reduce (direct reduce-scatter + all-gather over all 7 links): bus bandwidth
  (algorithm bandwidth x 2(p-1)/p, as rccl-tests report it) against RCCL's ~318 GB/s.

Each GPU runs 28 workgroups pinned 4 to a peer (schedule="pinned"), so all 7 links of a GPU
stay busy for the whole transfer, as RCCL's channels do. Bandwidth is measured over the data
phase: from 0 until the last write is acknowledged, which is when the release (signal) after it
goes (writes are posted, so a write op ends at issue, before its data has crossed the link; the
flag round trips that close the collective are latency, not link bandwidth).
Run: .venv/bin/python experiments/mi300x_check.py   (prints the README's table)
"""

import sys
from pathlib import Path

import numpy as np

import eidola
from eidola.generators import all_to_all, direct_allreduce

PLATFORM = Path(__file__).resolve().parent.parent / "platforms" / "mi300x-8gpu.yaml"
P, W = 8, 28


def all_to_all_link_gbs(nbytes: int) -> tuple[float, float]:
    """(mean, min) payload GB/s over the GPU-to-GPU links during an all-to-all of `nbytes` per GPU."""
    plat = eidola.load_platform(PLATFORM)
    prof = all_to_all(gpus=P, nbytes=nbytes, workgroups=W, mode="syncmon", schedule="pinned")
    res = eidola.simulate(plat, prof, trace=True)
    releases = np.array([prof.program(int(r["gpu"]), int(r["wg"]))[int(r["op"])].kind == "signal" for r in res.ops])
    launch_ns = float(plat.eidolons()[0].resolved()["launch"]) * 1e9  # the data flow from the kernel's start
    data_end_ns = res.ops["end_ns"][releases].max() - launch_ns
    rate = res.links["bytes"] / data_end_ns  # bytes per ns = GB/s
    return float(rate.mean()), float(rate.min())


def allreduce_busbw_gbs(nbytes: int) -> float:
    """Bus bandwidth of a direct all-reduce of `nbytes` per GPU."""
    plat = eidola.load_platform(PLATFORM)
    res = eidola.simulate(plat, direct_allreduce(gpus=P, nbytes=nbytes, workgroups=W, mode="syncmon",
                                                 schedule="pinned"))
    return res.busbw_gbs(nbytes, "all_reduce")


def main():
    size = 7 * 8 << 20  # 56 MiB: divisible by 8 GPUs x 28 workgroups
    mean, low = all_to_all_link_gbs(size)
    busbw = allreduce_busbw_gbs(size)
    print("| measure (8x MI300X, xGMI, 56 MiB per GPU) | simulated | published |")
    print("|---|---|---|")
    print(f"| all-to-all payload bandwidth per link | {mean:.1f} GB/s (min {low:.1f}) | 45-48 GB/s usable |")
    print(f"| all-reduce bus bandwidth | {busbw:.0f} GB/s | ~318 GB/s (RCCL) |")


if __name__ == "__main__":
    sys.exit(main())
