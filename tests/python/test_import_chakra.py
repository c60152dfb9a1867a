"""The Chakra importer (chakra.py): two lanes per rank, communicator groups, and what it refuses.

ETs are written with the chakra package's own schema and protolib writer (as its generator does). Expected
times are worked out by hand: a rank's compute lane runs its COMP nodes back to back; its comm lane runs its
collectives; a node waits for its last parent on the other lane (a local flag, no fabric traffic). Bytes per rank
of a ring all-reduce of S bytes among P ranks: 2(P-1)/P x S.
"""

from __future__ import annotations

import json

import pytest
from test_import import DATA, FORMULA, _bytes_per_call

import eidola
from eidola.errors import ProfileError
from eidola.profile import load_profile
from eidola.workload.importers.chakra import import_chakra, warnings_of

MIB = 1 << 20
MS = 1_000_000  # ns


def _write_et(path, nodes):
    """A Chakra ET: nodes are (id, type, name, parents, duration us, {attr: value}); type a NodeType name or a raw
    number; comm_type is written as int64, pg_name as a string, other integers as uint64 (as chakra does)."""
    from chakra.schema.protobuf import et_def_pb2 as et
    from chakra.src.third_party.utils import protolib

    with open(path, "wb") as f:
        protolib.encodeMessage(f, et.GlobalMetadata(version="0.0.4"))
        for i, kind, name, parents, us, attrs in nodes:
            n = et.Node(id=i, name=name, type=et.NodeType.Value(kind) if isinstance(kind, str) else kind,
                        duration_micros=us)
            n.data_deps.extend(parents)
            n.attr.append(et.AttributeProto(name="is_cpu_op", bool_val=False))
            for k, v in attrs.items():
                n.attr.append(et.AttributeProto(name=k, string_val=v) if isinstance(v, str) else
                              et.AttributeProto(name=k, int64_val=v) if k == "comm_type" else
                              et.AttributeProto(name=k, uint64_val=v))
            protolib.encodeMessage(f, n)
    return path


def _ctype(name):
    from chakra.schema.protobuf import et_def_pb2 as et

    return et.CollectiveCommType.Value(name)


