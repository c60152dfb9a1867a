"""The command line: bad input exits 2 with one message naming the key or op; a deadlock exits 3."""

import json
import re
import sys

from conftest import REPO

from eidola.profile import ProfileBuilder


def _ok_profile(tmp_path, gpus=2):
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="ok")
    b.flag("ready")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=256).signal(dst=1, flag="ready")
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1)
    path = tmp_path / "ok.yaml"
    b.build().save(path)
    return path


def _bad_input(result, *needles):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, (needle, result.stderr)


def test_run_prints_summary_and_writes_outputs(cli, repo, tmp_path):
    r = cli("run", repo / "platforms/gemv-allreduce-4gpu.yaml", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "kernel time" in r.stdout and "flag reads" in r.stdout and "events/s" in r.stdout
    assert json.loads((tmp_path / "out/summary.json").read_text())["gpus"] == 4
    assert (tmp_path / "out/effective.yaml").exists()


def test_unknown_key(cli, write_platform, tmp_path):
    plat = write_platform(profile=_ok_profile(tmp_path))
    _bad_input(cli("run", plat, "--set", "gpus.memory.latncy=1ns"), "gpus.memory.latncy", "memory.latency")
    _bad_input(cli("run", plat, "--set", "fabrik.latency=1ns"), "fabrik", "unknown key")


def test_wrong_unit(cli, write_platform, tmp_path):
    plat = write_platform(profile=_ok_profile(tmp_path))
    _bad_input(cli("run", plat, "--set", "fabric.latency=5GB"), "fabric.latency", "time unit")
    _bad_input(cli("run", plat, "--set", "fabric.latency=500"), "fabric.latency", "no unit")


def test_wrong_type(cli, write_platform, tmp_path):
    plat = write_platform(profile=_ok_profile(tmp_path))
    _bad_input(cli("run", plat, "--set", "gpus.workgroups=many"), "gpus.workgroups", "integer")


def test_out_of_range(cli, write_platform, tmp_path):
    plat = write_platform(profile=_ok_profile(tmp_path))
    _bad_input(cli("run", plat, "--set", "gpus.max_outstanding=0"), "gpus.max_outstanding", "out of range")


def test_missing_files(cli, write_platform, tmp_path):
    _bad_input(cli("run", tmp_path / "nope.yaml"), "nope.yaml")
    plat = write_platform(profile="missing-profile.yaml")
    _bad_input(cli("run", plat), "missing-profile.yaml")


def test_profile_needs_more_gpus_than_platform(cli, write_platform, tmp_path):
    plat = write_platform(gpus=2, profile=_ok_profile(tmp_path))
    b = ProfileBuilder(gpus=3, workgroups=1, name="three")
    b.program(gpu=2, wg=0).compute(ns=10)
    b.build().save(tmp_path / "three.yaml")
    _bad_input(cli("run", plat, "--profile", tmp_path / "three.yaml"), "needs 3 GPUs", "2")


def test_profile_names_unknown_flag(cli, write_platform, tmp_path):
    plat = write_platform(profile=_ok_profile(tmp_path))
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "eidola_profile: 1\nname: bad\ngpus: 2\nworkgroups: 1\nflags: [ready]\nbuffers: {}\nprograms:\n"
        "- {gpu: 1, wg: 0, ops: [[compute, {ns: 5}], [wait, {flag: raedy, cond: '>=', value: 1}]]}\n")
    _bad_input(cli("run", plat, "--profile", bad), "bad.yaml", "op 1", "raedy")


