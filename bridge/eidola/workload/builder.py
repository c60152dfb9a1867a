"""The profile builder: declare flags and buffers, then append ops to each workgroup's program.

``ProfileBuilder(gpus, workgroups)`` hands out one `ProgramBuilder` per (gpu, wg); its op methods
(compute, write, read, put, signal, wait, local) are made from the op table (`ops.OP_KINDS`), and each
checks its op at once, so a ProfileError names the gpu, wg and op index. `programs_at` hands out a
`bulk.ProgramSet` instead: the same methods, each appending one op to many programs at once from
numpy columns, for generators whose per-op Python calls would cost more than the ops themselves.

Both append into one log of segments (`_Store.segments`), in call order: a ProgramBuilder keeps its
rows until a bulk call or build() flushes them, so ops land in every program in the order the calls
were made, whichever path made them.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from numpy.typing import NDArray

from ..errors import ProfileError
from .bulk import ProgramSet, program_ids
from .checks import Invalid, Scope, check_header, check_int
from .ops import OP_KINDS, Op, op_method
from .pages import small_pages
from .profile import Profile
from .table import ROW, OpTable, Put, Signal, Template, Transfer, split
from .variability import Delay, Distribution, Variability, check_new_delay, make_delay, make_distribution

__all__ = ["ProfileBuilder", "ProgramBuilder", "ProgramSet"]


class _Store:
    """What every ProgramBuilder of one profile appends against: templates and the memos that find them.

    Each op becomes one row (ref, dst, offset, nbytes) of int64s in its program's array (see
    `table`); `ref` numbers the op's template. A write or read is checked in full the first time
    its (kind, buffer, blocking) is seen; after that, `transfers` holds its ref and the buffer's size,
    so the builder's fast path checks only the per-op values, with the same bounds.
    """

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.templates: list[Template] = []
        self.refs: dict[Template, int] = {}
        self.memo: dict[Hashable, int] = {}  # (kind, args, arg types) -> ref of a non-transfer, non-signal op
        self.signals: dict[tuple[Any, ...], int] = {}  # (flag, op, value, compare, scope, overlap, types) -> ref
        self.transfers: dict[tuple[str, str, bool | None], tuple[int, int]] = {}  # -> (ref, buffer size)
        self.puts: dict[tuple[str, str, int, str], tuple[int, int]] = {}  # (buffer, flag, value, op) -> (ref, size)
        # Ops in call order: (program ids, ops per program or None for one each, their rows). A ProgramSet
        # adds one segment per op call; flush() adds the rows ProgramBuilders kept since the last flush.
        self.segments: list[tuple[NDArray[np.int64], NDArray[np.int64] | None, NDArray[np.int64]]] = []
        self.pending: list[ProgramBuilder] = []  # builders with rows not yet flushed
        self.builders: dict[int, ProgramBuilder] = {}  # program id (gpu * workgroups + wg) -> its builder
        self.started: set[int] = set()  # program ids started by program(), program_at() or programs_at()
        # Bulk ops: (kind, the op's values outside its row, their types) -> (ref, buffer size or 0) of an op body
        # checked before; a body's row values (dst, offset, nbytes) are checked as columns on every call.
        self.bodies: dict[Hashable, tuple[int, int]] = {}
        # Bulk ops: id of a tuple column -> (the tuple, the first program of each group of equal values, each
        # program's group): see ProgramSet._groups.
        self.groups: dict[int, tuple[tuple[Any, ...], list[int], NDArray[np.int64]]] = {}

    def ref(self, t: Template) -> int:
        """The number of template `t` (equal templates share one)."""
        r = self.refs.get(t)
        if r is None:
            r = self.refs[t] = len(self.templates)
            self.templates.append(t)
        return r

    def op_row(self, op: Op) -> tuple[int, int, int, int]:
        """The row of the checked op `op` (see table.split), its template numbered; a write, read or signal
        template is remembered for the builder's fast paths."""
        t, dst, offset, nbytes = split(op)
        ref = self.ref(t)
        if isinstance(t, Transfer):
            self.transfers[t.kind, t.buffer, t.blocking] = (ref, self.scope.buffers[t.buffer])
        elif isinstance(t, Put) and type(t.value) is int:
            self.puts[t.buffer, t.flag, t.value, t.op_name] = (ref, self.scope.buffers[t.buffer])
        elif isinstance(t, Signal) and type(t.value) is int and (t.compare is None or type(t.compare) is int):
            self.signals[t.flag, t.op, t.value, t.compare, t.scope, t.overlap, str, str, str, bool] = ref
        return ref, dst, offset, nbytes

    def flush(self) -> None:
        """Move the pending rows of every ProgramBuilder into one segment, so later bulk ops land after them."""
        pending = sorted({id(p): p for p in self.pending if p._rows}.values(), key=lambda p: p.pid)
        self.pending.clear()  # in place: every ProgramBuilder holds this list
        if not pending:
            return
        counts = np.array([len(p._rows) // ROW for p in pending], dtype=np.int64)
        rows = np.frombuffer(b"".join(p._rows for p in pending), dtype=np.int64).reshape(-1, ROW)
        self.segments.append((np.array([p.pid for p in pending], dtype=np.int64), counts, rows))
        for p, n in zip(pending, counts.tolist()):
            p._done += n
            p._rows = array("q")

    def ops_of(self, pid: int) -> int:
        """How many ops program `pid` has in the segments (the slow count, for error messages and new builders)."""
        n = 0
        for ids, counts, _ in self.segments:
            hit = np.flatnonzero(ids == pid)
            if len(hit):
                n += 1 if counts is None else int(counts[hit[0]])
        return n

    def assemble(self, workgroups: int) -> tuple[list[tuple[int, int]], NDArray[np.int64], NDArray[np.int64]]:
        """Keys, row starts and rows of every program with ops: the segments laid out program after program."""
        self.flush()
        segs = self.segments
        only = segs[0][1] if len(segs) == 1 else None
        if only is not None:  # per-op builders only: flushed already in program order
            pids, starts, out = segs[0][0], _starts(only), segs[0][2].copy()
        else:
            # Segments of one ProgramSet share its id array: find each distinct array's places once.
            arrays = {id(ids): ids for ids, _, _ in segs}
            pids = _sorted_distinct(np.concatenate([np.zeros(0, dtype=np.int64), *arrays.values()]))
            where = {k: np.searchsorted(pids, ids) for k, ids in arrays.items()}
            total = np.zeros(len(pids), dtype=np.int64)
            for ids, counts, _ in segs:  # a segment names each program once, so fancy += adds once per program
                total[where[id(ids)]] += 1 if counts is None else counts
            starts = _starts(total)
            cursor = starts[:-1].copy()
            out = np.empty((int(starts[-1]), ROW), dtype=np.int64)
            # Rows moved as single 32-byte items: numpy copies those several times faster than 2-D rows.
            flat = out.view(_ROW_ITEM).reshape(-1)
            for ids, counts, rows in segs:
                at = where[id(ids)]
                if counts is None:
                    flat[cursor[at]] = rows.view(_ROW_ITEM).reshape(-1)
                    cursor[at] += 1
                else:  # row j of a program's run goes j places after where that program is up to
                    first = np.repeat(cursor[at] - _starts(counts)[:-1], counts)
                    flat[first + np.arange(len(rows))] = rows.view(_ROW_ITEM).reshape(-1)
                    cursor[at] += counts
        keys = list(zip((pids // workgroups).tolist(), (pids % workgroups).tolist()))
        return keys, starts, out


_ROW_ITEM = np.dtype((np.void, 8 * ROW))  # one row as one opaque item


def _sorted_distinct(a: NDArray[np.int64]) -> NDArray[np.int64]:
    """The distinct values of `a`, sorted (np.unique without its hash table, which is slower for these)."""
    a = np.sort(a)
    keep = np.ones(len(a), dtype=bool)
    keep[1:] = a[1:] != a[:-1]
    return a[keep]


def _starts(counts: NDArray[np.int64]) -> NDArray[np.int64]:
    """0 and the running sums of `counts`: where each run begins, and the total at the end."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


class ProgramBuilder:
    """Appends ops to one workgroup's program; each method checks its op at once and returns the builder."""

    def op_count(self) -> int:
        """How many ops the program has so far (not __len__: an empty builder must stay truthy)."""
        return self._done + len(self._rows) // ROW

    def __init__(self, store: _Store, gpu: int, wg: int, pid: int, done: int = 0) -> None:
        self._store = store
        self._scope = store.scope
        self._gpus = store.scope.gpus
        self._transfers = store.transfers
        self._pending = store.pending
        self.gpu = gpu  #: the GPU of this program
        self.wg = wg  #: the workgroup of this program
        self.pid = pid  #: gpu * workgroups + wg: the program's number in the store
        self._done = done  # ops of this program already in the store's segments
        self._rows = array("q")  # ROW int64s per op not yet flushed (see table.py)

    def write(self, dst: Any, buffer: Any, offset: Any, nbytes: Any, blocking: Any = False) -> Self:
        # Arguments are Any, as in the generated methods: every value is checked here, bad ones
        # become a ProfileError naming gpu, wg and op index.
        # The hot path of large profiles: a write to a buffer seen before, with plain int arguments,
        # is checked by _fast_transfer (the same bounds as ops._transfer, without the op checker);
        # anything else takes the full check.
        if type(buffer) is str and type(blocking) is bool and self._fast_transfer(("write", buffer, blocking), dst,
                                                                                 offset, nbytes):
            return self
        return self._add("write", dst, buffer, offset, nbytes, blocking)

    def read(self, dst: Any, buffer: Any, offset: Any, nbytes: Any) -> Self:
        if type(buffer) is str and self._fast_transfer(("read", buffer, None), dst, offset, nbytes):
            return self
        return self._add("read", dst, buffer, offset, nbytes)

    def put(self, dst: Any, buffer: Any, offset: Any, nbytes: Any, flag: Any, value: Any = 1, op: Any = "add") -> Self:
        # As write: a put whose (buffer, flag, value, op) was checked before only needs its row's bounds.
        if type(buffer) is str and type(flag) is str and type(value) is int and type(op) is str and \
                self._fast_row(self._store.puts.get((buffer, flag, value, op)), dst, offset, nbytes):
            return self
        return self._add("put", dst, buffer, offset, nbytes, flag, value, op)

    def _fast_transfer(self, key: tuple[str, str, bool | None], dst: Any, offset: Any, nbytes: Any) -> bool:
        """Appends a write or read to a buffer seen before with plain in-bounds ints (the bounds of
        ops._transfer); False if anything else, for the full check."""
        return self._fast_row(self._transfers.get(key), dst, offset, nbytes)

    def _fast_row(self, found: tuple[int, int] | None, dst: Any, offset: Any, nbytes: Any) -> bool:
        """Appends the row (ref, dst, offset, nbytes) of a template seen before, `found` = (ref, buffer size), if
        dst, offset and nbytes are plain in-bounds ints; False if anything else, for the full check."""
        if (found is None or type(dst) is not int or type(offset) is not int or type(nbytes) is not int
                or not 0 <= dst < self._gpus or offset < 0 or nbytes < 1 or offset + nbytes > found[1]):
            return False
        if not self._rows:
            self._pending.append(self)
        self._rows.extend((found[0], dst, offset, nbytes))
        return True

    def signal(self, dst: Any, flag: Any, op: Any = "add", value: Any = 1, compare: Any = None,
               scope: Any = "workgroup", overlap: Any = False) -> Self:
        # A collective signals each (peer, flag) once: keyed without dst, the check runs once per
        # distinct signal body and the dst is checked inline (ops._signal's bounds).
        if type(dst) is int and 0 <= dst < self._gpus and type(value) is int and (compare is None or type(compare) is int):
            try:
                ref = self._store.signals.get((flag, op, value, compare, scope, overlap, type(flag), type(op),
                                               type(scope), type(overlap)))
            except TypeError:  # unhashable: the full check reports it
                ref = None
            if ref is not None:
                if not self._rows:
                    self._pending.append(self)
                self._rows.extend((ref, dst, 0, 0))
                return self
        return self._add("signal", dst, flag, op, value, compare, scope, overlap)

    def _add(self, kind: str, *args: Any) -> Self:
        # Most non-transfer ops repeat verbatim across workgroups: check each distinct one once.
        # Types are part of the key so that True (rejected) never hits the entry made for 1.
        store = self._store
        key: Hashable | None = None
        ref: int | None = None
        if kind not in ("write", "read", "put", "signal"):
            try:
                key = (kind, args, tuple(map(type, args)))
                ref = store.memo.get(key)
            except TypeError:  # an unhashable argument; the checker will reject it
                key = None
        row: tuple[int, int, int, int]
        if ref is not None:
            row = (ref, 0, 0, 0)
        else:
            try:
                op = OP_KINDS[kind].check(self._scope, *args)
            except Invalid as e:
                raise ProfileError(f"gpu {self.gpu} wg {self.wg} op {self.op_count()} ({kind}): {e}") from None
            row = store.op_row(op)
            if key is not None:  # only non-transfer, non-signal ops are keyed: their row is (ref, 0, 0, 0)
                store.memo[key] = row[0]
        if not self._rows:
            self._pending.append(self)
        self._rows.extend(row)
        return self

    if TYPE_CHECKING:  # the other op methods are made from OP_KINDS below; this tells type checkers they exist
        def __getattr__(self, kind: str) -> Callable[..., ProgramBuilder]: ...


for _kind in OP_KINDS.values():
    if _kind.name in ("write", "read", "put", "signal"):  # written out above, with a fast path; same signature and doc
        getattr(ProgramBuilder, _kind.name).__doc__ = _kind.doc
        continue
    setattr(ProgramBuilder, _kind.name, op_method(_kind, "ProgramBuilder", _kind.doc))


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

    def multicast_group(self, name: str, gpus: Any) -> Self:
        """Declare NVLS multicast group `name` of the member GPUs `gpus` (two or more, distinct, within the
        profile's GPUs): the group multicast and reduce_load ops name, a multicast object of NVLink SHARP."""
        try:
            self._scope.declare_group(name, gpus)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        return self

    def program(self, gpu: int, wg: int) -> ProgramBuilder:
        """The program of workgroup `wg` on GPU `gpu`, started if it was not.

        Asking again returns the same ProgramBuilder, whose ops continue where they were, as a
        user who builds a program in two passes (say, a loop per phase) expects.
        """
        key = self._key(gpu, wg)  # checked first: True is not GPU 1, although it hashes as 1
        p = self._programs.get(key)
        return p if p is not None else self._builder(*key)

    def program_at(self, gpu: int, wg: int) -> ProgramBuilder:
        """The same as `program` (kept for code written when `program` refused a second call)."""
        return self.program(gpu, wg)

    def _key(self, gpu: Any, wg: Any) -> tuple[int, int]:
        """(gpu, wg) checked as a program of this profile; a ProfileError naming the bad one otherwise."""
        try:
            return check_int("gpu", gpu, hi=self.gpus - 1), check_int("wg", wg, hi=self.workgroups - 1)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None

    def _builder(self, gpu: int, wg: int) -> ProgramBuilder:
        # A program that bulk ops started already has ops: the builder counts them for its op indices.
        pid = gpu * self.workgroups + wg
        store = self._store
        done = store.ops_of(pid) if pid in store.started else 0
        p = self._programs[gpu, wg] = store.builders[pid] = ProgramBuilder(store, gpu, wg, pid, done)
        store.started.add(pid)
        return p

    def programs_at(self, gpus: Any, wgs: Any) -> ProgramSet:
        """The programs of (gpus[i], wgs[i]) for every i, started if they were not, as one `ProgramSet`: each of its
        op methods appends one op to every one of them. `gpus` and `wgs` are ints or 1-D int arrays (broadcast
        against each other); the pairs must be distinct. Per-op arguments may then be one value per program."""
        try:
            pids = program_ids(gpus, wgs, self.gpus, self.workgroups)
        except Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        self._store.started.update(pids.tolist())
        return ProgramSet(self._store, pids, self.workgroups)

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

    @small_pages
    def build(self) -> Profile:
        """Return the immutable Profile (ops were checked as they were added; names only ever get added)."""
        keys, starts, rows = self._store.assemble(self.workgroups)
        table = OpTable.make(keys, starts, rows, tuple(self._store.templates))
        variability = Variability(self._dists.get("skew"), self._dists.get("jitter"), tuple(self._delays))
        return Profile(self.name, self.gpus, self.workgroups, tuple(self._scope.flags),
                       tuple(self._scope.buffers.items()), table, variability,
                       multicast_groups=tuple(self._scope.groups.items()))
