import sys, time
import numpy as np
import eidola
from eidola.workload.nccl import build_collective
plat_path, fab, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
import yaml
extra = {k: yaml.safe_load(v) for k, v in (a.split("=",1) for a in sys.argv[4:])}
ov = {"fabric.model": fab}
if "h200" in plat_path or "h100" in plat_path: ov["fabric.switch.nvls.reduce_bandwidth"] = "0GB/s"
ov.update(extra)
plat = eidola.load_platform(plat_path, ov)
prof, plan = build_collective(plat, "all_reduce", size, algo="ring")
t = time.time()
res = eidola.simulate(plat, prof)
s = res.summary() if callable(getattr(res, "summary", None)) else None
print(plan, "wall", round(time.time()-t,1))
print("kernel us", res.kernel_time_ns/1e3 if hasattr(res,"kernel_time_ns") else None)
L = res.links
print(L.dtype.names)
for r in L[:4]: print(r)
