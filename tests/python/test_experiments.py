"""The experiments reproduce the paper's shapes: polling linear in the wake-up delay, SyncMon flat."""

import sys

import numpy as np
import pytest


@pytest.fixture
def experiments(repo):
    sys.path.insert(0, str(repo / "experiments"))
    yield
    sys.path.remove(str(repo / "experiments"))


@pytest.mark.parametrize("workgroups, interval_ns", [(4, 100), (2, 200)])
def test_wakeup_sweep_is_linear_for_polling_and_flat_for_syncmon(experiments, workgroups, interval_ns):
    import wakeup_sweep

    rows, _ = wakeup_sweep.run(workgroups, interval_ns)
    data = {m: np.array([(d, r) for mm, d, r, _ in rows if mm == m], dtype=float) for m in wakeup_sweep.MODES}
    # 3 x W waiting workgroups, each issuing one read per (M + I) while GPU 0 is held back:
    # 12 / (300 + 100 ns) = 30 reads per us, 6 / (300 + 200 ns) = 12 reads per us.
    waiting, m_ns = 3 * workgroups, 300.0
    slope, _ = np.polyfit(data["poll"][:, 0], data["poll"][:, 1], 1)
    assert slope == pytest.approx(waiting / ((m_ns + interval_ns) / 1000), rel=0.01)
    residual = data["poll"][:, 1] - np.polyval(np.polyfit(data["poll"][:, 0], data["poll"][:, 1], 1), data["poll"][:, 0])
    assert np.abs(residual).max() < 40          # linear: off the line by less than ~1.3 us of polling
    assert np.all(data["syncmon"][:, 1] == 0)   # flat: no flag reads at all
    # Spin-yield settles at one read per (M + max interval, 3.2 us) per waiter; the doubling from I
    # to the cap adds a few reads at the start of each wait, which the 0-40 us fit does not fully
    # average out, hence the looser bound (the exact single-waiter schedule: test_eidolon.py).
    spin = np.polyfit(data["spin_yield"][:, 0], data["spin_yield"][:, 1], 1)[0]
    assert spin == pytest.approx(waiting / ((m_ns + 3200) / 1000), rel=0.15)


def test_variability_experiment_runs(experiments):
    import variability

    rows, _ = variability.run(seeds=range(1, 6))
    kernels = [r[1] for r in rows]
    assert len(set(kernels)) == 5                # different seeds, different kernel times
    assert all(0 < r[3] < 1 for r in rows)       # a share of the kernel time


def test_every_experiment_spec_is_a_valid_sweep(repo):
    from eidola.run.sweep import expand, load_spec

    specs = sorted((repo / "experiments").glob("*.yaml"))
    assert {p.stem for p in specs} >= {"wakeup_sweep", "variability", "mi300x_busbw", "ring_vs_direct"}
    for path in specs:
        assert expand(load_spec(path))  # files found, metrics known, axes well formed


def test_flow_error_measures_a_series_again_when_its_stored_packet_column_is_stale(experiments):
    """--reuse-packet checks the stored packet column on each series' first size (a model or a platform file
    may have changed since it was measured): a stored time that differs from the packet fabric's now makes the
    whole series run again; a matching one lets the later sizes be taken as stored."""
    import flow_error

    pattern, platform, kib = "all-gather", "switch-8gpu.yaml", 1024
    sentinel = (100.0, 777.0)  # a stored 256 KiB point no simulation gives
    stale = flow_error.series(pattern, platform, 1e9, {(pattern, platform, 64 * kib): (0.1, 1.0),
                                                       (pattern, platform, 256 * kib): sentinel}, largest=256 * kib)
    assert [r["nbytes"] for r in stale] == [64 * kib, 256 * kib]
    assert stale[1]["packet_ns"] != sentinel[1]  # measured again, not taken
    assert stale[1]["packet_ns"] > stale[0]["packet_ns"] > 1.0
    fresh = (0.1, stale[0]["packet_ns"])  # the first size as the packet fabric gives it now
    reused = flow_error.series(pattern, platform, 1e9, {(pattern, platform, 64 * kib): fresh,
                                                        (pattern, platform, 256 * kib): sentinel}, largest=256 * kib)
    assert reused[0]["packet_ns"] == fresh[1]
    assert (reused[1]["packet_wall_s"], reused[1]["packet_ns"]) == sentinel  # taken as stored
    assert reused[1]["flow_ns"] == stale[1]["flow_ns"]  # the flow fabric runs either way, deterministically
