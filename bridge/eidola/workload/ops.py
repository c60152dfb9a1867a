"""The op kinds of a workgroup program: one table of their arguments, defaults and checks.

`OP_KINDS` is the single source of what each op takes: the builder's methods
(`ProgramBuilder.write(...)`), the YAML reader's argument checks and the writer's "leave out
what is default" rule are all made from it. Each kind's checker validates a full argument list
(defaults already filled in) and returns the interned `Op`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..platform import catalog
from .checks import I64_MIN, MAX_CYCLES, MAX_NS, Invalid, Scope, check_choice, check_int, check_ns

__all__ = ["Op", "OpKind", "OP_KINDS", "REQUIRED", "CONDS", "WAIT_MODES", "SIGNAL_OPS", "PUT_OPS", "WAKES",
           "RELEASE_SCOPES", "LINE_FORMATS", "MULTIMEM_KINDS", "explicit_args", "op_method"]

# The value sets shared with C++ are declared there (program.h) and read through the catalog.
CONDS = catalog.enum("cond")            #: wait conditions, in the order of the C++ enum Cond
WAIT_MODES = catalog.enum("wait_mode")  #: how a workgroup waits (the C++ enum WaitMode)
SIGNAL_OPS = catalog.enum("atomic")     #: atomics of a signal (the C++ enum AtomicOp)
PUT_OPS = ("add", "set")                #: atomics a put's landing flag may apply (no cas: nothing to compare)
#: Wire line formats of the flag-in-data protocols: name -> (line bytes, payload bytes per line). A
#: generator sizes a put's nbytes as whole lines: wire = ceil(data / payload) x line (LL: 50% payload,
#: LL128: 120/128 = 93.75%, RCCL's LL128: 56/64 = 87.5%).
LINE_FORMATS = {"LL": (16, 8), "LL128": (128, 120), "LL128_rccl": (64, 56)}
MULTIMEM_KINDS = ("multicast", "reduce_load")  #: op kinds served by an NVLS switch (multimem accesses)
WAKES = ("all", "one")                                #: SyncMon wakes every waiter, or one
RELEASE_SCOPES = catalog.enum("release_scope")  #: which earlier writes a signal waits for (C++ ReleaseScope)
REQUIRED: Any = object()  #: marks an argument without a default
MAX_INTERVAL_FACTOR = 16  #: spin-yield backs off to this many poll intervals unless told otherwise


@dataclass(frozen=True, slots=True)
class Op:
    """One op of a workgroup program: its kind and every argument, defaults filled in."""

    kind: str
    args: tuple[tuple[str, Any], ...]

    def __getitem__(self, key: str) -> Any:
        """Return the value of argument `key` (KeyError if the kind has no such argument)."""
        for name, value in self.args:
            if name == key:
                return value
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """Return the value of argument `key`, or `default` if the kind has no such argument."""
        for name, value in self.args:
            if name == key:
                return value
        return default

    def as_dict(self) -> dict[str, Any]:
        """Return the arguments as a dict in signature order."""
        return dict(self.args)


def _compute(s: Scope, ns: Any, cycles: Any) -> Op:
    if (ns is None) == (cycles is None):
        raise Invalid(f"exactly one of ns or cycles is required (got {'both' if ns is not None else 'neither'})")
    if ns is not None:
        ns = check_ns("ns", ns, hi=MAX_NS)
    else:
        cycles = check_int("cycles", cycles, hi=MAX_CYCLES)
    return s.intern(Op("compute", (("ns", ns), ("cycles", cycles))))


def _span(s: Scope, buffer: Any, offset: Any, nbytes: Any) -> tuple[int, int]:
    """The checked (offset, nbytes) of an access to `buffer`: both ints, and inside the buffer."""
    size = s.buffer(buffer)
    offset = check_int("offset", offset)
    nbytes = check_int("nbytes", nbytes, lo=1)
    if offset + nbytes > size:
        raise Invalid(f"offset {offset} + nbytes {nbytes} = {offset + nbytes} exceeds buffer {buffer!r} size {size}")
    return offset, nbytes


def _transfer(kind: str, s: Scope, dst: Any, buffer: Any, offset: Any, nbytes: Any,
              extra: tuple[tuple[str, Any], ...] = ()) -> Op:
    dst = s.dst(dst)
    offset, nbytes = _span(s, buffer, offset, nbytes)
    # Interned: large profiles repeat the same transfer (and the same argument pairs) across GPUs
    # and workgroups, so sharing the objects keeps a 1,024-GPU profile's memory down.
    return s.intern(Op(kind, tuple(s.pair(n, v) for n, v in
                                   (("dst", dst), ("buffer", buffer), ("offset", offset), ("nbytes", nbytes), *extra))))


def _write(s: Scope, dst: Any, buffer: Any, offset: Any, nbytes: Any, blocking: Any) -> Op:
    if type(blocking) is not bool:
        raise Invalid(f"blocking must be true or false, got {blocking!r}")
    return _transfer("write", s, dst, buffer, offset, nbytes, (("blocking", blocking),))


def _read(s: Scope, dst: Any, buffer: Any, offset: Any, nbytes: Any) -> Op:
    return _transfer("read", s, dst, buffer, offset, nbytes)


def _signal(s: Scope, dst: Any, flag: Any, op: Any, value: Any, compare: Any, scope: Any, overlap: Any) -> Op:
    dst = s.dst(dst)
    flag = s.flag(flag)
    op = check_choice("op", op, SIGNAL_OPS)
    value = check_int("value", value, lo=I64_MIN)
    if op == "cas":
        if compare is None:
            raise Invalid("op 'cas' requires compare (an int)")
        compare = check_int("compare", compare, lo=I64_MIN)
    elif compare is not None:
        raise Invalid(f"compare is only allowed with op 'cas' (got op {op!r})")
    scope = check_choice("scope", scope, RELEASE_SCOPES)
    if type(overlap) is not bool:
        raise Invalid(f"overlap must be true or false, got {overlap!r}")
    return s.intern(Op("signal", (("dst", dst), ("flag", flag), ("op", op), ("value", value), ("compare", compare),
                                  ("scope", scope), ("overlap", overlap))))


def _put(s: Scope, dst: Any, buffer: Any, offset: Any, nbytes: Any, flag: Any, value: Any, op: Any) -> Op:
    flag = s.flag(flag)
    value = check_int("value", value, lo=I64_MIN)
    op = check_choice("op", op, PUT_OPS)
    return _transfer("put", s, dst, buffer, offset, nbytes, (("flag", flag), ("value", value), ("op", op)))


def _multimem(kind: str, s: Scope, group: Any, buffer: Any, offset: Any, nbytes: Any) -> Op:
    group = s.group(group)
    offset, nbytes = _span(s, buffer, offset, nbytes)
    return s.intern(Op(kind, tuple(s.pair(n, v) for n, v in
                                   (("group", group), ("buffer", buffer), ("offset", offset), ("nbytes", nbytes)))))


def _multicast(s: Scope, group: Any, buffer: Any, offset: Any, nbytes: Any) -> Op:
    return _multimem("multicast", s, group, buffer, offset, nbytes)


def _reduce_load(s: Scope, group: Any, buffer: Any, offset: Any, nbytes: Any) -> Op:
    return _multimem("reduce_load", s, group, buffer, offset, nbytes)


def _fence(s: Scope) -> Op:
    return s.intern(Op("fence", ()))


def _wait(s: Scope, flag: Any, cond: Any, value: Any, mode: Any, interval_ns: Any, max_interval_ns: Any,
          wake: Any) -> Op:
    flag = s.flag(flag)
    cond = check_choice("cond", cond, CONDS)
    value = check_int("value", value, lo=I64_MIN)
    mode = check_choice("mode", mode, WAIT_MODES)
    interval_ns = check_ns("interval_ns", interval_ns, positive=True, hi=MAX_NS)
    if max_interval_ns is None:
        max_interval_ns = MAX_INTERVAL_FACTOR * interval_ns
    else:
        max_interval_ns = check_ns("max_interval_ns", max_interval_ns, positive=True, hi=MAX_INTERVAL_FACTOR * MAX_NS)
        if max_interval_ns < interval_ns:
            raise Invalid(f"max_interval_ns {max_interval_ns!r} must be >= interval_ns {interval_ns!r}")
    wake = check_choice("wake", wake, WAKES)
    return s.intern(Op("wait", (("flag", flag), ("cond", cond), ("value", value), ("mode", mode),
                                ("interval_ns", interval_ns), ("max_interval_ns", max_interval_ns), ("wake", wake))))


def _local(s: Scope, reads: Any, writes: Any, nbytes: Any) -> Op:
    reads = check_int("reads", reads)
    writes = check_int("writes", writes)
    nbytes = check_int("nbytes", nbytes, lo=1)
    if reads + writes < 1:
        raise Invalid("reads + writes must be >= 1 (got 0)")
    return s.intern(Op("local", (("reads", reads), ("writes", writes), ("nbytes", nbytes))))





@dataclass(frozen=True)
class OpKind:
    """One kind of op: its arguments in order with their defaults, its checker and its doc."""

    name: str                          #: "compute", "write", ...
    args: tuple[tuple[str, Any], ...]  #: (argument, default or REQUIRED), in signature order
    check: Callable[..., Op]           #: check(scope, *every argument) -> the interned Op; raises Invalid
    doc: str                           #: what the op does (the builder method's docstring)

    @property
    def names(self) -> frozenset[str]:
        """Every argument name."""
        return frozenset(n for n, _ in self.args)

    @property
    def required(self) -> tuple[str, ...]:
        """The arguments without a default."""
        return tuple(n for n, d in self.args if d is REQUIRED)

    def build(self, scope: Scope, given: dict[str, Any]) -> Op:
        """Checks `given` (a subset of the arguments, by name) with defaults filled in; Invalid if wrong."""
        return self.check(scope, *(given.get(n, d) for n, d in self.args))


OP_KINDS: dict[str, OpKind] = {k.name: k for k in (
    OpKind("compute", (("ns", None), ("cycles", None)), _compute,
           "Busy the workgroup for `ns` nanoseconds or `cycles` GPU cycles (exactly one)."),
    OpKind("write", (("dst", REQUIRED), ("buffer", REQUIRED), ("offset", REQUIRED), ("nbytes", REQUIRED),
                     ("blocking", False)), _write,
           "Write `nbytes` at `offset` into GPU `dst`'s copy of `buffer`. Posted, as a GPU store: the workgroup goes on "
           "once the packets are issued (within max_outstanding); `blocking=True` waits for every acknowledgement."),
    OpKind("read", (("dst", REQUIRED), ("buffer", REQUIRED), ("offset", REQUIRED), ("nbytes", REQUIRED)), _read,
           "Read `nbytes` at `offset` from GPU `dst`'s copy of `buffer`."),
    OpKind("signal", (("dst", REQUIRED), ("flag", REQUIRED), ("op", "add"), ("value", 1), ("compare", None),
                      ("scope", "workgroup"), ("overlap", False)), _signal,
           "Atomically add/set/compare-and-swap GPU `dst`'s copy of `flag`, as a release: it is issued once every "
           "earlier write of the workgroup is acknowledged (`scope='peer'`: only earlier writes to `dst`). Posted. "
           "`overlap=True`: the workgroup goes on while the release waits (held releases go out in program order)."),
    OpKind("put", (("dst", REQUIRED), ("buffer", REQUIRED), ("offset", REQUIRED), ("nbytes", REQUIRED),
                   ("flag", REQUIRED), ("value", 1), ("op", "add")), _put,
           "Write `nbytes` wire bytes at `offset` into GPU `dst`'s copy of `buffer`, carrying its own flag (NCCL's "
           "LL/LL128 protocols): once every byte has landed in `dst`'s memory, `dst`'s copy of `flag` is atomically "
           "`op` ('add' or 'set') `value`, waking waiters as any flag update does. Posted and no release: it waits "
           "for no earlier acknowledgement (a later fence or signal waits for its own). `nbytes` counts wire bytes: "
           "LL lines are 16 B carrying 8 B of data (50%), LL128 128 B carrying 120 B (93.75%; RCCL 64 B carrying "
           "56 B, 87.5%)."),
    OpKind("multicast", (("group", REQUIRED), ("buffer", REQUIRED), ("offset", REQUIRED), ("nbytes", REQUIRED)),
           _multicast,
           "NVLink SHARP multimem.st: write `nbytes` at `offset` into `buffer` of every member of multicast group "
           "`group` (the issuer's own copy too when it is a member: multimem.st writes every member): one store "
           "to the switch, which sends a copy to each member. Posted, as a write; each packet is "
           "acknowledged once every member has its copy, so a later fence or (workgroup-scope) signal covers all "
           "the copies. Needs a fabric with fabric.switch.nvls."),
    OpKind("reduce_load", (("group", REQUIRED), ("buffer", REQUIRED), ("offset", REQUIRED), ("nbytes", REQUIRED)),
           _reduce_load,
           "NVLink SHARP multimem.ld_reduce: read the sum over every member of multicast group `group` of their "
           "`nbytes` at `offset` in `buffer`: the switch reads each member's copy, sums them and answers with one "
           "response of `nbytes`. Blocks as a read does: its packets are pipelined up to gpus.max_outstanding and "
           "the workgroup goes on when the last answer is in. Needs a fabric with fabric.switch.nvls."),
    OpKind("fence", (), _fence,
           "Wait until every earlier write and signal of this workgroup is acknowledged."),
    OpKind("wait", (("flag", REQUIRED), ("cond", REQUIRED), ("value", REQUIRED), ("mode", "poll"), ("interval_ns", 100),
                    ("max_interval_ns", None), ("wake", "all")), _wait,
           "Block until the local copy of `flag` satisfies `flag <cond> value` (max_interval_ns defaults to "
           f"{MAX_INTERVAL_FACTOR} x interval_ns)."),
    OpKind("local", (("reads", 0), ("writes", 0), ("nbytes", 64)), _local,
           "Issue `reads` and `writes` local memory accesses of `nbytes` each."),
)}


def op_method(kind: OpKind, owner: str, doc: str) -> Callable[..., Any]:
    """A method `owner.<kind>` with the op's real signature (so help() and keyword errors are right) that
    returns `self._add(kind, *args)`; made once per op kind by the builders that generate their op methods."""
    params = ", ".join(n if d is REQUIRED else f"{n}=_defaults[{n!r}]" for n, d in kind.args)
    names = "".join(f"{n}, " for n, _ in kind.args)
    namespace: dict[str, Any] = {"_defaults": dict(kind.args)}
    exec(f"def {kind.name}(self, {params}):\n    return self._add({kind.name!r}, {names})\n", namespace)
    method: Callable[..., Any] = namespace[kind.name]
    method.__doc__ = doc
    method.__qualname__ = f"{owner}.{kind.name}"
    return method


def explicit_args(op: Op) -> dict[str, Any]:
    """The arguments of `op` that differ from their defaults (what a file needs to write)."""
    out: dict[str, Any] = {}
    for (name, value), (_, default) in zip(op.args, OP_KINDS[op.kind].args):
        if value is None or (value == default and type(value) is type(default)):
            continue
        if name == "max_interval_ns":  # its default is relative to interval_ns
            implied = MAX_INTERVAL_FACTOR * op["interval_ns"]
            if value == implied and type(value) is type(implied):
                continue
        out[name] = value
    return out
