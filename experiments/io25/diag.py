"""One NCCL ring all-reduce on one fabric, with the first links' table (io25 NOTES.md).

Run: .venv/bin/python experiments/io25/diag.py PLATFORM packet|flow BYTES [key=value ...]
"""

import sys
import time

import yaml

import eidola
from eidola.workload.nccl import build_collective

plat_path, fab, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
extra = {k: yaml.safe_load(v) for k, v in (a.split("=", 1) for a in sys.argv[4:])}
overrides = {"fabric.model": fab}
if "h200" in plat_path or "h100" in plat_path:
    overrides["fabric.switch.nvls.reduce_bandwidth"] = "0GB/s"  # NCCL_NVLS_ENABLE=0: keep the ring
overrides.update(extra)
plat = eidola.load_platform(plat_path, overrides)
prof, plan = build_collective(plat, "all_reduce", size, algo="ring")
start = time.time()
res = eidola.simulate(plat, prof)
print(plan, "wall", round(time.time() - start, 1))
print("kernel us", res.kernel_time_ns / 1e3)
print(res.links.dtype.names)
for row in res.links[:4]:
    print(row)
