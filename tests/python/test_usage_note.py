"""The run summary's note on GPUs a profile leaves idle, and on a profile that never leaves one node of a multi-node
platform (a user trial, 2026-12-07: 8 imported ranks on GPUs 0-7 of a 2-node rail platform moved nothing over the
network, and only "profile uses 8 of 16 GPUs" hinted at it)."""

from __future__ import annotations

from conftest import REPO

from eidola.profile import ProfileBuilder

RAIL = REPO / "platforms" / "dgx-h100-rail.yaml"  # 16 GPUs: 2 nodes of 8


def _pair(tmp_path, a: int, b: int):
    """A 64 KiB write from GPU a to GPU b (and nothing else), saved."""
    p = ProfileBuilder(gpus=max(a, b) + 1, workgroups=1, name="pair")
    p.buffer("d", nbytes=64 << 10)
    p.program(gpu=a, wg=0).write(dst=b, buffer="d", offset=0, nbytes=64 << 10)
    path = tmp_path / f"pair{a}{b}.yaml"
    p.build().save(path)
    return path


def test_a_profile_inside_one_node_says_nothing_crosses_the_network(cli, tmp_path):
    r = cli("run", RAIL, "--profile", _pair(tmp_path, 0, 7), "--set", "fabric.model=flow", "--out", tmp_path / "a")
    assert r.returncode == 0, r.stderr
    assert ("note: profile uses 2 of 16 GPUs; the others only serve their memory; they are all in node 0 of 2 "
            "(GPUs 0-7), so no traffic crosses the network") in r.stdout, r.stdout
    assert "(--place spread puts its ranks round robin over the nodes)" in r.stdout


def test_a_profile_across_nodes_gets_the_plain_note(cli, tmp_path):
    r = cli("run", RAIL, "--profile", _pair(tmp_path, 0, 8), "--set", "fabric.model=flow", "--out", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    assert "note: profile uses 2 of 16 GPUs; the others only serve their memory\n" in r.stdout, r.stdout
