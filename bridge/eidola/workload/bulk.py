"""Bulk appends: one op call that appends an op to each of many programs, from numpy columns.

Why: a generator for 1,024 GPUs x 304 workgroups makes millions of ops, and one Python call per op
cost more than everything else in building the profile. A `ProgramSet` (from
`ProfileBuilder.programs_at`) has the op methods of a `ProgramBuilder`; each argument is one value
for every program or a 1-D column of one value per program. The ops are the same as if every
program had been given its op through its own ProgramBuilder: each distinct op body is checked by
the same checker, once per profile (a body seen in an earlier call is not checked again), and the
per-program numbers (dst, offset, nbytes) are checked as columns with the checker's bounds. A bad
value is reported by running the full check on the first program that has it, so the message is the
one the per-op path gives, naming gpu, wg and op index.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from numpy.typing import NDArray

from ..errors import ProfileError
from .checks import I64_MAX, I64_MIN, Invalid, check_int
from .ops import OP_KINDS, op_method
from .table import ROW

if TYPE_CHECKING:
    from .builder import ProgramBuilder, _Store

__all__ = ["ProgramSet", "program_ids"]

#: Argument positions whose values live in the op's row (see table.py) rather than in its template.
_ROW_ARGS: dict[str, tuple[int, ...]] = {"write": (0, 2, 3), "read": (0, 2, 3), "put": (0, 2, 3), "signal": (0,)}
_COLUMN = (np.ndarray, list, tuple)  # argument types taken as one value per program


def _as_ints(v: Any) -> NDArray[np.int64] | int:
    """`v` (a 1-D column) as int64s, or the index of its first value that is not an int within int64."""
    if isinstance(v, np.ndarray) and v.dtype.kind == "i":
        return v.astype(np.int64, copy=False)
    if isinstance(v, np.ndarray) and v.dtype.kind == "u":
        big = np.flatnonzero(v > I64_MAX)
        return int(big[0]) if len(big) else v.astype(np.int64)
    items = v.tolist() if isinstance(v, np.ndarray) else list(v)
    if all(type(x) is int for x in items):
        try:
            return np.array(items, dtype=np.int64)
        except OverflowError:
            pass
    for i, x in enumerate(items):  # the slow way, only to find which value is wrong
        # bool is an int subclass but never a valid count or GPU (as in checks.check_int).
        if isinstance(x, bool) or not isinstance(x, numbers.Integral) or not I64_MIN <= int(x) <= I64_MAX:
            return i
    return np.array([int(x) for x in items], dtype=np.int64)


def _index_column(name: str, v: Any, hi: int) -> NDArray[np.int64]:
    """A gpu or wg argument of programs_at as int64s in 0..hi; Invalid (check_int's message) otherwise."""
    if not isinstance(v, _COLUMN):
        return np.array([check_int(name, v, hi=hi)], dtype=np.int64)
    if isinstance(v, np.ndarray) and v.ndim != 1:
        raise Invalid(f"{name} must be an int or a 1-D column of ints, got shape {v.shape}")
    col = _as_ints(v)
    if isinstance(col, int):
        check_int(name, v[col], hi=hi)  # raises: the value is not an int within int64
        raise AssertionError("unreachable")
    bad = np.flatnonzero((col < 0) | (col > hi))
    if len(bad):
        check_int(name, int(col[bad[0]]), hi=hi)
    return col


def program_ids(gpus: Any, wgs: Any, n_gpus: int, n_wgs: int) -> NDArray[np.int64]:
    """The program numbers (gpu * n_wgs + wg) of the pairs (gpus[i], wgs[i]), broadcast; Invalid if a pair repeats."""
    g, w = np.broadcast_arrays(_index_column("gpu", gpus, n_gpus - 1), _index_column("wg", wgs, n_wgs - 1))
    pids = g * n_wgs + w
    order = np.sort(pids)
    dup = np.flatnonzero(order[1:] == order[:-1])
    if len(dup):
        pid = int(order[dup[0]])
        raise Invalid(f"gpu {pid // n_wgs} wg {pid % n_wgs} is named twice")
    pids.flags.writeable = False
    out: NDArray[np.int64] = pids
    return out


class ProgramSet:
    """Many programs appended to together: each op method appends one op to every program of the set, in set order.

    Any argument may be one value (the same for every program) or a list, tuple or 1-D numpy array
    of one value per program. Programs keep their other ops: ops from ProgramBuilders and from
    other sets land in each program in the order the calls were made.
    """

    def __init__(self, store: _Store, pids: NDArray[np.int64], workgroups: int) -> None:
        self._store = store
        self.pids = pids  #: per program of the set: gpu * workgroups + wg (read-only)
        self._workgroups = workgroups
        self._builders: list[ProgramBuilder] = []  # the ProgramBuilders of this set's programs
        self._seen = -1  # how many builders the store had when _builders was found

    @property
    def gpus(self) -> NDArray[np.int64]:
        """The GPU of each program of the set."""
        return self.pids // self._workgroups

    @property
    def wgs(self) -> NDArray[np.int64]:
        """The workgroup of each program of the set."""
        return self.pids % self._workgroups

    def __len__(self) -> int:
        return len(self.pids)

    def subset(self, mask: NDArray[np.bool_]) -> ProgramSet:
        """The programs of this set where `mask` (one bool per program) holds, in set order."""
        return ProgramSet(self._store, self.pids[mask], self._workgroups)

    def _fail(self, kind: str, i: int, e: Invalid) -> ProfileError:
        """The error of program i's op, worded as the per-op path words it (counting its ops is slow, but rare)."""
        pid = int(self.pids[i])
        index = self._store.ops_of(pid)
        return ProfileError(f"gpu {pid // self._workgroups} wg {pid % self._workgroups} op {index} ({kind}): {e}")

    def _check_at(self, kind: str, i: int, args: tuple[Any, ...], columns: list[bool]) -> Any:
        """The full check of program i's op; a ProfileError naming it if the op is wrong."""
        values = [a[i] if c else a for a, c in zip(args, columns)]
        try:
            return OP_KINDS[kind].check(self._store.scope, *values)
        except Invalid as e:
            raise self._fail(kind, i, e) from None

    def _groups(self, cols: list[Any], n: int, kind: str, args: tuple[Any, ...], columns: list[bool]
                ) -> tuple[list[int], NDArray[np.int64]]:
        """The programs whose varying op arguments (`cols`) are the same, as (the first program of each group, in
        program order; per program, its group's place in that list): the first's check stands for its group."""
        # A tuple column of plain str, int or float values cannot change, so its groups are kept by the tuple's
        # identity: a collective passes the same tuple of flag names (one per program) to thousands of calls,
        # and walking it once per call cost more than a second at 512 GPUs. The memo holds the tuple, so
        # its id is not reused while the entry lives.
        col = cols[0]
        memo = self._store.groups
        if len(cols) == 1 and type(col) is tuple:
            hit = memo.get(id(col))
            if hit is not None and hit[0] is col:
                return hit[1], hit[2]
        # Keyed with their types as the per-op memo is (True must not pass as 1); one column of one type,
        # the usual case (a flag name per program), is keyed by its values alone, which is faster.
        types = set(map(type, col)) if len(cols) == 1 else set()
        keys = col if len(types) == 1 else list(zip(*cols, *(map(type, c) for c in cols)))
        seen: dict[Any, int] = {}
        try:
            first_of = np.fromiter(map(seen.setdefault, keys, range(n)), dtype=np.int64, count=n)
        except TypeError:  # an unhashable value: the checker rejects it; find the first one
            for i in range(n):
                self._check_at(kind, i, args, columns)
            raise
        firsts = np.flatnonzero(first_of == np.arange(n))
        slot = np.zeros(n, dtype=np.int64)
        slot[firsts] = np.arange(len(firsts))
        inverse = slot[first_of]
        out = firsts.tolist()
        if type(col) is tuple and len(types) == 1 and types <= {str, int, float}:
            memo[id(col)] = (col, out, inverse)
        return out, inverse

    def _add(self, kind: str, *args: Any) -> Self:
        n = len(self.pids)
        store = self._store
        columns = [isinstance(a, _COLUMN) for a in args]
        for a, c, (name, _) in zip(args, columns, OP_KINDS[kind].args):
            if c and ((isinstance(a, np.ndarray) and a.ndim != 1) or len(a) != n):
                raise ProfileError(f"programs_at ({n} programs): {kind}: {name} must be one value or one per program, "
                                   f"got {np.shape(a) if isinstance(a, np.ndarray) else len(a)} values")
        if not n:
            return self
        if store.pending:  # ProgramBuilder ops made before this call come before it
            store.flush()
        row_at = _ROW_ARGS.get(kind, ())
        # Template columns as plain Python values: numpy scalars would make keys that differ from the per-op path's.
        # A numeric template column of one value is taken as that value: every program's op body is then the
        # first program's, as grouping the equal values would make it, without walking the programs.
        plain = []
        for i, (a, c) in enumerate(zip(args, columns)):
            if c and i not in row_at and isinstance(a, np.ndarray):
                if a.dtype.kind in "iuf" and bool((a == a[0]).all()):
                    a, columns[i] = a[0].item(), False
                else:
                    a = a.tolist()
            plain.append(a)
        args = tuple(plain)
        varying = [i for i, c in enumerate(columns) if c and i not in row_at]
        inverse: NDArray[np.int64] | None = None  # per program: its op body's place in refs (None: all the first)
        if varying:
            firsts, inverse = self._groups([args[i] for i in varying], n, kind, args, columns)
        else:
            firsts = [0]
        refs, sizes = [], []
        # An op body (its values outside the row) checked in an earlier call is not checked again: a
        # collective repeats the same few thousand bodies (a flag and its count) over many calls, and the
        # full check of each cost more than the rest of the build. Its row values are checked as columns.
        body_at = [j for j in range(len(args)) if j not in row_at]
        transfer = kind in ("write", "read", "put")
        for i in firsts:
            values = [args[j][i] if columns[j] else args[j] for j in body_at]
            try:
                key: Any = (kind, *values, *map(type, values))
                known = store.bodies.get(key)
            except TypeError:  # an unhashable value: the full check says what is wrong with it
                key = known = None
            if known is None:
                op = self._check_at(kind, i, args, columns)
                known = (store.op_row(op)[0], store.scope.buffers[op.args[1][1]] if transfer else 0)
                if key is not None:
                    store.bodies[key] = known
            refs.append(known[0])
            if transfer:
                sizes.append(known[1])
        rows = np.zeros((n, ROW), dtype=np.int64)
        rows[:, 0] = refs[0] if inverse is None else np.array(refs, dtype=np.int64)[inverse]
        if row_at:
            self._fill_rows(kind, rows, args, columns, sizes, inverse)
        store.segments.append((self.pids, None, rows))
        if len(store.builders) != self._seen:  # builders are only ever added: a new count means new ones
            self._seen = len(store.builders)
            have = np.fromiter(store.builders, dtype=np.int64, count=len(store.builders))
            self._builders = [store.builders[p] for p in have[np.isin(have, self.pids)].tolist()]
        for p in self._builders:
            p._done += 1
        return self

    def _fill_rows(self, kind: str, rows: NDArray[np.int64], args: tuple[Any, ...], columns: list[bool],
                   sizes: list[int], inverse: NDArray[np.int64] | None) -> None:
        """Checks the per-program numbers of a write, read, put or signal as columns and puts them in `rows`."""
        n = len(rows)
        row_at = _ROW_ARGS[kind]
        cols = []
        for j in row_at:
            if not columns[j]:  # one value, already checked with program 0's op
                cols.append(np.full(n, int(args[j]), dtype=np.int64))
                continue
            col = _as_ints(args[j])
            if isinstance(col, int):
                self._check_at(kind, col, args, columns)
                raise AssertionError(f"{kind}: value {col} passed its check but is not an int64")
            cols.append(col)
        dst = cols[0]
        bad = (dst < 0) | (dst >= self._store.scope.gpus)
        if kind != "signal":
            offset, nbytes = cols[1], cols[2]
            size = sizes[0] if inverse is None else np.array(sizes, dtype=np.int64)[inverse]
            # offset > size - nbytes is ops._transfer's offset + nbytes > size without the overflow.
            bad |= (offset < 0) | (nbytes < 1) | (offset > size - nbytes)
        if bad.any():
            i = int(np.argmax(bad))
            self._check_at(kind, i, args, columns)
            raise AssertionError(f"{kind}: program {i} failed the column check but passed its own")
        for col, j in zip(cols, (1, 2, 3)):
            rows[:, j] = col

    if TYPE_CHECKING:  # the op methods are made from OP_KINDS below; this tells type checkers they exist
        def __getattr__(self, kind: str) -> Callable[..., ProgramSet]: ...


for _kind in OP_KINDS.values():
    setattr(ProgramSet, _kind.name, op_method(_kind, "ProgramSet", f"{_kind.doc} Appended to every program of the "
                                              "set; any argument may be one value per program."))
