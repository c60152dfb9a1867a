"""Collective schedules that append to the programs of a group of GPUs, in rank space.

A `Group` is one collective call: its ranks (rank r is GPU ``gpus[r]``), the workgroup set that
runs it on every rank, and the chunking. Each schedule appends writes, signals, waits and
reduction computes to the end of those programs, so a collective sits between whatever the
programs did before and after it. Flags and buffers are declared through the ProfileBuilder with
the call's `prefix`, so repeated calls and concurrent ones (other workgroup sets) never share a
flag: every wait is ">=" a count that only this call's signals raise.

Layout: every buffer of S bytes is P blocks of S/P, each block W slices (one per workgroup of the
set), each slice C chunks; chunk (block, w, c) lives at ((block * W + w) * C + c) * chunk bytes.
A workgroup only touches its own slice of every block, so the W workgroups are independent.

Writes are posted, and each flag is signalled with ``scope="peer"``: a peer's flag releases the
data written to that peer, so it waits for those writes' acknowledgements and no others (one
workgroup writing to every peer then flags them all after one round trip, not one per peer).

Every schedule appends through `ProgramSet`s (see bulk.py): one call per op of the schedule,
covering every rank and workgroup that does the same thing at that point, with the per-program
numbers (peer, offset, size, flag name) as numpy columns. Program i of `Group.at()` is rank
``R[i]``'s workgroup number ``J[i]`` within the set; the per-op form of each schedule is the same
loop over ranks and workgroups, which the tests build to check these against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from .builder import ProfileBuilder
    from .bulk import ProgramSet

Ints = NDArray[np.int64]
#: One ring step: (buffer, block_of(ranks) -> the block each sends, whether the receiver reduces it)
Step = tuple[str, Callable[[Ints], Ints], bool]

__all__ = ["Group", "Step", "ring", "direct", "pinned", "broadcast", "barrier", "send"]


def pieces(total: int, parts: int, i: Ints) -> tuple[Ints, Ints]:
    """(offsets, bytes) of pieces i of `total` bytes split in `parts`: the first total mod parts take one byte more."""
    base, extra = divmod(total, parts)
    return i * base + np.minimum(i, extra), base + (i < extra).astype(np.int64)


@dataclass
class Group:
    """One collective call: builder, ranks, workgroup sets, chunking, naming prefix and wait arguments."""

    b: ProfileBuilder  #: where flags and buffers are declared
    gpus: list[int]  #: rank -> GPU
    wgs: list[list[int]]  #: [rank][index in the workgroup set] -> workgroup
    C: int  #: chunks per workgroup share
    total: int  #: bytes split into pieces (the buffer of one call)
    parts: int  #: how many pieces: blocks x workgroups x chunks
    prefix: str  #: prepended to every flag and buffer name of this call
    wait: dict[str, Any]  #: mode and interval_ns of every wait
    reduce_ns: float = 0.0  #: compute time to reduce one received chunk (of the mean size)
    declared: set[str] = field(default_factory=set)

    @property
    def P(self) -> int:
        """Number of ranks."""
        return len(self.gpus)

    @property
    def W(self) -> int:
        """Number of workgroups in the set."""
        return len(self.wgs[0])

    def at(self, ranks: Sequence[int] | None = None) -> tuple[ProgramSet, Ints, Ints]:
        """The programs of `ranks` (default all), every workgroup of the set, rank after rank, as one ProgramSet;
        with each program's rank R and index J in the workgroup set."""
        rk = np.arange(self.P, dtype=np.int64) if ranks is None else np.array(ranks, dtype=np.int64)
        R, J = np.repeat(rk, self.W), np.tile(np.arange(self.W, dtype=np.int64), len(rk))
        return self.b.programs_at(self.gpu_of(R), np.array(self.wgs, dtype=np.int64).reshape(self.P, self.W)[R, J]), R, J

    def gpu_of(self, ranks: Ints) -> Ints:
        """The GPU of each rank in `ranks`."""
        return np.array(self.gpus, dtype=np.int64)[ranks]

    def flag(self, name: str) -> str:
        """Declare this call's flag `name` (once) and return its full name."""
        full = self.prefix + name
        if full not in self.declared:
            self.b.flag(full)
            self.declared.add(full)
        return full

    def buffer(self, name: str, nbytes: int) -> str:
        """Declare this call's buffer `name` (once) and return its full name."""
        full = self.prefix + name
        if full not in self.declared:
            self.b.buffer(full, nbytes)
            self.declared.add(full)
        return full

    def chunk(self, block: Ints | int, w: Ints, c: int) -> tuple[Ints, Ints]:
        """(offsets, bytes) of chunk c of workgroup w's slice of `block`, per program (block 0 of a
        one-block buffer: a broadcast's or a send's)."""
        return pieces(self.total, self.parts, (block * self.W + w) * self.C + c)


