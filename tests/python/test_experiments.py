"""The experiments reproduce the paper's shapes: polling linear in the wake-up delay, SyncMon flat."""

import sys

import numpy as np
import pytest


@pytest.fixture
def experiments(repo):
    sys.path.insert(0, str(repo / "experiments"))
    yield
    sys.path.remove(str(repo / "experiments"))


def test_wakeup_sweep_is_linear_for_polling_and_flat_for_syncmon(experiments):
    import wakeup_sweep

    rows, _ = wakeup_sweep.run()
    data = {m: np.array([(d, r) for mm, d, r, _ in rows if mm == m], dtype=float) for m in wakeup_sweep.MODES}
    # 12 waiting workgroups, one read per (300 ns memory latency + 100 ns interval): 30 reads per us.
    slope, _ = np.polyfit(data["poll"][:, 0], data["poll"][:, 1], 1)
    assert slope == pytest.approx(12 / 0.4, rel=0.03)
    residual = data["poll"][:, 1] - np.polyval(np.polyfit(data["poll"][:, 0], data["poll"][:, 1], 1), data["poll"][:, 0])
    assert np.abs(residual).max() < 40          # linear: off the line by less than ~1.3 us of polling
    assert np.all(data["syncmon"][:, 1] == 0)   # flat: no flag reads at all
    spin = np.polyfit(data["spin_yield"][:, 0], data["spin_yield"][:, 1], 1)[0]
    assert 0 < spin < slope / 3


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
