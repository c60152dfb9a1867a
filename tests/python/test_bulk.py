"""Tests of bulk appends (ProfileBuilder.programs_at): the same ops, in the same order, as the per-op builder.

Three references: per-op versions of the generators written out here; a per-op stand-in for
ProgramSet (`OneByOne`, one_by_one.py, each call looping over its programs' ProgramBuilders) under which every
collective schedule runs unchanged; and counts and bytes derived by hand.
"""

from collections import Counter

import numpy as np
import pytest
from one_by_one import OneByOne

from eidola.errors import ProfileError
from eidola.generators import (
    all_gather,
    all_to_all,
    direct_allreduce,
    gemv_allreduce,
    neighbor_exchange,
    reduce_scatter,
    ring_allreduce,
)
from eidola.profile import ProfileBuilder, load_profile


def _neighbor_exchange_per_op(P, S, K, W):
    """neighbor_exchange as one call per op (its documented schedule)."""
    chunk = S // (K * W)
    b = ProfileBuilder(P, W, name=f"neighbor-exchange-{P}gpu")
    b.buffer("halo", S)
    for w in range(W):
        b.flag(f"nx_w{w}")
    for g in range(P):
        for w in range(W):
            p = b.program(g, w)
            for k in range(1, K + 1):
                p.write(dst=(g + k) % P, buffer="halo", offset=((k - 1) * W + w) * chunk, nbytes=chunk)
            for k in range(1, K + 1):
                p.signal(dst=(g + k) % P, flag=f"nx_w{w}", op="add", value=1, scope="peer")
            p.wait(flag=f"nx_w{w}", cond=">=", value=K, mode="syncmon", interval_ns=100)
    return b.build()


def _gemv_per_op(P, W, vector_bytes, tiles, reduce_ns):
    """gemv_allreduce as one call per op (its documented schedule)."""
    slice_ = vector_bytes // (P * W)
    b = ProfileBuilder(P, W, name=f"gemv-allreduce-{P}gpu")
    for stage in ("rs", "ag"):
        for q in range(P):
            b.flag(f"{stage}_{q}")
    b.buffer("partials", vector_bytes)
    b.buffer("gathered", vector_bytes)
    for g in range(P):
        peers = [(g + k) % P for k in range(1, P)]
        for w in range(W):
            p = b.program(g, w).compute(ns=tiles[g])
            for stage, buffer, work_ns in (("rs", "partials", None), ("ag", "gathered", reduce_ns)):
                if work_ns is not None:
                    p.compute(ns=work_ns)
                for q in peers:
                    p.write(dst=q, buffer=buffer, offset=(g * W + w) * slice_, nbytes=slice_)
                for q in peers:
                    p.signal(dst=q, flag=f"{stage}_{g}", scope="peer")
                for q in peers:
                    p.wait(flag=f"{stage}_{q}", cond=">=", value=W)
    return b.build()


@pytest.mark.parametrize("P, K, W", [(2, 1, 1), (3, 2, 2), (5, 4, 3), (8, 3, 4)])
def test_neighbor_exchange_matches_the_per_op_build(P, K, W):
    S = K * W * 24
    assert neighbor_exchange(P, S, neighbors=K, workgroups=W) == _neighbor_exchange_per_op(P, S, K, W)


@pytest.mark.parametrize("P, K, W", [(3, 2, 2), (6, 4, 3)])
def test_neighbor_exchange_counts_and_bytes(P, K, W):
    chunk = 40
    S = K * W * chunk
    prof = neighbor_exchange(P, S, neighbors=K, workgroups=W)
    assert prof.ops_count() == P * W * (2 * K + 1)  # K writes, K signals, 1 wait per program
    landed = {g: [] for g in range(P)}  # receiver -> (offset, nbytes) of every write into it
    adds = Counter()
    for (g, w), ops in prof.programs:
        assert [op.kind for op in ops] == ["write"] * K + ["signal"] * K + ["wait"]
        for op in ops:
            if op.kind == "write":
                landed[op["dst"]].append((op["offset"], op["nbytes"]))
            elif op.kind == "signal":
                adds[op["dst"], op["flag"]] += op["value"]
        assert ops[-1]["value"] == K
    # every GPU receives its whole halo exactly once: K senders x W workgroups of S / (K W) bytes, disjoint
    for g in range(P):
        assert sorted(landed[g]) == [(i * chunk, chunk) for i in range(K * W)]
    assert adds == {(g, f"nx_w{w}"): K for g in range(P) for w in range(W)}


