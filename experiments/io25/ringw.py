import sys, yaml
import eidola
from eidola.generators import ring_allreduce, direct_allreduce, all_to_all
plat, kind, nbytes, W = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
extra = {k: yaml.safe_load(v) for k, v in (a.split("=",1) for a in sys.argv[5:])}
mode = extra.pop("mode", None)
kw = {"mode": mode} if mode else {}
gen = {"ring": ring_allreduce, "direct": direct_allreduce, "a2a": all_to_all}[kind]
out = []
for fab in ("packet", "flow"):
    ov = {"fabric.model": fab}; ov.update(extra)
    p = eidola.load_platform(plat, ov)
    r = eidola.simulate(p, gen(8, nbytes, workgroups=W, **kw))
    out.append(r.kernel_time_ns / 1e3)
print(plat.split("/")[-1], kind, nbytes, W, extra, mode, "packet %.2f flow %.2f err %+.2f%%" % (out[0], out[1], 100 * (out[1] / out[0] - 1)))
