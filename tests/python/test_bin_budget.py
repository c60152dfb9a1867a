"""Link bins past fabric.stats.max_bins double in width (tlm_models/include/eidola/bin_budget.h).

Each case runs once with bins too fine for the budget and once with a budget no run reaches, and holds the first
to the second re-binned here, in numpy, to the width the first ended at: what a bin holds must not change with
the width, only how many there are. Why: bins are kept per link for the whole run, so their count grows with
the simulated time; a long flow run at 1 us bins needed gigabytes a link and limits.memory stopped it.
"""

from __future__ import annotations

import numpy as np
import pytest

import eidola
from eidola import ProfileBuilder

UNBOUNDED = 10**12  # fabric.stats.max_bins no run here comes near


def _writes(gpus: int, transfers: list[tuple[int, int, int]]) -> eidola.Profile:
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="writes")
    b.buffer("data", nbytes=max(n for _, _, n in transfers))
    for src, dst, n in transfers:
        b.program(gpu=src, wg=0).write(dst=dst, buffer="data", offset=0, nbytes=n)
    return b.build()


def _run(repo, platform: str, profile, **overrides):
    plat = eidola.load_platform(repo / "platforms" / platform, overrides=overrides)
    return eidola.simulate(plat, profile)


def _rebinned(bins: np.ndarray, factor: int, column: str) -> dict[tuple[int, int], float]:
    """`column` of a link_bins table summed into bins `factor` times as wide, by (link, bin)."""
    out: dict[tuple[int, int], float] = {}
    for link, b, x in zip(bins["link"], bins["bin"], bins[column]):
        key = (int(link), int(b) // factor)
        out[key] = out.get(key, 0) + x
    return out


def _widened(fine, coarse, bin_ns: float, budget: int) -> int:
    """Checks what every widened run must hold; returns the factor the bins were widened by."""
    assert coarse.kernel_time_ns == fine.kernel_time_ns  # statistics never move the simulation
    assert len(fine.link_bins) > budget  # the case needs widening at all
    ((width_ns, doublings),) = coarse.bin_widths
    assert fine.bin_widths == ((bin_ns, 0),)
    factor = 2**doublings
    assert doublings > 0 and width_ns == pytest.approx(bin_ns * factor)
    starts = coarse.link_bins["start_ns"]
    assert np.allclose(starts, coarse.link_bins["bin"] * width_ns)
    assert len(coarse.link_bins) <= budget
    # It widened no more than it had to: at half the width the whole run fills more than half the budget.
    assert len(_rebinned(fine.link_bins, factor // 2, "bytes")) > budget // 4
    assert any("fabric.stats.max_bins" in n for n in coarse.summary["notes"])
    assert not any("fabric.stats.max_bins" in n for n in fine.summary["notes"])
    # Per link, the bins add up to the link's bytes and busy time, as the fine ones do.
    for run in (fine, coarse):
        links = run.link_bins["link"]
        for i, row in enumerate(run.links):
            mine = links == i
            assert int(run.link_bins["bytes"][mine].sum()) == int(row["bytes"])
            assert float(run.link_bins["busy_ns"][mine].sum()) == pytest.approx(float(row["busy_ns"]), rel=1e-4)
    return factor


def test_packet_bins_widen_to_the_fine_bins_summed(repo):
    # Two 256 KiB writes across the switch at 1 ns bins: some 7 us on four links each way, thousands of bins
    # against a budget of 512.
    profile = _writes(8, [(0, 1, 256 << 10), (2, 3, 256 << 10)])
    fine = _run(repo, "switch-8gpu.yaml", profile, **{"fabric.stats.bin": "1ns", "fabric.stats.max_bins": UNBOUNDED})
    coarse = _run(repo, "switch-8gpu.yaml", profile, **{"fabric.stats.bin": "1ns", "fabric.stats.max_bins": 512})
    factor = _widened(fine, coarse, 1.0, 512)
    # A packet's bytes count in the bin its transmission starts in, so a wide bin holds exactly its fine bins'
    # bytes; its busy time is theirs summed (in float).
    got = _rebinned(coarse.link_bins, 1, "bytes")
    want = _rebinned(fine.link_bins, factor, "bytes")
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in want.items() if v}
    busy = _rebinned(fine.link_bins, factor, "busy_ns")
    for link, b, x in zip(coarse.link_bins["link"], coarse.link_bins["bin"], coarse.link_bins["busy_ns"]):
        assert x == pytest.approx(busy[(int(link), int(b))], rel=1e-5)


def test_flow_bins_widen_and_hold_the_same_time(repo):
    # The same writes as flows: a fluid's bins integrate each link's load between changes, so a wide bin's busy
    # time is its fine bins' summed (bytes are spread over the busy time, so only their total is exact).
    profile = _writes(8, [(0, 1, 256 << 10), (2, 3, 256 << 10)])
    common = {"fabric.model": "flow", "fabric.stats.bin": "1ns"}
    fine = _run(repo, "switch-8gpu.yaml", profile, **common, **{"fabric.stats.max_bins": UNBOUNDED})
    coarse = _run(repo, "switch-8gpu.yaml", profile, **common, **{"fabric.stats.max_bins": 512})
    factor = _widened(fine, coarse, 1.0, 512)
    busy = _rebinned(fine.link_bins, factor, "busy_ns")
    for link, b, x in zip(coarse.link_bins["link"], coarse.link_bins["bin"], coarse.link_bins["busy_ns"]):
        assert x == pytest.approx(busy[(int(link), int(b))], rel=1e-4, abs=1e-3)
    # No bin holds more than its lanes can be busy in it.
    lanes = coarse.links["lanes"][coarse.link_bins["link"]]
    assert (coarse.link_bins["busy_ns"] <= lanes * factor * 1.0 * (1 + 1e-6)).all()


def test_ideal_pair_bins_widen_to_the_fine_bins_summed(repo):
    # The ideal fabric bins bytes per GPU pair where each write is delivered: an all-to-all of 32 writes a pair
    # spread over time by compute between them, at 1 ps bins.
    b = ProfileBuilder(gpus=4, workgroups=1, name="spread")
    b.buffer("data", nbytes=4096)
    for g in range(4):
        prog = b.program(gpu=g, wg=0)
        for i in range(32):
            prog.compute(ns=10 * (g + 1))
            prog.write(dst=(g + 1 + i % 3) % 4, buffer="data", offset=0, nbytes=64 * (i + 1))
    profile = b.build()
    over = {"fabric.stats.bin": "1ps"}
    fine = _run(repo, "gemv-allreduce-4gpu.yaml", profile, **over, **{"fabric.stats.max_bins": UNBOUNDED})
    coarse = _run(repo, "gemv-allreduce-4gpu.yaml", profile, **over, **{"fabric.stats.max_bins": 64})
    assert fine.kernel_time_ns == coarse.kernel_time_ns
    ((width_ns, doublings),) = coarse.bin_widths
    factor = 2**doublings
    assert width_ns == pytest.approx(factor / 1000) and len(coarse.link_bins) <= 64 < len(fine.link_bins)
    assert _rebinned(coarse.link_bins, 1, "bytes") == _rebinned(fine.link_bins, factor, "bytes")
    assert len(_rebinned(fine.link_bins, factor // 2, "bytes")) > 64 // 2


def test_a_budget_below_the_links_stops_near_one_bin_a_link(repo):
    # A budget of one bin cannot be met by 8 busy links (a busy and a bytes list each): the bins widen until one
    # spans the run so far, then only when what is held doubles, so the run ends with no more than two a list.
    profile = _writes(8, [(0, 1, 64 << 10), (2, 3, 64 << 10)])
    run = _run(repo, "switch-8gpu.yaml", profile, **{"fabric.stats.bin": "1ns", "fabric.stats.max_bins": 1})
    whole = _run(repo, "switch-8gpu.yaml", profile, **{"fabric.stats.bin": "1ns"})
    assert run.kernel_time_ns == whole.kernel_time_ns
    busy_links = len(np.unique(run.link_bins["link"]))
    assert busy_links == 8
    assert len(run.link_bins) <= 2 * busy_links
    ((width_ns, _),) = run.bin_widths
    assert width_ns >= run.kernel_time_ns / 4


def test_a_bad_budget_is_named(repo):
    with pytest.raises(eidola.ConfigError, match=r"stats\.max_bins"):
        _run(repo, "switch-8gpu.yaml", _writes(8, [(0, 1, 4096)]), **{"fabric.stats.max_bins": 0})
