"""One traced rank of a real NCCL job replayed as N symmetric ranks (``--ranks``), and ``eidola compare``.

Sizes are derived here from the trace's own fields (record_param_comms: In msg nelems x the dtype's
size, Float 4 B, Long 8 B; Input Dims x Input type for the sampled traces), not from the importer.
Bytes per rank of a ring collective over P ranks: all_reduce 2(P-1)/P S, broadcast S from every
rank but the last. A signal is an 8-byte atomic on the fabric.
"""

import csv
import gzip
import json
from collections import Counter

import pytest
from conftest import REPO
from test_import import SHARED, _bytes_per_call

from eidola.workload.importers.kineto import import_kineto

NCCL = SHARED / "nccl_data.json.gz"
TRACES = [NCCL, SHARED / "sampled_rank-0.json.gz", SHARED / "sampled_rank-1.json.gz"]
MI300X = REPO / "platforms" / "mi300x-8gpu.yaml"


def _nccl_sizes_by_hand():
    """[(kind, bytes)] of nccl_data's collectives from its record_param_comms events, in time order."""
    elt = {"Float": 4, "Long": 8}
    kind = {"allreduce": "all_reduce", "broadcast": "broadcast"}
    raw = json.loads(gzip.decompress(NCCL.read_bytes()))
    rows = sorted((e["ts"], kind[e["args"]["Collective name"]], e["args"]["In msg nelems"] * elt[e["args"]["dtype"]])
                  for e in raw["traceEvents"] if e.get("name") == "record_param_comms"
                  and e["args"]["Collective name"] != "wait")
    return [(k, n) for _, k, n in rows]


