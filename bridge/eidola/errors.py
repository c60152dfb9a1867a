"""Exception types. Each names where the problem is; the CLI maps them to exit statuses."""

from typing import Any

__all__ = ["shown", "cut", "SHOWN_CHARS", "MemoryLimitExceeded",
           "EidolaError", "ConfigError", "ProfileError", "SimulationError", "DeadlockError", "SimulationCrashed",
           "WallLimitExceeded"]


SHOWN_CHARS = 80  #: the longest echo of an input value in an error message


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as an error message echoes it: its repr, cut to `limit` characters with an ellipsis.

    Why: a message quotes what the user wrote so they can find it; a 5,000-character value quoted
    whole buries the message (and the file, key and expectation it names) under itself.
    """
    return cut(repr(value), limit)


def cut(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` cut to `limit` characters with an ellipsis and its full length (shown() of a rendered value)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit - 1]}\u2026 ({len(text)} characters)"


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

    def __init__(self, message: str, report: dict[str, Any] | None = None, result: Any = None) -> None:
        super().__init__(message)
        self.report = report
        #: the run's tables up to the failure (a Result marked partial, its meta["failure"] the error), where the
        #: simulation returned them: what `eidola run` writes to its output directory for debugging
        self.result = result


class DeadlockError(SimulationError):
    """Workgroups wait on flags that no pending write can change; `report` lists each stuck workgroup."""


class SimulationCrashed(SimulationError):
    """The child process running the simulation died (abort, segfault) instead of returning a result."""


class WallLimitExceeded(SimulationError):
    """The simulation ran past its wall-time limit (``timeout``, ``--timeout`` or ``limits.wall``) and was killed."""


class MemoryLimitExceeded(SimulationError):
    """The simulation needed more memory than ``limits.memory`` allows and was stopped."""
