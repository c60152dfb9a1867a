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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .builder import ProfileBuilder, ProgramBuilder

#: One ring step: (buffer, block_of(rank) -> the block it sends, whether the receiver reduces it)
Step = tuple[str, Callable[[int], int], bool]

__all__ = ["Group", "Step", "ring", "direct", "pinned", "broadcast", "barrier", "send"]


@dataclass
class Group:
    """One collective call: builder, ranks, workgroup set, chunking, naming prefix and wait arguments."""

    b: ProfileBuilder  #: where flags and buffers are declared
    gpus: list[int]  #: rank -> GPU
    progs: list[list[ProgramBuilder]]  #: [rank][index in the workgroup set] -> program
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
        return len(self.progs[0])

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

    def piece(self, i: int) -> tuple[int, int]:
        """(offset, bytes) of piece i. Any size splits: the first total mod parts pieces take one byte more."""
        base, extra = divmod(self.total, self.parts)
        return i * base + min(i, extra), base + (1 if i < extra else 0)

    def offset(self, block: int, w: int, c: int) -> int:
        """Byte offset of chunk c of workgroup w's slice of `block`."""
        return self.piece((block * self.W + w) * self.C + c)[0]

    def size(self, block: int, w: int, c: int) -> int:
        """Bytes of chunk c of workgroup w's slice of `block`."""
        return self.piece((block * self.W + w) * self.C + c)[1]


def ring(g: Group, steps: Sequence[tuple[str, Callable[[int], int], bool]], nbytes: int) -> None:
    """Step s sends chunk c of `steps[s]` = (buffer, block_of(r), reduces) from rank r to r+1.

    Order, per workgroup: for each step s, for each chunk c: wait for chunk c of step s-1 (and
    reduce it if step s-1 reduces), then write chunk c of step s and signal it. The trailing
    waits receive the last step. Chunk c is forwarded as soon as it has arrived rather than
    after the whole block, so a late chunk holds back only its own successors. Deadlock-free:
    a rank's sends of step s depend only on its predecessor's sends of step s-1.
    """
    P, W, C = g.P, g.W, g.C
    flags = [g.flag(f"ring_w{w}") for w in range(W)]
    names = {buf: g.buffer(buf, nbytes) for buf, _, _ in steps}
    for r in range(P):
        nxt = g.gpus[(r + 1) % P]
        for w in range(W):
            p = g.progs[r][w]

            def receive(s: int, c: int, p: ProgramBuilder = p, w: int = w) -> None:
                # Chunk c of step s is the (s*C + c + 1)-th chunk the predecessor sends.
                p.wait(flag=flags[w], cond=">=", value=s * C + c + 1, **g.wait)
                if steps[s][2] and g.reduce_ns > 0:
                    p.compute(ns=g.reduce_ns)

            for s, (buffer, block_of, _) in enumerate(steps):
                for c in range(C):
                    if s:
                        receive(s - 1, c)
                    block = block_of(r)
                    p.write(dst=nxt, buffer=names[buffer], offset=g.offset(block, w, c), nbytes=g.size(block, w, c))
                    p.signal(dst=nxt, flag=flags[w], op="add", value=1, scope="peer")
            for c in range(C):
                receive(len(steps) - 1, c)


def _peers(r: int, P: int, w: int = 0) -> list[int]:
    # Rotated: in lockstep every rank targets a different peer at each step. Workgroup w starts
    # w peers further on, so a rank's concurrent workgroups drive different links at once
    # instead of queueing on one.
    return [(r + 1 + (w + k) % (P - 1)) % P for k in range(P - 1)]


def _direct_send(g: Group, p: ProgramBuilder, r: int, w: int, c: int, stage: str, buffer: str) -> None:
    """Write chunk c of slice w to every peer at the sender's own block r, then signal each peer."""
    peers = _peers(r, g.P, w)
    offset, size = g.offset(r, w, c), g.size(r, w, c)
    for q in peers:
        p.write(dst=g.gpus[q], buffer=buffer, offset=offset, nbytes=size)
    flag = g.prefix + f"{stage}_w{w}_{r}"
    for q in peers:
        p.signal(dst=g.gpus[q], flag=flag, op="add", value=1, scope="peer")


def _direct_receive(g: Group, p: ProgramBuilder, r: int, w: int, c: int, stage: str, reduce: bool) -> None:
    """Wait for chunk c from every peer, then reduce those P-1 chunks if `reduce`."""
    for q in _peers(r, g.P):
        p.wait(flag=g.prefix + f"{stage}_w{w}_{q}", cond=">=", value=c + 1, **g.wait)
    if reduce and g.reduce_ns > 0:
        p.compute(ns=(g.P - 1) * g.reduce_ns)


