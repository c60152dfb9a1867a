"""Where ``eidola perf`` gets its collectives: ``build_collective(platform, op, nbytes, gpus, algo, proto,
channels) -> (Profile, Plan)``, and the names ``OPS`` and ``Plan`` that go with it.

Every other module of ``eidola perf`` imports them from here only. For now they come from the
textbook collectives (`perf_textbook`); at the merge of issue 26 the lead replaces the import
line below ``# the source`` by ``from ..workload.nccl import OPS, Plan, build_collective``, the
collectives as NCCL and RCCL run them (same signature, same results' types). The printed header
names the module they came from (`SOURCE`).
"""

from __future__ import annotations

# the source
from .perf_textbook import OPS, Plan, build_collective

__all__ = ["OPS", "ALGOS", "PROTOS", "Plan", "build_collective", "SOURCE"]

#: What ``--algo`` and ``--proto`` may say (the libraries' names); a source may refuse some of them.
ALGOS = ("auto", "ring", "tree", "nvls")
PROTOS = ("auto", "LL", "LL128", "Simple")
#: The module the collectives come from, for the printed header: a table says which ones made it.
SOURCE = build_collective.__module__
