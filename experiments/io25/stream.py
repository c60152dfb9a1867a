"""A plain ring of posted writes (no flags): each GPU's W workgroups write TOTAL bytes to the next GPU.

Run: .venv/bin/python experiments/io25/stream.py PLATFORM packet|flow TOTAL W [CHUNK] [key=value ...]
"""

import sys
import time

import yaml

import eidola
from eidola.workload.builder import ProfileBuilder

plat_path, fab, total, wgs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
chunk = int(sys.argv[5]) if len(sys.argv) > 5 else 512 * 1024
extra = {k: yaml.safe_load(v) for k, v in (a.split("=", 1) for a in sys.argv[6:])}
overrides = {"fabric.model": fab}
overrides.update(extra)
plat = eidola.load_platform(plat_path, overrides)
G = 8
b = ProfileBuilder(gpus=G, workgroups=wgs, name="stream")
b.buffer("buf", total)
per = total // wgs
for g in range(G):
    for w in range(wgs):
        prog = b.program(g, w)
        off, left = w * per, per
        while left:
            n = min(chunk, left)
            prog.write((g + 1) % G, "buf", off, n)
            off += n
            left -= n
start = time.time()
res = eidola.simulate(plat, b.build())
links = res.links
print(fab, f"kernel us {res.kernel_time_ns / 1e3:.2f}", "utilization", round(float(links["utilization"][0]), 3),
      "wall", round(time.time() - start, 1))
