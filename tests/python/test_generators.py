"""Tests of the collective profile generators, checked against hand-derived counts and offsets."""

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from eidola.errors import ProfileError
from eidola.generators import gemv_allreduce
from eidola.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("P, W", [(1, 3), (2, 1), (3, 2), (4, 4), (5, 3)])
def test_gemv_allreduce_shape(P, W):
    slice_ = 32
    prof = gemv_allreduce(gpus=P, workgroups=W, vector_bytes=P * W * slice_, tile_ns=2000, reduce_ns=400)
    assert prof.flags == tuple(f"rs_{q}" for q in range(P)) + tuple(f"ag_{q}" for q in range(P))
    assert prof.buffers == (("partials", P * W * slice_), ("gathered", P * W * slice_))
    assert len(prof.programs) == P * W
    for (g, w), ops in prof.programs:
        # compute, then 3 groups of P-1 (write, signal, wait) per phase, with the reduce compute between
        assert len(ops) == 1 + 3 * (P - 1) + 1 + 3 * (P - 1)
        assert [op.kind for op in ops].count("compute") == 2
        assert sum(op["nbytes"] for op in ops if op.kind == "write") == 2 * (P - 1) * slice_
        assert all(op["value"] == W and op["cond"] == ">=" for op in ops if op.kind == "wait")
    for g in range(P):
        written = sum(op["nbytes"] for w in range(W) for op in prof.program(g, w) if op.kind == "write")
        assert written == 2 * (P - 1) * W * slice_


def test_gemv_allreduce_single_gpu_is_just_compute():
    prof = gemv_allreduce(gpus=1, workgroups=2, vector_bytes=64, tile_ns=7, reduce_ns=3)
    assert [(op.kind, op["ns"]) for op in prof.program(0, 1)] == [("compute", 7), ("compute", 3)]


def test_gemv_allreduce_exact_program_order():
    P, W, slice_ = 4, 2, 16
    prof = gemv_allreduce(gpus=P, workgroups=W, vector_bytes=P * W * slice_, tile_ns=2000, reduce_ns=400,
                          mode="syncmon", interval_ns=50)
    g, w = 2, 1
    ops = prof.program(g, w)
    order = [3, 0, 1]  # (g + k) % P for k = 1..3: rotated, so every GPU starts at a different peer
    offset = (g * W + w) * slice_
    expected = [("compute", {"ns": 2000})]
    for stage, buffer in (("rs", "partials"), ("ag", "gathered")):
        if stage == "ag":
            expected.append(("compute", {"ns": 400}))
        expected += [("write", {"dst": p, "buffer": buffer, "offset": offset, "nbytes": slice_}) for p in order]
        expected += [("signal", {"dst": p, "flag": f"{stage}_{g}", "op": "add", "value": 1}) for p in order]
        expected += [("wait", {"flag": f"{stage}_{q}", "cond": ">=", "value": W, "mode": "syncmon",
                               "interval_ns": 50}) for q in order]
    assert len(ops) == len(expected) == 20
    for op, (kind, args) in zip(ops, expected):
        assert op.kind == kind
        assert {k: op[k] for k in args} == args


def test_gemv_allreduce_peer_rotation_has_no_hotspot():
    P, W = 5, 2
    prof = gemv_allreduce(gpus=P, workgroups=W, vector_bytes=P * W * 8)
    for k in range(1, P):
        # the k-th write of every GPU
        targets = [[op for op in prof.program(g, 0) if op.kind == "write"][k - 1]["dst"] for g in range(P)]
        assert targets == [(g + k) % P for g in range(P)]
        assert sorted(targets) == list(range(P))


@pytest.mark.parametrize("buffer", ["partials", "gathered"])
def test_gemv_allreduce_each_pair_gets_its_slices(buffer):
    P, W, slice_ = 4, 3, 8
    prof = gemv_allreduce(gpus=P, workgroups=W, vector_bytes=P * W * slice_)
    received = defaultdict(list)  # (source, destination) -> [(offset, nbytes)]
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "write" and op["buffer"] == buffer:
                received[g, op["dst"]].append((op["offset"], op["nbytes"]))
    assert sorted(received) == [(s, d) for s in range(P) for d in range(P) if s != d]
    for (src, _), chunks in received.items():
        assert sum(n for _, n in chunks) == W * slice_
        # sorted chunks tile [src*W*slice, (src+1)*W*slice) exactly, without overlap or gap
        pos = src * W * slice_
        for off, n in sorted(chunks):
            assert off == pos
            pos += n
        assert pos == (src + 1) * W * slice_


def test_gemv_allreduce_flag_counts_balance():
    P, W = 4, 3
    prof = gemv_allreduce(gpus=P, workgroups=W, vector_bytes=P * W * 4)
    adds = defaultdict(int)  # (destination gpu, flag) -> total added
    for _, ops in prof.programs:
        for op in ops:
            if op.kind == "signal":
                adds[op["dst"], op["flag"]] += op["value"]
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "wait":
                assert adds[g, op["flag"]] == op["value"] == W


@pytest.mark.parametrize("kwargs, fragment", [
    ({"gpus": 4, "workgroups": 4, "vector_bytes": 100}, "vector_bytes 100 must be divisible by gpus * workgroups = 16"),
    ({"gpus": 0}, "gpus must be an int >= 1"),
    ({"workgroups": True}, "workgroups must be an int >= 1"),
    ({"vector_bytes": 0}, "vector_bytes must be an int >= 1"),
    ({"tile_ns": -1}, "ns must be >= 0"),
    ({"mode": "busy"}, "mode 'busy'"),
])
def test_gemv_allreduce_rejects_bad_parameters(kwargs, fragment):
    with pytest.raises(ProfileError) as info:
        gemv_allreduce(**kwargs)
    assert fragment in str(info.value)


def test_cli_writes_the_same_profile(tmp_path):
    out = tmp_path / "g.yaml"
    # The installed package (as the tests import it), which finds its own compiled models.
    subprocess.run([sys.executable, "-m", "eidola.generators", "gemv_allreduce", "--gpus", "3", "--workgroups", "2",
                    "--vector-bytes", "600", "--tile-ns", "2000", "--reduce-ns", "400.5", "-o", str(out)],
                   check=True, cwd=tmp_path)
    assert load_profile(out) == gemv_allreduce(3, 2, 600, tile_ns=2000, reduce_ns=400.5)


def test_shipped_4gpu_profile_matches_generator():
    prof = load_profile(ROOT / "profiles" / "gemv-allreduce-4gpu.yaml")
    assert prof == gemv_allreduce(gpus=4, workgroups=4, vector_bytes=65536, tile_ns=2000, reduce_ns=400,
                                  mode="poll", interval_ns=100)
    assert prof.ops_count() == 16 * 20
