"""The profile builder API (``from eidola.profile import ProfileBuilder``); it lives in `eidola.workload`."""

from .workload.builder import ProfileBuilder, ProgramBuilder, ProgramSet
from .workload.ops import Op
from .workload.profile import FORMAT_VERSION, Profile
from .workload.profile_yaml import load_profile

__all__ = ["FORMAT_VERSION", "Op", "Profile", "ProfileBuilder", "ProgramBuilder", "ProgramSet", "load_profile"]
