"""What people look at: the Perfetto trace, tables, figures and the terminal summary, checked
through their data (not their pixels)."""

import json

import numpy as np
import pytest

import eidola
from eidola.generators import gemv_allreduce, neighbor_exchange
from eidola.profile import ProfileBuilder
from eidola.report.plots import TimelineView, heatmap_figure, heatmap_matrix, link_time_figure, load_run, plot_run, timeline_figure
from eidola.report.trace import build_trace, write_trace


@pytest.fixture(scope="module")
def traced(request):
    root = request.config.rootpath
    plat = eidola.load_platform(root / "platforms" / "mi300x-8gpu.yaml")
    prof = gemv_allreduce(gpus=8, workgroups=2, vector_bytes=8 * 2 * 1024, mode="syncmon")
    return eidola.simulate(plat, prof, trace=True)


def test_trace_slices_match_the_runs_op_events(traced):
    trace = build_trace(traced)
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(traced.ops) == traced.profile.ops_count()
    by_key = {(e["pid"], e["tid"], e["args"]["op"]): e for e in slices}
    for r in traced.ops:
        e = by_key[(int(r["gpu"]), int(r["wg"]), int(r["op"]))]
        assert e["ts"] == pytest.approx(r["begin_ns"] / 1000, abs=1e-6)
        assert e["dur"] == pytest.approx((r["end_ns"] - r["begin_ns"]) / 1000, abs=1e-6)
    waits = [e for e in slices if e["cat"] == "wait"]
    assert waits and all(">=" in e["name"] and "(syncmon)" in e["name"] for e in waits)


def test_trace_has_the_fields_perfetto_requires(traced, tmp_path):
    path = write_trace(traced, tmp_path / "trace.json")
    data = json.loads(path.read_text())
    for e in data["traceEvents"]:
        assert {"ph", "pid", "name"} <= set(e)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float))
        if e["ph"] == "X":
            assert e["dur"] >= 0 and "tid" in e
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
        if e["ph"] in ("s", "f"):
            assert "id" in e and "tid" in e
    kinds = {e["ph"] for e in data["traceEvents"]}
    assert {"M", "X", "C", "s", "f"} <= kinds   # slices, counters (SyncMon, links) and signal->wait flows
    # Every flow starts at a signal slice and ends inside a wait slice of the flag's owner.
    starts = {e["id"]: e for e in data["traceEvents"] if e["ph"] == "s"}
    for f in (e for e in data["traceEvents"] if e["ph"] == "f"):
        assert starts[f["id"]]["pid"] != f["pid"] or starts[f["id"]]["tid"] != f["tid"]
    # And inside them as a viewer reads a slice, ts to ts + dur as written, not an ulp past its end: viewers that bind
    # a flow to its enclosing slice dropped 4 of the default run's 96 arrows (a user trial, 2026-12-07).
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    for e in (e for e in data["traceEvents"] if e["ph"] in ("s", "f")):
        cat = "signal" if e["ph"] == "s" else "wait"
        assert any(x["pid"] == e["pid"] and x["tid"] == e["tid"] and x["cat"] == cat
                   and x["ts"] <= e["ts"] <= x["ts"] + x["dur"] for x in slices), e


def test_heatmap_matrix_equals_the_link_table(traced):
    nodes, m = heatmap_matrix(traced.links)
    index = {n: i for i, n in enumerate(nodes)}
    assert m.sum() == pytest.approx(traced.links["utilization"].sum())
    for r in traced.links:
        assert m[index[int(r["src"])], index[int(r["dst"])]] == pytest.approx(r["utilization"])
    assert np.count_nonzero(m) == np.count_nonzero(traced.links["utilization"])


def test_tables_and_figures_from_a_saved_run(traced, tmp_path):
    traced.save(tmp_path)
    for name in ("summary.json", "gpus.csv", "workgroups.csv", "links.csv", "syncmon.csv", "ops.csv"):
        assert (tmp_path / name).exists(), name
    run = load_run(tmp_path)
    assert list(run.gpus["flag_reads"]) == list(traced.gpus["flag_reads"])
    nodes, m = heatmap_matrix(run.links)
    assert m.sum() == pytest.approx(traced.links["utilization"].sum())
    written = {p.name for p in plot_run(tmp_path, tmp_path)}
    for stem in ("timeline", "link_heatmap", "link_time", "reads", "latency"):
        assert {f"{stem}.png", f"{stem}.svg"} <= written
    syncmon = np.genfromtxt(tmp_path / "syncmon.csv", delimiter=",", names=True)
    assert list(syncmon["wakeups"]) == list(traced.gpus["syncmon_wakeups"])


