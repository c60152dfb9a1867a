"""Tests of collectives inside programs and the Kineto / Chakra importers, against standard formulas.

Bytes per rank per collective (P ranks, S bytes): ring or direct all-reduce 2(P-1)/P · S,
all-gather, reduce-scatter and all-to-all (P-1)/P · S, ring broadcast S from every rank but the
last, send S. Fixtures: tests/data/ (made by tests/data/make_kineto_fixtures.py) and the real
NCCL traces in ../shared/data/kineto/.
"""

import gzip
import json
import os
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest

from eidola.errors import ProfileError
from eidola.profile import ProfileBuilder
from eidola.workload.importers.kineto import import_kineto

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _shared_kineto() -> Path:
    """The shared NCCL traces: ../shared/data next to the checkout, else this machine's /work/shared/data
    (a clean checkout elsewhere, as CI's may be), else $EIDOLA_SHARED_DATA."""
    for base in (os.environ.get("EIDOLA_SHARED_DATA"), ROOT.parent / "shared" / "data", "/work/shared/data"):
        if base and (Path(base) / "kineto" / "nccl_data.json.gz").is_file():
            return Path(base) / "kineto"
    return ROOT.parent / "shared" / "data" / "kineto"  # absent: the tests using it fail naming this path


SHARED = _shared_kineto()


def _gloo(P):
    return [str(DATA / "kineto" / f"gloo{P}" / f"rank-{r}.json.gz") for r in range(P)]


def _bytes_per_call(prof):
    """{call prefix: {gpu: bytes written}}: writes name their call's buffer (c<n>.<buffer>)."""
    out = defaultdict(Counter)
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "write":
                out[op["buffer"].split(".")[0]][g] += op["nbytes"]
    return out