@pytest.mark.parametrize("P, W", [(2, 1), (3, 2), (4, 3)])
def test_gemv_allreduce_matches_the_per_op_build(P, W):
    tiles = [1000 + 10 * g for g in range(P)]
    assert gemv_allreduce(P, W, vector_bytes=P * W * 32, tile_ns=tiles, reduce_ns=400) == \
        _gemv_per_op(P, W, P * W * 32, tiles, 400)


GENERATED = [
    (ring_allreduce, {}), (direct_allreduce, {}), (direct_allreduce, {"schedule": "pinned"}),
    (all_gather, {"algorithm": "ring"}), (all_gather, {"algorithm": "direct"}),
    (reduce_scatter, {"algorithm": "ring"}), (reduce_scatter, {"algorithm": "direct"}),
    (all_to_all, {}), (all_to_all, {"schedule": "pinned"}),
]


def _mixed(P, W):
    """Per-op ops before, between and after collectives of every kind, on overlapping workgroups and groups."""
    b = ProfileBuilder(P, W + 2)
    for g in range(P):
        for w in range(W + 2):
            b.program(g, w).compute(ns=10 * g + w)
    b.collective("all_reduce", 4096, workgroups=W, chunks=2, reduce_ns_per_byte=0.5)
    b.collective("broadcast", 999, algorithm="ring", workgroups=[1, 2], group=[3, 1, 0], root=1)
    b.collective("broadcast", 999, algorithm="direct", workgroups=2, root=2, chunks=3)
    b.collective("barrier", 0, workgroups=[[w % 3] for w in range(P)])
    for g in range(P):
        b.program_at(g, 0).compute(ns=5)
    b.collective("send", 777, group=[2, 0], workgroups=2, chunks=2)
    b.collective("all_gather", 4096, algorithm="ring", group=[0, 2, 3], workgroups=[W, W + 1])
    b.collective("all_to_all", 4096, workgroups=W, mode="poll", interval_ns=50)
    for g in range(P):
        b.program_at(g, W + 1).fence()
    return b.build()


@pytest.mark.parametrize("P, W, C", [(2, 1, 1), (3, 2, 2), (4, 3, 3)])
@pytest.mark.parametrize("fn, kw", GENERATED)
def test_collectives_match_their_per_op_build(monkeypatch, fn, kw, P, W, C):
    S = P * W * C * 8 + 3  # not a multiple of the piece count: the first pieces take one byte more
    if kw.get("schedule") == "pinned":
        W, S = P - 1, P * (P - 1) * C * 8
    bulk = fn(P, S, workgroups=W, chunks=C, **kw)
    monkeypatch.setattr(ProfileBuilder, "programs_at", lambda b, gpus, wgs: OneByOne(b, gpus, wgs))
    assert bulk == fn(P, S, workgroups=W, chunks=C, **kw)


@pytest.mark.parametrize("P, W", [(4, 2), (5, 3)])
def test_mixed_per_op_and_collective_calls_match_their_per_op_build(monkeypatch, P, W):
    bulk = _mixed(P, W)
    monkeypatch.setattr(ProfileBuilder, "programs_at", lambda b, gpus, wgs: OneByOne(b, gpus, wgs))
    assert bulk == _mixed(P, W)


