"""Bad sweep input, each class of it: exit status 2, one line naming the spec file (or option) and the key,
before any point runs. Nothing here may exit 1, hang or exhaust memory."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pandas
import pytest

from eidola import cli

_RING = "generator: {name: ring_allreduce, gpus: 4, nbytes: 4096}\n"
_BOMB = "lol: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.fixture
def plat(write_platform):  # type: ignore[no-untyped-def]
    return write_platform(gpus=4, workgroups=1)


def _spec(tmp: Path, body: str, name: str = "spec.yaml") -> Path:
    path = tmp / name
    path.write_text("sweep: 1\nplatform: plat.yaml\n" + textwrap.dedent(body))
    return path


def _bad(capsys, argv: list[str], *needles: str) -> str:  # type: ignore[no-untyped-def]
    """`eidola ARGV` exits 2 with one line holding every needle; returns the line."""
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, (code, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


# ---------------------------------------------------------------- typos: caught before any point runs

@pytest.mark.parametrize("body, needles", [
    (_RING + "set: {fabric.latncy: 1ns}\nmetrics: [kernel_time_ns]\n", ["set.fabric.latncy", "'latncy'"]),
    (_RING + "grid: {fabric.latncy: [1ns, 2ns]}\nmetrics: [kernel_time_ns]\n", ["grid.fabric.latncy", "'latncy'"]),
    # Unitless: fine for the first value's type check, refused for what it means.
    (_RING + "grid: {seed: [1, 2], fabric.latency: [100ns, 200]}\nmetrics: [kernel_time_ns]\n",
     ["grid.fabric.latency = 200", "no unit"]),
    (_RING.replace("}", ", chunkz: 2}") + "metrics: [kernel_time_ns]\n", ["generator.chunkz", "ring_allreduce"]),
    (_RING + "grid: {generator.chunkz: [1, 2]}\nmetrics: [kernel_time_ns]\n", ["grid.generator.chunkz"]),
    (_RING + "grid: {generator.name: [ring_allreduce, ring_allredcue]}\nmetrics: [kernel_time_ns]\n",
     ["grid.generator.name = 'ring_allredcue'", "unknown generator"]),
    ("generator: {name: ring_allredcue, gpus: 4}\nmetrics: [kernel_time_ns]\n", ["generator.name", "ring_allredcue"]),
    ("generator: {name: ring_allreduce, gpus: 4}\nmetrics: [kernel_time_ns]\n", ["generator", "nbytes"]),
    (_RING + "grid: {generator.nbytes: [4096, 1 parsec]}\nmetrics: [kernel_time_ns]\n",
     ["grid.generator.nbytes", "parsec"]),
    (_RING + "grid: {seed: [1, -3]}\nmetrics: [kernel_time_ns]\n", ["grid.seed = -3", "2^64"]),
    # Refused before a profile for 2^20 GPUs is built: the platform has 4.
    ("generator: {name: ring_allreduce, gpus: 1048576, nbytes: 4096}\nmetrics: [kernel_time_ns]\n",
     ["generator.gpus", "1048576", "has 4"]),
    (_RING + "set: {1: 2}\nmetrics: [kernel_time_ns]\n", ["set", "1"]),
    (_RING + "set: {generator.nbytes: 8}\nmetrics: [kernel_time_ns]\n", ["set.generator.nbytes"]),
    (_RING + "grid: {null: [1]}\nmetrics: [kernel_time_ns]\n", ["grid", "None"]),
    (_RING + "grid: {seed: {start: 0, stop: .inf}}\nmetrics: [kernel_time_ns]\n", ["grid.seed", "finite"]),
    (_RING + "grid: {seed: {start: 0, stop: 5, step: .nan}}\nmetrics: [kernel_time_ns]\n", ["grid.seed", "finite"]),
    (_RING + "grid: {seed: {start: 0, stop: 1.0e+300, step: 1.0e-300}}\nmetrics: [kernel_time_ns]\n",
     ["grid.seed", "more than"]),
    (_RING + "grid: {seed: {start: 0, stop: 100000000000000000000000}}\nmetrics: [kernel_time_ns]\n",
     ["grid.seed", "more than the limit"]),
    (_RING + "metrics: [kernel_time_ns]\ntimeout: 1.0e+308\n", ["timeout", "86400"]),
    (_RING + "metrics: [kernel_time_ns]\ntimeout: .nan\n", ["timeout"]),
    (_RING + "metrics: [kernel_time_ns]\ntimeout: true\n", ["timeout"]),
    (_RING + "metrics: [kernel_time_ns]\ntimeout: 1e999s\n", ["timeout"]),
])
def test_a_bad_spec_key_exits_2_before_any_point_runs(tmp_path, plat, capsys, body, needles):  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, body)
    _bad(capsys, ["sweep", spec, "--out", tmp_path / "out"], str(spec.resolve()), *needles)
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


def test_too_many_points_in_all(tmp_path, plat, capsys, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("EIDOLA_MAX_SWEEP_POINTS", "10")
    spec = _spec(tmp_path, _RING + "grid: {seed: [1, 2, 3, 4], generator.chunks: [1, 2, 3]}\n"
                 "metrics: [kernel_time_ns]\n")
    _bad(capsys, ["sweep", spec], str(spec.resolve()), "grid", "more than 10 points")


# ---------------------------------------------------------------- files that are not specs

@pytest.mark.parametrize("content, needles", [
    (b"sweep: 1\nplat\xffform: x\n", [":2:5:", "not UTF-8"]),
    (b"sweep: 1\nplatform: plat.yaml\nmetrics: " + b"[" * 100 + b"]" * 100 + b"\n", ["nested more than"]),
    (b"sweep: 1\nplatform: plat.yaml\nplatform: plat.yaml\nmetrics: [kernel_time_ns]\n", ["duplicate key"]),
    (b"sweep: 1\nplatform: plat.yaml\nset: &a {x: *a}\nmetrics: [kernel_time_ns]\n", ["recursive YAML alias *a"]),
    (b"sweep: 1\n" + _BOMB.encode(), ["billion laughs"]),
])
def test_a_spec_file_that_is_not_a_spec(tmp_path, plat, capsys, content, needles):  # type: ignore[no-untyped-def]
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(content)
    _bad(capsys, ["sweep", spec], str(spec), *needles)


def test_a_device_a_fifo_or_a_folder_as_the_spec_or_its_platform(tmp_path, plat, capsys):  # type: ignore[no-untyped-def]
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # would block a plain open() for ever
    for path in ("/dev/zero", fifo, tmp_path):
        _bad(capsys, ["sweep", path], str(path), "regular file")
    spec = tmp_path / "spec.yaml"
    for platform in ("/dev/zero", str(fifo)):
        spec.write_text(f"sweep: 1\nplatform: {platform}\n{_RING}metrics: [kernel_time_ns]\n")
        _bad(capsys, ["sweep", spec], str(spec.resolve()), "platform", "regular file")


# ---------------------------------------------------------------- options and the output folder

def test_bad_options_name_the_option(tmp_path, plat, capsys):  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, _RING + "metrics: [kernel_time_ns]\n")
    _bad(capsys, ["sweep", spec, "--dask", "junk"], "--dask 'junk'", "tcp://host:8786")
    _bad(capsys, ["sweep", spec, "--dask", "local:0"], "--dask local:0")
    _bad(capsys, ["sweep", spec, "--dask", "local:100000"], "--dask local:100000")
    _bad(capsys, ["sweep", spec, "--workers", "100000"], "--workers 100000")
    _bad(capsys, ["sweep", spec, "--workers", "0"], "--workers 0")
    _bad(capsys, ["sweep", spec, "--out", spec], f"--out {spec}", "is a file")
    _bad(capsys, ["sweep", spec, "--out", spec / "below"], f"--out {spec / 'below'}")


def _run(capsys, argv: list[object]) -> int:  # type: ignore[no-untyped-def]
    """`eidola ARGV`'s exit status; its output is left in capsys."""
    return cli.main([str(a) for a in argv])


