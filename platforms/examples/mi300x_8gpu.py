"""The MI300X-like 8-GPU platform of platforms/mi300x-8gpu.yaml, built in Python.

Run: .venv/bin/python platforms/examples/mi300x_8gpu.py
"""

from pathlib import Path

import eidola
from eidola import Platform, models

HERE = Path(__file__).resolve().parent


def build() -> Platform:
    """8 GPUs, every pair joined by its own xGMI link (64 GB/s raw, 85 B header, 16 B acks)."""
    p = Platform("mi300x-8gpu", address_map={"base": 0, "stride": "1TiB"},
                 profile=str(HERE.parent.parent / "profiles" / "gemv-allreduce-8gpu.yaml"))
    gpus = [p.add(models.EidolonGpu(f"gpu{i}", clock="2.1GHz", workgroups=304, max_outstanding=2048,
                                    max_payload="256B", memory={"latency": "300ns", "bandwidth": "5.3TB/s"},
                                    syncmon={"entries": 64}, launch="2.35us"))
            for i in range(8)]
    fabric = p.add(models.PacketFabric("fabric", topology="fully_connected",
                                       link={"bandwidth": "64GB/s", "latency": "174ns", "header": "85B",
                                             "ack": "16B", "count": 1},
                                       switch={"latency": "100ns", "buffer": "45056B"},  # 128 packets in 16-byte flits
                                       # as the YAML: the settings of its calibration (docs/fabrics.md)
                                       flow={"issue": "queue"}))
    for i, gpu in enumerate(gpus):
        p.connect(gpu.initiator, fabric.targets[i])
        p.connect(fabric.initiators[i], gpu.target)
    return p


if __name__ == "__main__":
    result = eidola.simulate(build())
    print(f"mi300x-8gpu (built in Python): kernel time {result.kernel_time_ns / 1000:.3f} us")