def _names(names: Sequence[str] | NDArray[np.object_], index: Ints) -> list[str]:
    """names[index[i]] per program: a flag name column (indexing a numpy array of objects copies no strings)."""
    out: list[str] = np.asarray(names, dtype=object)[index].tolist()
    return out


def _send(ps: ProgramSet, dsts: Sequence[Ints | int], buffer: str, offset: Ints, size: Ints, flag: list[str],
          overlap: bool = False) -> None:
    """Write (offset, size) of `buffer` to every dst in turn, then add 1 to `flag` on each: the send of every schedule
    (`overlap`: the workgroup goes on while each signal waits for its writes' acknowledgements)."""
    for dst in dsts:
        ps.write(dst=dst, buffer=buffer, offset=offset, nbytes=size)
    for dst in dsts:
        ps.signal(dst=dst, flag=flag, op="add", value=1, scope="peer", overlap=overlap)


def ring(g: Group, steps: Sequence[Step], nbytes: int) -> None:
    """Step s sends chunk c of `steps[s]` = (buffer, block_of(r), reduces) from rank r to r+1.

    Order, per workgroup: for each step s, for each chunk c: wait for chunk c of step s-1 (and
    reduce it if step s-1 reduces), then write chunk c of step s and signal it. The trailing
    waits receive the last step. Chunk c is forwarded as soon as it has arrived rather than
    after the whole block, so a late chunk holds back only its own successors. Each signal
    overlaps (``overlap=True``): the workgroup streams the next chunk while the release waits
    for this one's acknowledgements, so the steps pipeline across chunks instead of paying a
    round trip per chunk with the link idle. Deadlock-free: a rank's sends of step s depend only
    on its predecessor's sends of step s-1.
    """
    P, C = g.P, g.C
    flags = [g.flag(f"ring_w{w}") for w in range(g.W)]
    names = {buf: g.buffer(buf, nbytes) for buf, _, _ in steps}
    ps, R, J = g.at()
    flag, nxt = _names(flags, J), g.gpu_of((R + 1) % P)

    def receive(s: int, c: int) -> None:
        # Chunk c of step s is the (s*C + c + 1)-th chunk the predecessor sends.
        ps.wait(flag=flag, cond=">=", value=s * C + c + 1, **g.wait)
        if steps[s][2] and g.reduce_ns > 0:
            ps.compute(ns=g.reduce_ns)

    for s, (buffer, block_of, _) in enumerate(steps):
        block = block_of(R)
        for c in range(C):
            if s:
                receive(s - 1, c)
            _send(ps, [nxt], names[buffer], *g.chunk(block, J, c), flag, overlap=True)
    for c in range(C):
        receive(len(steps) - 1, c)


def _peer(R: Ints, P: int, k: int, J: Ints | int = 0) -> Ints:
    # The k-th peer of rank R, rotated: in lockstep every rank targets a different peer at each step.
    # Workgroup J starts J peers further on, so a rank's concurrent workgroups drive different links
    # at once instead of queueing on one.
    return (R + 1 + (J + k) % (P - 1)) % P


def _direct_send(g: Group, ps: ProgramSet, R: Ints, J: Ints, c: int, flag: list[str], buffer: str) -> None:
    """Write chunk c of slice J to every peer at the sender's own block R, then signal each peer on `flag`."""
    _send(ps, [g.gpu_of(_peer(R, g.P, k, J)) for k in range(g.P - 1)], buffer, *g.chunk(R, J, c), flag)


def _direct_receive(g: Group, ps: ProgramSet, R: Ints, J: Ints, c: int, table: NDArray[np.object_],
                    reduce: bool) -> None:
    """Wait for chunk c from every peer (flag table[J * P + peer]), then reduce those P-1 chunks if `reduce`."""
    for k in range(g.P - 1):
        ps.wait(flag=_names(table, J * g.P + _peer(R, g.P, k)), cond=">=", value=c + 1, **g.wait)
    if reduce and g.reduce_ns > 0:
        ps.compute(ns=(g.P - 1) * g.reduce_ns)


def direct(g: Group, stages: Sequence[tuple[str, str, bool]], nbytes: int) -> None:
    """One-hop stages (stage, buffer, reduces): each rank writes its block to every peer.

    All chunks of the first stage are sent at once; each later stage forwards chunk c as soon as
    chunk c of the previous stage has arrived from every peer (and has been reduced); the last
    stage's chunks are then awaited. Flag `<stage>_w<w>_<r>` counts rank r's chunks.
    """
    P, C = g.P, g.C
    bufs = [g.buffer(buf, nbytes) for _, buf, _ in stages]
    # tables[stage][w * P + r]: the flag counting rank r's chunks to workgroup w
    tables = [np.array([g.flag(f"{stage}_w{w}_{q}") for w in range(g.W) for q in range(P)], dtype=object)
              for stage, _, _ in stages]
    ps, R, J = g.at()
    own = [_names(t, J * P + R) for t in tables]  # the flag each program signals on its peers
    for c in range(C):
        _direct_send(g, ps, R, J, c, own[0], bufs[0])
    for i in range(1, len(stages)):
        for c in range(C):
            _direct_receive(g, ps, R, J, c, tables[i - 1], stages[i - 1][2])
            _direct_send(g, ps, R, J, c, own[i], bufs[i])
    for c in range(C):
        _direct_receive(g, ps, R, J, c, tables[-1], stages[-1][2])