def test_ranks_sizes_come_from_record_param_comms():
    by_hand = _nccl_sizes_by_hand()
    assert len(by_hand) == 21 and ("broadcast", 53 * 8) in by_hand and ("all_reduce", 2049000 * 4) in by_hand
    P = 4
    prof, report = import_kineto([str(NCCL)], ranks=P)
    assert prof.gpus == P and report.imported["ranks"] == P
    assert any(a.startswith(f"SPMD (--ranks {P}): rank 0 of 2") for a in report.assumed)
    assert Counter((kind, nbytes) for _, kind, nbytes, _ in report.calls) == Counter(by_hand)
    per_call = _bytes_per_call(prof)
    for prefix, kind, nbytes, traced in report.calls:
        assert sorted(traced) == list(range(P))  # every collective spans the P replicas
        got = dict(per_call[prefix.rstrip(".")])
        if kind == "all_reduce":
            assert got == {g: 2 * (P - 1) * nbytes // P for g in range(P)}
        else:  # ring broadcast from rank 0: 0 -> 1 -> 2 -> 3
            assert got == {g: nbytes for g in range(P - 1)}


def test_without_ranks_nothing_is_simulated():
    _, report = import_kineto([str(NCCL)])
    assert report.calls == []
    assert report.ignored["all_reduce with no traced peer (replayed as its traced time)"] == 15


def _platform(write_platform, bandwidth):
    return write_platform(
        "eidola: 1\nname: two\ngpus:\n  count: 2\n  workgroups: 4\n  max_outstanding: 2048\n  max_payload: 256B\n"
        "  train: 64\n  memory: {latency: 300ns, bandwidth: 5.3TB/s}\nfabric:\n  model: packet\n"
        f"  topology: fully_connected\n  link: {{bandwidth: {bandwidth}, latency: 250ns, header: 85B, ack: 16B}}\n"
        "  switch: {latency: 100ns, buffer: 128}\n", name=f"p{bandwidth.replace('/', '')}.yaml")


def test_ranks_move_bytes_and_time_follows_the_link_rate(write_platform):
    """nccl_data as 2 ranks: every byte of its collectives crosses the one link between them.

    Bytes sent by GPU g: its collectives' writes (sum of S for the all_reduces, plus the broadcasts
    from rank 0) and 8 B per signal (the peer's atomics received, less the peer's own kernel-boundary
    atomics, one per collective, and of its stream flags). Each collective of the collectives' stream
    (lane 0, workgroup 0) takes longer on slower links by the bytes it sends over each link direction, at
    (256 + 85 + 16) / 256 wire bytes per payload byte (header, and the reverse direction's
    acknowledgements sharing the link): dT = S x 357/256 x (1/B2 - 1/B1) summed, which bounds how far the
    stream's end moves."""
    import eidola

    by_hand = _nccl_sizes_by_hand()
    S_ar = sum(n for k, n in by_hand if k == "all_reduce")
    S_bc = sum(n for k, n in by_hand if k == "broadcast")
    prof, _ = import_kineto([str(NCCL)], ranks=2)
    runs = {}
    for bw in (64e9, 4e9):
        res = eidola.simulate(eidola.load_platform(_platform(write_platform, f"{bw / 1e9:g}GB/s")), prof)
        g = res.gpus
        # Each collective ends with a kernel boundary: one local atomic per GPU (its own flag), and each item
        # another stream waits for (a collective after the compute kernel it waits for, or compute after a
        # collective) with one more on its stream's flag: the GPU's memory counts them but no link carries them.
        local = len(by_hand) + sum(1 for (gpu, _), ops in prof.programs if gpu == 0 for op in ops
                                   if op.kind == "signal" and str(op.get("flag")).startswith("stream_done"))
        assert int(g["bytes_sent"][0]) == S_ar + S_bc + 8 * (int(g["atomics"][1]) - local)
        assert int(g["bytes_sent"][1]) == S_ar + 8 * (int(g["atomics"][0]) - local)
        wg = res.workgroups
        comm = float(wg[wg["wg"] == 0]["finish_ns"].max())  # the collectives' stream, on the GPU ending last
        compute = float(wg[wg["wg"] == 1]["finish_ns"].max())  # the compute stream, on the GPU ending last
        runs[bw] = (comm, compute, res.kernel_time_ns)
    (c64, k64, t64), (c4, k4, t4) = runs[64e9], runs[4e9]
    expected = (S_ar + S_bc) * 357 / 256 * (1 / 4e9 - 1 / 64e9) * 1e9
    # The replay is gaps, durations and waits (a maximum): a stream's end moves by at most what its collectives
    # together take longer, and by exactly that only if it never waits for the compute stream. Since the
    # collectives' stream waits for the compute kernels before each collective, as ProcessGroupNCCL made it
    # (test_import_stream_waits), a collective that ends early at 64 GB/s waits for the traced compute, and the
    # stream's end moves by less (measured 63.6 of 100.4 ms at 4 GB/s, 2026-12-07). At 4 GB/s it still takes at
    # least its collectives' wire time end to end.
    assert 0 < c4 - c64 <= expected * 1.02
    assert c4 >= (S_ar + S_bc) * 357 / 256 / 4e9 * 1e9
    # The compute stream waits where the trace's compute stream waited for a collective (test_import_stream_waits),
    # so it ends later on slower links; before those waits it ended at the same instant on any fabric.
    assert k4 > k64
    assert t64 == max(c64, k64) and t4 == max(c4, k4)
    assert t4 > t64  # at 4 GB/s the collectives' stream ends last: the kernel time follows the fabric


def _cli_compare(cli, tmp_path, trace, W, tag):
    out = tmp_path / f"{tag}.yaml"
    r = cli("import", "kineto", trace, "--ranks", "2", "--workgroups", str(W), "-o", out)
    assert r.returncode == 0, r.stderr
    # The link latency this test's 10% bound was set at (the platform's is now 174 ns, from RCCL's per-hop
    # constant; there the smallest broadcast, 212 KB, differs 12% between 1 and 8 workgroups).
    r = cli("run", MI300X, "--profile", out, "--set", "gpus.train=64", "--set", "fabric.link.latency=250ns",
            "--trace", "--out", tmp_path / tag)
    assert r.returncode == 0, r.stderr
    r = cli("compare", tmp_path / tag, trace, "--ranks", "2", "--csv", tmp_path / f"{tag}.csv")
    assert r.returncode == 0, r.stderr
    with open(tmp_path / f"{tag}.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and list(rows[0]) == ["call", "kind", "bytes", "traced_us", "simulated_us"]
    return rows


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name.split(".")[0])
def test_eight_workgroups_per_stream_time_collectives_as_one(cli, tmp_path, trace):
    """Each collective ends with a kernel boundary on its stream, so the workgroups of a GPU start the
    next collective together: per collective and GPU, 8 workgroups take within 12% of what 1 takes
    (the 212 KB broadcast differs most: 10.7% on its root, 9.1% on the other GPU)."""
    from eidola.report.compare import simulated_calls

    one = _cli_compare(cli, tmp_path, trace, 1, "w1")
    eight = _cli_compare(cli, tmp_path, trace, 8, "w8")
    assert [(r["call"], r["kind"]) for r in one] == [(r["call"], r["kind"]) for r in eight]
    assert all(float(r["simulated_us"]) > 0 for r in one)
    # Every GPU, not only the traced rank's that compare reports: the workgroups are in step on each.
    spans1, spans8 = simulated_calls(tmp_path / "w1"), simulated_calls(tmp_path / "w8")
    assert {p: set(g) for p, g in spans1.items()} == {p: set(g) for p, g in spans8.items()}
    for call, per in spans1.items():
        for g, ns in per.items():
            assert spans8[call][g] == pytest.approx(ns, rel=0.12), (call, g, ns, spans8[call][g])


def test_compare_refuses_what_it_cannot_compare(cli, tmp_path, write_platform):
    """Exit 2 with the reason: a trace with nothing simulated, traces of another run, an output that is not a file."""
    from test_import import _gloo

    out = tmp_path / "p.yaml"
    assert cli("import", "kineto", *_gloo(2), "--compute", "host", "-o", out).returncode == 0
    plat = write_platform(gpus=2, workgroups=1, latency="0ns", mem_latency="0ns")
    assert cli("run", plat, "--profile", out, "--trace", "--out", tmp_path / "run").returncode == 0
    r = cli("compare", tmp_path / "run", NCCL)  # one rank, no --ranks: every collective replays as traced
    assert r.returncode == 2 and "nothing to compare" in r.stderr and "--ranks" in r.stderr
    r = cli("compare", tmp_path / "run", NCCL, "--ranks", "2", "--plots")  # simulated calls, but not this run's
    assert r.returncode == 2 and "do not match the run" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "run" / "compare.png").exists()
    r = cli("compare", tmp_path / "run", *_gloo(2), "--csv", tmp_path / "c.csv")
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "c.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 14 and {r["kind"] for r in rows} >= {"all_reduce", "broadcast", "send"}
    r = cli("compare", tmp_path / "run", *_gloo(2), "--csv", tmp_path)  # not a file to write
    assert r.returncode == 2 and "is not a regular file" in r.stderr and "Traceback" not in r.stderr


