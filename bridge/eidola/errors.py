"""Exception types. Each names where the problem is; the CLI maps them to exit statuses."""

from typing import Any

__all__ = ["EidolaError", "ConfigError", "ProfileError", "SimulationError", "DeadlockError", "SimulationCrashed",
           "WallLimitExceeded"]


class EidolaError(Exception):
    """Base class of every error this package raises on purpose."""

    exit_status = 1


class ConfigError(EidolaError):
    """Bad input: a platform file, key, unit, value or socket that is not what was expected (exit status 2)."""

    exit_status = 2


class ProfileError(ConfigError):
    """A timing profile that is malformed; the message names the file, gpu/wg/op index and the problem."""


class SimulationError(EidolaError):
    """The simulation ran but could not finish correctly (exit status 3); `report` holds the details."""

    exit_status = 3

    def __init__(self, message: str, report: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = report


class DeadlockError(SimulationError):
    """Workgroups wait on flags that no pending write can change; `report` lists each stuck workgroup."""


class SimulationCrashed(SimulationError):
    """The child process running the simulation died (abort, segfault) instead of returning a result."""


class WallLimitExceeded(SimulationError):
    """The simulation ran past its wall-time limit (``timeout``, ``--timeout`` or ``limits.wall``) and was killed."""