def test_deadlock_report(cli, write_platform, tmp_path):
    # GPU 1 waits for ready >= 2 but only one signal ever comes; GPU 0 waits for a flag nobody sets.
    b = ProfileBuilder(gpus=2, workgroups=2, name="stuck")
    b.flag("ready")
    b.flag("never")
    b.program(gpu=0, wg=0).signal(dst=1, flag="ready", op="add", value=1)
    b.program(gpu=0, wg=1).compute(ns=100).wait(flag="never", cond="==", value=7)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=2, interval_ns=50)
    b.build().save(tmp_path / "stuck.yaml")
    plat = write_platform(gpus=2, workgroups=2)
    r = cli("run", plat, "--profile", tmp_path / "stuck.yaml", "--trace", "--out", tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "deadlock" in r.stderr
    assert "gpu 0 wg 1 op 1: waits for never == 7 (poll)" in r.stderr and "never is 0" in r.stderr
    assert "gpu 1 wg 0 op 0: waits for ready >= 2 (poll)" in r.stderr and "ready is 1" in r.stderr
    assert "Traceback" not in r.stderr
    # One unit throughout (the waits' "since" is in ns), and none of SystemC's "Simulation stopped by user." noise
    # on either stream (a user trial, 2026-12-07: "deadlock at 1010 us" beside "since 28008.3 ns").
    assert re.search(r"deadlock found at \d+\.\d ns: 2 workgroup\(s\)", r.stderr), r.stderr
    assert "stopped by user" not in r.stderr + r.stdout
    # What ran up to the deadlock is written for debugging, marked as such (a user trial, 2026-12-07: nothing was).
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["partial"] and summary["failure"]["kind"] == "deadlock"
    ops = (tmp_path / "out/ops.csv").read_text().splitlines()
    assert any(line.startswith("0,0,0,") and ",signal," in line for line in ops), ops  # GPU 0's signal, done
    assert f"wrote {tmp_path / 'out'}/ with the tables up to the failure" in r.stderr


def test_describe_lists_parameters(cli):
    r = cli("describe", "EidolonGpu")
    assert r.returncode == 0
    for needle in ("memory.latency", "300ns", "time", "max_payload", "256B", "initiator", "target",
                   "latency of an access to this GPU's memory"):
        assert needle in r.stdout, needle
    _bad_input(cli("describe", "NoSuchModel"), "NoSuchModel")


def test_validate(cli, repo):
    r = cli("validate", repo / "platforms/gemv-allreduce-4gpu.yaml")
    assert r.returncode == 0 and "ok" in r.stdout


def test_an_install_older_than_its_source_tree_says_so(tmp_path, monkeypatch):
    # setup.sh records the tree it built from beside the install's stamp; a source file there newer than the stamp
    # means `.venv/bin/eidola` runs old code (two user trials, 2026-12-07, read stale tables without a word).
    import os

    from eidola import cli

    tree = tmp_path / "tree"
    venv = tree / ".venv"  # where setup.sh puts it: inside the tree
    (tree / "bridge").mkdir(parents=True)
    (tree / "tlm_models").mkdir()
    (tree / "scripts").mkdir()
    (tree / "scripts" / "source_paths").write_text((REPO / "scripts" / "source_paths").read_text())
    venv.mkdir()
    (venv / "eidola-source-dir").write_text(f"{tree}\n")
    stamp = venv / "eidola-sources.sha1"
    stamp.write_text("0\n")
    source = tree / "bridge" / "model.py"
    source.write_text("x = 1\n")
    os.utime(stamp, (1000, 1000))
    os.utime(source, (500, 500))
    monkeypatch.setattr(sys, "prefix", str(venv))
    assert cli._stale_install() is None  # built after the last edit
    os.utime(source, (2000, 2000))
    warning = cli._stale_install()
    assert warning is not None and str(source) in warning and "bash scripts/setup.sh" in warning
    # The installed copy lives inside the tree (.venv/lib/.../eidola/cli.py): it is still the installed one.
    monkeypatch.setattr(cli, "__file__", str(venv / "lib/python3.11/site-packages/eidola/cli.py"))
    assert cli._stale_install() is not None
    monkeypatch.setattr(cli, "__file__", str(tree / "bridge/eidola/cli.py"))  # the tree's own code: nothing to say
    assert cli._stale_install() is None
    monkeypatch.undo()
    monkeypatch.setattr(sys, "prefix", str(venv))
    (venv / "eidola-source-dir").unlink()  # not set up by setup.sh: nothing to compare with
    assert cli._stale_install() is None