def test_ops_land_in_call_order_across_both_paths():
    b = ProfileBuilder(3, 2)
    b.flag("f")
    p = b.program(1, 0).compute(ns=1)
    s = b.programs_at([0, 1, 2], 0)
    s.compute(ns=2)
    p.compute(ns=3)
    s.signal(dst=[1, 2, 0], flag="f")
    p.compute(ns=4)
    assert p.op_count() == 5  # 1, bulk 2, 3, bulk signal, 4
    prof = b.build()
    assert [(op.kind, op.get("ns"), op.get("dst")) for op in prof.program(1, 0)] == [
        ("compute", 1, None), ("compute", 2, None), ("compute", 3, None), ("signal", None, 2), ("compute", 4, None)]
    assert [op.kind for op in prof.program(0, 0)] == ["compute", "signal"]
    assert prof.program(0, 1) == ()
    # a builder started after bulk ops counts them in its op indices
    assert b.program_at(2, 0).op_count() == 2
    with pytest.raises(ProfileError, match="gpu 2 wg 0 op 2 \\(wait\\)"):
        b.program_at(2, 0).wait(flag="nope", cond=">=", value=1)


def _reused_columns(b):
    """Tuple columns reused across calls and sets (the groups of a tuple are kept by its identity), beside a
    mixed-type tuple (1 and True must stay apart), and numeric arrays of one value and of several."""
    for f in ("f0", "f1", "f2"):
        b.flag(f)
    flags = ("f0", "f1", "f0", "f2")
    other = ("f1", "f1", "f2", "f0")  # as long as `flags`, grouped differently: groups are per tuple
    mixed = (1, True, 1, 1)
    a = b.programs_at([0, 1, 2, 3], 0)
    c = b.programs_at([3, 2, 1, 0], 1)
    for value in (1, 2, 3):
        a.wait(flag=flags, cond=">=", value=value)
        c.signal(dst=[1, 2, 3, 0], flag=other, value=value)
        c.wait(flag=flags, cond="==", value=value)
        a.compute(ns=np.full(4, 2.5))
        c.compute(ns=np.array([1.0, 2.0, 1.0, -0.0]) + value)
        a.local(reads=np.array([4, 4, 4, 4], dtype=np.uint8), writes=np.arange(4))
    return b, mixed


def test_reused_tuple_and_uniform_columns_give_the_per_op_ops(monkeypatch):
    bulk, mixed = _reused_columns(ProfileBuilder(4, 2))
    with pytest.raises(ProfileError, match=r"gpu 1 wg 0 op 9 \(signal\).*value"):
        bulk.programs_at([0, 1, 2, 3], 0).signal(dst=0, flag="f0", value=mixed)  # True is not 1
    prof = bulk.build()
    monkeypatch.setattr(ProfileBuilder, "programs_at", lambda b, gpus, wgs: OneByOne(b, gpus, wgs))
    assert prof == _reused_columns(ProfileBuilder(4, 2))[0].build()
    # and by hand: program (2, 0) waits on f0 (its place 2 in `flags`); program (0, 1), place 3 of c, signals f0
    # (place 3 of `other`) and waits on f2
    waits = [op for op in prof.program(2, 0) if op.kind == "wait"]
    assert [(op["flag"], op["value"]) for op in waits] == [("f0", 1), ("f0", 2), ("f0", 3)]
    signals = [op for op in prof.program(0, 1) if op.kind == "signal"]
    assert [(op["flag"], op["dst"], op["value"]) for op in signals] == [("f0", 0, 1), ("f0", 0, 2), ("f0", 0, 3)]
    assert [op["flag"] for op in prof.program(0, 1) if op.kind == "wait"] == ["f2"] * 3
    assert [op["reads"] for op in prof.program(3, 0) if op.kind == "local"] == [4, 4, 4]
    assert [op["ns"] for op in prof.program(0, 1) if op.kind == "compute"] == [1.0, 2.0, 3.0]


def test_bulk_started_programs_are_started():
    b = ProfileBuilder(2, 2)
    b.programs_at([0, 1], [1, 1]).fence()
    b.program(1, 1).fence()  # started by the bulk append: continued after its op
    b.program(1, 0).fence()  # never started: fine
    assert [len(b.build().program(1, w)) for w in (0, 1)] == [1, 2]


