"""Overlapping releases (signal overlap=True) on the ideal fabric, timed by hand.

Platform: ideal fabric, latency L = 500 ns each way; memory latency M = 300 ns and a bandwidth so
high (1000 TB/s) that an access's occupancy rounds to 0 ps, so a write or flag lands M after it
arrives and nothing queues. A write issued at t is acknowledged at t + 2L + M = t + 1300 ns; a
signal issued at t changes the remote flag at t + L + M = t + 800 ns and is acknowledged at
t + 1300 ns; a SyncMon wait whose flag changes at t ends at t (wake latency 0).
"""

import numpy as np
import pytest

import eidola
from eidola.errors import ProfileError
from eidola.profile import ProfileBuilder, load_profile

L, M = 500.0, 300.0
RTT = 2 * L + M  # a write's acknowledgement
LAND = L + M     # a signal's flag change after it is issued


@pytest.fixture
def ideal(write_platform):
    def make(gpus=3):
        return eidola.load_platform(write_platform(gpus=gpus, workgroups=1, latency=f"{L:g}ns",
                                                   mem_latency=f"{M:g}ns", mem_bw="1000TB/s", max_outstanding=256))
    return make


def _run(plat, b):
    res = eidola.simulate(plat, b.build(), trace=True)
    ops = np.sort(res.ops, order=["gpu", "wg", "op"])
    return res, {(int(r["gpu"]), int(r["op"])): (float(r["begin_ns"]), float(r["end_ns"])) for r in ops}


def _builder():
    b = ProfileBuilder(gpus=3, workgroups=1, name="overlap")
    b.flag("f").flag("g").buffer("data", 4096)
    return b


@pytest.mark.parametrize("overlap", [False, True])
def test_the_workgroup_goes_on_while_an_overlapping_release_waits(ideal, overlap):
    # GPU 0 writes one packet to GPU 1, signals it, then computes 100 ns. The release waits for the
    # write's acknowledgement (RTT) either way, so the flag changes at RTT + LAND = 2100 ns and GPU 0
    # ends when the signal is acknowledged, RTT + RTT = 2600 ns. What overlap changes: the compute
    # starts at once (0 ns) instead of after the release (1300 ns).
    b = _builder()
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=256) \
        .signal(dst=1, flag="f", scope="peer", overlap=overlap).compute(ns=100)
    b.program(1, 0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    res, t = _run(ideal(), b)
    start = 0.0 if overlap else RTT
    assert t[0, 2] == (start, start + 100)
    assert t[1, 0][1] == RTT + LAND
    assert res.gpus["finish_ns"][0] == 2 * RTT
    assert res.kernel_time_ns == 2 * RTT


@pytest.mark.parametrize("second_overlaps", [False, True])
def test_releases_go_out_in_program_order(ideal, second_overlaps):
    # The second signal (to GPU 2, which GPU 0 never wrote) covers no write, but it follows a held
    # release: it goes only once that one is released (RTT), so GPU 2's flag changes at
    # RTT + LAND = 2100 ns, not LAND = 800 ns. A plain signal waits for it in the workgroup (its op
    # ends at RTT); an overlapping one is held behind it (its op ends at once).
    b = _builder()
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=256) \
        .signal(dst=1, flag="f", scope="peer", overlap=True) \
        .signal(dst=2, flag="g", scope="peer", overlap=second_overlaps)
    b.program(1, 0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    b.program(2, 0).wait(flag="g", cond=">=", value=1, mode="syncmon")
    res, t = _run(ideal(), b)
    assert t[0, 1] == (0, 0)
    assert t[0, 2][1] == (0 if second_overlaps else RTT)
    assert t[1, 0][1] == RTT + LAND
    assert t[2, 0][1] == RTT + LAND
    assert res.kernel_time_ns == 2 * RTT


def test_a_fence_waits_for_held_releases_and_their_acknowledgements(ideal):
    # write (acknowledged at RTT), held signal (sent at RTT, acknowledged at 2 RTT), fence: it ends
    # at 2 RTT = 2600 ns, then the compute runs to 2700 ns.
    b = _builder()
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=256) \
        .signal(dst=1, flag="f", scope="peer", overlap=True).fence().compute(ns=100)
    b.program(1, 0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    res, t = _run(ideal(), b)
    assert t[0, 2] == (0, 2 * RTT)
    assert res.gpus["finish_ns"][0] == 2 * RTT + 100


def test_a_workgroup_scope_release_covers_every_earlier_write(ideal):
    # Writes to GPU 1 at 0 and, after a 1000 ns compute, to GPU 2 at 1000 ns; the held
    # workgroup-scope signal to GPU 1 covers both, so it goes at 1000 + RTT = 2300 ns and GPU 1's
    # flag changes at 3100 ns, while the workgroup has long gone on (its compute 1000-1100 ns).
    b = _builder()
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=256).compute(ns=1000) \
        .write(dst=2, buffer="data", offset=0, nbytes=256).signal(dst=1, flag="f", overlap=True).compute(ns=100)
    b.program(1, 0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    _, t = _run(ideal(), b)
    assert t[0, 4] == (1000, 1100)
    assert t[1, 0][1] == 1000 + RTT + LAND


def test_overlap_is_checked_and_round_trips(tmp_path):
    b = _builder()
    with pytest.raises(ProfileError, match="gpu 0 wg 0 op 0 \\(signal\\): overlap must be true or false, got 1"):
        b.program(0, 0).signal(dst=1, flag="f", overlap=1)
    b = _builder()
    b.program(0, 0).signal(dst=1, flag="f", scope="peer", overlap=True).signal(dst=2, flag="g")
    prof = b.build()
    prof.save(tmp_path / "p.yaml")
    assert "overlap: True" in (tmp_path / "p.yaml").read_text()
    back = load_profile(tmp_path / "p.yaml")
    assert back == prof
    assert [op["overlap"] for op in back.program(0, 0)] == [True, False]
