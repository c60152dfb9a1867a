"""A connection: one sender channel's FIFO of NCCL_STEPS slots in one receiver channel, with credits.

NCCL's connection (``src/device/prims_*.h``): the sender writes step n into slot n mod 8 of the
receiver's buffer and bumps the receiver's ``tail``; the receiver waits for ``tail > n``, consumes the
slot, and returns it by storing its ``head`` counter into the sender's memory, a plain volatile store
with no fence. The sender waits for ``head > n - 8`` before it writes step n: at most 8 steps ahead.

Eidolon ops, per transfer unit n (a step for LL/LL128 and p2p, a slice of SLICESTEPS steps for Simple):
- sender: ``wait(head >= n + 1 - depth)`` when n >= depth (depth = 8 / steps per unit), then
  LL/LL128: ``put(next, fifo, slot, wire bytes, flag=tail)``: the data carries its flag, no release;
  Simple: ``write(next, fifo, slot, bytes)`` then ``signal(next, tail, add 1, scope='peer')``: the
  fence-then-store of the step counter, a release that waits for the slice's acknowledgements;
- receiver: ``wait(tail >= n + 1)`` (SyncMon: the eidolon wakes when the flag lands, as a spinning
  thread sees it), then after consuming ``put(prev, heads, 0, 8 B, flag=head)``: the credit is the
  8-byte head store, landing as a flag update with no release (it waits for no acknowledgement).

Flags and buffers are per connection name and channel: ``<prefix><conn>.tail<c>`` on the receiver,
``<prefix><conn>.head<c>`` on the sender, the FIFO ``<prefix><conn>.fifo`` of channels x buffer bytes
(channel c's slots at c x buffer) and ``<prefix><conn>.heads`` (8 B) that the credits land in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .protocols import NCCL_STEPS, Protocol

if TYPE_CHECKING:
    from ..builder import ProfileBuilder
    from ..bulk import ProgramSet

__all__ = ["Ints", "Conn", "Side", "split", "primitive", "proxy_ns", "proxy_start", "WAIT", "HEAD_BYTES"]

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

    def side(self, ps: ProgramSet, channel: Ints, peer: Ints) -> Side:
        """The end of this connection in the programs of `ps` (their channel per program), talking to `peer`
        (per program: the receiver's GPU for a sending side, the sender's GPU for a receiving side)."""
        return Side(self, ps, channel, peer)


@dataclass
class Side:
    """One end of a connection in a set of programs: counts the units it has sent or received."""

    conn: Conn
    ps: ProgramSet
    channel: Ints
    peer: Ints
    n: int = 0  #: units sent (a sending side) or received (a receiving side) so far
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

    def credit_wait(self) -> None:
        """Sender: wait until the receiver has freed the slot of the next unit (nothing for the first `depth`)."""
        if self.n >= self.conn.depth:
            self.ps.wait(flag=self._flag("heads"), cond=">=", value=self.n + 1 - self.conn.depth, **WAIT)

    def send(self, data: Ints) -> None:
        """Sender: post the next unit of `data` bytes per program into the receiver's slot and bump its tail."""
        self.send_data(data)
        self.send_release()

    def send_data(self, data: Ints) -> None:
        """Sender: the unit's stores: LL/LL128 a `put` (its landing is the tail bump), Simple a `write`."""
        c, proto = self.conn, self.conn.proto
        slot = (self.n * c.unit_steps) % NCCL_STEPS
        offset = self.channel * proto.buffer + slot * proto.step_wire
        tail = self._flag("tails")
        if proto.flag_in_data:
            lines = np.maximum(-(-data // proto.payload), 1)
            self.ps.put(dst=self.peer, buffer=f"{c.name}.fifo", offset=offset, nbytes=lines * proto.line, flag=tail,
                        value=1, op="add")
        else:
            self.ps.write(dst=self.peer, buffer=f"{c.name}.fifo", offset=offset, nbytes=np.maximum(data, 1))

    def send_release(self) -> None:
        """Sender: Simple's fence and step-counter store (a release signal of the tail); nothing for LL/LL128,
        whose data carried the flag. Ends the unit."""
        if not self.conn.proto.flag_in_data:
            self.ps.signal(dst=self.peer, flag=self._flag("tails"), op="add", value=1, scope="peer")
        self.n += 1

    def recv_wait(self) -> None:
        """Receiver: wait until the next unit has arrived (its tail counts it)."""
        self.ps.wait(flag=self._flag("tails"), cond=">=", value=self.n + 1, **WAIT)

    def recv_done(self) -> None:
        """Receiver: return the consumed unit's slot to the sender (the 8-byte head store)."""
        self.ps.put(dst=self.peer, buffer=f"{self.conn.name}.heads", offset=0, nbytes=HEAD_BYTES,
                    flag=self._flag("heads"), value=1, op="add")
        self.n += 1


def proxy_ns(proxy: float, gpu: Ints, recv_from: Ints | None, send_to: Ints | None, per_node: int
             ) -> NDArray[np.float64] | None:
    """Per program: `proxy` ns for each of its receive and send peers in another node (GPU // per_node differs),
    the proxy thread's part of a network step at that end; None when no program of the set crosses a node."""
    out = np.zeros(len(gpu), dtype=np.float64)
    node = gpu // per_node
    for peer in (recv_from, send_to):
        if peer is not None:
            out += proxy * (peer // per_node != node)
    return out if proxy > 0 and bool(out.any()) else None


def proxy_start(b: ProfileBuilder, gpu: Ints, channel: Ints, peers: list[Ints], per_node: int, launch: float) -> None:
    """Before anything else, the programs (`gpu`, `channel`) with a peer in another node wait `launch` ns: the
    host hands the collective to the proxy thread, which must post its network operations before the
    first network step can move (`System.proxy_launch_ns`)."""
    if launch <= 0 or not per_node:
        return
    node = gpu // per_node
    cross = np.zeros(len(gpu), dtype=bool)
    for peer in peers:
        cross |= (peer >= 0) & (peer // per_node != node)
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
    if recv is not None:
        recv.recv_wait()
    if send is not None:
        send.credit_wait()
    if pre_ns is not None:
        ps.compute(ns=pre_ns)
    if send is not None:
        send.send_data(data)
    ns = np.asarray(local_ns, dtype=float)
    if ns.size and float(ns.max()) > 0:
        ps.compute(ns=ns if ns.ndim else float(ns))
    if send is not None:
        send.send_release()
    if recv is not None:
        recv.recv_done()