def test_compare_plot_has_log_axes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from eidola.report.compare import Call, _plot

    captured = {}
    real = plt.subplots

    def spy(*a, **k):
        fig, ax = real(*a, **k)
        captured["ax"] = ax
        return fig, ax

    plt.subplots = spy
    try:
        _plot([Call("c1", "broadcast", 424, 7.9, 1.0), Call("c2", "all_reduce", 8196000, 3307.0, 180.0)], tmp_path)
    finally:
        plt.subplots = real
    ax = captured["ax"]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    lo, hi = ax.get_xlim()
    assert lo <= 1.0 and hi >= 3307.0  # four decades, every point inside
    assert (tmp_path / "compare.png").stat().st_size > 0


def test_sampled_all_gathers_scale_from_the_rank_input_not_the_job():
    # The sampled 128-rank job records no Process Group Ranks, so the group read is the default one of 128; but its
    # c10d::_allgather_base_ lists the gathered output (1,073,741,824 int8) and the rank's input (16,777,216), and
    # the backend op (nccl:_all_gather_base) the input alone: each rank gives 16 MiB, to a communicator of 64. As 16
    # symmetric ranks each all-gather gathers 16 x 16 MiB = 256 MiB (it was 1 GiB / 128 x 16 = 128 MiB).
    with gzip.open(SHARED / "sampled_rank-0.json.gz") as f:
        events = json.load(f)["traceEvents"]
    inputs = {e["args"]["Input Dims"][0][0] for e in events if e.get("name") == "nccl:_all_gather_base"}
    assert inputs == {16_777_216}
    _, report = import_kineto([str(SHARED / "sampled_rank-0.json.gz")], ranks=16)
    gathers = [nbytes for _, kind, nbytes, _ in report.calls if kind == "all_gather"]
    assert gathers and all(n == 16 * 16_777_216 for n in gathers)
    assert report.groups[next(p for p, kind, _, _ in report.calls if kind == "all_gather")][0] == 64
