"""``eidola compare`` on a hand-made run: which simulated span a traced rank is compared with, the warning
when the traced communicator is not the simulated one, and outputs that are overwritten as run's are.

The run folder is written here: an op table (ops.csv, as ``eidola run --trace`` writes it) of one ring
broadcast from GPU 0 over 4 GPUs with one workgroup each, after a compute phase that ends at a
different time on each GPU (replicas drift apart in a long run). Every GPU's span is derived by
hand from the rows: from the end of its compute (the stream is free) to the end of its last op of
the call (the kernel boundary after it is not part of the call). The traces are small CPU-only
Kineto traces (one broadcast of 3 us) written here too.
"""

import csv
import json

import pytest

from eidola.report.compare import Call, compare_calls, group_warning

# (gpu, compute end, the call's ops as (begin, end, kind, peer)): GPU 0 sends at once; each other GPU
# waits for its upstream's signal, then forwards (GPU 3, the last, only receives).
CHAIN = [
    (0, 1000, [(1000, 1000, "write", 1), (1000, 1400, "signal", 1)]),
    (1, 1200, [(1200, 1450, "wait", -1), (1450, 1450, "write", 2), (1450, 1900, "signal", 2)]),
    (2, 900, [(900, 1950, "wait", -1), (1950, 1950, "write", 3), (1950, 2400, "signal", 3)]),
    (3, 1100, [(1100, 2450, "wait", -1)]),
]
#: by hand: last end of the call's ops - compute end
SPAN_NS = {0: 1400 - 1000, 1: 1900 - 1200, 2: 2400 - 900, 3: 2450 - 1100}
TRACED_US = 3.0  # the broadcast's duration in the traces below


def _run_dir(tmp_path, name="run", placement=None):
    """A run folder holding CHAIN as its op table (and a summary, as compare reads one); with `placement`, rank r's
    rows on GPU placement[r] of 16, as `eidola run --place` writes them (peers too)."""
    d = tmp_path / name
    d.mkdir()
    at = placement or list(range(4))
    (d / "summary.json").write_text(json.dumps({"profile": "chain", "gpus": 16 if placement else 4,
                                                **({"placement": placement} if placement else {})}))
    rows = []
    for rank, free, ops in CHAIN:
        g = at[rank]
        ops = [(b, e, kind, at[peer] if peer >= 0 else peer) for b, e, kind, peer in ops]
        rows.append((g, 0, 0, 0, free, "compute", -1, "", ""))
        for i, (b, e, kind, peer) in enumerate(ops, start=1):
            flag = "" if kind == "write" else "c1.bc_w0"  # writes carry no flag: the call's next op names it
            rows.append((g, 0, i, b, e, kind, peer, flag, ""))
        end = ops[-1][1]
        rows.append((g, 0, len(ops) + 1, end, end + 100, "signal", g, "kernel_end.lane0", ""))
        rows.append((g, 0, len(ops) + 2, end + 100, end + 200, "wait", -1, "kernel_end.lane0", ""))
    with open(d / "ops.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(("gpu", "wg", "op", "begin_ns", "end_ns", "kind", "peer", "flag", "detail"))
        w.writerows(rows)
    return d


def _trace(tmp_path, rank, world, group=None, dur=TRACED_US):
    """One rank's CPU-only Kineto trace: a compute op, then one 4 KiB broadcast of `dur` us over `group`."""
    group = list(range(world)) if group is None else group
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 50, "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "c10d::broadcast_", "pid": 1, "tid": 1, "ts": 60, "dur": dur,
         "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 60.5, "dur": 1,
         "args": {"In msg nelems": 1024, "dtype": "Float", "Collective name": "broadcast",
                  "Process Group Ranks": str(group)}},
    ]
    path = tmp_path / f"rank-{rank}-of-{world}.json"
    path.write_text(json.dumps({"distributedInfo": {"rank": rank, "world_size": world}, "traceEvents": events}))
    return path


@pytest.mark.parametrize("rank", [0, 2])
def test_ranks_compare_the_replica_in_the_traced_rank_place(tmp_path, rank):
    """--ranks 4 from rank 0 or rank 2 of a 4-rank job: the traced rank's kernel time against the span of
    the GPU in its place (GPU 0, the root, or GPU 2, the third in the chain), not the replicas' mean."""
    [c] = compare_calls(_run_dir(tmp_path), [str(_trace(tmp_path, rank, 4))], ranks=4)
    assert (c.call, c.kind, c.nbytes) == ("c1", "broadcast", 1024 * 4)
    assert c.traced_us == pytest.approx(TRACED_US)
    assert c.simulated_us == pytest.approx(SPAN_NS[rank] / 1000)  # 0.4 us on GPU 0, 1.5 us on GPU 2
    assert c.simulated_us != pytest.approx(sum(SPAN_NS.values()) / 4 / 1000)  # the mean, 0.9875 us
    assert c.gpus == (rank,) and (c.traced_ranks, c.simulated_ranks) == (4, 4)


def test_a_subgroup_rank_stands_at_its_place_in_the_group(tmp_path):
    """Rank 6 of an 8-rank job, in a communicator of ranks 4-7: third in its group, so GPU 2 of 4."""
    [c] = compare_calls(_run_dir(tmp_path), [str(_trace(tmp_path, 6, 8, group=[4, 5, 6, 7]))], ranks=4)
    assert c.gpus == (2,) and c.simulated_us == pytest.approx(SPAN_NS[2] / 1000)
    assert (c.traced_ranks, c.simulated_ranks) == (4, 4)


