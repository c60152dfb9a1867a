"""Tree all-reduce inside one node: a chain, reduce up then broadcast down (NCCL's ``runTreeUpDown``).

Inside a node NCCL's tree is a chain; channel c's chain follows its ring order from position 0 (the
root). Each channel's part is cut into loops of one chunk (`ring.Geometry` with one block). First every
chunk goes up: the leaf sends, the middle ranks recvReduceSend, the root recvReduceCopy; then every
chunk comes down: the root sends from its output, the middle ranks recvCopySend, the leaf receives.
Up and down are separate connections (FIFOs ``tree_up`` and ``tree_down``), so the root starts
sending down as soon as its last chunk has come up, while the leaf still receives from the up pipe's
tail. Local memory traffic as in `ring` (a reduce 3 bytes a byte, a copy 2, a plain send 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .fifo import Conn, primitive, split
from .protocols import Protocol
from .ring import geometry, local_ns

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["tree_allreduce"]


def tree_allreduce(b: ProfileBuilder, S: int, rings: list[list[int]], proto: Protocol, mem_bw: float,
                   prefix: str) -> None:
    """Append a chain all-reduce of S bytes per rank, channel c on the chain rings[c] (root first)."""
    C, k = len(rings), len(rings[0])
    geo = geometry("all_reduce", proto, S, C, 1)
    order = np.array(rings, dtype=np.int64)
    up = Conn(b, f"{prefix}tree_up", proto, geo.unit_steps, C)
    down = Conn(b, f"{prefix}tree_down", proto, geo.unit_steps, C)
    ns_per_byte = C / mem_bw * 1e9
    # (positions, (receives, sends, local) going up, the same coming down)
    roles = (([0], (True, False, 3), (False, True, 1)),
             (list(range(1, k - 1)), (True, True, 2), (True, True, 2)),
             ([k - 1], (False, True, 1), (True, False, 2)))
    for positions, go_up, go_down in roles:
        if not positions:
            continue
        Pp = np.repeat(np.array(positions, dtype=np.int64), C)
        Ch = np.tile(np.arange(C), len(positions))
        ps = b.programs_at(order[Ch, Pp], Ch)
        above, below = order[Ch, (Pp - 1) % k], order[Ch, (Pp + 1) % k]
        part = split(S, C, Ch)
        # up: receive from below, send above; down: receive from above, send below
        for conn, (r, s, local), src, dst in ((up, go_up, below, above), (down, go_down, above, below)):
            recv = conn.side(ps, Ch, src) if r else None
            send = conn.side(ps, Ch, dst) if s else None
            for loop in range(geo.loops):
                block = split(part, geo.loops, loop)
                for u in range(geo.units):
                    data = split(block, geo.units, u)
                    primitive(ps, recv, send, data, local_ns(local, data, ns_per_byte))
