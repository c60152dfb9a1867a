"""The ideal fabric's order for requests that reach a GPU in one picosecond (tlm_models/include/eidola/arrival_turns.h).

Nothing contends on the ideal fabric but the GPUs' memories, which serve what comes in one picosecond one request
after another. Which comes first is a target port's round robin over its sources, from the GPU after its own, a
request of each source a round; until 2026-12-05 it was the order of the fabric's events, which followed the GPUs'
indices, so GPU 0's writes were served first at every peer.
"""

from __future__ import annotations

import pytest

import eidola
from eidola.generators import all_to_all, direct_allreduce
from eidola.profile import ProfileBuilder

P = 256  # switch-8gpu's max_payload
MEMORY_BYTES_PER_S = 5.3e12  # switch-8gpu's gpus.memory.bandwidth


def _ideal(repo):
    return eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml", overrides={"fabric.model": "ideal"})


@pytest.mark.parametrize("make", [direct_allreduce, all_to_all])
def test_a_symmetric_collective_ends_in_one_instant_on_every_gpu(repo, make):
    # Every GPU does the same to its peers in rotated order, and the ideal fabric has nothing that tells the GPUs
    # apart: they all end in the same picosecond. Measured before the round robin: 82 and 84 ns apart, GPU 5 or 7
    # first.
    res = eidola.simulate(_ideal(repo), make(8, 1 << 20, workgroups=8, mode="syncmon"))
    finishes = res.gpus["finish_ns"].tolist()
    assert len(set(finishes)) == 1, finishes


def _two_trains(repo, arrival: str) -> dict[int, float]:
    """GPUs 0 and 2 each write four packets to GPU 1 at time 0 on the ideal fabric: each write's end, ns."""
    b = ProfileBuilder(gpus=3, workgroups=1, name="two-trains")
    b.buffer("data", nbytes=4 * P)
    for src in (0, 2):
        b.program(gpu=src, wg=0).write(dst=1, buffer="data", offset=0, nbytes=4 * P)
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml",
                                overrides={"fabric.model": "ideal", "gpus.count": 3, "fabric.arrival": arrival})
    res = eidola.simulate(plat, b.build())
    return {int(r["gpu"]): float(r["finish_ns"]) for r in res.workgroups if r["finish_ns"] > 0}


PACKET_NS = round(P / MEMORY_BYTES_PER_S * 1e12) / 1e3  # one packet in the target's memory: 48 ps


def test_two_trains_to_one_gpu_are_served_a_packet_of_each_in_turn(repo):
    # GPUs 0 and 2 each write four packets to GPU 1 at time 0. All eight arrive one latency later, in one
    # picosecond; GPU 1's turn starts at the GPU after its own, 2, so its memory takes 2, 0, 2, 0, 2, 0, 2, 0, each
    # packet round(256 B / 5.3 TB/s) = 48 ps. GPU 2's last packet is the seventh and GPU 0's the eighth: their
    # writes end one packet's memory time apart, GPU 0 later (taken one train after the other, 4 x 48 ps apart,
    # either way round).
    finish = _two_trains(repo, "round_robin")
    assert finish[0] - finish[2] == pytest.approx(PACKET_NS, abs=1e-6), finish


def test_fifo_arrival_serves_them_in_the_order_they_were_sent(repo):
    # fabric.arrival: fifo, a bus without arbitration: the GPUs run in index order at time 0, so GPU 0's four
    # packets were sent first and are all served before GPU 2's: GPU 2's write ends four packets' memory time
    # after GPU 0's (the order before the round robin, which a vendor bus that hands requests on as they come
    # matches to the picosecond: test_plugins.py).
    finish = _two_trains(repo, "fifo")
    assert finish[2] - finish[0] == pytest.approx(4 * PACKET_NS, abs=1e-6), finish
