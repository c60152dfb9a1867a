"""A sweep over GPU counts in ten lines: fused GEMV+AllReduce kernel time on the ideal fabric."""
import eidola
from eidola.generators import gemv_allreduce

for gpus in (2, 4, 8, 16):
    plat = eidola.load_platform("platforms/gemv-allreduce-4gpu.yaml", overrides={"gpus.count": gpus})
    res = eidola.simulate(plat, gemv_allreduce(gpus=gpus, workgroups=4, vector_bytes=gpus * 4 * 1024))
    print(f"{gpus:3d} GPUs: kernel {res.kernel_time_ns / 1000:7.2f} us, "
          f"flag reads {int(res.gpus['flag_reads'].sum())}")
