"""The encoded op records, byte for byte, against a straightforward construction of the same collective.

`encode_profile` builds the records the C++ models replay by gathering one record per template and
filling in each row's peer, offset and size a block at a time; the bulk builder groups equal op
bodies and places the rows of many calls at once. Both are there for speed only. The reference
here takes neither shortcut: the collective is built one op per call through ProgramBuilders (the
per-op path, one_by_one.OneByOne), and every op is encoded on its own into an OP_DTYPE
record from the field use documented at ``eidola::Op`` (program.h), with the window laid out by
hand (flag words from 0, each buffer at the next 4 KiB boundary). The two must give the same bytes.
"""

import numpy as np
import pytest
from one_by_one import OneByOne

import eidola
from eidola.platform import catalog
from eidola.run.encode import OP_DTYPE, PROGRAM_DTYPE, encode_profile
from eidola.workload.builder import ProfileBuilder
from eidola.workload.nccl import build_collective


def _code(enum, name):
    return catalog.enum(enum).index(name)


def _window(profile):
    """Flag name -> window offset, buffer name -> window offset, laid out by hand."""
    flags = {name: 8 * i for i, name in enumerate(profile.flags)}
    at = -(-8 * len(profile.flags) // 4096) * 4096
    buffers = {}
    for name, nbytes in profile.buffers:
        buffers[name] = at
        at += -(-nbytes // 4096) * 4096
    return flags, buffers


def _record(op, flags, buffers, groups):
    """One op as (kind, sub, mode, option, peer, offset, nbytes, value, compare, time_ps, time2_ps)."""
    a, kind = op.as_dict(), _code("op_kind", op.kind)
    if op.kind == "compute":
        if a["cycles"] is not None:
            return (kind, 0, _code("compute_unit", "cycles"), 0, 0, 0, 0, a["cycles"], 0, 0, 0)
        return (kind, 0, _code("compute_unit", "ns"), 0, 0, 0, 0, 0, 0, round(a["ns"] * 1000), 0)
    if op.kind == "write":
        mode = _code("write_mode", "blocking" if a["blocking"] else "posted")
        return (kind, 0, mode, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, 0, 0, 0)
    if op.kind == "read":
        return (kind, 0, 0, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, 0, 0, 0)
    if op.kind == "put":  # the landing flag's offset in `compare`
        return (kind, _code("atomic", a["op"]), 0, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"],
                a["value"], flags[a["flag"]], 0, 0)
    if op.kind in ("multicast", "reduce_load"):  # no peer; the group's index in `compare`
        return (kind, 0, 0, 0, -1, buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, groups[a["group"]], 0, 0)
    if op.kind == "signal":
        return (kind, _code("atomic", a["op"]), _code("release_scope", a["scope"]), int(a["overlap"]), a["dst"],
                flags[a["flag"]], 8, a["value"], a["compare"] or 0, 0, 0)
    if op.kind == "wait":
        return (kind, _code("cond", a["cond"]), _code("wait_mode", a["mode"]), int(a["wake"] == "all"), 0,
                flags[a["flag"]], 8, a["value"], 0, round(a["interval_ns"] * 1000), round(a["max_interval_ns"] * 1000))
    if op.kind == "fence":
        return (kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    raise AssertionError(f"no reference encoding for {op.kind}")


def _reference(profile):
    """The ops and programs encoded one op at a time, programs in (gpu, wg) order."""
    flags, buffers = _window(profile)
    groups = {name: i for i, (name, _) in enumerate(profile.multicast_groups)}
    ops, progs = [], []
    for i, (gpu, wg) in enumerate(profile.table.keys):
        program = profile.table.program(i)
        progs.append((gpu, wg, len(ops), len(program)))
        ops += [_record(op, flags, buffers, groups) for op in program]
    return np.array(ops, dtype=OP_DTYPE), np.array(progs, dtype=PROGRAM_DTYPE)


CASES = [  # platform, GPUs, op, bytes, algo, proto, channels, calls, steady
    ("mi300x-rail.yaml", 16, "all_reduce", 1 << 20, "tree", "Simple", 0, 1, True),  # double binary tree, 2 nodes
    ("mi300x-rail.yaml", 16, "all_reduce", 3 << 16, "ring", "LL", 4, 1, False),  # rings across nodes, puts
    ("mi300x-rail.yaml", 64, "all_reduce", 1 << 18, "tree", "LL", 4, 1, True),  # 8 nodes
    ("dgx-h100-rail.yaml", 16, "all_reduce", 1 << 18, "ring", "LL128", 0, 1, True),
    ("mi300x-rail.yaml", 16, "all_reduce", 1 << 20, "hierarchical", "Simple", 2, 1, False),
    ("mi300x-rail.yaml", 16, "alltoall", 1 << 18, "auto", "auto", 0, 1, False),
    ("mi300x-8gpu.yaml", 8, "all_gather", 1 << 20, "ring", "LL", 0, 2, False),  # the harness's extra workgroups
    ("dgx-h200.yaml", 8, "all_reduce", 1 << 20, "nvls", "Simple", 0, 1, True),  # multimem ops
]


@pytest.mark.parametrize("name, gpus, op, nbytes, algo, proto, channels, calls, steady", CASES)
def test_encoded_ops_match_a_one_op_at_a_time_encoding(monkeypatch, repo, name, gpus, op, nbytes, algo, proto,
                                                      channels, calls, steady):
    plat = eidola.load_platform(repo / "platforms" / name, {"gpus.count": gpus} if "rail" in name else {})
    profile, plan = build_collective(plat, op, nbytes, gpus, algo, proto, channels, calls=calls, steady=steady)
    plan_ = plat.elaborate() if not steady and calls == 1 else None
    if plan_ is None:  # the harness's workgroups beside the GPU's own
        for g in plat.eidolons():
            g.params["workgroups"] = int(g.resolved()["workgroups"]) + 2
        plan_ = plat.elaborate()
    encoded = encode_profile(profile, plan_)
    with monkeypatch.context() as m:
        m.setattr(ProfileBuilder, "programs_at", lambda b, gpus, wgs: OneByOne(b, gpus, wgs))
        one_by_one, plan2 = build_collective(plat, op, nbytes, gpus, algo, proto, channels, calls=calls, steady=steady)
    assert plan2 == plan
    ops, progs = _reference(one_by_one)
    assert len(ops) == len(profile.table) > 0
    assert encoded.ops.tobytes() == ops.tobytes()
    assert encoded.programs.tobytes() == progs.tobytes()
    assert encoded.buffer_offsets == _window(one_by_one)[1]


def test_small_pages_turns_numpys_huge_page_request_off_and_restores_it():
    switch = pytest.importorskip("numpy._core.multiarray")._set_madvise_hugepage
    from eidola.workload.pages import small_pages

    inside = []

    @small_pages
    def body(x):
        inside.append(switch(False))  # what the flag was inside: switch returns the previous value
        return x + 1

    before = switch(True)
    try:
        assert body(6) == 7
        assert inside == [False]
        assert switch(True) is True  # restored to what it was before the call
    finally:
        switch(before)
