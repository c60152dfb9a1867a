"""Tests of collectives inside programs and the Kineto / Chakra importers, against standard formulas.

Bytes per rank per collective (P ranks, S bytes): ring or direct all-reduce 2(P-1)/P · S,
all-gather, reduce-scatter and all-to-all (P-1)/P · S, ring broadcast S from every rank but the
last, send S. Fixtures: tests/data/ (made by tests/data/make_kineto_fixtures.py) and the real
NCCL traces in ../shared/data/kineto/.
"""

import gzip
import os
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from eidola.profile import ProfileBuilder, load_profile
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


def test_cli_import_then_run_replays_compute(cli, tmp_path, write_platform):
    out = tmp_path / "p.yaml"
    r = cli("import", "kineto", *_gloo(2), "--compute", "host", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "imported" in r.stdout and (tmp_path / "p.import.txt").exists()
    prof = load_profile(out)
    traced = sum(op["ns"] for _, ops in prof.programs for op in ops if op.kind == "compute")
    plat = write_platform(gpus=2, workgroups=1, latency="0ns", mem_latency="0ns")
    r = cli("run", plat, "--profile", out, "--trace", "--out", tmp_path / "run")
    assert r.returncode == 0, r.stderr
    import csv
    rows = list(csv.DictReader((tmp_path / "run" / "ops.csv").open()))
    simulated = sum(float(x["end_ns"]) - float(x["begin_ns"]) for x in rows if x["kind"] == "compute")
    assert abs(simulated - traced) <= 0.01 * traced
    r = cli("compare", tmp_path / "run", *_gloo(2))
    assert r.returncode == 0, r.stderr
    assert "all_reduce" in r.stdout and (tmp_path / "run" / "compare.png").exists()


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
    (tmp_path / "bad.et").write_bytes(b"\xff\xff\xff\xff\xff")
    r = cli("import", "chakra", tmp_path / "bad.et", "-o", tmp_path / "x.yaml")
    assert r.returncode == 2 and "bad.et" in r.stderr and "Traceback" not in r.stderr


def test_chakra_generator_ets_import(cli, tmp_path):
    d = DATA / "chakra" / "gloo4"
    ets = [d / f"ALL_REDUCE.{r}.et" for r in range(4)]
    r = cli("import", "chakra", *ets, "-o", tmp_path / "c.yaml")
    assert r.returncode == 0, r.stderr
    prof = load_profile(tmp_path / "c.yaml")
    per_call = _bytes_per_call(prof)
    assert dict(per_call["c1"]) == {g: FORMULA["all_reduce"](4, 65536) for g in range(4)}
    # the PyTorch -> Chakra path: chakra_converter's ETs of the gloo job import too
    r = cli("import", "chakra", *[d / f"pytorch.{k}.et.gz" for k in range(4)], "-o", tmp_path / "p.yaml")
    assert r.returncode == 0, r.stderr
