"""Where ``eidola perf`` gets its collectives: ``build_collective(platform, op, nbytes, gpus, algo, proto,
channels, calls, steady) -> (Profile, Plan)`` and the names ``OPS`` and ``Plan`` that go with it.

Every other module of ``eidola perf`` imports them from here only. They are the collectives as
NCCL and RCCL run them (`eidola.workload.nccl`: channels, FIFOs, LL/LL128/Simple, the tuner). The
printed header names the module they came from (`SOURCE`).
"""

from __future__ import annotations

# the source
from ..workload.nccl import OPS, Plan, build_collective

__all__ = ["OPS", "ALGOS", "PROTOS", "Plan", "build_collective", "SOURCE"]

#: What ``--algo`` and ``--proto`` may say (the libraries' names, and p2p: that of alltoall, sendrecv, gather and
#: scatter, as the algo column prints it); the source refuses what an op or a platform does not run (nvls without an NVLS switch).
ALGOS = ("auto", "ring", "tree", "nvls", "hierarchical", "p2p")
PROTOS = ("auto", "LL", "LL128", "Simple")
#: The module the collectives come from, for the printed header: a table says which ones made it.
SOURCE = build_collective.__module__
