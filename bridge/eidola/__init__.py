"""Eidola-TLM: multi-GPU communication traffic of AI workloads, simulated in SystemC TLM-2.0.

Eidolon GPUs replay annotated timing profiles over real TLM-2.0 transactions through a fabric
model; Python assembles platforms from YAML, and C++ simulates. The package is in rooms by
concern: `platform` (models, components, YAML, elaboration into a Plan), `workload` (profiles,
builder, generators, importers), `run` (encoding, the native bridge, simulate, Result) and
`report` (figures, trace); see docs/architecture.md.
"""

from . import models
from .errors import ConfigError, DeadlockError, EidolaError, ProfileError, SimulationCrashed, SimulationError, WallLimitExceeded
from .platform import Component, Platform, load_platform
from .run.result import Result
from .run.simulate import simulate
from .run.sweep import sweep
from .workload.builder import ProfileBuilder
from .workload.flag_check import StuckWaitWarning
from .workload.profile import Profile
from .workload.profile_yaml import load_profile

__all__ = [
    "Component", "ConfigError", "DeadlockError", "EidolaError", "Platform", "Profile", "ProfileBuilder",
    "ProfileError", "Result", "SimulationCrashed", "SimulationError", "StuckWaitWarning", "WallLimitExceeded", "load_platform",
    "load_profile", "models", "simulate", "sweep",
]
__version__ = "0.1.0"

#: Submodules reached as attributes of ``eidola`` (``eidola.generators.ring_allreduce``) although
#: ``import eidola`` does not import them: each is imported on first use, so its cost (and its
#: dependencies') is paid only by the programs that use it.
_LAZY = ("generators", "profile")


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'eidola' has no attribute {name!r}")
