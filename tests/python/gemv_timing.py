"""Hand derivation of the fused GEMV + AllReduce on the ideal fabric, with posted writes.

Notation: L fabric one-way latency, M memory latency, I poll interval, T tile compute, R reduce
compute; one workgroup per GPU, one 256-byte packet per write, memory bandwidth unbounded.
    rtt = 2L + M   (out, memory, back)
In each phase a GPU posts its writes to every peer at once, then signals each peer's flag as a
release of the data written to that peer (scope="peer"): each signal goes when that peer's write is
acknowledged, one rtt later, and lands L + M after it goes. The GPU waits right after its signals
go; a poll is a local read that completes M after issue, the next issued I later, so polls
complete every M + I. A program ends when its waits are done and its last signals acknowledged.
"""

import math


def polls_until(start: float, applied: float, m: float, i: float) -> tuple[float, int]:
    """(when the wait ends, polls it took): polling from `start` for a flag that lands at `applied`."""
    first = start + m
    k = max(0, math.ceil((applied - first) / (m + i)))
    end = first + k * (m + i)
    assert end != applied, "a poll ties with the flag's arrival: pick other figures"
    return end, k + 1


def symmetric_kernel_ns(gpus: int, lat: float, mem: float, interval: float, tile: float, reduce: float) -> float:
    """Every GPU in lockstep: all flags of a phase land together, L + M after the signals go."""
    rtt = 2 * lat + mem

    def phase(start: float) -> float:
        waits_from = start + rtt                         # the signals go
        end, _ = polls_until(waits_from, waits_from + lat + mem, mem, interval)
        return end + (gpus - 2) * mem                    # the other flags are there: one poll each

    rs_end = phase(tile)
    ag_start = rs_end + reduce
    return max(phase(ag_start), ag_start + 2 * rtt)      # the last signals' acknowledgement


def two_gpu_ns(delay: float, lat: float, mem: float, interval: float, tile: float,
               reduce: float) -> tuple[float, float, float, int]:
    """GPU 0's tile takes `delay` longer. Returns (kernel, GPU 0 finish, GPU 1 finish, GPU 1's flag reads)."""
    rtt = 2 * lat + mem
    tiles = (tile + delay, tile)
    rs_end, rs_polls = [0.0, 0.0], [0, 0]
    for g in (0, 1):
        lands = tiles[1 - g] + rtt + lat + mem             # the other GPU's rs signal
        rs_end[g], rs_polls[g] = polls_until(tiles[g] + rtt, lands, mem, interval)
    finish, ag_polls = [0.0, 0.0], [0, 0]
    for g in (0, 1):
        lands = rs_end[1 - g] + reduce + rtt + lat + mem   # the other GPU's ag signal
        end, ag_polls[g] = polls_until(rs_end[g] + reduce + rtt, lands, mem, interval)
        finish[g] = max(end, rs_end[g] + reduce + 2 * rtt)
    return max(finish), finish[0], finish[1], rs_polls[1] + ag_polls[1]


def symmetric_flag_reads(gpus: int, lat: float, mem: float, interval: float) -> int:
    """Polls per GPU in the lockstep case: per phase, those of the first wait, then one per other flag."""
    _, first = polls_until(0.0, lat + mem, mem, interval)
    return 2 * (first + gpus - 2)
