import sys, time, yaml
import eidola
from eidola.workload.builder import ProfileBuilder
plat_path, fab, total, W = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
chunk = int(sys.argv[5]) if len(sys.argv) > 5 else 512*1024
extra = {k: yaml.safe_load(v) for k, v in (a.split("=",1) for a in sys.argv[6:])}
ov = {"fabric.model": fab}; ov.update(extra)
plat = eidola.load_platform(plat_path, ov)
G = 8
b = ProfileBuilder(gpus=G, workgroups=W, name="stream")
b.buffer("buf", total)
per = total // W
for g in range(G):
    for w in range(W):
        p = b.program(g, w)
        off = w * per
        left = per
        while left:
            n = min(chunk, left)
            p.write((g + 1) % G, "buf", off, n)
            off += n; left -= n
prof = b.build()
t = time.time()
res = eidola.simulate(plat, prof)
L = res.links
print(fab, "kernel us %.2f" % (res.kernel_time_ns/1e3), "util", round(float(L["utilization"][0]),3), "q8->0 mean/p99/max", [round(float(x)) for x in (L["queue_mean_ns"][1], L["queue_p99_ns"][1], L["queue_max_ns"][1])], "stall", L["credit_stall_ns"][0], "wall", round(time.time()-t,1))
