"""What `--resume` reruns: every point whose inputs changed (each field of the spec that a point's result
depends on, the base files' contents, a timeout that may now let it finish), and no other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from eidola.errors import ConfigError
from eidola.run.sweep import sweep

# The 4-GPU GEMV on the ideal fabric, one workgroup per GPU: 2 latencies x 2 seeds = 4 points,
# each a few milliseconds of simulation.
_BASE: dict[str, Any] = {
    "sweep": 1,
    "platform": "plat.yaml",
    "generator": {"name": "gemv_allreduce", "gpus": 4, "workgroups": 1, "vector_bytes": 1024, "tile_ns": 2000},
    "set": {"gpus.memory.latency": "300ns"},
    "grid": {"fabric.latency": ["100ns", "250ns"], "seed": [1, 2]},
    "metrics": ["kernel_time_ns", "flag_reads"],
}


def _write(tmp: Path, doc: dict[str, Any]) -> Path:
    spec = tmp / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc, sort_keys=False))
    return spec


def _rows(out: Path) -> dict[str, int]:
    """row.json of every point folder -> its modification time (ns): a rerun point rewrites its row."""
    return {p.parent.name: p.stat().st_mtime_ns for p in (out / "points").glob("*/row.json")}


def _two_runs(tmp: Path, first: dict[str, Any], second: dict[str, Any]) -> tuple[Any, dict[str, int], dict[str, int]]:
    """Runs `first`, then `second` with --resume into the same folder; (second table, rows before, rows after)."""
    out = tmp / "out"
    sweep(_write(tmp, first), out=out, workers=2)
    before = _rows(out)
    table = sweep(_write(tmp, second), out=out, workers=2, resume=True)
    return table, before, _rows(out)


@pytest.fixture
def plat(write_platform):  # type: ignore[no-untyped-def]
    return write_platform(gpus=4, workgroups=1, mem_bw="1000PB/s")


def test_an_unchanged_spec_reruns_nothing(tmp_path, plat):  # type: ignore[no-untyped-def]
    table, before, after = _two_runs(tmp_path, _BASE, _BASE)
    assert (table.attrs["reused"], table.attrs["ran"]) == (4, 0)
    assert after == before


def test_a_changed_axis_value_reruns_only_its_points(tmp_path, plat):  # type: ignore[no-untyped-def]
    changed = {**_BASE, "grid": {"fabric.latency": ["100ns", "300ns"], "seed": [1, 2]}}
    table, before, after = _two_runs(tmp_path, _BASE, changed)
    assert (table.attrs["reused"], table.attrs["ran"]) == (2, 2)
    # The two 100ns points kept their rows untouched; the two 300ns points are new folders.
    now = set(table["hash"].str[:16])
    kept = {k for k in now & set(before) if after[k] == before[k]}
    assert kept == set(table[table["fabric.latency"] == "100ns"]["hash"].str[:16]) and len(kept) == 2
    assert len(now - set(before)) == 2


@pytest.mark.parametrize("field, value", [
    ("set", {"gpus.memory.latency": "200ns"}),
    ("generator", {**_BASE["generator"], "tile_ns": 3000}),
    # Fewer metrics: every old row still holds the ones asked for, so only the hash tells them apart.
    ("metrics", ["kernel_time_ns"]),
    ("trace", True),
])
def test_each_spec_field_reruns_every_point(tmp_path, plat, field, value):  # type: ignore[no-untyped-def]
    table, before, after = _two_runs(tmp_path, _BASE, {**_BASE, field: value})
    assert (table.attrs["reused"], table.attrs["ran"]) == (0, 4), field
    assert len(set(after) - set(before)) == 4  # new folders: every hash changed


def test_an_edited_platform_file_reruns_every_point(tmp_path, plat):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    spec = _write(tmp_path, _BASE)
    sweep(spec, out=out, workers=2)
    plat.write_text(plat.read_text().replace("max_outstanding: 64", "max_outstanding: 32"))
    table = sweep(spec, out=out, workers=2, resume=True)
    assert (table.attrs["reused"], table.attrs["ran"]) == (0, 4)


def test_an_edited_profile_file_reruns_every_point(tmp_path, plat):  # type: ignore[no-untyped-def]
    from eidola.workload.generators import gemv_allreduce

    profile = tmp_path / "prof.yaml"
    gemv_allreduce(gpus=4, workgroups=1, vector_bytes=1024).save(profile)
    doc = {k: v for k, v in _BASE.items() if k != "generator"} | {"profile": "prof.yaml"}
    out, spec = tmp_path / "out", _write(tmp_path, doc)
    sweep(spec, out=out, workers=2)
    assert sweep(spec, out=out, workers=2, resume=True).attrs["reused"] == 4
    gemv_allreduce(gpus=4, workgroups=1, vector_bytes=2048).save(profile)
    table = sweep(spec, out=out, workers=2, resume=True)
    assert (table.attrs["reused"], table.attrs["ran"]) == (0, 4)


def test_a_longer_timeout_reruns_only_the_timed_out_point(tmp_path, plat):  # type: ignore[no-untyped-def]
    # Point 1 waits 10^12 ns for GPU 0, polling every 1 ns: it never finishes within any of these timeouts.
    doc = {**_BASE, "generator": {**_BASE["generator"], "interval_ns": 1, "delays": [{"gpu": 0, "ns": 1000}]},
           "grid": {"generator.delays.0.ns": [1000, 1.0e12]}, "timeout": "0.3s"}
    out = tmp_path / "out"
    first = sweep(_write(tmp_path, doc), out=out, workers=2)
    assert list(first["status"]) == ["ok", "timeout"]
    before = _rows(out)
    # The same timeout, or a shorter one, would only kill it again: both rows are reused.
    for timeout in ("0.3s", "0.2s"):
        same = sweep(_write(tmp_path, {**doc, "timeout": timeout}), out=out, workers=2, resume=True)
        assert (same.attrs["reused"], same.attrs["ran"]) == (2, 0), timeout
    assert _rows(out) == before
    # A longer one may let it finish: the timed-out point runs again; the finished one does not.
    longer = sweep(_write(tmp_path, {**doc, "timeout": "0.5s"}), out=out, workers=2, resume=True)
    assert (longer.attrs["reused"], longer.attrs["ran"]) == (1, 1)
    after = _rows(out)
    ok_key, timeout_key = (h[:16] for h in first["hash"])
    assert after[ok_key] == before[ok_key] and after[timeout_key] != before[timeout_key]
    assert "0.5 s" in longer["error"][1]


def test_a_tampered_row_is_not_trusted(tmp_path, plat):  # type: ignore[no-untyped-def]
    import json

    out, spec = tmp_path / "out", _write(tmp_path, _BASE)
    table = sweep(spec, out=out, workers=2)
    folders = [out / f for f in table["folder"]]
    # A row claiming another status type, one missing a metric, one not JSON, one a list: each point runs again.
    row = json.loads((folders[0] / "row.json").read_text())
    (folders[0] / "row.json").write_text(json.dumps({**row, "exit_status": "0"}))
    (folders[1] / "row.json").write_text(json.dumps({k: v for k, v in row.items() if k != "flag_reads"}
                                                    | {"hash": table["hash"][1]}))
    (folders[2] / "row.json").write_text("{not json")
    (folders[3] / "row.json").write_text("[" * 100_000 + "]" * 100_000)
    again = sweep(spec, out=out, workers=2, resume=True)
    assert (again.attrs["reused"], again.attrs["ran"]) == (0, 4)
    # Axis values come from the spec, never from the file: a row saying otherwise changes nothing.
    row = json.loads((folders[0] / "row.json").read_text())
    (folders[0] / "row.json").write_text(json.dumps({**row, "fabric.latency": "9ns"}))
    third = sweep(spec, out=out, workers=2, resume=True)
    assert third.attrs["reused"] == 4 and third["fabric.latency"][0] == "100ns"


def test_resume_and_overwrite_together_are_refused(tmp_path, plat):  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="--resume, --overwrite"):
        sweep(_write(tmp_path, _BASE), out=tmp_path / "out", resume=True, overwrite=True)


def test_a_shorter_timeout_reruns_a_point_that_ran_longer(tmp_path, plat):  # type: ignore[no-untyped-def]
    # A finished point records how long it ran (ran_s). Under a timeout no longer than that it would
    # now be killed, so --resume runs it again; under a longer one it is reused. The recorded time is
    # set by hand here (5 s), so the test does not depend on how fast this machine runs the point.
    import json

    doc = {**_BASE, "timeout": "60s"}
    out = tmp_path / "out"
    first = sweep(_write(tmp_path, doc), out=out, workers=2)
    assert list(first["status"]) == ["ok"] * 4
    slow = out / first["folder"][0] / "row.json"
    row = json.loads(slow.read_text())
    assert isinstance(row["ran_s"], float) and 0 < row["ran_s"] < 60
    slow.write_text(json.dumps({**row, "ran_s": 5.0}))
    longer = sweep(_write(tmp_path, {**doc, "timeout": "10s"}), out=out, workers=2, resume=True)
    assert (longer.attrs["reused"], longer.attrs["ran"]) == (4, 0)
    before = _rows(out)
    shorter = sweep(_write(tmp_path, {**doc, "timeout": "5s"}), out=out, workers=2, resume=True)
    assert (shorter.attrs["reused"], shorter.attrs["ran"]) == (3, 1)
    after = _rows(out)
    assert [k for k in before if after[k] != before[k]] == [first["folder"][0].split("/")[-1]]
