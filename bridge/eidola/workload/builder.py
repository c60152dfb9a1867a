"""The profile builder: declare flags and buffers, then append ops to each workgroup's program.

``ProfileBuilder(gpus, workgroups)`` hands out one `ProgramBuilder` per (gpu, wg); its op methods
(compute, write, read, signal, wait, local) are made from the op table (`ops.OP_KINDS`), and each
checks its op at once, so a ProfileError names the gpu, wg and op index.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np

from ..errors import ProfileError
from .checks import Invalid, Scope, check_header, check_int
from .ops import OP_KINDS, REQUIRED, OpKind
from .profile import Profile
from .table import ROW, OpTable, Signal, Template, Transfer
from .variability import Delay, Distribution, Variability, check_new_delay, make_delay, make_distribution

__all__ = ["ProfileBuilder", "ProgramBuilder"]


class _Store:
    """What every ProgramBuilder of one profile appends against: templates and the memos that find them.

    Each op becomes one row (ref, dst, offset, nbytes) of int64s in its program's array (see
    `table`); `ref` numbers the op's template. A write or read is checked in full the first time
    its (kind, buffer, blocking) is seen; after that, `transfers` holds its ref and the buffer's size,
    so the builder's fast path checks the per-op values inline with the same bounds.
    """

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.templates: list[Template] = []
        self.refs: dict[Template, int] = {}
        self.memo: dict[Hashable, int] = {}  # (kind, args, arg types) -> ref of a non-transfer op
        self.signals: dict[tuple[Any, ...], int] = {}  # (flag, op, value, compare, scope, their types) -> ref
        self.transfers: dict[tuple[str, str, bool | None], tuple[int, int]] = {}  # -> (ref, buffer size)

    def ref(self, t: Template) -> int:
        """The number of template `t` (equal templates share one)."""
        r = self.refs.get(t)
        if r is None:
            r = self.refs[t] = len(self.templates)
            self.templates.append(t)
        return r


class ProgramBuilder:
    """Appends ops to one workgroup's program; each method checks its op at once and returns the builder."""

    def op_count(self) -> int:
        """How many ops the program has so far (not __len__: an empty builder must stay truthy)."""
        return len(self._rows) // ROW

    def __init__(self, store: _Store, gpu: int, wg: int) -> None:
        self._store = store
        self._scope = store.scope
        self._gpus = store.scope.gpus
        self._transfers = store.transfers
        self.gpu = gpu
        self.wg = wg
        self._rows = array("q")  # ROW int64s per op (see table.py)

    def write(self, dst: Any, buffer: Any, offset: Any, nbytes: Any, blocking: Any = False) -> Self:
        # Arguments are Any, as in the generated methods: every value is checked here, bad ones
        # become a ProfileError naming gpu, wg and op index.
        # The hot path of large profiles: a write to a buffer seen before, with plain int arguments,
        # is checked inline (the same bounds as ops._transfer); anything else takes the full check.
        found = self._transfers.get(("write", buffer, blocking)) if type(buffer) is str and type(blocking) is bool \
            else None
        if (found is not None and type(dst) is int and type(offset) is int and type(nbytes) is int
                and 0 <= dst < self._gpus and offset >= 0 and nbytes >= 1 and offset + nbytes <= found[1]):
            self._rows.extend((found[0], dst, offset, nbytes))
            return self
        return self._add("write", dst, buffer, offset, nbytes, blocking)

    def read(self, dst: Any, buffer: Any, offset: Any, nbytes: Any) -> Self:
        found = self._transfers.get(("read", buffer, None)) if type(buffer) is str else None
        if (found is not None and type(dst) is int and type(offset) is int and type(nbytes) is int
                and 0 <= dst < self._gpus and offset >= 0 and nbytes >= 1 and offset + nbytes <= found[1]):
            self._rows.extend((found[0], dst, offset, nbytes))
            return self
        return self._add("read", dst, buffer, offset, nbytes)

    def signal(self, dst: Any, flag: Any, op: Any = "add", value: Any = 1, compare: Any = None,
               scope: Any = "workgroup") -> Self:
        # A collective signals each (peer, flag) once: keyed without dst, the check runs once per
        # distinct signal body and the dst is checked inline (ops._signal's bounds).
        if type(dst) is int and 0 <= dst < self._gpus and type(value) is int and (compare is None or type(compare) is int):
            try:
                ref = self._store.signals.get((flag, op, value, compare, scope, type(flag), type(op), type(scope)))
            except TypeError:  # unhashable: the full check reports it
                ref = None
            if ref is not None:
                self._rows.extend((ref, dst, 0, 0))
                return self
        return self._add("signal", dst, flag, op, value, compare, scope)

    def _add(self, kind: str, *args: Any) -> Self:
        # Most non-transfer ops repeat verbatim across workgroups: check each distinct one once.
        # Types are part of the key so that True (rejected) never hits the entry made for 1.
        store = self._store
        key: Hashable | None = None
        if kind not in ("write", "read", "signal"):
            try:
                key = (kind, args, tuple(map(type, args)))
                ref = store.memo.get(key)
            except TypeError:  # an unhashable argument; the checker will reject it
                key = ref = None
            if ref is not None:
                self._rows.extend((ref, 0, 0, 0))
                return self
        try:
            op = OP_KINDS[kind].check(self._scope, *args)
        except Invalid as e:
            raise ProfileError(f"gpu {self.gpu} wg {self.wg} op {len(self._rows) // ROW} ({kind}): {e}") from None
        if kind in ("write", "read"):
            (_, dst), (_, buffer), (_, offset), (_, nbytes) = op.args[:4]
            blocking = op.args[4][1] if kind == "write" else None
            ref = store.ref(Transfer(kind, buffer, blocking))
            store.transfers[kind, buffer, blocking] = (ref, self._scope.buffers[buffer])
            self._rows.extend((ref, dst, offset, nbytes))
            return self
        if kind == "signal":
            dst, flag, sop, value, compare, scope = (v for _, v in op.args)
            ref = store.ref(Signal(flag, sop, value, compare, scope))
            if type(value) is int and (compare is None or type(compare) is int):
                store.signals[flag, sop, value, compare, scope, str, str, str] = ref
            self._rows.extend((ref, dst, 0, 0))
            return self
        ref = store.ref(op)
        if key is not None:
            store.memo[key] = ref
        self._rows.extend((ref, 0, 0, 0))
        return self

    if TYPE_CHECKING:  # the other op methods are made from OP_KINDS below; this tells type checkers they exist
        def __getattr__(self, kind: str) -> Callable[..., ProgramBuilder]: ...