def test_every_traced_rank_is_compared_with_its_own_gpu(tmp_path):
    """Four ranks traced (no --ranks), each 1 us longer than the last: the means of the same four ranks."""
    traces = [str(_trace(tmp_path, r, 4, dur=TRACED_US + r)) for r in range(4)]
    [c] = compare_calls(_run_dir(tmp_path), traces)
    assert c.gpus == (0, 1, 2, 3)
    assert c.traced_us == pytest.approx(TRACED_US + 1.5)  # (3 + 4 + 5 + 6) / 4
    assert c.simulated_us == pytest.approx((400 + 700 + 1500 + 1350) / 4 / 1000)


def test_a_placed_run_is_compared_rank_by_rank(tmp_path):
    """The same run with its ranks on GPUs 0, 8, 1 and 9 of two nodes (--place spread): summary.json's placement maps
    them back, so each rank is compared with its own span, as unplaced."""
    traces = [str(_trace(tmp_path, r, 4, dur=TRACED_US + r)) for r in range(4)]
    [c] = compare_calls(_run_dir(tmp_path, placement=[0, 8, 1, 9]), traces)
    assert c.gpus == (0, 1, 2, 3)
    assert c.simulated_us == pytest.approx((400 + 700 + 1500 + 1350) / 4 / 1000)
    [one] = compare_calls(_run_dir(tmp_path, "one", placement=[0, 8, 1, 9]), [str(_trace(tmp_path, 2, 4))], ranks=4)
    assert one.gpus == (2,) and one.simulated_us == pytest.approx(SPAN_NS[2] / 1000)


def test_cli_warns_when_the_traced_communicator_is_bigger(cli, tmp_path):
    """Rank 0 of a 16-rank job simulated as 4 ranks: one warning line naming both sizes, and the table."""
    big = _trace(tmp_path, 0, 16)
    r = cli("compare", _run_dir(tmp_path), big, "--ranks", "4")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: ") and str(big) in lines[0], r.stderr
    assert "communicator had 16 ranks and the simulation 4" in lines[0] and "not comparable" in lines[0]
    assert "broadcast" in r.stdout and "Traceback" not in r.stderr
    r = cli("compare", tmp_path / "run", _trace(tmp_path, 0, 4), "--ranks", "4")  # the same size: quiet
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_group_warning_counts_the_calls_that_differ():
    calls = [Call("c1", "all_gather", 8, 1.0, 1.0, 128, 8), Call("c2", "all_reduce", 8, 1.0, 1.0, 8, 8),
             Call("c3", "all_reduce", 8, 1.0, 1.0, 2, 8)]
    text = group_warning(calls, "t.json")
    assert text.count("\n") == 1 and text.startswith("warning: t.json: ")
    assert "128 ranks where the simulation had 8 (1 calls)" in text and "2 ranks where the simulation had 8" in text
    assert "in 2 of 3 calls (c1, c3)" in text and "--ranks 128" in text
    assert group_warning(calls[1:2]) == ""


def test_cli_compare_runs_again_and_overwrites_as_run_does(cli, tmp_path):
    """The table needs no --force: a second compare prints it again; --plots and --csv overwrite their files
    (as eidola run overwrites its folder), and an input is never written over."""
    run, trace = _run_dir(tmp_path), _trace(tmp_path, 0, 4)
    first = cli("compare", run, trace, "--ranks", "4")
    second = cli("compare", run, trace, "--ranks", "4")
    assert first.returncode == second.returncode == 0, (first.stderr, second.stderr)
    assert first.stdout == second.stdout and "wrote" not in first.stdout
    assert not (run / "compare.png").exists()  # figures only with --plots
    out = tmp_path / "c.csv"
    out.write_text("an earlier file\n")
    for _ in range(2):
        r = cli("compare", run, trace, "--ranks", "4", "--plots", "--csv", out)
        assert r.returncode == 0, r.stderr
        assert (run / "compare.png").stat().st_size > 0 and (run / "compare.svg").stat().st_size > 0
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert [(r["call"], float(r["traced_us"]), float(r["simulated_us"])) for r in rows] == [("c1", 3.0, 0.4)]
    assert cli("compare", run, trace, "--ranks", "4", "--force").returncode == 0  # older scripts keep working
    before = (run / "ops.csv").read_bytes()
    r = cli("compare", run, trace, "--ranks", "4", "--csv", run / "ops.csv")
    assert r.returncode == 2 and "ops.csv: is an input of the comparison" in r.stderr and "Traceback" not in r.stderr
    assert (run / "ops.csv").read_bytes() == before
    r = cli("compare", run, trace, "--ranks", "4", "--csv", tmp_path)
    assert r.returncode == 2 and "is not a regular file" in r.stderr


def test_a_chakra_et_is_refused_as_a_chakra_et(cli, tmp_path):
    # An ET has no measured times; the Kineto reader called it invalid JSON (a user trial, 2026-12-07).
    et = tmp_path / "step.0.et"
    et.write_bytes(b"\x08\x01")
    r = cli("compare", _run_dir(tmp_path), et)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{et}: a Chakra ET; eidola compare takes Kineto traces" in r.stderr, r.stderr