_REJECTED = [
    (lambda s: s.write(dst=[0, 1, 4], buffer="x", offset=0, nbytes=8), "gpu 2 wg 0 op 1 (write): dst 4 is out of range"),
    (lambda s: s.write(dst=0, buffer="x", offset=[0, 60, 0], nbytes=8), "gpu 1 wg 0 op 1 (write): offset 60 + nbytes 8"),
    (lambda s: s.write(dst=0, buffer="x", offset=0, nbytes=np.array([8, 0, 8])), "gpu 1 wg 0 op 1 (write): nbytes 0"),
    (lambda s: s.write(dst=[0, True, 1], buffer="x", offset=0, nbytes=8), "gpu 1 wg 0 op 1 (write): dst must be an int"),
    (lambda s: s.write(dst=np.array([0.0, 1.0, 2.0]), buffer="x", offset=0, nbytes=8), "gpu 0 wg 0 op 1 (write): dst must"),
    (lambda s: s.read(dst=0, buffer=["x", "y", "x"], offset=0, nbytes=8), "gpu 1 wg 0 op 1 (read): buffer 'y'"),
    (lambda s: s.signal(dst=[0, 1, -1], flag="f"), "gpu 2 wg 0 op 1 (signal): dst -1 is out of range"),
    (lambda s: s.wait(flag="f", cond=">=", value=[1, True, 1]), "gpu 1 wg 0 op 1 (wait): value must be an int"),
    (lambda s: s.compute(ns=[1, 2]), "compute: ns must be one value or one per program"),
    (lambda s: s.compute(ns=[[1], [2], [3]]), "gpu 0 wg 0 op 1 (compute): ns must be a number"),
]


@pytest.mark.parametrize("call, fragment", _REJECTED)
def test_bulk_rejects_what_the_per_op_path_rejects(call, fragment):
    b = ProfileBuilder(3, 1)
    b.flag("f").buffer("x", 64)
    s = b.programs_at([0, 1, 2], 0)
    s.fence()
    with pytest.raises(ProfileError) as e:
        call(s)
    assert fragment in str(e.value)


@pytest.mark.parametrize("call, fragment", _REJECTED)
def test_bulk_rejects_a_bad_value_of_an_op_body_it_has_accepted_before(call, fragment):
    """An op body checked once is not checked again in later calls (builder._Store.bodies); its per-program
    values still are, and a value of another type (True for 1) is another body."""
    b = ProfileBuilder(3, 1)
    b.flag("f").buffer("x", 64)
    s = b.programs_at([0, 1, 2], 0)
    s.fence()
    s.write(dst=[0, 1, 2], buffer="x", offset=0, nbytes=8)
    s.read(dst=0, buffer="x", offset=0, nbytes=8)
    s.signal(dst=[0, 1, 2], flag="f")
    s.wait(flag="f", cond=">=", value=1)
    with pytest.raises(ProfileError) as e:
        call(s)
    assert fragment.replace(" op 1 (", " op 5 (") in str(e.value)


@pytest.mark.parametrize("gpus, wgs, fragment", [
    ([0, 3], 0, "gpu 3 is out of range"), ([0, 1], [0, True], "wg must be an int"),
    ([0, 0], [1, 1], "gpu 0 wg 1 is named twice"), (np.zeros((2, 2), dtype=int), 0, "1-D column"),
])
def test_programs_at_checks_its_programs(gpus, wgs, fragment):
    with pytest.raises(ProfileError, match=fragment):
        ProfileBuilder(3, 2).programs_at(gpus, wgs)


def test_a_bulk_built_profile_round_trips_through_yaml(tmp_path):
    prof = ring_allreduce(4, 4 * 2 * 3 * 8 + 5, workgroups=2, chunks=3, reduce_ns_per_byte=0.25)
    prof.save(tmp_path / "p.yaml")
    assert load_profile(tmp_path / "p.yaml") == prof


# ---------------------------------------------------------------- schedules against hand-derived traffic
# The comparisons above run the same schedule functions on both sides, so a schedule bug would pass
# them. Here every collective is checked against what it must do, worked out from its definition:
# which sender writes which block of which receiver's buffer (exactly once each), how many ops each
# program has, that every chunk written is signalled once and every flag is waited up to exactly
# what is added to it, and the ring's step structure (each step forwards the block received at the
# step before).