FORMULA = {"all_reduce": lambda P, S: 2 * (P - 1) * S // P, "all_gather": lambda P, S: (P - 1) * S // P,
           "reduce_scatter": lambda P, S: (P - 1) * S // P, "all_to_all": lambda P, S: (P - 1) * S // P}


@pytest.mark.parametrize("kind", list(FORMULA))
@pytest.mark.parametrize("algorithm", ["ring", "direct"])
def test_collective_between_compute_phases(kind, algorithm):
    if kind == "all_to_all" and algorithm == "ring":
        algorithm = "direct"
    P, S = 4, 4 * 2 * 64  # 4 ranks x 2 workgroups x 64-byte chunks
    b = ProfileBuilder(gpus=5, workgroups=4)
    for g in range(5):
        b.program(gpu=g, wg=1).compute(ns=10)
    b.collective(kind, S, algorithm, workgroups=[1, 3], group=[4, 0, 2, 1])
    b.collective(kind, S, algorithm, workgroups=[1, 3], group=[4, 0, 2, 1])  # fresh flags: no collision
    for g in range(5):
        b.program_at(g, 1).compute(ns=20)
    prof = b.build()
    per_call = _bytes_per_call(prof)
    assert set(per_call) == {"c1", "c2"}
    for counts in per_call.values():
        assert dict(counts) == {g: FORMULA[kind](P, S) for g in (4, 0, 2, 1)}
    ops = prof.program(0, 1)
    assert (ops[0].kind, ops[0]["ns"]) == ("compute", 10) and (ops[-1].kind, ops[-1]["ns"]) == ("compute", 20)
    assert prof.program(3, 1) == prof.program(3, 1)[:1] + prof.program(3, 1)[1:] and len(prof.program(3, 1)) == 2
    assert all(op["mode"] == "syncmon" for _, ops in prof.programs for op in ops if op.kind == "wait")


def test_broadcast_barrier_send_bytes():
    P, S = 3, 96
    b = ProfileBuilder(gpus=P, workgroups=1)
    b.collective("broadcast", S, "ring", root=1).collective("barrier", 0).collective("send", S, group=[2, 0])
    b.collective("broadcast", S, "direct", root=0)
    per_call = _bytes_per_call(b.build())
    assert dict(per_call["c1"]) == {1: S, 2: S}  # ring from root 1: 1 -> 2 -> 0
    assert "c2" not in per_call  # a barrier only signals
    assert dict(per_call["c3"]) == {2: S}
    assert dict(per_call["c4"]) == {0: (P - 1) * S}


@pytest.mark.parametrize("P", [2, 4])
def test_kineto_gloo_bytes_and_counts(P):
    prof, report = import_kineto(_gloo(P), compute="host")
    assert prof.gpus == P
    # the fixture's step: all_reduce, all_gather_into_tensor, broadcast, barrier x3; all_to_all, send x1
    kinds = Counter(kind for _, kind, _, _ in report.calls)
    assert kinds == {"all_reduce": 3, "all_gather": 3, "broadcast": 3, "barrier": 3, "all_to_all": 1,
                     "send": P // 2}
    per_call = _bytes_per_call(prof)
    S = 1024 * 4  # 1024 float32 elements
    for prefix, kind, nbytes, _ in report.calls:
        got = dict(per_call.get(prefix.rstrip("."), {}))
        if kind in ("all_reduce", "all_to_all"):
            assert nbytes == S and got == {g: FORMULA[kind](P, S) for g in range(P)}
        elif kind == "all_gather":
            assert nbytes == P * S and got == {g: FORMULA[kind](P, P * S) for g in range(P)}
        elif kind == "broadcast":  # ring from rank 0: every rank but the last sends S
            assert got == {g: S for g in range(P - 1)}
        elif kind == "send":
            assert nbytes == S // 4 and sum(got.values()) == S // 4
    # every collective counted once although enqueue and backend ops are both in the trace
    assert report.merged["backend ops on worker threads merged into their enqueue op"] == P * 14


def test_kineto_nccl_trace_from_a_gpu_job():
    prof, report = import_kineto([str(SHARED / "nccl_data.json.gz")])
    # rank 0 of 2 only: 2679 kernels on compute stream 7; 15 all_reduce + 6 broadcast NCCL kernels
    assert report.imported["compute phases"] == 2679
    assert report.merged["NCCL/RCCL kernels merged into the collective that launched them"] == 21
    assert report.ignored["all_reduce with no traced peer (replayed as its traced time)"] == 15
    assert report.ignored["broadcast with no traced peer (replayed as its traced time)"] == 6
    assert prof.gpus == 1


def _ideal_replay(P, write_platform):
    """Import the P-rank gloo fixture and replay it on a fabric where communication costs ~nothing."""
    import eidola

    prof, report = import_kineto(_gloo(P), compute="host")
    # 0 ns fabric and memory latency and 1000 PB/s: a 4 KiB collective's transfers take < 1 ns.
    plat = eidola.load_platform(write_platform(f"eidola: 1\nname: ideal\ngpus:\n  count: {P}\n  workgroups: "
                                       f"{prof.workgroups}\n  memory: {{latency: 0ns, bandwidth: 1000PB/s}}\n"
                                       "fabric: {model: ideal, latency: 0ns}\n"))
    return prof, report, eidola.simulate(plat, prof, trace=True).ops_table()


def _free_communication_timeline(P):
    """The timeline a replay with free communication must follow, worked out from the traces alone.

    Each rank's thread is its traced items in order. A compute phase keeps its traced duration and
    the traced gap before it (host overhead, idle), so it starts (gap) after the previous item ended.
    A collective costs nothing, but it cannot end before its last member has arrived: every member
    leaves it at the latest arrival. Clocks: aligned on the end of the first collective (the
    all_reduce every rank takes part in), whose ends are one instant. Returns ({rank: [(start, end)]}
    of compute phases on the aligned traced clock, the same on the free-communication clock, the span).
    """
    from eidola.workload.importers.kineto import _load, _rank_lanes
    from eidola.workload.importers.timeline import Report

    lanes = {r: _rank_lanes(Path(f), _load(Path(f)), P, "host", Report())[0].items for r, f in enumerate(_gloo(P))}
    colls = {r: [it for it in items if it.coll] for r, items in lanes.items()}
    shift = {r: colls[0][0].end - colls[r][0].end for r in lanes}
    t0 = min(items[0].start + shift[r] for r, items in lanes.items())
    traced = {r: [(it.start + shift[r] - t0, it.end + shift[r] - t0) for it in items if not it.coll]
              for r, items in lanes.items()}
    # Walk all ranks together: the next collective of every rank is one call (the fixture runs the
    # same collectives in the same order everywhere), but a send/recv (pairs 0-1, 2-3) is a call of two.
    free = {r: [] for r in lanes}
    pos, clock, last = dict.fromkeys(lanes, 0), dict.fromkeys(lanes, 0), dict.fromkeys(lanes, t0)
    arrived = {}
    while any(pos[r] < len(lanes[r]) for r in lanes):
        for r, items in lanes.items():
            while pos[r] < len(items) and items[pos[r]].coll is None:
                it = items[pos[r]]
                start = clock[r] + max(it.start + shift[r] - last[r], 0)
                free[r].append((start, start + it.end - it.start))
                clock[r], last[r], pos[r] = start + it.end - it.start, it.end + shift[r], pos[r] + 1
            if pos[r] < len(items):
                arrived[r] = clock[r] + max(items[pos[r]].start + shift[r] - last[r], 0)
        members = [r for r in lanes if r in arrived]
        at_send = [r for r in members if lanes[r][pos[r]].coll.kind == "send"]
        if at_send:  # a send/recv pair (rank r and r ^ 1) is a call of its own
            members = [at_send[0], at_send[0] ^ 1]
            assert members[1] in at_send
        leave = max(arrived[r] for r in members)
        for r in members:
            clock[r], last[r] = leave, lanes[r][pos[r]].end + shift[r]
            pos[r] += 1
            del arrived[r]
    span = max(e for ph in traced.values() for _, e in ph)
    return traced, free, span


@pytest.mark.parametrize("P", [2, 4])
def test_ideal_fabric_replays_the_traced_timeline(P, write_platform):
    prof, report, ops = _ideal_replay(P, write_platform)
    traced, free, span = _free_communication_timeline(P)
    sim = {}
    for g, w, k, _, _, kind in report.phases:
        row = ops[(ops["gpu"] == g) & (ops["wg"] == w) & (ops["op"] == k)]
        sim.setdefault(g, []).append((float(row["begin_ns"][0]), float(row["end_ns"][0])))
    for r in range(P):
        assert len(sim[r]) == len(traced[r]) == len(free[r])
        # Phase by phase, the replay follows the free-communication timeline (within 1% of the span).
        for (b, e), (fb, fe) in zip(sim[r], free[r]):
            assert abs(b - fb) <= 0.01 * span and abs(e - fe) <= 0.01 * span
            assert e - b == pytest.approx(fe - fb, abs=1)  # each phase keeps its traced duration exactly
        # ... and so the traced timeline: the fixture's compute dominates, so the time the collectives
        # themselves took in the trace (all that a free fabric removes) stays under 1% of the span.
        worst = max(abs(b - tb) for (b, _), (tb, _) in zip(sim[r], traced[r]))
        assert worst <= 0.01 * span, f"rank {r}: a phase starts {worst / 1e6:.1f} ms off the trace"


def test_sampled_128_rank_traces_each_alone(write_platform):
    """One traced rank of a 128-rank job: no collective has a traced peer, so each is replayed as a
    compute phase of its traced time. Their traced times are those of the NCCL kernels they launched."""
    import eidola

    raw = json.loads(gzip.decompress((SHARED / "sampled_rank-0.json.gz").read_bytes()))
    kernels = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"]
    ns = lambda us: int(Decimal(str(us)) * 1000)  # noqa: E731  (exact: epoch us * 1000 exceed a double)
    t0 = min(ns(e["ts"]) for e in kernels)
    nccl = sorted((ns(e["ts"]) - t0, ns(e["ts"]) + ns(e["dur"]) - t0)
                  for e in kernels if e["name"].startswith("ncclKernel"))
    prof, report = import_kineto([str(SHARED / "sampled_rank-0.json.gz")])
    assert prof.gpus == 1 and len(nccl) == 10
    assert "1 of 128 ranks traced: collective groups are cut to the traced ranks" in report.assumed
    assert {k: n for k, n in report.ignored.items() if "no traced peer" in k} == {
        "all_gather with no traced peer (replayed as its traced time)": 2,
        "all_reduce with no traced peer (replayed as its traced time)": 4,
        "all_to_all with no traced peer (replayed as its traced time)": 4}
    plat = eidola.load_platform(write_platform(f"eidola: 1\nname: one\ngpus:\n  count: 1\n  workgroups: {prof.workgroups}\n"
                                       "fabric: {model: ideal, latency: 0ns}\n"))
    ops = eidola.simulate(plat, prof, trace=True).ops_table()
    sim = sorted((float(ops[(ops["gpu"] == g) & (ops["wg"] == w) & (ops["op"] == k)]["begin_ns"][0]),
                  float(ops[(ops["gpu"] == g) & (ops["wg"] == w) & (ops["op"] == k)]["end_ns"][0]))
                 for g, w, k, _, _, kind in report.phases if kind != "compute")
    assert [x for b_e in sim for x in b_e] == pytest.approx([x for b_e in nccl for x in b_e], abs=1)
    _, report1 = import_kineto([str(SHARED / "sampled_rank-1.json.gz")])
    assert report1.ignored["all_reduce with no traced peer (replayed as its traced time)"] == 4


def test_sampled_128_rank_traces_do_not_pair(cli, tmp_path):
    """Ranks 0 and 1 were sampled over different steps: their second all_reduce differs in size
    (Input Dims x 4 bytes of float: 26955536 x 4 on rank 0, 26258430 x 4 on rank 1)."""
    files = [SHARED / f"sampled_rank-{r}.json.gz" for r in (0, 1)]
    r = cli("import", "kineto", *files, "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cannot be replayed together: all_reduce #1 of ranks [0, 1]" in r.stderr
    assert f"{26955536 * 4} B on rank 0 ({files[0]})" in r.stderr and f"{26258430 * 4} B on rank 1 ({files[1]})" in r.stderr


def test_cli_import_then_run_then_compare(cli, tmp_path, write_platform):
    out = tmp_path / "p.yaml"
    r = cli("import", "kineto", *_gloo(2), "--compute", "host", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "imported" in r.stdout and (tmp_path / "p.import.txt").exists()
    plat = write_platform(gpus=2, workgroups=1, latency="0ns", mem_latency="0ns")
    r = cli("run", plat, "--profile", out, "--trace", "--out", tmp_path / "run")
    assert r.returncode == 0, r.stderr
    r = cli("compare", tmp_path / "run", *_gloo(2), "--plots")
    assert r.returncode == 0, r.stderr
    assert "all_reduce" in r.stdout and (tmp_path / "run" / "compare.png").exists()


def test_crossing_groups_name_where_the_ranks_diverge():
    """Three ranks whose pairwise collectives wait on each other in a cycle: rank 0 does X (ranks 0, 1)
    then Y (0, 2), rank 1 does Z (1, 2) then X, rank 2 does Y then Z. No order fits; the first pair
    of ranks whose time-ordered kinds differ is ranks 0 and 1 at collective #0 (all_reduce vs broadcast)."""
    from eidola.workload.importers.timeline import Coll, Item, Lane, Report, build_profile

    def lane(*colls):
        return [Lane("t", [Item(10 * i, 10 * i + 5, Coll(kind, 64, group, name)) for i, (kind, group, name)
                           in enumerate(colls)])]

    X, Y, Z = ("all_reduce", (0, 1), "X"), ("all_gather", (0, 2), "Y"), ("broadcast", (1, 2), "Z")
    lanes = {0: lane(X, Y), 1: lane(Z, X), 2: lane(Y, Z)}
    with pytest.raises(ProfileError) as e:
        build_profile("x", lanes, 1, "ring", "syncmon", Report(), {0: "a.json", 1: "b.json", 2: "c.json"})
    assert ("a.json, b.json, c.json: cannot be replayed together: collective #0 in time order is all_reduce "
            "(X, 64 B) on rank 0 (a.json) but broadcast (Z, 64 B) on rank 1 (b.json), so no order") in str(e.value)


def test_bad_traces_exit_2(cli, tmp_path):
    text = gzip.decompress(Path(_gloo(2)[0]).read_bytes()).decode()
    (tmp_path / "cut.json").write_text(text[: len(text) // 2])
    r = cli("import", "kineto", tmp_path / "cut.json", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "cut.json: not a Kineto trace" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "none.json").write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                                        '"pid": 1, "tid": 1, "ts": 0, "dur": 5}]}')
    r = cli("import", "kineto", tmp_path / "none.json", "--compute", "host", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "no collectives found" in r.stderr
    r = cli("import", "kineto", _gloo(2)[0], _gloo(4)[1], "--compute", "host", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "mismatched ranks" in r.stderr
    r = cli("import", "kineto", *_gloo(2), "-o", tmp_path / "x.yaml")  # a CPU trace without --compute host
    assert r.returncode == 2 and "--compute host" in r.stderr
    r = cli("import", "kineto", _gloo(2)[0], _gloo(2)[0], "--compute", "host", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "rank 0 appears in more than one trace" in r.stderr and "rank-0.json.gz" in r.stderr
    (tmp_path / "empty.json").write_text("")
    r = cli("import", "kineto", tmp_path / "empty.json", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "empty.json: the file is empty" in r.stderr and "Traceback" not in r.stderr
    # gloo's ops record their tensor's dtype ('float'): an unknown spelling cannot be sized
    (tmp_path / "dtype.json").write_text(text.replace('"Input type":["float"]', '"Input type":["complex32"]'))
    r = cli("import", "kineto", tmp_path / "dtype.json", "--compute", "host", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "dtype.json: gloo:all_reduce" in r.stderr and "unknown dtype 'complex32'" in r.stderr
    (tmp_path / "bad.et").write_bytes(b"\xff\xff\xff\xff\xff")
    r = cli("import", "chakra", tmp_path / "bad.et", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "bad.et" in r.stderr and "Traceback" not in r.stderr
