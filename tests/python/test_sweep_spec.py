"""Sweep specs without simulating: parsing, errors that name the file and key, point order and hashes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from eidola.errors import ConfigError
from eidola.run.sweep import expand, load_spec


def _spec(tmp_path: Path, body: str, platform: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(f"sweep: 1\nplatform: {platform.name}\n" + textwrap.dedent(body))
    return path


@pytest.fixture
def plat(write_platform):  # type: ignore[no-untyped-def]
    return write_platform()


def test_grid_and_zip_expand_in_nested_loop_order(tmp_path, plat):  # type: ignore[no-untyped-def]
    spec = load_spec(_spec(tmp_path, """\
        grid: {fabric.latency: [100ns, 2us], seed: [1, 2, 3]}
        zip: {gpus.workgroups: [1, 2], gpus.max_outstanding: [8, 16]}
        metrics: [kernel_time_ns]
    """, plat))
    points = expand(spec)
    assert len(points) == 2 * 3 * 2
    assert spec.axis_names() == ["fabric.latency", "seed", "gpus.workgroups", "gpus.max_outstanding"]
    assert points[0].values == {"fabric.latency": "100ns", "seed": 1, "gpus.workgroups": 1, "gpus.max_outstanding": 8}
    assert points[1].values == {"fabric.latency": "100ns", "seed": 1, "gpus.workgroups": 2, "gpus.max_outstanding": 16}
    assert points[2].values["seed"] == 2
    assert [p.index for p in points] == list(range(12))
    assert len({p.hash for p in points}) == 12


def test_range_values_include_the_stop(tmp_path, plat):  # type: ignore[no-untyped-def]
    spec = load_spec(_spec(tmp_path, "grid: {seed: {start: 0, stop: 40000, step: 2000}}\nmetrics: [flag_reads]\n",
                           plat))
    assert [p.values["seed"] for p in expand(spec)] == list(range(0, 40001, 2000))


def test_point_hash_is_stable_across_processes_and_follows_the_files(tmp_path, plat):  # type: ignore[no-untyped-def]
    path = _spec(tmp_path, "grid: {seed: [1, 2]}\nmetrics: [kernel_time_ns]\n", plat)
    here = [p.hash for p in expand(load_spec(path))]
    code = ("import sys; from eidola.run.sweep import expand, load_spec; "
            "print(' '.join(p.hash for p in expand(load_spec(sys.argv[1]))))")
    there = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert there.stdout.split() == here
    # A changed base platform changes every point's hash; the same file elsewhere does not.
    moved = tmp_path / "moved"
    moved.mkdir()
    (moved / plat.name).write_text(plat.read_text())
    (moved / "spec.yaml").write_text(path.read_text())
    assert [p.hash for p in expand(load_spec(moved / "spec.yaml"))] == here
    plat.write_text(plat.read_text().replace("500ns", "600ns"))
    assert not {p.hash for p in expand(load_spec(path))} & set(here)


@pytest.mark.parametrize("body, key", [
    ("grid: {seed: [1]}\nmetrics: [kernel_time_ns, no_such_metric]\n", "metrics"),
    ("grid: {seed: []}\nmetrics: [kernel_time_ns]\n", "grid.seed"),
    ("zip: {seed: [1, 2], fabric.latency: [1ns]}\nmetrics: [kernel_time_ns]\n", "zip"),
    ("grid: {generator.nbytes: [1]}\nmetrics: [kernel_time_ns]\n", "grid.generator.nbytes"),
    ("generator: {name: no_such}\nmetrics: [kernel_time_ns]\n", "generator.name"),
    ("grid: {seed: [1]}\nmetrics: [kernel_time_ns]\ntimeout: 5 parsecs\n", "timeout"),
    ("grid: {seed: [1]}\nmetrics: [kernel_time_ns]\nbogus: 1\n", "bogus"),
    ("axes: [{cross: {seed: [1]}}]\nmetrics: [kernel_time_ns]\n", "axes[0]"),
])
def test_bad_specs_name_the_file_and_key(tmp_path, plat, body, key):  # type: ignore[no-untyped-def]
    path = _spec(tmp_path, body, plat)
    with pytest.raises(ConfigError) as err:
        load_spec(path)
    assert str(path.resolve()) in str(err.value) and key in str(err.value)


def test_cli_bad_spec_exits_2_without_traceback(tmp_path, plat, cli):  # type: ignore[no-untyped-def]
    path = _spec(tmp_path, "grid: {seed: [1]}\nmetrics: [kernel_time_ns, bus_bw]\n", plat)
    r = cli("sweep", path)
    assert r.returncode == 2
    assert "metrics" in r.stderr and "'bus_bw'" in r.stderr and "busbw_GBps" in r.stderr
    assert "Traceback" not in r.stderr
    missing = cli("sweep", tmp_path / "nope.yaml")
    assert missing.returncode == 2 and "nope.yaml" in missing.stderr and "Traceback" not in missing.stderr