def _blocks_written(prof, S, P, gpus):
    """(receiver rank, buffer, block) -> [sender ranks], from the writes (S/P-byte blocks; whole S for
    one-block kinds); asserts that the writes into each block tile it exactly, without overlap."""
    rank = {g: r for r, g in enumerate(gpus)}
    out, spans = {}, {}
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "write":
                block = S if op["buffer"].endswith(("bcast", "p2p")) else S // P
                key = (rank[op["dst"]], op["buffer"].split(".")[-1], op["offset"] // block)
                out.setdefault(key, []).append(rank[g])
                spans.setdefault(key, (block, []))[1].append((op["offset"], op["offset"] + op["nbytes"]))
    for (_, _, blk), (block, s) in spans.items():
        s.sort()
        assert s[0][0] == blk * block and s[-1][1] == (blk + 1) * block
        assert all(a[1] == b[0] for a, b in zip(s, s[1:]))
    return out


def _expected_blocks(kind, algorithm, P, root):
    """(receiver rank, buffer, block) -> sender rank, from the collective's definition."""
    others = [(d, b) for d in range(P) for b in range(P) if b != d]
    if kind == "broadcast":
        order = [(root + i) % P for i in range(P)]
        return {(d, "bcast", 0): root if algorithm == "direct" else order[order.index(d) - 1] for d in order[1:]}
    if kind == "send":
        return {(1, "p2p", 0): 0}
    if algorithm == "ring":
        # Step s of rank r sends block r-s-1 (reduce-scatter) or r-s (all-gather) to r+1, for s < P-1:
        # receiver d gets every block but d-1 in partials and every block but d in data, from d-1.
        rs = {(d, "partials", b): (d - 1) % P for d in range(P) for b in range(P) if b != (d - 1) % P}
        ag = {(d, "data", b): (d - 1) % P for d, b in others}
        return {"all_reduce": {**rs, **ag}, "reduce_scatter": rs, "all_gather": ag}[kind]
    # direct and pinned: sender g writes its block g into every receiver d
    bufs = {"all_reduce": ("partials", "data"), "reduce_scatter": ("partials",), "all_gather": ("data",),
            "all_to_all": ("recv",)}[kind]
    return {(d, buf, b): b for buf in bufs for d, b in others}


def _expected_counts(kind, algorithm, P, C, r, root):
    """(writes, signals, waits) of one program of rank r."""
    if kind == "barrier":
        return 0, P - 1, 1
    if kind == "send":
        return (C, C, 0) if r == 0 else (0, 0, 1)
    if kind == "broadcast":
        pos = (r - root) % P
        if algorithm == "direct":
            return ((P - 1) * C, (P - 1) * C, 0) if pos == 0 else (0, 0, C)
        return (C if pos < P - 1 else 0, C if pos < P - 1 else 0, C if pos else 0)
    stages = 2 if kind == "all_reduce" else 1
    if algorithm == "ring":
        return stages * (P - 1) * C, stages * (P - 1) * C, stages * (P - 1) * C
    if algorithm == "pinned":
        return stages * C, stages * C, stages
    return stages * (P - 1) * C, stages * (P - 1) * C, stages * (P - 1) * C


COLLECTIVES = [("all_reduce", "ring"), ("all_reduce", "direct"), ("all_reduce", "pinned"),
               ("all_gather", "ring"), ("all_gather", "direct"), ("reduce_scatter", "ring"),
               ("reduce_scatter", "direct"), ("all_to_all", "direct"), ("all_to_all", "pinned"),
               ("broadcast", "ring"), ("broadcast", "direct"), ("barrier", "direct"), ("send", "direct")]


@pytest.mark.parametrize("kind, algorithm", COLLECTIVES)
@pytest.mark.parametrize("gpus, group, W, C, root", [
    (3, [0, 1, 2], 1, 1, 0), (5, [3, 0, 4, 1], 3, 2, 2), (6, [5, 2, 0, 1, 4], 4, 3, 4)])
def test_schedules_do_what_their_collective_defines(kind, algorithm, gpus, group, W, C, root):
    P = len(group) if kind != "send" else 2
    group = group[:P]
    if algorithm == "pinned":
        W = P - 1
    S = P * W * C * 8 * 3  # blocks of S/P bytes, each W slices of C chunks of 24 bytes
    b = ProfileBuilder(gpus, W + 1)
    # each rank runs the collective on a different set of workgroups: rank i uses (i + j) mod (W + 1)
    sets = [[(i + j) % (W + 1) for j in range(W)] for i in range(P)]
    b.collective(kind, S, algorithm=algorithm, workgroups=sets, group=group, chunks=C, root=root if P > 2 else 0)
    prof = b.build()
    root = root if P > 2 else 0
    if kind not in ("barrier",):
        got = _blocks_written(prof, S, P, group)
        expected = _expected_blocks(kind, algorithm, P, root)
        # every expected block arrives once from its sender, as W x C pieces that tile it (pinned:
        # only the W / (P-1) workgroups serving that receiver send to it)
        pieces = (W // (P - 1) if algorithm == "pinned" else W) * C
        assert sorted(got) == sorted(expected)
        for key, senders in got.items():
            assert senders == [expected[key]] * pieces, key
    for i, g in enumerate(group):
        for w in sets[i]:
            ops = prof.program(g, w)
            kinds = Counter(op.kind for op in ops)
            assert (kinds["write"], kinds["signal"], kinds["wait"]) == _expected_counts(kind, algorithm, P, C, i, root)
    assert {g for (g, _), ops in prof.programs if ops} == set(group)
    # every write is followed by a signal to the same GPU before the next write elsewhere, and each
    # flag is waited for up to exactly what all signals add to it
    adds, tops = Counter(), Counter()
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "signal":
                adds[op["dst"], op["flag"]] += op["value"]
            elif op.kind == "wait":
                tops[g, op["flag"]] = max(tops[g, op["flag"]], op["value"])
        written = Counter(op["dst"] for op in ops if op.kind == "write")
        signalled = Counter(op["dst"] for op in ops if op.kind == "signal")
        assert all(signalled[d] == n for d, n in written.items())
    assert tops == adds


@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter", "all_gather"])
@pytest.mark.parametrize("P, W, C", [(3, 1, 1), (4, 2, 3), (5, 1, 2)])
def test_ring_steps_forward_what_they_received(kind, P, W, C):
    # Rank r's step s (chunk c of its slice) sends the block it received at step s-1; the first
    # reduce-scatter step sends block r-1, the first all-gather step (after a reduce-scatter: step
    # P-1) the block r completed, block r. Derived from the writes alone, per rank and slice.
    S = P * W * C * 8
    b = ProfileBuilder(P, W)
    b.collective(kind, S, algorithm="ring", workgroups=W, chunks=C, prefix="")
    prof = b.build()
    sent = {}  # (rank, wg) -> [(buffer, block) per step]
    for (g, w), ops in prof.programs:
        writes = [op for op in ops if op.kind == "write"]
        assert all(op["dst"] == (g + 1) % P for op in writes)
        steps = [writes[i:i + C] for i in range(0, len(writes), C)]
        for step in steps:  # the C writes of a step are the C chunks, in order, of one slice of one block
            assert [op["offset"] // 8 % (W * C) for op in step] == [w * C + c for c in range(C)]
            assert len({(op["buffer"], op["offset"] // (S // P)) for op in step}) == 1
        sent[g, w] = [(step[0]["buffer"], step[0]["offset"] // (S // P)) for step in steps]
    first = {"all_reduce": ("partials", -1), "reduce_scatter": ("partials", -1), "all_gather": ("data", 0)}[kind]
    for (r, w), blocks in sent.items():
        assert blocks[0] == (first[0], (r + first[1]) % P)
        received = sent[(r - 1) % P, w]
        for s in range(1, len(blocks)):
            assert blocks[s][1] == received[s - 1][1]
        if kind == "all_reduce":
            assert [buf for buf, _ in blocks] == ["partials"] * (P - 1) + ["data"] * (P - 1)
            assert blocks[P - 1][1] == r
