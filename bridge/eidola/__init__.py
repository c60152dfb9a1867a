"""Eidola-TLM: multi-GPU communication traffic of AI workloads, simulated in SystemC TLM-2.0.

Eidolon GPUs replay annotated timing profiles over real TLM-2.0 transactions through a fabric
model; Python assembles platforms from YAML, and C++ simulates.
"""

from . import models
from .errors import ConfigError, DeadlockError, EidolaError, ProfileError, SimulationCrashed, SimulationError
from .platform import Component, Platform, load_platform
from .profile import Profile, ProfileBuilder, load_profile
from .result import Result
from .simulate import simulate

__all__ = [
    "Component", "ConfigError", "DeadlockError", "EidolaError", "Platform", "Profile", "ProfileBuilder",
    "ProfileError", "Result", "SimulationCrashed", "SimulationError", "load_platform", "load_profile", "models",
    "simulate",
]
__version__ = "0.1.0"
