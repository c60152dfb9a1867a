"""A 1 ns start skew must not change a shift's kernel time: each fabric's robustness to how the GPUs start.

A shift (every GPU writes 1 MiB to the next, switch-8gpu with one lane a link) loads every link exactly to its
capacity both ways: 4,096 data packets of 256 + 16 B one way, 4,096 acknowledgements of 16 B the other.
Whether the GPUs start in the same picosecond or 1 ns apart, a real fabric carries the same bytes at the same
rate, so the time is the links' serialisation plus about one round trip, either way.

On the packet fabric as shipped it is not: with GPU 1 held back 1 ns, an acknowledgement backlog forms that the
fully loaded links never drain, and the shift takes 20.12 us instead of 13.05 (experiments/skew/README.md).
Credits counted in flits (`switch.buffer` as a size) and a window that covers the backlog take that away.
"""

from __future__ import annotations

import pytest
from zero_load import zero_load_ns

import eidola
from eidola.workload.builder import ProfileBuilder
from eidola.workload.profile import Profile

GPUS, NBYTES = 8, 1 << 20
BANDWIDTH, LATENCY_NS, SWITCH_NS, HEADER, PAYLOAD = 100e9, 150.0, 100.0, 16, 256  # switch-8gpu
MEMORY_NS = 300.0
PACKETS = NBYTES // PAYLOAD
WIRE_NS = PACKETS * (PAYLOAD + HEADER + HEADER) / BANDWIDTH * 1e9  # every link: data one way, acks the other
# One write packet and its acknowledgement at zero load (GPU -> switch -> GPU, each way) and the memory between.
ROUND_TRIP_NS = (zero_load_ns([(PAYLOAD + HEADER, BANDWIDTH, LATENCY_NS)] * 2, SWITCH_NS) + MEMORY_NS
                 + zero_load_ns([(HEADER, BANDWIDTH, LATENCY_NS)] * 2, SWITCH_NS))
# Flit credits for the switch's 192 packets of 272 B, and a window no backlog fills.
COVERED = {"fabric.switch.buffer": f"{192 * (PAYLOAD + HEADER)}B", "gpus.max_outstanding": 1_000_000}


def shift(gpus: int, nbytes: int, skew_ns: float | None) -> Profile:
    """Every GPU writes `nbytes` to the next one, one workgroup each; GPU 1 starts `skew_ns` late (also
    experiments/skew/shift_skew.py's workload)."""
    b = ProfileBuilder(gpus, 1, name="shift")
    b.buffer("data", nbytes)
    for g in range(gpus):
        b.program(g, 0).write((g + 1) % gpus, "data", 0, nbytes)
    if skew_ns is not None:
        b.delay(1, skew_ns)
    return b.build()


def _times(repo, model: str, overrides: dict) -> tuple[float, float]:
    """(in step, GPU 1 held back 1 ns) kernel times of the shift, ns."""
    out = []
    for skew in (None, 1.0):
        plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml", overrides={
            "fabric.model": model, "fabric.link.count": 1, **overrides})
        out.append(eidola.simulate(plat, shift(GPUS, NBYTES, skew)).kernel_time_ns)
    return out[0], out[1]


@pytest.mark.parametrize("model, overrides", [
    ("flow", {}),
    ("flow", COVERED),
    ("packet", COVERED),
    pytest.param("packet", {}, marks=pytest.mark.xfail(strict=True, reason=(
        "measured 13.05 us in step, 20.12 us with GPU 1 held back 1 ns: an acknowledgement backlog the fully "
        "loaded links never drain, whole-packet credits for 16 B acknowledgements, and the writers' windows "
        "filling (experiments/skew/README.md)"))),
])
def test_a_shift_takes_the_same_time_whether_the_gpus_start_together_or_1ns_apart(repo, model, overrides):
    together, skewed = _times(repo, model, overrides)
    # Derived bounds first: the links' bytes at their rate, plus one write's round trip for the first packet
    # out and the last acknowledgement back (to 0.2%: the terms overlap by a few packets' serialisation).
    assert WIRE_NS <= together <= (WIRE_NS + ROUND_TRIP_NS) * 1.002, (together, WIRE_NS, ROUND_TRIP_NS)
    assert skewed == pytest.approx(together, rel=0.005), f"in step {together:.1f} ns, skewed 1 ns {skewed:.1f} ns"
