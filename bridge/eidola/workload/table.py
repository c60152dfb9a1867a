"""The columnar form of a profile's programs: every op one row of four int64 columns.

A row is (ref, dst, offset, nbytes). `ref` indexes the table's templates: a template is either a
whole `Op` (compute, signal, wait, fence, local: these repeat verbatim across workgroups, so the
row's other columns are 0), or a `Transfer` (a write or read to one buffer) or a `Put` (a put to one
buffer with one flag update), whose row carries the per-op dst, offset and nbytes, or a `Signal`,
whose row carries its dst. Programs are contiguous row ranges in (gpu, wg) order.

Why: a 1,024-GPU profile has millions of ops; one Python object per op made building, encoding
and comparing them slow and large. `Op` objects are made only when asked for (`op`, `program`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from .ops import Op

__all__ = ["OpTable", "Transfer", "Put", "Signal", "ROW", "split", "TRANSFER_KINDS"]

ROW = 4  #: int64 columns per op: ref, dst, offset, nbytes
TRANSFER_KINDS = ("write", "read", "put")  #: op kinds whose row carries dst, offset and nbytes


class Transfer(NamedTuple):
    """The template of a write or read: everything but its dst, offset and nbytes."""

    kind: str            #: "write" or "read"
    buffer: str          #: the buffer name
    blocking: bool | None  #: a write's blocking flag; None for a read

    def op(self, dst: int, offset: int, nbytes: int) -> Op:
        """The Op of one row with this template."""
        args: tuple[tuple[str, Any], ...] = (("dst", dst), ("buffer", self.buffer), ("offset", offset),
                                             ("nbytes", nbytes))
        if self.kind == "write":
            args += (("blocking", self.blocking),)
        return Op(self.kind, args)


class Put(NamedTuple):
    """The template of a put: everything but its dst, offset and nbytes (the flag update it carries)."""

    buffer: str
    flag: str
    value: int
    op_name: str         #: the flag's atomic, "add" or "set"
    kind: str = "put"

    def op(self, dst: int, offset: int, nbytes: int) -> Op:
        """The Op of one row with this template."""
        return Op("put", (("dst", dst), ("buffer", self.buffer), ("offset", offset), ("nbytes", nbytes),
                          ("flag", self.flag), ("value", self.value), ("op", self.op_name)))


class Signal(NamedTuple):
    """The template of a signal: everything but its dst (a collective signals every peer's copy)."""

    flag: str
    op: str
    value: int
    compare: int | None
    scope: str
    overlap: bool
    kind: str = "signal"

    def make(self, dst: int) -> Op:
        """The Op of one row with this template."""
        return Op("signal", (("dst", dst), ("flag", self.flag), ("op", self.op), ("value", self.value),
                             ("compare", self.compare), ("scope", self.scope), ("overlap", self.overlap)))


Template = Op | Transfer | Put | Signal


def split(op: Op) -> tuple[Template, int, int, int]:
    """`op` as a row holds it: its template and the row's (dst, offset, nbytes), 0 where the template has all."""
    if op.kind in ("write", "read"):
        (_, dst), (_, buffer), (_, offset), (_, nbytes) = op.args[:4]
        return Transfer(op.kind, buffer, op.args[4][1] if op.kind == "write" else None), dst, offset, nbytes
    if op.kind == "put":
        (_, dst), (_, buffer), (_, offset), (_, nbytes), (_, flag), (_, value), (_, atomic) = op.args
        return Put(buffer, flag, value, atomic), dst, offset, nbytes
    if op.kind == "signal":
        return Signal(*(v for _, v in op.args[1:])), op.args[0][1], 0, 0
    return op, 0, 0, 0


class OpTable:
    """Immutable programs: keys (gpu, wg), row ranges, the int64 rows and their templates."""

    __slots__ = ("_programs", "keys", "rows", "starts", "templates")

    def __init__(self, keys: list[tuple[int, int]], starts: NDArray[np.int64], rows: NDArray[np.int64],
                 templates: tuple[Template, ...]) -> None:
        self.keys = keys              #: (gpu, wg) of each program with ops, sorted
        self.starts = starts          #: first row of each program, and the row count at the end
        self.rows = rows              #: shape (ops, ROW), read-only
        self.templates = templates    #: ref -> Op, Transfer, Put or Signal
        self._programs: dict[int, tuple[Op, ...]] = {}

    @classmethod
    def from_ops(cls, programs: Iterable[tuple[tuple[int, int], Sequence[Op]]]) -> OpTable:
        """A table from (key, ops) pairs in key order (the YAML reader's path; programs without ops are left out)."""
        refs: dict[Template, int] = {}
        flat: list[int] = []
        keys: list[tuple[int, int]] = []
        starts = [0]
        for key, ops in programs:
            if not ops:
                continue
            for op in ops:
                t, dst, offset, nbytes = split(op)
                flat += (refs.setdefault(t, len(refs)), dst, offset, nbytes)
            keys.append(key)
            starts.append(len(flat) // ROW)
        rows = np.array(flat, dtype=np.int64).reshape(-1, ROW)
        return cls.make(keys, np.array(starts, dtype=np.int64), rows, tuple(refs))

    @classmethod
    def make(cls, keys: list[tuple[int, int]], starts: NDArray[np.int64], rows: NDArray[np.int64],
             templates: tuple[Template, ...]) -> OpTable:
        """The table, its arrays made read-only (a Profile is immutable)."""
        rows.flags.writeable = False
        starts.flags.writeable = False
        return cls(keys, starts, rows, templates)

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def op(self, row: int) -> Op:
        """The Op of row `row`."""
        ref, dst, off, n = self.rows[row].tolist()
        return self.op_of(self.templates[ref], dst, off, n)

    @staticmethod
    def op_of(t: Template, dst: int, off: int, n: int) -> Op:
        """The Op of template `t` with a row's values (peer, in-buffer offset, nbytes); an Op template is itself."""
        if isinstance(t, Op):
            return t
        return t.make(dst) if isinstance(t, Signal) else t.op(dst, off, n)

    def program(self, index: int) -> tuple[Op, ...]:
        """The ops of program `index` (made once, then remembered)."""
        ops = self._programs.get(index)
        if ops is None:
            lo, hi = int(self.starts[index]), int(self.starts[index + 1])
            made: dict[tuple[int, int, int, int], Op] = {}
            out = []
            for ref, dst, off, n in self.rows[lo:hi].tolist():
                t = self.templates[ref]
                if isinstance(t, Op):
                    out.append(t)
                else:
                    key = (ref, dst, off, n)
                    out.append(made.get(key) or made.setdefault(key, self.op_of(t, dst, off, n)))
            ops = self._programs[index] = tuple(out)
        return ops

    def template_mask(self, *kinds: str) -> NDArray[np.bool_]:
        """Per template: whether its op is one of `kinds` (index it with a row's ref)."""
        return np.array([t.kind in kinds for t in self.templates], dtype=bool)

    def kind_mask(self, *kinds: str) -> NDArray[np.bool_]:
        """Per row: whether its op is one of `kinds`."""
        return self.template_mask(*kinds)[self.rows[:, 0]] if len(self) else np.zeros(0, dtype=bool)

    def _canonical(self, order: dict[Template, int]) -> NDArray[np.int64]:
        """The rows with refs renumbered by `order` (template -> number), for comparing tables."""
        remap = np.array([order.setdefault(t, len(order)) for t in self.templates], dtype=np.int64)
        rows = self.rows.copy()
        if len(rows):
            rows[:, 0] = remap[rows[:, 0]]
        return rows

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OpTable):
            return NotImplemented
        if self.keys != other.keys or not np.array_equal(self.starts, other.starts):
            return False
        # Equal Ops compare equal even if one has numpy-typed or differently typed but equal values
        # (1 == 1.0), as tuples of Ops did; templates are compared by value, not by position.
        order: dict[Template, int] = {}
        return bool(np.array_equal(self._canonical(order), other._canonical(order)))

    def __repr__(self) -> str:
        return f"OpTable({len(self.keys)} programs, {len(self)} ops, {len(self.templates)} templates)"

    def __hash__(self) -> int:
        return hash((len(self), tuple(self.keys)))