def _blocking_write_then_signal(gpus: int, workgroups: int):
    """Every workgroup writes 4 KiB to the next GPU and waits for the acknowledgements (blocking), posts
    4 KiB more, then signals it: the signal is a release, so it waits for the posted write's
    acknowledgements. A write span and a signal span on every row, both of nonzero length."""
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="write-signal")
    b.flag("ready")
    b.buffer("data", nbytes=2 * 4096 * workgroups)
    for g in range(gpus):
        for w in range(workgroups):
            peer = (g + 1) % gpus
            b.program(gpu=g, wg=w).compute(ns=100).write(dst=peer, buffer="data", offset=4096 * w, nbytes=4096,
                                                         blocking=True) \
                .write(dst=peer, buffer="data", offset=4096 * (workgroups + w), nbytes=4096) \
                .signal(dst=peer, flag="ready").wait(flag="ready", cond=">=", value=workgroups)
    return b.build()


@pytest.fixture(scope="module")
def write_signal_run(request):
    root = request.config.rootpath
    plat = eidola.load_platform(root / "platforms" / "gemv-allreduce-4gpu.yaml", {"gpus.count": 2, "gpus.workgroups": 5})
    return eidola.simulate(plat, _blocking_write_then_signal(gpus=2, workgroups=5), trace=True)


