"""A connection: one sender channel's FIFO of NCCL_STEPS slots in one receiver channel, with credits.

NCCL's connection (``src/device/prims_*.h``): the sender writes step n into slot n mod 8 of the
receiver's buffer and bumps the receiver's ``tail``; the receiver waits for ``tail > n``, consumes the
slot, and returns it by storing its ``head`` counter into the sender's memory, a plain volatile store
with no fence. The sender waits for ``head > n - 8`` before it writes step n: at most 8 steps ahead.

Eidolon ops, per transfer unit n (a step for LL/LL128 and p2p, a slice of SLICESTEPS steps for Simple):
- sender: ``wait(head >= n + 1 - depth)`` when n >= depth (depth = 8 / steps per unit), then
  LL/LL128: ``put(next, fifo, slot, wire bytes, flag=tail)``: the data carries its flag, no release;
  Simple: ``write(next, fifo, slot, bytes)`` then ``signal(next, tail, add 1, scope='peer')``: the
  fence-then-store of the step counter, a release that waits for the slice's acknowledgements; across
  nodes a ``put`` whose flag is the tail, as NCCL's receiving proxy bumps it once the RDMA data is in
  (no acknowledgement waited for);
- receiver: ``wait(tail >= n + 1)`` (SyncMon: the eidolon wakes when the flag lands, as a spinning
  thread sees it), then after consuming ``put(prev, heads, 0, 8 B, flag=head)``: the credit is the
  8-byte head store, landing as a flag update with no release (it waits for no acknowledgement).

LL and LL128 units go in passes (`protocols.passes`): NCCL's receiving threads take a step one pass of
their loop at a time, each as soon as its lines' flags show, and store it on to the next peer at once, so a
step moves along a chain pass by pass, not once all of it has landed. A unit of p passes is p puts, one
per pass's lines, each bumping the tail by one: the tail counts passes, the head still counts units (a
slot is returned once all of it is consumed). Sender and receiver of a unit count its passes from the
same data, the channel's, so they agree.

Flags and buffers are per connection name and channel: ``<prefix><conn>.tail<c>`` on the receiver,
``<prefix><conn>.head<c>`` on the sender, the FIFO ``<prefix><conn>.fifo`` of channels x buffer bytes
(channel c's slots at c x buffer) and ``<prefix><conn>.heads`` (8 B) that the credits land in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .protocols import NCCL_STEPS, Protocol, passes

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from ..bulk import ProgramSet

__all__ = ["Ints", "Conn", "Side", "split", "primitive", "multi_primitive", "unit_passes", "across", "proxy_ns",
           "proxy_start", "WAIT", "HEAD_BYTES"]

Ints = NDArray[np.int64]
#: How every FIFO wait waits: SyncMon wakes the workgroup when the flag lands (NCCL's threads spin on it).
WAIT = {"mode": "syncmon"}
#: Bytes of one credit: NCCL's head counter is a uint64_t.
HEAD_BYTES = 8


def split(total: Ints | int, parts: int, i: Ints | int) -> Ints:
    """Bytes of piece i of `total` split in `parts`: the first total mod parts pieces take one byte more."""
    base, extra = np.divmod(np.asarray(total, dtype=np.int64), parts)
    out: Ints = base + (np.asarray(i, dtype=np.int64) < extra).astype(np.int64)
    return out


@dataclass
class Conn:
    """One connection name of one collective: its protocol, unit size in FIFO steps, and its flags and buffers."""

    b: ProfileBuilder  #: where the flags and buffers are declared
    name: str  #: full name prefix of its flags and buffers ("c1.ring")
    proto: Protocol  #: what goes on the wire
    unit_steps: int  #: FIFO steps per transfer unit (Simple: SLICESTEPS; 1 otherwise)
    channels: int  #: how many channels (one tail/head flag pair each)
    tails: NDArray[np.object_] = field(init=False)  #: tail flag name per channel
    heads: NDArray[np.object_] = field(init=False)  #: head flag name per channel

    def __post_init__(self) -> None:
        self.b.buffer(f"{self.name}.fifo", self.channels * self.proto.buffer)
        self.b.buffer(f"{self.name}.heads", HEAD_BYTES)
        self.tails = np.array([f"{self.name}.tail{c}" for c in range(self.channels)], dtype=object)
        self.heads = np.array([f"{self.name}.head{c}" for c in range(self.channels)], dtype=object)
        for c in range(self.channels):
            self.b.flag(self.tails[c])
            self.b.flag(self.heads[c])

    @property
    def depth(self) -> int:
        """Units the sender may run ahead of the receiver: NCCL_STEPS / steps per unit."""
        return NCCL_STEPS // self.unit_steps

    def side(self, ps: ProgramSet, channel: Ints, peer: Ints, network: NDArray[np.bool_] | None = None) -> Side:
        """The end of this connection in the programs of `ps` (their channel per program), talking to `peer`
        (per program: the receiver's GPU for a sending side, the sender's GPU for a receiving side);
        `network`, per program: whether the peer is in another node (None: none is)."""
        return Side(self, ps, channel, peer, network)


@dataclass
class Side:
    """One end of a connection in a set of programs: counts the units it has sent or received."""

    conn: Conn
    ps: ProgramSet
    channel: Ints
    peer: Ints
    #: per program: the peer is in another node, so a unit goes whole (None: no program's is). NCCL's proxy
    #: sends a network step once the GPU has written all of it, so its passes do not move on one by one.
    network: NDArray[np.bool_] | None = None
    n: int = 0  #: units sent (a sending side) or received (a receiving side) so far
    #: a receiving side: the tail bumps it has waited for so far, per program where they differ (a unit is one
    #: bump for Simple and across nodes, one per pass otherwise)
    tail: Ints | int = 0
    _names: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False)

    def _flag(self, which: str) -> tuple[str, ...]:
        """Per program, its channel's flag of kind `which` ("heads" or "tails" of the connection).

        The same tuple every time: the bulk builder groups a tuple's equal values once (`ProgramSet._groups`).
        """
        out = self._names.get(which)
        if out is None:
            names: NDArray[np.object_] = getattr(self.conn, which)
            out = self._names[which] = tuple(names[self.channel].tolist())
        return out

    def view(self, mask: NDArray[np.bool_]) -> Side:
        """This side in the programs of `mask` only, at the same unit (`multi_primitive`'s groups)."""
        tail = self.tail[mask] if isinstance(self.tail, np.ndarray) else self.tail
        network = None if self.network is None else self.network[mask]
        return Side(self.conn, self.ps.subset(mask), self.channel[mask], self.peer[mask], network, self.n, tail)

    def credit_wait(self) -> None:
        """Sender: wait until the receiver has freed the slot of the next unit (nothing for the first `depth`)."""
        if self.n >= self.conn.depth:
            self.ps.wait(flag=self._flag("heads"), cond=">=", value=self.n + 1 - self.conn.depth, **WAIT)

    def send_data(self, data: Ints, i: int = 0, p: int = 1) -> None:
        """Sender: the unit's stores: LL/LL128 a `put` of pass i's lines of p (its landing bumps the tail),
        Simple a `write` of the whole unit (i 0 of 1)."""
        c, proto = self.conn, self.conn.proto
        slot = (self.n * c.unit_steps) % NCCL_STEPS
        offset = self.channel * proto.buffer + slot * proto.step_wire
        tail = self._flag("tails")
        if proto.flag_in_data:
            lines = np.maximum(-(-data // proto.payload), 1)
            before = lines // p * i + np.minimum(i, lines % p)  # the lines of passes 0..i-1 (`split`'s pieces)
            mine = split(lines, p, i)
            # A pass of a short unit may hold no line: it still stores one (its flag), as a step with no data does.
            self.ps.put(dst=self.peer, buffer=f"{c.name}.fifo", offset=offset + np.minimum(before, lines - 1) * proto.line,
                        nbytes=np.maximum(mine, 1) * proto.line, flag=tail, value=1, op="add")
        elif self.network is None or not self.network.any():
            self.ps.write(dst=self.peer, buffer=f"{c.name}.fifo", offset=offset, nbytes=np.maximum(data, 1))
        else:
            # Across nodes NCCL's GPU only stores the step locally and bumps a tail its proxy reads; the proxy posts
            # the RDMA write, and the receiving proxy bumps the receiver's tail once the data is in. Nothing waits
            # for an acknowledgement: a put, whose flag lands with its last byte, not a write and a release.
            net = self.network
            data, offset = np.broadcast_to(data, net.shape), np.broadcast_to(offset, net.shape)
            if (~net).any():
                inside = self.view(~net)
                inside.ps.write(dst=inside.peer, buffer=f"{c.name}.fifo", offset=offset[~net],
                                nbytes=np.maximum(data[~net], 1))
            remote = self.view(net)
            remote.ps.put(dst=remote.peer, buffer=f"{c.name}.fifo", offset=offset[net], nbytes=np.maximum(data[net], 1),
                          flag=remote._flag("tails"), value=1, op="add")

    def release(self) -> None:
        """Sender: Simple's fence and step-counter store (a release signal of the tail) within a node; nothing for
        LL/LL128, whose data carried the flag, nor across nodes, where the unit went as a put (send_data)."""
        if self.conn.proto.flag_in_data:
            return
        if self.network is None or not self.network.any():
            self.ps.signal(dst=self.peer, flag=self._flag("tails"), op="add", value=1, scope="peer")
        elif (~self.network).any():
            inside = self.view(~self.network)
            inside.ps.signal(dst=inside.peer, flag=inside._flag("tails"), op="add", value=1, scope="peer")

    def recv_wait(self, upto: int = 1) -> None:
        """Receiver: wait until the next unit has arrived (Simple), or its first `upto` passes (LL/LL128)."""
        self.ps.wait(flag=self._flag("tails"), cond=">=", value=self.tail + upto, **WAIT)

    def recv_done(self, p: int = 1) -> None:
        """Receiver: return the consumed unit's slot to the sender (the 8-byte head store); the unit came in
        `p` passes."""
        self.ps.put(dst=self.peer, buffer=f"{self.conn.name}.heads", offset=0, nbytes=HEAD_BYTES,
                    flag=self._flag("heads"), value=1, op="add")
        self.tail = self.tail + p


def unit_passes(proto: Protocol, data: Ints) -> int:
    """The passes of a unit of `data` bytes per program (`protocols.passes` of the largest): the same for
    every program, which the ops of a program set need, and for both ends of a connection, whose data is
    their channel's."""
    return passes(proto, int(np.max(data))) if np.size(data) else 1


def across(gpu: Ints, peer: Ints, per_node: int) -> NDArray[np.bool_]:
    """Per program: whether `peer` is in another node than `gpu` (per_node 0: one node, none is)."""
    if not per_node:
        return np.zeros(np.shape(gpu), dtype=bool)
    out: NDArray[np.bool_] = (np.asarray(peer) // per_node) != (np.asarray(gpu) // per_node)
    return out


def proxy_ns(proxy: float, gpu: Ints, recv_from: Ints | None, send_to: Ints | None, per_node: int
             ) -> NDArray[np.float64] | None:
    """Per program: `proxy` ns for each of its receive and send peers in another node (GPU // per_node differs),
    the proxy thread's part of a network step at that end; None when no program of the set crosses a node."""
    out = np.zeros(len(gpu), dtype=np.float64)
    for peer in (recv_from, send_to):
        if peer is not None:
            out += proxy * across(gpu, peer, per_node)
    return out if proxy > 0 and bool(out.any()) else None


def proxy_start(b: ProfileBuilder, gpu: Ints, channel: Ints, peers: list[Ints], per_node: int, launch: float) -> None:
    """Before anything else, the programs (`gpu`, `channel`) with a peer in another node wait `launch` ns: the
    host hands the collective to the proxy thread, which must post its network operations before the
    first network step can move (`System.proxy_launch_ns`)."""
    if launch <= 0 or not per_node:
        return
    cross = np.zeros(len(gpu), dtype=bool)
    for peer in peers:
        cross |= (peer >= 0) & across(gpu, peer, per_node)
    if cross.any():
        b.programs_at(gpu[cross], channel[cross]).compute(ns=float(launch))


def primitive(ps: ProgramSet, recv: Side | None, send: Side | None, data: Ints,
              local_ns: NDArray[np.float64] | float, pre_ns: NDArray[np.float64] | None = None) -> None:
    """One NCCL primitive on one unit (send, recvReduceSend, recvCopySend, recv, ...), per program of `ps`.

    Order as in ``prims_*.h``: wait for the unit to arrive, wait for the send slot's credit, then the
    reduce/copy loop, whose stores stream into the peer as they are computed: the put or write is
    issued first and `local_ns` (the local memory traffic, see `ring.local_ns`) runs beside it; then
    Simple's release of the slice, and the receive slot's credit back to the sender. `pre_ns` (per
    program, across nodes): the proxies' time between the unit's arrival and its use, and between the
    credit and the send (`proxy_ns`), spent before the stores are issued.
    """
    multi_primitive(ps, [recv] if recv is not None else [], [send] if send is not None else [], data,
                    np.asarray(local_ns, dtype=float), pre_ns)


def multi_primitive(ps: ProgramSet, recvs: list[Side], sends: list[Side], data: Ints,
                    local: NDArray[np.float64], pre_ns: NDArray[np.float64] | None, passes: int = 0) -> None:
    """`primitive` with several receive peers (a reduce of every child's unit) or several send peers (the
    result to every child), as NCCL's ``FanAsymmetric<NCCL_MAX_TREE_ARITY, ...>`` primitives: wait for every
    input and every credit, the proxies' time, the stores to every peer, the local memory time, the
    releases, then the credits back to every sender. LL/LL128 go pass by pass (see the module's doc) where
    the peer is in the node; `passes`: the unit's passes when the programs of `ps` are not all of the
    channels (0: `unit_passes` of `data`)."""
    p = passes or unit_passes((recvs or sends)[0].conn.proto, data)
    sides = recvs + sends
    # Programs whose sides cross nodes alike run alike: one group of programs each, in a fixed order (bit i
    # of a program's key: side i's peer is in another node, so that side takes the unit whole).
    key = np.zeros(len(ps), dtype=np.int64)
    if p > 1:
        for i, s in enumerate(sides):
            if s.network is not None:
                key |= s.network.astype(np.int64) << i
    keys = np.unique(key).tolist()
    for k in keys:
        each = [1 if k >> i & 1 else p for i in range(len(sides))]
        if len(keys) == 1:  # every program alike: the sides as they are
            _passes(ps, recvs, sends, data, local, pre_ns, each[:len(recvs)], each[len(recvs):])
            continue
        mask = key == k
        views = [s.view(mask) for s in sides]
        _passes(ps.subset(mask), views[:len(recvs)], views[len(recvs):], data[mask],
                local[mask] if local.ndim else local, None if pre_ns is None else pre_ns[mask],
                each[:len(recvs)], each[len(recvs):])
        for r, v in zip(recvs, views):
            if not isinstance(r.tail, np.ndarray):
                r.tail = np.full(len(ps), r.tail, dtype=np.int64)
            r.tail[mask] = v.tail
    for s in sides:
        s.n += 1


def _passes(ps: ProgramSet, recvs: list[Side], sends: list[Side], data: Ints, local: NDArray[np.float64],
            pre_ns: NDArray[np.float64] | None, p_recv: list[int], p_send: list[int]) -> None:
    """One unit's ops in programs whose sides take it in p_recv / p_send passes each (1: whole). A side in
    passes takes pass i at step i of the loop; a whole receive is waited for first, a whole send goes at the
    last step, once every pass it carries is in. The sides' unit counts are the caller's to advance."""
    P = max(p_recv + p_send)
    for r in recvs:
        r.recv_wait()
    for s in sends:
        s.credit_wait()
    if pre_ns is not None:
        ps.compute(ns=pre_ns)
    share = local / P if P > 1 else local
    for i in range(P):
        if i:
            for r, pr in zip(recvs, p_recv):
                if pr > 1:
                    r.recv_wait(i + 1)
        for s, pss in zip(sends, p_send):
            if pss > 1:
                s.send_data(data, i, pss)
            elif i == P - 1:
                s.send_data(data)
        if share.size and float(share.max()) > 0:
            ps.compute(ns=share if share.ndim else float(share))
    for s in sends:
        s.release()
    for r, pr in zip(recvs, p_recv):
        r.recv_done(pr)