def _op_method(kind: OpKind) -> Callable[..., ProgramBuilder]:
    """A builder method with the op's real signature (so help() and keyword errors are right), made once."""
    params = ", ".join(n if d is REQUIRED else f"{n}=_defaults[{n!r}]" for n, d in kind.args)
    names = "".join(f"{n}, " for n, _ in kind.args)
    namespace: dict[str, Any] = {"_defaults": dict(kind.args)}
    exec(f"def {kind.name}(self, {params}):\n    return self._add({kind.name!r}, {names})\n", namespace)
    method: Callable[..., ProgramBuilder] = namespace[kind.name]
    method.__doc__ = kind.doc
    method.__qualname__ = f"ProgramBuilder.{kind.name}"
    return method


for _kind in OP_KINDS.values():
    if _kind.name in ("write", "read", "signal"):  # written out above, with an inline fast path; same signature and doc
        getattr(ProgramBuilder, _kind.name).__doc__ = _kind.doc
        continue
    setattr(ProgramBuilder, _kind.name, _op_method(_kind))


class ProfileBuilder:
    """Declares flags and buffers and hands out one ProgramBuilder per (gpu, wg); build() returns a Profile."""

    def __init__(self, gpus: int, workgroups: int, name: str = "profile") -> None:
        try:
            check_header(name, gpus, workgroups)
        except Invalid as e:
            raise ProfileError(f"profile: {e}") from None
        self.name, self.gpus, self.workgroups = name, int(gpus), int(workgroups)
        self._scope = Scope(self.gpus)
        self._store = _Store(self._scope)
        self._programs: dict[tuple[int, int], ProgramBuilder] = {}
        self._dists: dict[str, Distribution] = {}  # "skew"/"jitter" -> Distribution
        self._delays: list[Delay] = []
        self._collectives = 0  # calls of collective(), for fresh flag and buffer names

    def _set_dist(self, key: str, dist: str, params: dict[str, Any]) -> Self:
        where = f"profile {self.name!r}: variability.{key}"
        if key in self._dists:
            raise ProfileError(f"{where}: already set (call {key}() once)")
        self._dists[key] = make_distribution(where, dist, params)
        return self

    def skew(self, dist: str, **params: Any) -> Self:
        """Draw one factor per GPU from `dist`; it multiplies every compute phase of that GPU."""
        return self._set_dist("skew", dist, params)

    def jitter(self, dist: str, **params: Any) -> Self:
        """Draw one factor per compute phase of every workgroup from `dist`; it multiplies that phase."""
        return self._set_dist("jitter", dist, params)

    def delay(self, gpu: int, ns: float, wg: int | None = None) -> Self:
        """Hold back the first write/read/signal of GPU `gpu`'s workgroups (or only `wg`'s) by `ns`."""
        where = f"profile {self.name!r}: variability.delays[{len(self._delays)}]"
        d = make_delay(where, gpu, ns, wg, self.gpus, self.workgroups)
        check_new_delay(where, d, self._delays)
        self._delays.append(d)
        return self

    def flag(self, name: str) -> Self:
        """Declare a flag: one 8-byte word on every GPU, initially 0."""
        try:
            self._scope.declare_flag(name)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        return self

    def buffer(self, name: str, nbytes: int) -> Self:
        """Declare a data buffer of `nbytes` bytes on every GPU."""
        try:
            self._scope.declare_buffer(name, nbytes)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        return self

    def program(self, gpu: int, wg: int) -> ProgramBuilder:
        """Start the program of workgroup `wg` on GPU `gpu`; each (gpu, wg) may be started once."""
        try:
            gpu = check_int("gpu", gpu, hi=self.gpus - 1)
            wg = check_int("wg", wg, hi=self.workgroups - 1)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        if (gpu, wg) in self._programs:
            raise ProfileError(f"profile {self.name!r}: gpu {gpu} wg {wg}: program already defined")
        p = self._programs[gpu, wg] = ProgramBuilder(self._store, gpu, wg)
        return p

    def program_at(self, gpu: int, wg: int) -> ProgramBuilder:
        """The program of workgroup `wg` on GPU `gpu`, started if it was not: for appending to it later."""
        p = self._programs.get((gpu, wg))
        return p if p is not None else self.program(gpu, wg)

    def next_prefix(self) -> str:
        """A fresh name prefix (``c<n>.``) for the flags and buffers of one collective call."""
        self._collectives += 1
        return f"c{self._collectives}."

    def last_prefix(self) -> str:
        """The prefix next_prefix() handed out last (names the flags of the latest collective call)."""
        return f"c{self._collectives}."

    def collective(self, kind: str, nbytes: int, algorithm: str | None = None,
                   workgroups: int | Sequence[int] | Sequence[Sequence[int]] = 1,
                   group: Sequence[int] | None = None, **options: Any) -> Self:
        """Append collective `kind` (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, barrier, send)
        of `nbytes` to the programs of `group`'s GPUs (default all) on `workgroups` (a count or the workgroup
        indices), at their current end; `options` (chunks, mode, interval_ns, reduce_ns_per_byte, root, prefix):
        see `collectives.collective`. Waits default to mode "syncmon"."""
        from .collectives import collective  # collectives builds on this module

        collective(self, kind, nbytes, algorithm, workgroups, group, **options)
        return self

    def build(self) -> Profile:
        """Return the immutable Profile (ops were checked as they were added; names only ever get added)."""
        built = [(key, p._rows) for key, p in sorted(self._programs.items()) if p._rows]
        starts = np.zeros(len(built) + 1, dtype=np.int64)
        starts[1:] = np.cumsum([len(rows) // ROW for _, rows in built])
        # One copy: bytes.join takes the arrays' buffers directly.
        rows = np.frombuffer(b"".join(rows for _, rows in built), dtype=np.int64).reshape(-1, ROW).copy()
        table = OpTable.make([key for key, _ in built], starts, rows, tuple(self._store.templates))
        variability = Variability(self._dists.get("skew"), self._dists.get("jitter"), tuple(self._delays))
        return Profile(self.name, self.gpus, self.workgroups, tuple(self._scope.flags),
                       tuple(self._scope.buffers.items()), table, variability)
