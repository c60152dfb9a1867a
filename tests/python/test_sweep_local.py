"""Sweeps on this machine: numbers against hand-derived timing, failures recorded, interrupt and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas
import pytest
from gemv_timing import symmetric_flag_reads
from processes import all_gone, children_of, forked_children, identity, still_running
from sweep_helpers import (
    LATENCIES_NS,
    MEMORY_NS,
    SEEDS,
    gemv_kernel_ns,
    gemv_platform,
    write_gemv_sweep,
    write_ring_sweep,
)

import eidola
from eidola.run.sweep import sweep


def test_local_sweep_matches_the_derivation(tmp_path, write_platform):  # type: ignore[no-untyped-def]
    spec = write_gemv_sweep(tmp_path, gemv_platform(write_platform))
    table = sweep(spec, out=tmp_path / "out", workers=2)
    assert len(table) == len(LATENCIES_NS) * len(MEMORY_NS) * len(SEEDS) == 12
    assert list(table.columns[:4]) == ["point", "fabric.latency", "gpus.memory.latency", "seed"]
    assert (table["status"] == "ok").all() and (table["exit_status"] == 0).all()
    for _, row in table.iterrows():
        latency, memory = float(row["fabric.latency"][:-2]), float(row["gpus.memory.latency"][:-2])
        assert row["kernel_time_ns"] == gemv_kernel_ns(latency, memory)
        assert row["flag_reads"] == 4 * symmetric_flag_reads(4, latency, memory, 100.0)
        assert row["atomics"] == 4 * 6      # 3 peers x 2 phases signal each GPU
    assert list(table["point"]) == list(range(12))
    # The files hold the same table, and every point has its folder with its Result.
    assert pandas.read_parquet(tmp_path / "out" / "sweep.parquet").equals(table)
    assert len(pandas.read_csv(tmp_path / "out" / "sweep.csv")) == 12
    summary = json.loads((tmp_path / "out" / table["folder"][5] / "summary.json").read_text())
    assert summary["kernel_time_ns"] == table["kernel_time_ns"][5]


def test_python_api_is_exported_and_one_worker_gives_the_same_table(tmp_path, write_platform):  # type: ignore[no-untyped-def]
    spec = write_gemv_sweep(tmp_path, gemv_platform(write_platform))
    one = eidola.sweep(spec, out=tmp_path / "one", workers=1)
    two = eidola.sweep(spec, out=tmp_path / "two", workers=2)
    pandas.testing.assert_frame_equal(one, two)


def test_failing_points_are_recorded_and_the_others_complete(tmp_path, repo):  # type: ignore[no-untyped-def]
    spec = tmp_path / "mixed.yaml"
    # 7 bytes cannot split over 8 GPUs (bad input); 1 GiB cannot finish within the timeout.
    spec.write_text(f"""\