def test_timeline_tells_writes_from_signals_and_says_it_samples(write_signal_run):
    fig = timeline_figure(write_signal_run, TimelineView(workgroups=(0, 3)))
    ax = fig.axes[0]
    # 5 workgroups, 2 drawn: 0 and 3 of each GPU.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["GPU 0 wg 0", "GPU 0 wg 3", "GPU 1 wg 0", "GPU 1 wg 3"]
    assert "2 of 5 workgroups per GPU shown" in fig._suptitle.get_text()
    bars: dict[str, list] = {}
    for patch in ax.patches:
        bars.setdefault(patch.get_gid(), []).append(patch)
    assert len(bars["signal"]) == 4                           # one per row drawn
    # The blocking write of each row lasts; a posted one only while it waits for max_outstanding.
    assert 4 <= len(bars["write"]) <= 8
    look = {k: {(tuple(p.get_facecolor()), p.get_hatch()) for p in v} for k, v in bars.items()}
    assert all(len(v) == 1 for v in look.values())            # a kind looks the same everywhere
    assert look["write"] != look["signal"] and look["write"] != look["compute"] and look["signal"] != look["wait"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["compute / local", "write", "signal (release)", "wait"]   # the kinds drawn, no others
    # Every workgroup drawn: no sampling note.
    full = timeline_figure(write_signal_run)
    assert len(full.axes[0].get_yticklabels()) == 10 and "shown" not in full._suptitle.get_text()


def test_heatmap_marks_a_node_to_itself_as_not_applicable(traced):
    fig = heatmap_figure(traced)
    ax = fig.axes[0]
    image = ax.get_images()[0].get_array()
    # 8 GPUs, fully connected: 56 links, and the 8 diagonal cells are not links at all.
    assert image.shape == (8, 8)
    assert np.array_equal(np.ma.getmaskarray(image), np.eye(8, dtype=bool))
    assert all(image[r["src"], r["dst"]] == pytest.approx(r["utilization"]) for r in traced.links)
    marks = [p for p in ax.patches if p.get_gid() == "not_applicable"]
    assert sorted(p.get_xy() for p in marks) == [(i - 0.5, i - 0.5) for i in range(8)]
    assert all(p.get_hatch() for p in marks)
    assert "n/a" in ax.get_legend().get_texts()[0].get_text()


def test_link_time_legend_names_every_line_drawn(repo):
    plat = eidola.load_platform(repo / "platforms" / "mi300x-8gpu.yaml", {"fabric.stats.bin": "500ns"})
    res = eidola.simulate(plat, gemv_allreduce(gpus=8, workgroups=2, vector_bytes=8 * 2 * 1024, mode="syncmon"))
    assert len(res.links) == 56                              # 8 x 7 point-to-point links
    fig = link_time_figure(res, lines=6)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == labels
    assert len(labels) == 7 and labels[-1] == "mean of the other 50 links"
    assert "6 busiest of 56 links" in ax.get_title()
    # The summary line is the mean utilisation of the 50 links not drawn, bin by bin (500 ns bins, 1 lane).
    drawn = {tuple(int(v) for v in label.removeprefix("link ").split("→")) for label in labels[:-1]}
    rest = [i for i, r in enumerate(res.links) if (int(r["src"]), int(r["dst"])) not in drawn]
    assert len(rest) == 50
    expected = np.zeros(int(res.link_bins["bin"].max()) + 1)
    for r in res.link_bins:
        if int(r["link"]) in rest:
            expected[int(r["bin"])] += r["busy_ns"] / (500.0 * int(res.links["lanes"][int(r["link"])])) / 50
    assert np.allclose(ax.get_lines()[-1].get_ydata(), expected) and expected.max() > 0
    # Room for every link: each one named, no summary.
    everything = link_time_figure(res, lines=56).axes[0]
    assert len(everything.get_legend().get_texts()) == 56 and "all 56 links" in everything.get_title()


def test_dataframes_when_pandas_is_installed(traced):
    pandas = pytest.importorskip("pandas")
    df = traced.dataframe("gpus")
    assert isinstance(df, pandas.DataFrame) and list(df["flag_reads"]) == list(traced.gpus["flag_reads"])


def test_a_1024_gpu_trace_stays_under_the_limit(repo, tmp_path):
    plat = eidola.load_platform(repo / "platforms" / "gemv-allreduce-4gpu.yaml",
                                {"gpus.count": 1024, "gpus.workgroups": 4})
    res = eidola.simulate(plat, neighbor_exchange(gpus=1024, nbytes=4 * 4 * 256, neighbors=4, workgroups=4),
                          trace=True)
    limit = 10_000
    path = write_trace(res, tmp_path / "trace.json", limit=limit)
    data = json.loads(path.read_text())
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(res.ops) > limit >= len(slices)
    note = data["metadata"]["sampling"]
    assert "1 workgroup in 4" in note and f"{len(slices)} are shown" in note
    assert {e["tid"] for e in data["traceEvents"] if e["ph"] == "X"} == {0}   # the workgroups it names
    flows = [e for e in data["traceEvents"] if e["ph"] in "sf"]
    assert len(flows) <= 2 * len(slices)          # an arrow (two events) per released wait at most
    counters = [e for e in data["traceEvents"] if e["ph"] == "C"]
    assert len(counters) <= limit                 # SyncMon occupancy, thinned to the limit too
    # Bounded: about 130 bytes a slice, 90 per flow or counter event, and the GPUs' and workgroups' names.
    assert path.stat().st_size < 130 * len(slices) + 90 * (len(flows) + len(counters)) + 2 * 1024 * 100


@pytest.mark.parametrize("limit", [200, 10])   # 10: fewer than one workgroup of every GPU, so GPUs are sampled too
def test_trace_limit_is_kept_whatever_the_workgroups(repo, tmp_path, limit):
    # The sampling raises its workgroup stride (then samples GPUs) until the limit
    # holds, and never names a workgroup that does not exist.
    plat = eidola.load_platform(repo / "platforms" / "gemv-allreduce-4gpu.yaml", {"gpus.workgroups": 8})
    res = eidola.simulate(plat, neighbor_exchange(gpus=4, nbytes=3 * 8 * 256, neighbors=3, workgroups=8),
                          trace=True)
    data = json.loads(write_trace(res, tmp_path / "t.json", limit=limit).read_text())
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert 0 < len(slices) <= limit
    named = {(e["pid"], e["tid"]) for e in data["traceEvents"] if e["name"] == "thread_name"}
    assert named == {(e["pid"], e["tid"]) for e in slices}
    if limit == 10:  # 4 GPUs x 7 ops of workgroup 0 are 28 slices: only GPU 0's 7 fit
        assert "on 1 GPU in 4" in data["metadata"]["sampling"] and len(slices) == 7


def test_terminal_summary_json(repo, cli, tmp_path):
    r = cli("run", repo / "platforms" / "mi300x-8gpu.yaml", "--json", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    for key in ("kernel_time_ns", "critical_gpu", "busiest_link", "flag_reads", "reads", "wall_s", "events_per_s"):
        assert key in s, key
    assert s["busiest_link"]["utilization"] > 0


def test_default_run_writes_trace_tables_and_figures(repo, cli, tmp_path):
    r = cli("run", repo / "platforms" / "gemv-allreduce-4gpu.yaml", "--trace", "--plots", "--out", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    for name in ("trace.json", "timeline.png", "reads.svg", "gpus.csv", "syncmon.csv"):
        assert (tmp_path / "o" / name).exists(), name
    r = cli("plot", tmp_path / "o")
    assert r.returncode == 0 and "figure files" in r.stdout
