"""A 64-node (512-GPU) rail-optimised platform on the flow fabric: what building and running it costs.

rail-16gpu.yaml at gpus.count=512 (64 nodes of 8 on 8 rails, 4 spines); its rail-spine links are
sized so the spines are not oversubscribed (64 NICs x 50 GB/s per rail over 4 spines: 800 GB/s
each). The workload is the textbook ring all-reduce over all 512 GPUs (2 x 511 steps, 1 workgroup,
SyncMon waits), whose 64 node-crossing steps go rail 7 -> spine -> rail 0. `stats.bin` is 100 us:
1 us bins over a run of tens of milliseconds are millions of rows per busy link.
Reports wall time (load, profile, simulate) and the child's peak memory.

Run: .venv/bin/python bench/rail_scale.py [SIZE_BYTES]   (default 1 GiB)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import eidola
from eidola.generators import ring_allreduce

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    """Runs the measurement and prints one line."""
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    t0 = time.perf_counter()
    plat = eidola.load_platform(ROOT / "platforms" / "rail-16gpu.yaml",
                                {"gpus.count": 512, "fabric.model": "flow", "fabric.network.bandwidth": "800GB/s",
                                 "fabric.stats.bin": "100us"})
    t1 = time.perf_counter()
    prof = ring_allreduce(512, size, workgroups=1, mode="syncmon")
    t2 = time.perf_counter()
    res = eidola.simulate(plat, prof)
    t3 = time.perf_counter()
    print(f"512 GPUs, ring all-reduce of {size} B: load {t1 - t0:.2f} s, profile {t2 - t1:.2f} s "
          f"({prof.ops_count()} ops), simulate {t3 - t2:.2f} s ({res.events} events), kernel "
          f"{res.kernel_time_ns / 1e3:.1f} us, child peak RSS {res.meta.get('child_max_rss_kb', 0) / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