sweep: 1
platform: {repo / "platforms" / "ring-8gpu.yaml"}
generator: {{name: ring_allreduce, gpus: 8, nbytes: 4096}}
grid: {{generator.nbytes: [4096, 7, 1GiB, 8192]}}
metrics: [kernel_time_ns, busbw_GBps]
timeout: 3s
""")
    table = sweep(spec, out=tmp_path / "out", workers=2)
    assert list(table["status"]) == ["ok", "error", "timeout", "ok"]
    assert list(table["exit_status"]) == [0, 2, 3, 0]
    assert "must be at least" in table["error"][1] and "timeout" in table["error"][2]
    assert table["kernel_time_ns"].isna().tolist() == [False, True, True, False]
    # busbw = S / t x 2(P-1)/P, recomputed from the table's own kernel time.
    assert table["busbw_GBps"][0] == pytest.approx(4096 / table["kernel_time_ns"][0] * 2 * 7 / 8, rel=1e-12)


def test_deadlocked_points_are_recorded_with_exit_status_3(tmp_path, write_platform, cli):  # type: ignore[no-untyped-def]
    b = eidola.ProfileBuilder(gpus=2, workgroups=1, name="stuck")
    b.flag("ready")
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="syncmon")
    b.build().save(tmp_path / "stuck.yaml")
    plat = write_platform(gpus=2, workgroups=1)
    spec = tmp_path / "stuck-sweep.yaml"
    spec.write_text(f"sweep: 1\nplatform: {plat}\nprofile: stuck.yaml\ngrid: {{seed: [1, 2]}}\n"
                    "metrics: [kernel_time_ns]\n")
    r = cli("sweep", spec, "--out", tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "2 failed" in r.stdout and "deadlock" in r.stderr and "Traceback" not in r.stderr
    table = pandas.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert list(table["status"]) == ["deadlock"] * 2 and list(table["exit_status"]) == [3, 3]
    assert "gpu 1 wg 0" in table["error"][0]


def _rows(out: Path) -> dict[str, int]:
    return {str(p): p.stat().st_mtime_ns for p in (out / "points").glob("*/row.json")}


def test_interrupted_sweep_resumes_without_rerunning_finished_points(tmp_path, repo, interruptible):  # type: ignore[no-untyped-def]
    spec, out = write_ring_sweep(tmp_path, repo), tmp_path / "out"
    cmd = [sys.executable, "-m", "eidola", "sweep", str(spec), "--out", str(out), "--workers", "1"]
    proc = interruptible(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_rows(out)) < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # The point children running now, seen while `proc` is alive: once it has been reaped, a child it
    # left behind would be init's, and no /proc scan by parent pid could find it.
    children = [identity(pid) for pid in children_of(proc.pid)]
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert all_gone(children), "a point child outlived the interrupted sweep"
    done = _rows(out)
    assert 3 <= len(done) < 12
    assert len(pandas.read_parquet(out / "sweep.parquet")) == len(done)  # the partial table was written
    r = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert f"({len(done)} reused, {12 - len(done)} run, 0 failed)" in r.stdout
    after = _rows(out)
    assert {k: after[k] for k in done} == done  # not one finished point was run again
    table = pandas.read_parquet(out / "sweep.parquet")
    assert len(table) == 12 and (table["status"] == "ok").all()
    # The profile has no variability, so the seed changes nothing: one kernel time per size.
    assert table.groupby("generator.nbytes")["kernel_time_ns"].nunique().tolist() == [1, 1]


def test_sweep_plot_draws_and_names_bad_columns(tmp_path, write_platform, cli):  # type: ignore[no-untyped-def]
    spec = write_gemv_sweep(tmp_path, gemv_platform(write_platform))
    assert cli("sweep", spec, "--out", tmp_path / "out", "--workers", "2").returncode == 0
    r = cli("sweep", "plot", tmp_path / "out", "--x", "fabric.latency", "--y", "kernel_time_ns",
            "--hue", "gpus.memory.latency", "--col", "seed")
    assert r.returncode == 0, r.stderr
    assert "note: each point" not in r.stderr  # every axis drawn
    assert (tmp_path / "out" / "kernel_time_ns-vs-fabric.latency.png").stat().st_size > 1000
    mean = cli("sweep", "plot", tmp_path / "out", "--x", "fabric.latency", "--y", "kernel_time_ns")
    assert mean.returncode == 0 and ("note: each point is the mean over gpus.memory.latency, seed (the min-max range "
                                     "shaded); draw them apart with --hue or --col") in mean.stderr, mean.stderr
    assert (tmp_path / "out" / "kernel_time_ns-vs-fabric.latency.svg").exists()
    bad = cli("sweep", "plot", tmp_path / "out", "--x", "fabric.latency", "--y", "busbw")
    assert bad.returncode == 2 and "'busbw'" in bad.stderr and "--y" in bad.stderr and "Traceback" not in bad.stderr
    text = cli("sweep", "plot", tmp_path / "out", "--x", "fabric.latency", "--y", "status")  # a user trial: a traceback
    assert text.returncode == 2 and "--y status: a column of numbers is drawn" in text.stderr, text.stderr
    assert "Traceback" not in text.stderr
    none = cli("sweep", "plot", tmp_path, "--x", "a", "--y", "b")
    assert none.returncode == 2 and "not a sweep folder" in none.stderr


def test_kill_9_of_the_sweep_leaves_no_running_point(tmp_path, write_platform):  # type: ignore[no-untyped-def]
    # Two points that never finish: GPU 0 starts 10^12 ns late and its peers poll every 1 ns for it.
    spec = write_gemv_sweep(tmp_path, gemv_platform(write_platform)).read_text()
    spec = spec.replace("interval_ns: 100}", "interval_ns: 1, delays: [{gpu: 0, ns: 1.0e+12}]}")
    spec = spec.split("grid:")[0] + "grid: {seed: [1, 2]}\nmetrics: [kernel_time_ns]\n"
    path = tmp_path / "forever.yaml"
    path.write_text(spec)
    proc = subprocess.Popen([sys.executable, "-m", "eidola", "sweep", str(path), "--out", str(tmp_path / "out"),
                             "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen: list[tuple[int, str | None]] = []
    try:
        deadline = time.monotonic() + 120
        while len(seen) < 2 and proc.poll() is None and time.monotonic() < deadline:
            seen = [identity(pid) for pid in forked_children(proc.pid)]
            time.sleep(0.1)
        assert len(seen) == 2, f"the points never started: {proc.poll()} {seen}"
        proc.send_signal(signal.SIGKILL)  # no handler, no finally: only the kernel can end the points
        proc.wait(timeout=60)
        assert all_gone(seen), "a point outlived its killed sweep"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=60)
        for pid, started in seen:
            if still_running((pid, started)):
                os.kill(pid, signal.SIGKILL)