def _switch(write_platform, gpus: int, bandwidth: str):
    """`gpus` GPUs of 2 workgroups (one per lane) on a flow switch with no latency nor headers."""
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: switch
        gpus: {{count: {gpus}, workgroups: 2, memory: {{latency: 0ns, bandwidth: 1000TB/s}}}}
        fabric: {{model: flow, topology: switch, link: {{bandwidth: {bandwidth}, latency: 0ns, header: 0B, count: 1}},
                 switch: {{latency: 0ns}}}}
        """))


def _step(r, S):
    """fwd 1 ms; an all-reduce of S bytes after fwd; bwd 2 ms after fwd only; opt 0.5 ms after bwd and the
    all-reduce. Ids in the order a user writes them."""
    return [(1, "COMP_NODE", "fwd", [], 1000, {}),
            (2, "COMM_COLL_NODE", "grad_ar", [1], 0, {"comm_type": _ctype("ALL_REDUCE"), "comm_size": S}),
            (3, "COMP_NODE", "bwd", [1], 2000, {}),
            (4, "COMP_NODE", "opt", [3, 2], 500, {})]


def _phases(res, report, gpu):
    """[(begin, end) ns] of the compute phases of `gpu` in lane order (report.phases: one row per phase)."""
    ops = res.ops_table()
    rows = []
    for g, w, k, *_ in report.phases:
        if g == gpu:
            (op,) = ops[(ops["gpu"] == g) & (ops["wg"] == w) & (ops["op"] == k)]
            rows.append((float(op["begin_ns"]), float(op["end_ns"])))
    return rows


@pytest.mark.parametrize("bandwidth", ["1GB/s", "1000GB/s"])
def test_backward_overlaps_the_all_reduce(tmp_path, write_platform, bandwidth):
    """The user trial: the all-reduce that only opt needs must not delay bwd, which needs only fwd.

    P = 2, S = 4 MiB: the ring moves 2(P-1)/P x S = 4,194,304 B each way on each GPU's link, T = 4.194 ms at
    1 GB/s (4.19 us at 1000 GB/s). fwd runs 0-1 ms; the all-reduce starts when fwd has ended (1 ms) and ends at
    1 ms + T; bwd runs 1-3 ms beside it; opt starts at max(3 ms, 1 ms + T): 5.194 ms at 1 GB/s, 3 ms at 1000 GB/s
    (as one lane, bwd started after the all-reduce: 1 + T to 3 + T).
    """
    P, S = 2, 4 * MIB
    prof, report = import_chakra([str(_write_et(tmp_path / f"r{r}.et", _step(r, S))) for r in range(P)])
    assert dict(_bytes_per_call(prof)["c1"]) == {g: FORMULA["all_reduce"](P, S) for g in range(P)}
    assert report.imported["waits between streams"] == 2 * P  # the all-reduce after fwd, opt after the all-reduce
    res = eidola.simulate(_switch(write_platform, P, bandwidth), prof, trace=True)
    # the data, then a flag of 8 B at each of the ring's 2(P-1) steps
    assert [int(x) for x in res.gpus["bytes_sent"]] == [FORMULA["all_reduce"](P, S) + 8 * 2 * (P - 1)] * P
    T = FORMULA["all_reduce"](P, S) / float(bandwidth.removesuffix("GB/s"))  # ns: B / (GB/s)
    for g in range(P):
        fwd, bwd, opt = _phases(res, report, g)
        assert fwd == pytest.approx((0, 1 * MS), abs=1)
        assert bwd == pytest.approx((1 * MS, 3 * MS), abs=100)  # a local signal after fwd: no fabric time
        # opt's wait polls every 50 ns; the ring's two steps each add a signal's flight (no latency here)
        assert max(3 * MS, 1 * MS + T) <= opt[0] <= max(3 * MS, 1 * MS + T) * 1.001 + 200
        assert opt[1] == pytest.approx(opt[0] + 0.5 * MS, abs=1)


def test_comm_groups_run_each_collective_among_its_ranks(tmp_path, write_platform):
    """4 ranks, groups "1" = {0, 1} and "2" = {2, 3} (a tensor-parallel pair each), then one all-reduce of every
    rank (pg_name "0", ASTRA-sim's default group).

    Ranks 0, 1: all-reduce of S1 = 1 MiB in their pair: 2(2-1)/2 x S1 = 1 MiB each, to the other member only.
    Ranks 2, 3: S2 = 2 MiB in theirs: 2 MiB each. Then S0 = 4 MiB among all 4: 2 x 3/4 x S0 = 6 MiB each.
    So bytes sent: 7 MiB by GPUs 0 and 1, 8 MiB by GPUs 2 and 3; no group write crosses between the pairs.
    """
    S0, S1, S2 = 4 * MIB, 1 * MIB, 2 * MIB
    groups = tmp_path / "groups.json"
    groups.write_text(json.dumps({"1": [0, 1], "2": [3, 2]}))
    ets = []
    for r in range(4):
        pg, S = ("1", S1) if r < 2 else ("2", S2)
        ets.append(str(_write_et(tmp_path / f"r{r}.et", [
            (1, "COMM_COLL_NODE", "tp_ar", [], 0, {"comm_type": _ctype("ALL_REDUCE"), "comm_size": S, "pg_name": pg}),
            (2, "COMM_COLL_NODE", "dp_ar", [1], 0, {"comm_type": _ctype("ALL_REDUCE"), "comm_size": S0,
                                                    "pg_name": "0"})])))
    with pytest.raises(ProfileError, match=r"name 3 communicator groups \(pg_name 0, 1, 2\).*--comm-groups"):
        import_chakra(ets)  # merged: the pairs' all-reduces of 1 and 2 MiB cannot be one call of 4 ranks
    prof, report = import_chakra(ets, comm_groups=str(groups))
    assert report.imported["all_reduce (ring, 2 ranks)"] == 2 and report.imported["all_reduce (ring, 4 ranks)"] == 1
    (world,) = [prefix for prefix, _, _, traced in report.calls if len(traced) == 4]
    dst = {g: {op["dst"] for (gg, _), ops in prof.programs if gg == g for op in ops
               if op.kind == "write" and not op["buffer"].startswith(world)} for g in range(4)}
    assert dst == {0: {1}, 1: {0}, 2: {3}, 3: {2}}  # the pairs' all-reduces stay in the pairs
    res = eidola.simulate(_switch(write_platform, 4, "100GB/s"), prof)
    sent = [int(x) for x in res.gpus["bytes_sent"]]
    writes = {g: FORMULA["all_reduce"](2, S1 if g < 2 else S2) + FORMULA["all_reduce"](4, S0) for g in range(4)}
    assert writes == {0: 7 * MIB, 1: 7 * MIB, 2: 8 * MIB, 3: 8 * MIB}
    # plus the flags: a ring all-reduce of P ranks signals its next rank once a step, 2(P-1) steps, 8 B each
    assert sent == [writes[g] + 8 * (2 * (2 - 1) + 2 * (4 - 1)) for g in range(4)]


def test_pg_names_without_a_group_file_are_reported_as_merged(tmp_path):
    ets = [str(_write_et(tmp_path / f"r{r}.et", [
        (1, "COMM_COLL_NODE", "a", [], 0, {"comm_type": _ctype("ALL_REDUCE"), "comm_size": 4096, "pg_name": "1"}),
        (2, "COMM_COLL_NODE", "b", [1], 0, {"comm_type": _ctype("ALL_GATHER"), "comm_size": 4096, "pg_name": "2"})]))
        for r in range(2)]
    _, report = import_chakra(ets)
    assert any("2 communicator groups (pg_name 1, 2)" in a and "merged" in a for a in report.assumed)
    assert report.imported["all_reduce (ring, 2 ranks)"] == 1


def test_dependencies_pass_through_nodes_that_are_no_item(tmp_path):
    """COMP a -> METADATA m -> REDUCE x (dropped: no schedule) -> ALL_REDUCE y; COMP b after a; COMP c after y via
    a MEM_LOAD node. y must still wait for a (its last compute ancestor), and c for y, though every path between
    them runs through nodes that become no item; b waits for nothing on the comm lane."""
    from eidola.workload.importers.chakra import _Rank
    from eidola.workload.importers.timeline import Report

    nodes = [(1, "COMP_NODE", "a", [], 10, {}),
             (2, "METADATA_NODE", "m", [1], 0, {}),
             (3, "COMM_COLL_NODE", "x", [2], 0, {"comm_type": _ctype("REDUCE"), "comm_size": 64}),
             (4, "COMM_COLL_NODE", "y", [3], 0, {"comm_type": _ctype("ALL_REDUCE"), "comm_size": 64}),
             (5, "COMP_NODE", "b", [1], 20, {}),
             (6, "MEM_LOAD_NODE", "l", [4], 0, {}),
             (7, "COMP_NODE", "c", [6], 30, {})]
    report = Report()
    rank = _Rank(_write_et(tmp_path / "r.et", nodes), 0, 1, report, None)
    compute, comm = rank.read()
    a, b, c = compute.items
    (y,) = comm.items
    assert [(it.start, it.end) for it in compute.items] == [(0, 10_000), (10_000, 30_000), (30_000, 60_000)]
    assert (y.start, y.end) == (0, 0) and y.after == [a] and c.after == [y] and a.after == b.after == []
    assert rank.dropped == {"REDUCE": 1}
    assert report.ignored["COMM_COLL REDUCE (no schedule)"] == 1


def test_one_wait_per_node_the_last_parent(tmp_path):
    """Compute d after three all-reduces on the comm lane waits for the last of them only; e after d and the
    second one waits for nothing more (d has waited for a later one)."""
    from eidola.workload.importers.chakra import _Rank
    from eidola.workload.importers.timeline import Report

    ar = {"comm_type": _ctype("ALL_REDUCE"), "comm_size": 64}
    nodes = [(1, "COMM_COLL_NODE", "p", [], 0, ar), (2, "COMM_COLL_NODE", "q", [1], 0, ar),
             (3, "COMM_COLL_NODE", "s", [], 0, ar), (4, "COMP_NODE", "d", [1, 3, 2], 5, {}),
             (5, "COMP_NODE", "e", [4, 2], 5, {})]
    compute, comm = _Rank(_write_et(tmp_path / "r.et", nodes), 0, 1, Report(), None).read()
    assert [it.coll.name for it in comm.items] == ["p", "q", "s"]  # ready nodes by smallest id
    d, e = compute.items
    assert d.after == [comm.items[2]] and e.after == []


def test_replicated_ranks_keep_the_lanes_and_waits(tmp_path, write_platform):
    """--ranks 2 of one ET is the same profile as that ET given twice (the lanes are copied together, so every
    wait names the copy on its own rank)."""
    et = str(_write_et(tmp_path / "r.et", _step(0, 64 * 1024)))
    twice, _ = import_chakra([et, et])
    replicated, report = import_chakra([et], ranks=2)
    assert replicated.programs == twice.programs and replicated.workgroups == 2
    assert report.imported["waits between streams"] == 4


def test_warnings_dropped_collectives_and_an_empty_profile(tmp_path, cli):
    ets = [str(_write_et(tmp_path / f"r{r}.et", [
        (1, "COMP_NODE", "a", [], 0, {}),
        (2, "COMM_COLL_NODE", "red", [1], 0, {"comm_type": _ctype("REDUCE"), "comm_size": 64}),
        (3, "COMM_COLL_NODE", "gat", [2], 0, {"comm_type": _ctype("GATHER"), "comm_size": 64})])) for r in range(2)]
    r = cli("import", "chakra", *ets, "-o", tmp_path / "x.yaml")
    assert r.returncode == 0, r.stderr
    assert "eidola import: warning: 4 COMM_COLL nodes dropped" in r.stderr and "GATHER x2, REDUCE x2" in r.stderr
    assert "eidola import: warning: the profile has no ops" in r.stderr
    assert "0 ops" in r.stdout
    assert "warning: the profile has no ops" in (tmp_path / "x.import.txt").read_text()
    _, report = import_chakra(ets)
    assert len(warnings_of(report)) == 2
    # a timed ET says nothing
    _, report = import_chakra([str(_write_et(tmp_path / "t.et", _step(0, 4096)))] * 2)
    assert warnings_of(report) == []


def _expect_refused(cli, tmp_path, args, *words):
    r = cli("import", "chakra", *args, "-o", tmp_path / "x.yaml")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    return r.stderr


def test_malformed_ets_are_refused(tmp_path, cli):
    ar = _ctype("ALL_REDUCE")
    cases = {
        "type.et": ([(1, "COMP_NODE", "a", [], 1, {}), (7, 42, "odd", [1], 0, {})],
                    ["node 7 (odd)", "node type 42 is not a Chakra NodeType", "COMM_COLL_NODE"]),
        "size.et": ([(3, "COMM_COLL_NODE", "ar", [], 0, {"comm_type": ar})],
                    ["node 3 (ar)", "COMM_COLL_NODE has no attribute comm_size"]),
        "ctype.et": ([(4, "COMM_COLL_NODE", "what", [], 0, {"comm_size": 64})],
                     ["node 4 (what)", "has no attribute comm_type", "not guessed"]),
        "badctype.et": ([(5, "COMM_COLL_NODE", "what", [], 0, {"comm_type": 77, "comm_size": 64})],
                        ["node 5 (what)", "comm_type 77 is not a Chakra CollectiveCommType"]),
        "dup.et": ([(1, "COMP_NODE", "first", [], 1, {}), (1, "COMP_NODE", "second", [], 2, {})],
                   ["node id 1 is given twice ('first' and 'second')"]),
        "send.et": ([(6, "COMM_SEND_NODE", "s", [], 0, {"comm_size": 64})],
                    ["node 6 (s)", "has no attribute comm_dst"]),
        "cycle.et": ([(1, "COMP_NODE", "a", [2], 1, {}), (2, "COMP_NODE", "b", [1], 1, {})],
                     ["the dependencies form a cycle", "1 (a), 2 (b)"]),
        "pgtype.et": ([(8, "COMM_COLL_NODE", "p", [], 0, {"comm_type": ar, "comm_size": 64, "pg_name": 3})],
                      ["node 8 (p)", "attribute pg_name is 3; expected a string"]),
    }
    for file, (nodes, words) in cases.items():
        path = _write_et(tmp_path / file, nodes)
        _expect_refused(cli, tmp_path, [path, path], file, *words)


def test_bad_comm_groups_are_refused(tmp_path, cli):
    ar = _ctype("ALL_REDUCE")
    ets = [_write_et(tmp_path / f"r{r}.et", [(9, "COMM_COLL_NODE", "tp", [], 0,
                                              {"comm_type": ar, "comm_size": 64, "pg_name": "5"})]) for r in range(2)]
    g = tmp_path / "g.json"
    for text, words in [('{"6": [0, 1]}', ["r0.et", "node 9 (tp)", "pg_name '5' is not a group of", "g.json"]),
                        ('{"5": [0, 2]}', ["g.json", "group '5' names rank 2", "2 ETs were given"]),
                        ('{"5": [1]}', ["r0.et", "node 9 (tp)", "leaves out rank 0"]),
                        ('{"5": [0, 0]}', ["g.json", "group '5' names a rank twice"]),
                        ('{"5": "0,1"}', ["g.json", "group '5' is '0,1'"]),
                        ('{"5": [0, true]}', ["g.json", "group '5'", "list of ranks (integers)"]),
                        ('{"5": [0, 1], "5": [0, 1]}', ["g.json", "group '5' is given twice"]),
                        ('{"0": [0]}', ["g.json", "group '0'", "default group of every rank"]),
                        ('[[0, 1]]', ["g.json", "list", "--comm-group-configuration"]),
                        ('{"5": [0, 1]', ["g.json", "not JSON"])]:
        g.write_text(text)
        _expect_refused(cli, tmp_path, [*ets, "--comm-groups", g], *words)
    _expect_refused(cli, tmp_path, [*ets, "--comm-groups", tmp_path / "none.json"], "none.json", "no such")
    g.write_text('{"5": [0, 1]}')
    _expect_refused(cli, tmp_path, [ets[0], "--ranks", "2", "--comm-groups", g], "--comm-groups", "--ranks 2")
    r = cli("import", "chakra", *ets, "--comm-groups", g, "-o", tmp_path / "ok.yaml")
    assert r.returncode == 0, r.stderr


def test_api_errors_are_profile_errors(tmp_path):
    path = str(_write_et(tmp_path / "dup.et", [(1, "COMP_NODE", "a", [], 1, {}), (1, "COMP_NODE", "b", [], 1, {})]))
    with pytest.raises(ProfileError, match=r"dup\.et: node id 1 is given twice"):
        import_chakra([path])


# Moved from test_import.py (a rank now takes two workgroups, its compute and comm lanes).
def test_chakra_ets_timed_and_dependent(tmp_path, write_platform):
    """COMP and COMM_COLL nodes with data deps, ids deliberately out of dependency order, on P ranks.

    Rank r: node 3 (COMP, 20 + 10r us, no parents) runs first although node 1 has the smaller id,
    since node 1 (COMP, 10 us) depends on node 3; node 2 (all_reduce of S bytes) depends on node 1,
    so rank r arrives at it at 30 + 10r us; node 4 (COMP, 5 us) depends on node 2. On a fabric where
    communication is free, the all_reduce ends when the last rank arrives, at 30 + 10(P-1) us, and
    node 4 starts then on every rank.
    """
    P, S = 4, 65536
    ar = _ctype("ALL_REDUCE")
    for r in range(P):
        _write_et(tmp_path / f"r{r}.et", [(1, "COMP_NODE", "b", [3], 10, {}),
                                          (2, "COMM_COLL_NODE", "ar", [1], 0, {"comm_type": ar, "comm_size": S}),
                                          (3, "COMP_NODE", "a", [], 20 + 10 * r, {}),
                                          (4, "COMP_NODE", "c", [2], 5, {})])
    prof, report = import_chakra([str(tmp_path / f"r{r}.et") for r in range(P)])
    assert dict(_bytes_per_call(prof)["c1"]) == {g: FORMULA["all_reduce"](P, S) for g in range(P)}
    assert report.imported["compute phases"] == 3 * P
    plat = eidola.load_platform(write_platform(f"eidola: 1\nname: ideal\ngpus:\n  count: {P}\n  workgroups: 2\n"
                                               "  memory: {latency: 0ns, bandwidth: 1000PB/s}\n"
                                               "fabric: {model: ideal, latency: 0ns}\n"))
    res = eidola.simulate(plat, prof, trace=True)
    for r in range(P):
        begins = [b for b, _ in _phases(res, report, r)]
        expected = [0, (20 + 10 * r) * 1000, (30 + 10 * (P - 1)) * 1000]  # nodes 3, 1, 4
        assert begins == pytest.approx(expected, abs=100)


def test_chakra_generator_ets_import(cli, tmp_path):
    d = DATA / "chakra" / "gloo4"
    ets = [d / f"ALL_REDUCE.{r}.et" for r in range(4)]
    r = cli("import", "chakra", *ets, "-o", tmp_path / "c.yaml")
    assert r.returncode == 0, r.stderr
    prof = load_profile(tmp_path / "c.yaml")
    per_call = _bytes_per_call(prof)
    assert dict(per_call["c1"]) == {g: FORMULA["all_reduce"](4, 65536) for g in range(4)}
    # chakra_converter's ETs of the gloo job's host execution traces (without chakra_trace_link, which
    # needs et_replay, not on PyPI): they have no durations and no COMM nodes, so only compute imports,
    # and the profile, with no ops, is said to be empty
    r = cli("import", "chakra", *[d / f"pytorch.{k}.et.gz" for k in range(4)], "-o", tmp_path / "p.yaml")
    assert r.returncode == 0, r.stderr
    assert "no communication nodes" in r.stdout
    assert "warning: the profile has no ops" in r.stderr
