"""Value checks for profiles, and the scope ops are checked against (GPU count, flags, buffers).

Checks raise `Invalid` with what is wrong; the caller prefixes where it happened (the gpu, wg and
op index, or the file), so one message names both.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ops import Op

__all__ = ["Invalid", "Scope", "check_int", "check_num", "check_ns", "check_choice", "check_name", "check_header", "NAME",
           "I64_MIN", "I64_MAX", "MAX_NS", "MAX_CYCLES", "MAX_GPUS", "MAX_WORKGROUPS"]

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")  #: flag and buffer names
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
#: The longest time one op may give (a compute phase, a poll interval, a delay), in ns: about 28 hours.
#: Times reach C++ as 64-bit picoseconds, and a wait's back-off may grow to 16 x its interval, so
#: this keeps every derived time far inside int64.
MAX_NS = 10**14
#: The most cycles one compute op may take: at the slowest declared clock (1 MHz) still inside int64 ps.
MAX_CYCLES = 10**12
MAX_GPUS = 2**20        #: the most GPUs a profile may address (the models' own limit on GPU ids)
MAX_WORKGROUPS = 2**20  #: the most workgroups per GPU a profile may use (EidolonGpu's limit)


class Invalid(Exception):
    """A problem found by a checker; the caller prefixes it with where it happened."""


def check_int(name: str, v: object, lo: int = 0, hi: int = I64_MAX) -> int:
    if type(v) is not int:
        # bool is an int subclass but a True offset is always a mistake; numpy ints are fine.
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise Invalid(f"{name} must be an int, got {type(v).__name__} {v!r}")
        v = int(v)
    if v < lo or v > hi:
        raise Invalid(f"{name} {v} is out of range (expected {lo} <= {name} <= {hi})")
    return v


def check_num(name: str, v: object, positive: bool = False, hi: float = math.inf) -> int | float:
    if type(v) is not int and type(v) is not float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise Invalid(f"{name} must be a number, got {type(v).__name__} {v!r}")
        v = int(v) if isinstance(v, numbers.Integral) else float(v)
    if type(v) is float and not math.isfinite(v):
        raise Invalid(f"{name} must be finite, got {v!r}")
    if v < 0 or (positive and v == 0):
        raise Invalid(f"{name} must be {'> 0' if positive else '>= 0'}, got {v!r}")
    if v > hi:
        raise Invalid(f"{name} {v!r} is out of range (expected {name} <= {hi:g})")
    return v


_NS_PER = {"s": "1e9", "ms": "1e6", "us": "1e3", "µs": "1e3", "ns": "1", "ps": "1e-3", "fs": "1e-6"}
_TIME_TEXT = re.compile(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([a-zµ]+)\s*")


def check_ns(name: str, v: object, positive: bool = False, hi: float = math.inf) -> int | float:
    """A time in ns: a number (nanoseconds, as the key's name says) or a string with its unit
    (``"1us"``, ``"250ps"``), as platform files write times. Whole nanoseconds come back as an int,
    so a profile written back says ``ns: 1000`` for ``ns: 1us``."""
    if isinstance(v, str):
        from decimal import Decimal, InvalidOperation

        m = _TIME_TEXT.fullmatch(v)
        if not m or m[2] not in _NS_PER:
            raise Invalid(f"{name} {v!r} is not a time: expected a number of ns or a time with its unit, "
                          f"e.g. 1500 or '1.5us' (units: {', '.join(_NS_PER)})")
        try:
            exact = Decimal(m[1]) * Decimal(_NS_PER[m[2]])
        except InvalidOperation:
            raise Invalid(f"{name} {v!r} is not a time") from None
        v = int(exact) if exact == exact.to_integral_value() else float(exact)
    return check_num(name, v, positive, hi)


def check_choice(name: str, v: Any, allowed: Collection[str]) -> str:
    if type(v) is not str or v not in allowed:
        raise Invalid(f"{name} {v!r} is not one of {', '.join(allowed)}")
    return v


def check_name(what: str, v: Any) -> str:
    if type(v) is not str or not NAME.fullmatch(v):
        raise Invalid(f"{what} name {v!r} is invalid (expected [A-Za-z_][A-Za-z0-9_.]*)")
    return v


class Scope:
    """What ops are checked against: GPU count, declared flags and buffers, and an op intern table."""

    def __init__(self, gpus: int) -> None:
        self.gpus = gpus
        self.flags: dict[str, int] = {}
        self.buffers: dict[str, int] = {}
        self.groups: dict[str, tuple[int, ...]] = {}  # multicast groups: name -> member GPUs
        self.interned: dict[Op, Op] = {}
        self.pairs: dict[tuple[str, Any], tuple[str, Any]] = {}  # (name, value) -> the one shared tuple
        self.memo: dict[int, Op] = {}  # the loader's: id(raw op) -> Op (the builder keeps its own in _Store)

    def declare_flag(self, name: Any) -> None:
        check_name("flag", name)
        if name in self.flags or name in self.buffers:
            raise Invalid(f"flag {name!r} is already declared as a {'flag' if name in self.flags else 'buffer'}")
        self.flags[name] = len(self.flags)

    def declare_buffer(self, name: Any, nbytes: Any) -> None:
        check_name("buffer", name)
        if name in self.flags or name in self.buffers:
            raise Invalid(f"buffer {name!r} is already declared as a {'flag' if name in self.flags else 'buffer'}")
        self.buffers[name] = check_int(f"buffer {name!r} nbytes", nbytes, lo=1)

    def declare_group(self, name: Any, gpus: Any) -> None:
        """Declares multicast group `name` of member GPUs `gpus` (at least two, distinct, each < the GPU count)."""
        check_name("multicast group", name)
        if name in self.groups:
            raise Invalid(f"multicast group {name!r} is already declared")
        if isinstance(gpus, (str, bytes)) or not hasattr(gpus, "__iter__"):
            raise Invalid(f"multicast group {name!r}: gpus must be a list of GPU indices, got {gpus!r}")
        members = tuple(check_int(f"multicast group {name!r} gpu", g, lo=0) for g in gpus)
        if len(members) < 2:
            raise Invalid(f"multicast group {name!r}: needs at least two GPUs, got {list(members)}")
        for g in members:
            if g >= self.gpus:
                raise Invalid(f"multicast group {name!r}: gpu {g} is out of range (expected 0 <= gpu < {self.gpus})")
        if len(set(members)) != len(members):
            twice = next(g for g in members if members.count(g) > 1)
            raise Invalid(f"multicast group {name!r}: gpu {twice} is listed twice (members must be distinct)")
        self.groups[name] = members

    def group(self, v: Any) -> str:
        if type(v) is not str or v not in self.groups:
            raise Invalid(f"multicast group {v!r} is not declared (declared: {', '.join(self.groups) or 'none'})")
        return v

    def dst(self, v: object) -> int:
        v = check_int("dst", v, lo=I64_MIN)
        if not 0 <= v < self.gpus:
            raise Invalid(f"dst {v} is out of range (expected 0 <= dst < {self.gpus})")
        return v

    def flag(self, v: Any) -> str:
        if type(v) is not str or v not in self.flags:
            raise Invalid(f"flag {v!r} is not declared (declared: {', '.join(self.flags) or 'none'})")
        return v

    def buffer(self, v: Any) -> int:
        if type(v) is not str or v not in self.buffers:
            raise Invalid(f"buffer {v!r} is not declared (declared: {', '.join(self.buffers) or 'none'})")
        return self.buffers[v]

    def pair(self, name: str, value: Any) -> tuple[str, Any]:
        """One shared (name, value) tuple per distinct argument."""
        key = (name, value)
        return self.pairs.setdefault(key, key)

    def intern(self, op: Op) -> Op:
        # Many ops repeat across workgroups; sharing one object saves memory and speeds up saving.
        return self.interned.setdefault(op, op)


def check_header(name: Any, gpus: Any, workgroups: Any) -> None:
    if type(name) is not str or not name:
        raise Invalid(f"name must be a non-empty string, got {name!r}")
    check_int("gpus", gpus, lo=1, hi=MAX_GPUS)
    check_int("workgroups", workgroups, lo=1, hi=MAX_WORKGROUPS)


