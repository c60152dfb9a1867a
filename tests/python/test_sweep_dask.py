"""Sweeps on a real Dask cluster: a `dask scheduler` and two `dask worker` processes on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas
from sweep_helpers import dask_cluster, gemv_kernel_ns, gemv_platform, write_gemv_sweep, write_ring_sweep

from eidola.run.sweep import sweep


def test_dask_cluster_gives_the_local_table_row_for_row(tmp_path, write_platform):  # type: ignore[no-untyped-def]
    spec = write_gemv_sweep(tmp_path, gemv_platform(write_platform))
    local = sweep(spec, out=tmp_path / "local", workers=2)
    with dask_cluster(tmp_path) as (address, _):
        remote = sweep(spec, out=tmp_path / "dask", dask=address)
    assert len(remote) == 12
    pandas.testing.assert_frame_equal(remote, local)
    for _, row in remote.iterrows():
        latency, memory = float(row["fabric.latency"][:-2]), float(row["gpus.memory.latency"][:-2])
        assert row["kernel_time_ns"] == gemv_kernel_ns(latency, memory)
    # The workers wrote each point's folder.
    assert all((tmp_path / "dask" / f / "summary.json").exists() for f in remote["folder"])


def _finished(out: Path) -> int:
    return len(list((out / "points").glob("*/row.json")))


def test_killing_a_worker_mid_sweep_loses_no_point(tmp_path, repo):  # type: ignore[no-untyped-def]
    spec = write_ring_sweep(tmp_path, repo)
    local = sweep(spec, out=tmp_path / "local", workers=2)
    with dask_cluster(tmp_path) as (address, workers):
        out = tmp_path / "dask"
        cmd = [sys.executable, "-m", "eidola", "sweep", str(spec), "--out", str(out), "--dask", address]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while _finished(out) < 2 and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None, "the sweep ended before a worker could be killed"
            # The whole process group: the worker and the point it is running, as when a node dies.
            os.killpg(workers[0].pid, signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, stderr
        assert "12 points (0 reused, 12 run, 0 failed)" in stdout
    remote = pandas.read_parquet(out / "sweep.parquet")
    pandas.testing.assert_frame_equal(remote, local)