def direct(g: Group, stages: Sequence[tuple[str, str, bool]], nbytes: int) -> None:
    """One-hop stages (stage, buffer, reduces): each rank writes its block to every peer.

    All chunks of the first stage are sent at once; each later stage forwards chunk c as soon as
    chunk c of the previous stage has arrived from every peer (and has been reduced); the last
    stage's chunks are then awaited. Flag `<stage>_w<w>_<r>` counts rank r's chunks.
    """
    bufs = [g.buffer(buf, nbytes) for _, buf, _ in stages]
    for stage, _, _ in stages:
        for w in range(g.W):
            for q in range(g.P):
                g.flag(f"{stage}_w{w}_{q}")
    for r in range(g.P):
        for w in range(g.W):
            p = g.progs[r][w]
            for c in range(g.C):
                _direct_send(g, p, r, w, c, stages[0][0], bufs[0])
            for i in range(1, len(stages)):
                for c in range(g.C):
                    _direct_receive(g, p, r, w, c, stages[i - 1][0], stages[i - 1][2])
                    _direct_send(g, p, r, w, c, stages[i][0], bufs[i])
            for c in range(g.C):
                _direct_receive(g, p, r, w, c, stages[-1][0], stages[-1][2])


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
    pieces = Group(g.b, g.gpus, g.progs, C, nbytes, P * k * C, g.prefix, g.wait)  # k slices per block
    names = []
    for stage, buffer in stages:
        names.append(g.buffer(buffer, nbytes))
        for j in range(k):
            g.flag(f"{stage}_s{j}")
    reduce_ns = reduce_ns_per_byte * (P - 1) * C * nbytes / (P * k * C)
    for r in range(P):
        for w in range(W):
            q, j = (r + 1 + w % (P - 1)) % P, w // (P - 1)
            p = g.progs[r][w]
            for index, (stage, _) in enumerate(stages):
                if index and reduce_ns > 0:
                    p.compute(ns=reduce_ns)
                flag = g.prefix + f"{stage}_s{j}"
                for c in range(C):
                    offset, size = pieces.piece((r * k + j) * C + c)
                    p.write(dst=g.gpus[q], buffer=names[index], offset=offset, nbytes=size)
                    p.signal(dst=g.gpus[q], flag=flag, op="add", value=1, scope="peer")
                p.wait(flag=flag, cond=">=", value=(P - 1) * C, **g.wait)


def broadcast(g: Group, nbytes: int, root: int, algorithm: str) -> None:
    """Rank `root` sends all S bytes, split over the workgroups and chunks, to every other rank.

    direct: the root writes each chunk to every peer and signals `bc_w<w>` there; each peer waits
    for its C chunks. The root sends (P-1) * S bytes. ring: a pipeline root -> root+1 -> ...;
    each rank but the last forwards chunk c as soon as it has arrived. Every rank but the last
    sends S bytes.
    """
    P, W, C = g.P, g.W, g.C
    buf = g.buffer("bcast", nbytes)
    flags = [g.flag(f"bc_w{w}") for w in range(W)]
    for i in range(P):
        r = (root + i) % P
        for w in range(W):
            p = g.progs[r][w]
            targets = [(root + j) % P for j in range(1, P)] if algorithm == "direct" else [(r + 1) % P]
            if algorithm == "direct" and i:
                targets = []
            if algorithm == "ring" and i == P - 1:
                targets = []
            for c in range(C):
                if i:
                    p.wait(flag=flags[w], cond=">=", value=c + 1, **g.wait)
                offset, size = g.piece(w * C + c)  # each workgroup moves one slice of the whole buffer
                for q in targets:
                    p.write(dst=g.gpus[q], buffer=buf, offset=offset, nbytes=size)
                for q in targets:
                    p.signal(dst=g.gpus[q], flag=flags[w], op="add", value=1, scope="peer")


def barrier(g: Group) -> None:
    """Every workgroup signals its counterpart on every peer, then waits for all P-1 of theirs."""
    flags = [g.flag(f"bar_w{w}") for w in range(g.W)]
    for r in range(g.P):
        for w in range(g.W):
            p = g.progs[r][w]
            for q in _peers(r, g.P, w):
                p.signal(dst=g.gpus[q], flag=flags[w], op="add", value=1, scope="peer")
            p.wait(flag=flags[w], cond=">=", value=g.P - 1, **g.wait)


def send(g: Group, nbytes: int) -> None:
    """Rank 0 writes S bytes into rank 1's `p2p` buffer (split over workgroups and chunks) and signals
    `p2p_w<w>` per chunk; rank 1 waits for them: a matched send/recv pair."""
    buf = g.buffer("p2p", nbytes)
    flags = [g.flag(f"p2p_w{w}") for w in range(g.W)]
    for w in range(g.W):
        for c in range(g.C):
            offset, size = g.piece(w * g.C + c)
            g.progs[0][w].write(dst=g.gpus[1], buffer=buf, offset=offset, nbytes=size)
            g.progs[0][w].signal(dst=g.gpus[1], flag=flags[w], op="add", value=1, scope="peer")
        g.progs[1][w].wait(flag=flags[w], cond=">=", value=g.C, **g.wait)
