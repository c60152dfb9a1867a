"""The profile builder: declare flags and buffers, then append ops to each workgroup's program.

``ProfileBuilder(gpus, workgroups)`` hands out one `ProgramBuilder` per (gpu, wg); its op methods
(compute, write, read, signal, wait, local) are made from the op table (`ops.OP_KINDS`), and each
checks its op at once, so a ProfileError names the gpu, wg and op index.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Self

from ..errors import ProfileError
from .checks import Invalid, Scope, check_header, check_int
from .ops import OP_KINDS, REQUIRED, Op, OpKind
from .profile import Profile
from .variability import Delay, Distribution, Variability, check_new_delay, make_delay, make_distribution

__all__ = ["ProfileBuilder", "ProgramBuilder"]


class ProgramBuilder:
    """Appends ops to one workgroup's program; each method checks its op at once and returns the builder."""

    def __init__(self, scope: Scope, gpu: int, wg: int) -> None:
        self._scope = scope
        self.gpu = gpu
        self.wg = wg
        self._ops: list[Op] = []

    def _add(self, kind: str, *args: Any) -> Self:
        # Most non-transfer ops repeat verbatim across workgroups: check each distinct one once.
        # Types are part of the key so that True (rejected) never hits the entry made for 1.
        key: Hashable | None = None
        op: Op | None
        if kind not in ("write", "read"):
            try:
                key = (kind, args, tuple(map(type, args)))
                op = self._scope.memo.get(key)
            except TypeError:  # an unhashable argument; the checker will reject it
                key = op = None
            if op is not None:
                self._ops.append(op)
                return self
        try:
            op = OP_KINDS[kind].check(self._scope, *args)
        except Invalid as e:
            raise ProfileError(f"gpu {self.gpu} wg {self.wg} op {len(self._ops)} ({kind}): {e}") from None
        if key is not None:
            self._scope.memo[key] = op
        self._ops.append(op)
        return self

    if TYPE_CHECKING:  # the op methods are made from OP_KINDS below; this tells type checkers they exist
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
        p = self._programs[gpu, wg] = ProgramBuilder(self._scope, gpu, wg)
        return p

    def program_at(self, gpu: int, wg: int) -> ProgramBuilder:
        """The program of workgroup `wg` on GPU `gpu`, started if it was not: for appending to it later."""
        return self._programs.get((gpu, wg)) or self.program(gpu, wg)

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
        programs = tuple((key, tuple(p._ops)) for key, p in sorted(self._programs.items()) if p._ops)
        variability = Variability(self._dists.get("skew"), self._dists.get("jitter"), tuple(self._delays))
        return Profile(self.name, self.gpus, self.workgroups, tuple(self._scope.flags),
                       tuple(self._scope.buffers.items()), programs, variability)