def test_a_finished_folder_points_at_resume_and_its_contents_are_not_trusted(tmp_path, plat, capsys):  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, _RING + "grid: {seed: [1, 2]}\nmetrics: [kernel_time_ns]\n")
    out = tmp_path / "out"
    assert _run(capsys, ["sweep", spec, "--out", out, "--workers", "1"]) == 0
    capsys.readouterr()
    _bad(capsys, ["sweep", spec, "--out", out], f"--out {out}", "--resume", "--overwrite")
    table = pandas.read_parquet(out / "sweep.parquet")
    first, second = (out / f for f in table["folder"])
    # The first point's folder replaced by a file, the second's row.json by a FIFO: neither may be
    # trusted (or block the read); both run again, and their folders are made whole.
    for item in first.iterdir():
        item.unlink()
    first.rmdir()
    first.write_text("not a folder")
    (second / "row.json").unlink()
    os.mkfifo(second / "row.json")
    assert _run(capsys, ["sweep", spec, "--out", out, "--resume"]) == 0
    assert "(0 reused, 2 run, 0 failed)" in capsys.readouterr().out
    assert json.loads((first / "row.json").read_text())["status"] == "ok"
    assert (second / "row.json").is_file()
    assert _run(capsys, ["sweep", spec, "--out", out, "--overwrite"]) == 0
    assert "(0 reused, 2 run, 0 failed)" in capsys.readouterr().out
    # A file where the points folder belongs is not a sweep's folder.
    other = tmp_path / "other"
    other.mkdir()
    (other / "points").write_text("x")
    _bad(capsys, ["sweep", spec, "--out", other, "--resume"], f"--out {other}", "not a folder")


def test_sweep_plot_on_a_truncated_table(tmp_path, plat, capsys):  # type: ignore[no-untyped-def]
    spec = _spec(tmp_path, _RING + "grid: {seed: [1, 2]}\nmetrics: [kernel_time_ns]\n")
    out = tmp_path / "out"
    assert _run(capsys, ["sweep", spec, "--out", out]) == 0
    capsys.readouterr()
    table = out / "sweep.parquet"
    table.write_bytes(table.read_bytes()[: table.stat().st_size // 2])
    _bad(capsys, ["sweep", "plot", out, "--x", "seed", "--y", "kernel_time_ns"], str(table), "not a readable")
    table.write_bytes(b"")
    _bad(capsys, ["sweep", "plot", out, "--x", "seed", "--y", "kernel_time_ns"], str(table))
    table.unlink()
    os.mkfifo(table)
    _bad(capsys, ["sweep", "plot", out, "--x", "seed", "--y", "kernel_time_ns"], "not a sweep folder")


def test_an_axis_beyond_64_bits_is_written_as_text(tmp_path, plat, capsys):  # type: ignore[no-untyped-def]
    # 2^64 - 1 is a valid seed, but no Parquet integer column holds it: the column is text.
    spec = _spec(tmp_path, _RING + "grid: {seed: [1, 18446744073709551615]}\nmetrics: [kernel_time_ns]\n")
    out = tmp_path / "out"
    assert _run(capsys, ["sweep", spec, "--out", out]) == 0, capsys.readouterr().err
    table = pandas.read_parquet(out / "sweep.parquet")
    assert list(table["seed"]) == ["1", "18446744073709551615"]
    assert (table["status"] == "ok").all()
    # The ring has no variability: the seed changes nothing.
    assert table["kernel_time_ns"][0] == table["kernel_time_ns"][1]
