"""Large arrays on ordinary 4 KiB pages: numpy's request for huge pages made a profile's big arrays slow to fill.

numpy asks the kernel (``madvise(MADV_HUGEPAGE)``) to back every array of 4 MiB or more with 2 MiB
transparent huge pages. Where the kernel's THP ``defrag`` setting is ``madvise`` (a common default),
a first touch of such an array compacts memory whenever free 2 MiB blocks are short. Measured on the
2-core development machine (bench/RESULTS.md, "Issue 28: the parent's Python"): filling a fresh
711 MB array took 2.5 to 3.7 s with the request and 0.4 s without it. A profile's big arrays (its
rows, the encoded op records) are written once and read a few times, so what huge pages save in
TLB misses does not pay that back. `small_pages` turns the request off while a function runs and
restores what it was, so a program that imports eidola keeps numpy's setting for its own arrays.
The values in the arrays are the same either way.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["small_pages"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _find_switch() -> Callable[[bool], bool] | None:
    """numpy's switch of the huge-page request: private (numpy 2 has it in numpy._core, numpy 1 in numpy.core;
    the documented NUMPY_MADVISE_HUGEPAGE sets the same flag at import), so None where a numpy lacks it."""
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        switch = getattr(module, "_set_madvise_hugepage", None)
        if callable(switch):
            return cast(Callable[[bool], bool], switch)
    return None


_set_madvise = _find_switch()


def small_pages(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """`fn` with numpy's huge-page request off while it runs (arrays it allocates get 4 KiB pages)."""
    if _set_madvise is None:  # pragma: no cover - a numpy without the switch
        return fn
    switch = _set_madvise

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> _R:
        before = switch(False)
        try:
            return fn(*args, **kwargs)
        finally:
            switch(before)

    return wrapper