def pinned(g: Group, stages: Sequence[tuple[str, str]], nbytes: int, reduce_ns_per_byte: float) -> None:
    """Direct stages with one peer per workgroup: k = W/(P-1) workgroups per peer.

    Why: a workgroup's writes are blocking, so one that cycles through peers leaves each link idle
    for a round trip whenever it moves on, and workgroups drift onto the same links. Pinned, the
    k workgroups serving a peer keep that link busy for the whole transfer.

    Workgroup w of rank r serves peer q = (r + 1 + w mod (P-1)) mod P and slice j = w div (P-1) of
    each block (S/P bytes = k slices of C chunks). Per stage it writes its C chunks into q's buffer
    at block r, signalling `<stage>_s<j>` on q once per chunk, then waits until its own
    `<stage>_s<j>` counts all (P-1) * C chunks of slice j; between stages it reduces them.
    """
    P, W, C = g.P, g.W, g.C
    k = W // (P - 1)
    names, flags = [], []
    for stage, buffer in stages:
        names.append(g.buffer(buffer, nbytes))
        flags.append([g.flag(f"{stage}_s{j}") for j in range(k)])
    reduce_ns = reduce_ns_per_byte * (P - 1) * C * nbytes / (P * k * C)
    ps, R, J = g.at()
    dst, slice_ = g.gpu_of((R + 1 + J % (P - 1)) % P), J // (P - 1)
    for index in range(len(stages)):
        if index and reduce_ns > 0:
            ps.compute(ns=reduce_ns)
        flag = _names(flags[index], slice_)
        for c in range(C):
            _send(ps, [dst], names[index], *pieces(nbytes, P * k * C, (R * k + slice_) * C + c), flag)  # k slices per block
        ps.wait(flag=flag, cond=">=", value=(P - 1) * C, **g.wait)


def broadcast(g: Group, nbytes: int, root: int, algorithm: str) -> None:
    """Rank `root` sends all S bytes, split over the workgroups and chunks, to every other rank.

    direct: the root writes each chunk to every peer and signals `bc_w<w>` there; each peer waits
    for its C chunks. The root sends (P-1) * S bytes. ring: a pipeline root -> root+1 -> ...;
    each rank but the last forwards chunk c as soon as it has arrived. Every rank but the last
    sends S bytes.
    """
    P, C = g.P, g.C
    buf = g.buffer("bcast", nbytes)
    flags = [g.flag(f"bc_w{w}") for w in range(g.W)]
    order = [(root + i) % P for i in range(P)]  # ranks from the root on
    # Ranks doing the same: (ranks, whether they wait for each chunk first, their targets as rank offsets).
    roles = ([(order[:1], False, range(1, P)), (order[1:], True, range(0))] if algorithm == "direct" else
             [(order[:1], False, range(1, 2)), (order[1:-1], True, range(1, 2)), (order[-1:], True, range(0))])
    for ranks, waits, steps in roles:
        ps, R, J = g.at(ranks)
        flag = _names(flags, J)
        # direct: the root's targets are root+1 .. root+P-1; ring: each rank's is the next one
        dsts = [g.gpu_of((R + d) % P) for d in steps]
        for c in range(C):
            if waits:
                ps.wait(flag=flag, cond=">=", value=c + 1, **g.wait)
            # each workgroup moves one slice of the whole buffer (its one block)
            _send(ps, dsts, buf, *g.chunk(0, J, c), flag)


def barrier(g: Group) -> None:
    """Every workgroup signals its counterpart on every peer, then waits for all P-1 of theirs."""
    flags = [g.flag(f"bar_w{w}") for w in range(g.W)]
    ps, R, J = g.at()
    flag = _names(flags, J)
    for k in range(g.P - 1):
        ps.signal(dst=g.gpu_of(_peer(R, g.P, k, J)), flag=flag, op="add", value=1, scope="peer")
    ps.wait(flag=flag, cond=">=", value=g.P - 1, **g.wait)


def send(g: Group, nbytes: int) -> None:
    """Rank 0 writes S bytes into rank 1's `p2p` buffer (split over workgroups and chunks) and signals
    `p2p_w<w>` per chunk; rank 1 waits for them: a matched send/recv pair."""
    buf = g.buffer("p2p", nbytes)
    flags = [g.flag(f"p2p_w{w}") for w in range(g.W)]
    sender, _, J = g.at([0])
    flag = _names(flags, J)
    for c in range(g.C):
        _send(sender, [g.gpus[1]], buf, *g.chunk(0, J, c), flag)
    g.at([1])[0].wait(flag=flag, cond=">=", value=g.C, **g.wait)
