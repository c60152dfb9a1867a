"""A packet-level toy of one MI300X GPU's issue, to show what its gates do (docs/fabrics.md, "The GPU's issue gates").

The eidolon GPU of the packet fabric issues its workgroups' packets round robin, in zero time, into
an injection buffer with one FIFO per output link, and stops while the buffer (C packets, shared by
the outputs) or its window (packets issued and not yet acknowledged) is full. Here: 8 workgroups,
each writing `packets` packets to each of 7 peers in the rotated order of
`eidola.workload.schedules` (workgroup w's k-th write goes out on link (w + k) mod 7), on 7
dedicated links that each send one packet per tick (341 wire bytes at 64 GB/s); a packet's
acknowledgement frees its window slot `rtt` ticks after it starts on its link (853.6 ns, the
zero-load trip, memory and acknowledgement of test_flow_validation._tail_ns). It prints the ticks
until the last packet has left, in microseconds, with the gates as shipped and lifted.

Run: python experiments/gate25/toy_issue.py
"""

from __future__ import annotations

from collections import deque

TICK_NS = 341 / 64e9 * 1e9  # one packet on an MI300X link
NEVER = 10**12              # a gate that never fills


def run(workgroups: int = 8, links: int = 7, packets: int = 1024, buffer: int = 1152, window: int = 2048,
        rtt: int = 160) -> int:
    """Ticks until every packet has left its link, with an injection buffer of `buffer` packets and a window."""
    writes = [deque(((w + k) % links, packets) for k in range(links)) for w in range(workgroups)]
    fifo: list[deque[int]] = [deque() for _ in range(links)]
    turns = deque(range(workgroups))
    acks: deque[int] = deque()
    held = outstanding = sent = tick = 0
    total = workgroups * links * packets

    def issue() -> None:
        # Round robin, one packet a turn, while both gates have room.
        nonlocal held, outstanding
        while held < buffer and outstanding < window and turns:
            w = turns.popleft()
            link, left = writes[w][0]
            fifo[link].append(w)
            held += 1
            outstanding += 1
            if left == 1:
                writes[w].popleft()
            else:
                writes[w][0] = (link, left - 1)
            if writes[w]:
                turns.append(w)

    issue()
    while sent < total:
        tick += 1
        while acks and acks[0] <= tick:
            acks.popleft()
            outstanding -= 1
        for queue in fifo:
            if queue:
                queue.popleft()
                held -= 1
                sent += 1
                acks.append(tick + rtt)
        issue()
    return tick


if __name__ == "__main__":
    for label, buffer, window in (("as shipped (1152, 2048)", 1152, 2048), ("buffer lifted", NEVER, 2048),
                                  ("window lifted", 1152, NEVER), ("both lifted", NEVER, NEVER)):
        print(f"{label:24s} {run(buffer=buffer, window=window) * TICK_NS / 1e3:7.2f} us")
