"""Two nodes of 8 GPUs, built in a loop: each node fully connected inside (xGMI), every GPU's NIC
on its node's leaf switch, both leaves on one spine. The same shape as the packet fabric's
`hierarchical` topology, written out link by link as a custom topology.

Run: .venv/bin/python platforms/examples/hierarchical_16gpu.py
"""

import eidola
from eidola import Platform, models
from eidola.generators import all_to_all

NODES, PER_NODE = 2, 8


def build() -> Platform:
    """16 eidolon GPUs on a custom packet fabric: switches s0, s1 are the leaves, s2 the spine."""
    gpus = NODES * PER_NODE
    edges = []
    for node in range(NODES):
        members = range(node * PER_NODE, (node + 1) * PER_NODE)
        for a in members:
            edges += [{"src": a, "dst": b, "bidirectional": False} for b in members if b != a]
            edges.append({"src": a, "dst": f"s{node}", "bandwidth": "50GB/s", "latency": "1us",
                          "bidirectional": True})
        edges.append({"src": f"s{node}", "dst": f"s{NODES}", "bandwidth": "400GB/s", "latency": "1us",
                      "bidirectional": True})
    p = Platform("hierarchical-16gpu-py")
    fabric = p.add(models.PacketFabric("fabric", topology="custom", ports=gpus,
                                       custom={"switches": NODES + 1, "edges": edges},
                                       link={"bandwidth": "64GB/s", "latency": "250ns", "header": "85B"},
                                       # 1 MiB per channel covers the 400 GB/s leaf-spine link's
                                       # credit round trip, (ser + 2 x 1us + 100ns) x 400 GB/s = 840 KB.
                                       switch={"latency": "100ns", "buffer": "1MiB"}))
    for i in range(gpus):
        gpu = p.add(models.EidolonGpu(f"gpu{i}", workgroups=4, max_outstanding=2048))
        p.connect(gpu.initiator, fabric.targets[i])
        p.connect(fabric.initiators[i], gpu.target)
    return p


if __name__ == "__main__":
    result = eidola.simulate(build(), all_to_all(gpus=NODES * PER_NODE, nbytes=16 * 4096, workgroups=4))
    print(f"hierarchical 2x8 (built in Python): all-to-all in {result.kernel_time_ns / 1000:.1f} us")
