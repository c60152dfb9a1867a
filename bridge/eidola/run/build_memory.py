"""Building a workload in this process under ``limits.memory``, as the simulation's child runs under it.

A collective's profile is built in the calling process (`eidola perf`, a sweep's points), before any child
exists: at 1,024 GPUs and 16 GiB NCCL's all-reduce is hundreds of millions of ops, and an architect's trial
(2026-12-07, rail-16gpu) ran the host out of memory there (24.4 GB) with nothing said. `building_within`
caps the process's address space for the build at what it holds now plus the limit, so a build past it fails
its allocation, and that is reported as MemoryLimitExceeded naming the limit; the cap is lifted afterwards.
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import MemoryLimitExceeded
from ..platform import memory

__all__ = ["address_space", "building_within"]


def address_space() -> int | None:
    """This process's address space now, in bytes (None without /proc)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError):
        return None


@contextmanager
def building_within(limit_b: int, what: str) -> Iterator[None]:
    """Runs the body with at most `limit_b` bytes more address space than the process has now (the soft
    RLIMIT_AS, restored after); a failed allocation in it raises MemoryLimitExceeded naming `what` and the limit.

    Why on top of the current size: the process has mapped cppyy, LLVM and the models (gigabytes of address
    space, mostly untouched); what the build may take is what comes after. Where the cap cannot be set (no
    /proc, or a lower limit already), or where other threads run (a Dask worker's: the cap is the whole process's, and
    two builds' saves and restores could cross and leave it set), the body runs as it is.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    now = address_space()
    cap = None if now is None or limit_b <= 0 or threading.active_count() > 1 else now + limit_b
    if cap is not None and ((soft != resource.RLIM_INFINITY and soft <= cap) or
                            (hard != resource.RLIM_INFINITY and hard < cap)):
        cap = None
    if cap is not None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    failed = False
    try:
        yield
    except MemoryError:
        # Only noted here: the cap still stands, and the error's text and the handlers above need memory. Leaving
        # the clause also lets go of the traceback, and with it the half-built workload.
        failed = True
    finally:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    if failed:
        raise MemoryLimitExceeded(
            f"{what}: building it needed more than limits.memory = {memory.format_bytes(limit_b)} (raise "
            "limits.memory, or simulate fewer GPUs or a smaller size)", report={"limit": "memory", "memory_b": limit_b})
