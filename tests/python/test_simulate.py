"""Simulation runs: determinism, crash isolation, in-process mode, describe's source of truth."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import eidola
from eidola.platform import Component, catalog
from eidola.workload.builder import ProfileBuilder


def test_two_runs_are_bit_identical(repo):
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    a, b = eidola.simulate(plat), eidola.simulate(plat)
    assert a.kernel_time_ns == b.kernel_time_ns
    assert a.events == b.events
    for table in ("gpus", "workgroups", "links"):
        assert getattr(a, table).tobytes() == getattr(b, table).tobytes(), table


@pytest.mark.parametrize("kind, signal_name", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_crashing_model_raises_and_caller_survives(repo, kind, signal_name):
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    plat.add(Component("FaultInjector", "boom", {"at": "1us", "kind": kind}))
    with pytest.raises(eidola.SimulationCrashed) as info:
        eidola.simulate(plat)
    assert "gemv-allreduce-4gpu" in str(info.value) and signal_name in str(info.value)
    # The caller lives on and simulates again.
    del plat.components["boom"]
    assert eidola.simulate(plat).kernel_time_ns > 0


def test_systemc_error_is_a_simulation_error(repo):
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    plat.add(Component("FaultInjector", "boom", {"at": "2us", "kind": "error"}))
    with pytest.raises(eidola.SimulationError) as info:
        eidola.simulate(plat)
    assert "failure injected on purpose" in str(info.value) and "boom" in str(info.value)


def test_in_process_mode_matches_child_mode(repo):
    # In-process mode can run once per process, so it runs in a fresh interpreter.
    script = (
        "import eidola, json\n"
        f"p = eidola.load_platform({str(repo / 'platforms/gemv-allreduce-4gpu.yaml')!r})\n"
        "r = eidola.simulate(p, in_process=True)\n"
        "try:\n"
        "    eidola.simulate(p, in_process=True)\n"
        "    again = 'ran'\n"
        "except eidola.EidolaError as e:\n"
        "    again = str(e)\n"
        "print(json.dumps({'kernel': r.kernel_time_ns, 'again': again}))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    child = eidola.simulate(eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml"))
    assert data["kernel"] == child.kernel_time_ns
    assert "once per process" in data["again"]


def test_catalog_matches_cpp_declaration():
    # EidolonGpu's declaration in tlm_models/src/eidolon_gpu.cpp, read back through the library.
    gpu = catalog.model("EidolonGpu")
    by_name = {p.name: p for p in gpu.params}
    assert by_name["memory.latency"].type == "time" and by_name["memory.latency"].default == pytest.approx(300e-9)
    assert by_name["clock"].default_text() == "2.1GHz"
    assert by_name["max_payload"].default_text() == "256B"
    assert by_name["workgroups"].default == 304
    assert [s.name for s in gpu.sockets] == ["initiator", "target"]


def test_result_save_writes_tables(tmp_path, repo):
    res = eidola.simulate(eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml"))
    res.save(tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["kernel_time_ns"] == res.kernel_time_ns
    rows = np.genfromtxt(tmp_path / "gpus.csv", delimiter=",", names=True)
    assert list(rows["flag_reads"]) == list(res.gpus["flag_reads"])
    assert "fabric:" in (tmp_path / "effective.yaml").read_text()
    # Bytes sent equal bytes received over the whole platform (every write lands somewhere).
    assert res.gpus["bytes_sent"].sum() == res.gpus["bytes_received"].sum()
    # The ideal fabric's per-pair table carries exactly the GPUs' outgoing packets.
    assert res.links["packets"].sum() == res.gpus["packets_sent"].sum()


def test_effective_yaml_names_the_profile_the_run_used(tmp_path, repo):
    # effective.yaml is "what was simulated": a profile given apart from the platform (`--profile`) is the one it
    # names, a profile built in Python is named null with a comment saying so, and the platform's own otherwise
    # (a user trial, 2026-12-07, found `profile: null` after `--profile`).
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    own = str((repo / "profiles/gemv-allreduce-4gpu.yaml").resolve())
    b = ProfileBuilder(gpus=2, workgroups=1, name="mine")
    b.flag("f")
    b.program(0, 0).signal(dst=1, flag="f")
    b.build().save(tmp_path / "mine.yaml")
    given = eidola.simulate(plat, tmp_path / "mine.yaml").effective_config
    assert yaml.safe_load(given)["profile"] == str(tmp_path / "mine.yaml")
    built = eidola.simulate(plat, b.build()).effective_config
    assert yaml.safe_load(built)["profile"] is None and "'mine' was built in Python" in built
    default = eidola.simulate(plat).effective_config
    assert str(Path(yaml.safe_load(default)["profile"]).resolve()) == own


def test_idle_workgroups_are_listed_though_they_hold_no_state(repo):
    # The GPUs keep state only for workgroups up to the highest one given a program (memory at 1,024
    # GPUs x 304 resident workgroups); the table still lists every resident one, the idle ones at zero.
    # Workgroup 2 is given a program and 0, 1 and 3-7 are not: 0 and 1 sit below it, 3-7 above.
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml", {"gpus.workgroups": 8})
    b = ProfileBuilder(gpus=4, workgroups=8).flag("f").buffer("buf", 1000)
    b.program(0, 2).write(1, "buf", 0, 1000).signal(1, "f")
    b.program(1, 2).wait("f", ">=", 1)
    res = eidola.simulate(plat, b.build())
    wgs = res.workgroups
    assert len(wgs) == 4 * 8 and sorted(set(zip(wgs["gpu"], wgs["wg"]))) == [(g, w) for g in range(4) for w in range(8)]
    busy = (wgs["gpu"] <= 1) & (wgs["wg"] == 2)
    assert (wgs["finish_ns"][busy] > 0).all() and (wgs["finish_ns"][~busy] == 0).all()
    # ceil(1000 / 256 B max_payload) = 4 write packets and the signal's one, all from GPU 0's workgroup 2.
    assert list(wgs["packets"][busy]) == [5, 0] and wgs["packets"][~busy].sum() == 0
