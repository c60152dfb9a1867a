"""A generator collective on both fabrics: kernel times and flow / packet - 1 (io25 NOTES.md).

Run: .venv/bin/python experiments/io25/ringw.py PLATFORM ring|direct|a2a BYTES W [mode=syncmon] [key=value ...]
"""

import sys

import yaml

import eidola
from eidola.generators import all_to_all, direct_allreduce, ring_allreduce

plat, kind, nbytes, wgs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra = {k: yaml.safe_load(v) for k, v in (a.split("=", 1) for a in sys.argv[5:])}
mode = extra.pop("mode", None)
kw = {"mode": mode} if mode else {}
gen = {"ring": ring_allreduce, "direct": direct_allreduce, "a2a": all_to_all}[kind]
out = []
for fab in ("packet", "flow"):
    overrides = {"fabric.model": fab}
    overrides.update(extra)
    r = eidola.simulate(eidola.load_platform(plat, overrides), gen(8, nbytes, workgroups=wgs, **kw))
    out.append(r.kernel_time_ns / 1e3)
print(plat.split("/")[-1], kind, nbytes, wgs, extra, mode,
      f"packet {out[0]:.2f} flow {out[1]:.2f} err {100 * (out[1] / out[0] - 1):+.2f}%")
