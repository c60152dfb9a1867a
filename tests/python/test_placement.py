"""Placing a profile's ranks on a platform's GPUs (`--place`): a trace-replay trial (2026-12-07) ran 8 imported ranks
on GPUs 0-7 of a 2-node platform, and nothing crossed the network."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

import eidola
from eidola.errors import ConfigError
from eidola.profile import ProfileBuilder
from eidola.workload.placement import place, placement

MIB = 1 << 20
RAIL = REPO / "platforms" / "rail-16gpu.yaml"  # 2 nodes of 8; NIC r of each node on rail switch r; 50 GB/s NICs


def _one_write(delay_ns: float = 0.0):
    """GPU 0 writes 1 MiB to GPU 1 and signals it; GPU 1 waits."""
    b = ProfileBuilder(gpus=2, workgroups=1, name="one-write")
    b.buffer("buf", nbytes=MIB)
    b.flag("f")
    if delay_ns:
        b.delay(gpu=1, ns=delay_ns)
    b.program(gpu=0, wg=0).write(dst=1, buffer="buf", offset=0, nbytes=MIB).signal(dst=1, flag="f")
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1)
    return b.build()


def test_the_named_placements():
    assert placement("packed", 8, 16, 8) == list(range(8))
    assert placement("spread", 8, 16, 8) == [0, 8, 1, 9, 2, 10, 3, 11]   # node r mod 2, its next slot
    assert placement("spread", 4, 32, 8) == [0, 8, 16, 24]               # one rank a node
    assert placement("spread", 4, 8, 0) == [0, 1, 2, 3]                  # one node: packed
    assert placement("spread", 2, 4, 8) == [0, 1]                        # fewer GPUs than a node: one node
    assert placement("3,2,1,0", 4, 8, 0) == [3, 2, 1, 0]


@pytest.mark.parametrize(("spec", "says"), [
    ("0,0", "a GPU is named twice"), ("0,16", "GPU 16 is not one of the platform's 0-15"),
    ("0,1,2", "names 3 GPUs for the profile's 2"), ("wide", "expected packed, spread or a comma-separated list"),
    ("", "names 0 GPUs for the profile's 2"),  # an empty --place is not "packed"
])
def test_bad_placements_are_named(spec, says):
    with pytest.raises(ConfigError, match=says):
        placement(spec, 2, 16, 8)


def test_a_placed_write_crosses_the_network_and_only_then():
    # Packed, GPU 0 -> 1 is one NVLink inside node 0. Spread, GPU 1 is GPU 8 (node 1, rail 0): the write goes
    # GPU 0 -> its NIC (PCIe) -> rail switch 0 -> GPU 8's NIC -> GPU 8, four links with its 1 MiB and the 8-byte
    # signal each, and takes at least its wire time through a 50 GB/s NIC in 4 KiB packets with 78-byte headers.
    plat = eidola.load_platform(RAIL, overrides={"fabric.model": "flow"})
    runs = {}
    for spec in ("packed", "spread"):
        res = eidola.simulate(plat, place(_one_write(), placement(spec, 2, 16, 8), 16))
        carried = res.links["bytes"][res.links["bytes"] > 0]
        runs[spec] = (res.kernel_time_ns, sorted(carried.tolist()), res.summary["profile_nodes"])
    assert runs["packed"][1:] == ([MIB + 8], [0])
    assert runs["spread"][1:] == ([MIB + 8] * 4, [0, 1])
    assert runs["spread"][0] >= MIB * (4096 + 78) / 4096 / 50e9 * 1e9


def test_what_moves_with_a_rank():
    placed = place(_one_write(delay_ns=500), [3, 12], 16)
    assert placed.gpus == 16 and placed.program_keys == [(3, 0), (12, 0)]
    write, signal = placed.program(3, 0)
    assert write.get("dst") == 12 and signal.get("dst") == 12
    assert [(d.gpu, d.ns) for d in placed.variability.delays] == [(12, 500)]
    # A skew drawn per GPU in GPU order would not move with its rank: refused.
    b = ProfileBuilder(gpus=2, workgroups=1, name="skewed").skew("normal", mean=1.0, std=0.1)
    b.program(gpu=0, wg=0).compute(ns=100)
    with pytest.raises(ConfigError, match="skew or jitter is drawn per GPU"):
        place(b.build(), [0, 8], 16)
    assert place(b.build(), [0, 1], 16) == b.build()  # packed, the default, changes nothing and refuses nothing


def test_eidola_run_places_with_the_option(tmp_path, cli):
    profile = tmp_path / "one.yaml"
    _one_write().save(profile)
    out = cli("run", RAIL, "--profile", profile, "--set", "fabric.model=flow", "--place", "spread", "--out",
              tmp_path / "run")
    assert out.returncode == 0, out.stderr
    assert "placement     rank -> GPU: 0->0, 1->8" in out.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["profile_nodes"] == [0, 1] and summary["placement"] == [0, 8]  # eidola compare reads it
    bad = cli("validate", RAIL, "--profile", profile, "--place", "0,0")
    assert bad.returncode == 2 and "--place 0,0: a GPU is named twice" in bad.stderr and "Traceback" not in bad.stderr
