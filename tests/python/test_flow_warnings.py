"""The one-line warnings a flow-fabric platform gets for packet-fabric settings it has no counterpart for
(platform/yaml_io.py): a choice it behaves otherwise for, and one virtual channel on a torus or mesh, the case
docs/fabrics.md names as its worst (an architect's trial, 2026-12-07: 74.00 us per packet against 60.52 as flows for
a 4 MiB all-to-all on torus2d-16gpu with vcs 1, and no word at run time)."""

from __future__ import annotations

import pytest
from conftest import REPO

import eidola

ONE_VC = "fabric.switch.vcs: 1 on a torus2d: the flow fabric has no routers' queues"


def _stderr(capsys, platform: str, **overrides: object) -> str:
    eidola.load_platform(REPO / "platforms" / platform, overrides=overrides)
    return capsys.readouterr().err


def test_one_virtual_channel_on_a_torus_warns_on_the_flow_fabric(capsys):
    err = _stderr(capsys, "torus2d-16gpu.yaml", **{"fabric.model": "flow", "fabric.switch.vcs": 1})
    assert ONE_VC in err and "use fabric.model: packet for these" in err
    mesh = _stderr(capsys, "mesh2d-16gpu.yaml", **{"fabric.model": "flow", "fabric.switch.vcs": 1})
    assert "fabric.switch.vcs: 1 on a mesh2d" in mesh


@pytest.mark.parametrize("overrides", [
    {"fabric.model": "flow", "fabric.switch.vcs": 2},   # more channels: no router blocks at the head of one queue
    {"fabric.model": "flow", "fabric.switch.vcs": 0},   # a channel per destination
    {"fabric.switch.vcs": 1},                            # the packet fabric models it
])
def test_no_warning_where_the_fabric_has_no_such_blocking_to_leave_out(capsys, overrides):
    assert "routers' queues" not in _stderr(capsys, "torus2d-16gpu.yaml", **overrides)


def test_a_packet_choice_the_flow_fabric_does_otherwise_warns(capsys):
    err = _stderr(capsys, "switch-8gpu.yaml", **{"fabric.model": "flow", "fabric.switch.injection_order": "round_robin"})
    assert "fabric.switch.injection_order: round_robin ignored by fabric.model: flow" in err


def test_packet_trains_on_the_flow_fabric_warn_and_change_nothing(capsys):
    # An architect's trial (2026-12-07): gpus.train was accepted silently on the flow fabric, where a write is one
    # flow already. It still changes nothing (kernel time and events alike), and now says so once.
    from eidola.workload.nccl import build_collective

    runs = []
    for train in (1, 64):
        plat = eidola.load_platform(REPO / "platforms" / "mi300x-8gpu.yaml",
                                    overrides={"fabric.model": "flow", "gpus.train": train})
        err = capsys.readouterr().err
        assert ("gpus.train: 64 ignored by fabric.model: flow" in err) == (train == 64)
        prof, _ = build_collective(plat, "all_reduce", 1 << 20)
        res = eidola.simulate(plat, prof)
        runs.append((res.kernel_time_ns, res.events))
    assert runs[0] == runs[1]
