"""What a new user hit (issue 24): a closed pipe, reports that said more than they measured, silence
on long runs, and paper cuts in units, profiles, the API and the command line. Each test checks
behaviour: exit codes, messages naming the file or option, values worked out by hand."""

import json
import subprocess
import sys

import numpy as np
import pytest

import eidola
from eidola.cli import FLOW_HINT_S, _on_packets, _progress, progress_line, time_left_s
from eidola.platform import units
from eidola.platform.plugin import parse_plugin
from eidola.profile import ProfileBuilder
from eidola.report.plots import TimelineView, latency_figure, link_time_figure, plot_run, timeline_figure
from eidola.report.trace import build_trace
from eidola.run.simulate import Progress

# ---------------------------------------------------------------- a closed pipe (item 6)


@pytest.mark.parametrize("args", [["describe"], ["describe", "EidolonGpu"], ["validate", "PLATFORM"],
                                  ["run", "PLATFORM", "--json", "--out", "out"]])
def test_a_reader_that_went_away_ends_the_command_quietly(repo, tmp_path, args):
    """`eidola ... | head` where head has already exited: as a Unix tool, stop with 128 + SIGPIPE
    (what a shell reports for a tool killed by SIGPIPE) and print nothing about it."""
    argv = [str(repo / "platforms/gemv-allreduce-4gpu.yaml") if a == "PLATFORM" else a for a in args]
    proc = subprocess.Popen([sys.executable, "-m", "eidola", *argv], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # before the child (still starting Python) writes a byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


# ---------------------------------------------------------------- reports (item 7)

def _transfers_profile():
    """GPU 0: a 256 B read from GPU 1 (one packet); a signal with no write before it; a 256 B posted
    write; a signal that releases that write, so it waits for the write's acknowledgement."""
    b = ProfileBuilder(gpus=2, workgroups=1, name="transfers")
    b.flag("done")
    b.buffer("data", nbytes=4096)
    b.program(0, 0).read(dst=1, buffer="data", offset=0, nbytes=256) \
        .signal(dst=1, flag="done").write(dst=1, buffer="data", offset=256, nbytes=256).signal(dst=1, flag="done")
    b.program(1, 0).wait(flag="done", cond=">=", value=2)
    return b.build()


@pytest.fixture(scope="module")
def transfers(request):
    plat = eidola.load_platform(request.config.rootpath / "platforms/gemv-allreduce-4gpu.yaml", {"gpus.count": 2})
    return eidola.simulate(plat, _transfers_profile(), trace=True)


def test_the_latency_figure_says_what_each_kind_of_slice_measures(transfers):
    # Ideal fabric 500 ns each way, memory 300 ns + 256 B at 5.3 TB/s.
    ops = transfers.ops_table()
    span = {int(r["op"]): float(r["end_ns"] - r["begin_ns"]) for r in ops if r["gpu"] == 0}
    assert span[0] == pytest.approx(2 * 500 + 300 + 256 / 5.3e3, abs=0.01)   # read: until its response
    assert span[1] == 0                                                       # signal, nothing to release: issue
    assert span[2] == 0                                                       # posted write: issued at once
    # The second signal releases the write: it waits for the write's acknowledgement (round trip + memory).
    assert span[3] == pytest.approx(2 * 500 + 300 + 256 / 5.3e3, abs=0.01)
    label = latency_figure(transfers).axes[0].get_xlabel()
    assert "a read until its response" in label and "posted write" in label and "last packet is issued" in label
    assert "signal from its release wait to its issue" in label and "last response" not in label


@pytest.fixture(scope="module")
def default_run(request):
    plat = eidola.load_platform(request.config.rootpath / "platforms/gemv-allreduce-4gpu.yaml")
    return eidola.simulate(plat, trace=True)


def test_the_timeline_draws_the_chosen_gpus_workgroups_and_window(default_run):
    view = TimelineView(gpus=(0, 3), workgroups=(1, 2), window_ns=(2000.0, 8000.0))
    ax = timeline_figure(default_run, view).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["GPU 0 wg 1", "GPU 0 wg 2", "GPU 3 wg 1", "GPU 3 wg 2"]
    assert ax.get_xlim() == pytest.approx((2.0, 8.0))
    bars = [p for p in ax.patches if p.get_gid()]
    assert bars and all(2.0 - 1e-9 <= p.get_x() and p.get_x() + p.get_width() <= 8.0 + 1e-9 for p in bars)
    # One bar per op of those rows that overlaps the window, cut at its edges.
    ops = default_run.ops_table()
    rows = np.isin(ops["gpu"], [0, 3]) & np.isin(ops["wg"], [1, 2])
    overlapping = rows & (np.minimum(ops["end_ns"], 8000) > np.maximum(ops["begin_ns"], 2000))
    assert len(bars) == int(overlapping.sum())
    # The default: 4 GPUs x 4 workgroups fit in 32 rows, so every workgroup is drawn and nothing is sampled.
    full = timeline_figure(default_run)
    assert len(full.axes[0].get_yticklabels()) == 16 and "shown" not in full._suptitle.get_text()


def test_eidola_plot_takes_the_timeline_options(cli, repo, tmp_path):
    out = tmp_path / "run"
    assert cli("run", repo / "platforms/gemv-allreduce-4gpu.yaml", "--trace", "--out", out).returncode == 0
    r = cli("plot", out, "--gpus", "0,3", "--workgroups", "0-1", "--window", "2us:8us")
    assert r.returncode == 0, r.stderr
    assert (out / "timeline.svg").exists() and "GPU 3 wg 1" in (out / "timeline.svg").read_text()
    assert "GPU 2 wg 0" not in (out / "timeline.svg").read_text()
    for args, needle in ((["--gpus", "0,9"], "--gpus '0,9': the run has GPUs 0-3"),
                         (["--workgroups", "3-1"], "--workgroups '3-1'"),
                         (["--window", "5:9"], "--window '5:9'"),
                         (["--window", "8us:2us"], "START < END"),
                         (["--window", "1ms:"], "starts after the run ended")):
        bad = cli("plot", out, *args)
        assert bad.returncode == 2 and needle in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_the_ideal_fabric_counts_bytes_per_pair_over_time(repo, tmp_path):
    """4 KiB posted at t=0 arrive at 500 ns (bin 0); 2 us of compute later, 1 KiB posted at 2 us
    arrives at 2.5 us (bin 2); bin 1 carries nothing."""
    b = ProfileBuilder(gpus=2, workgroups=1, name="two-bursts")
    b.buffer("data", nbytes=8192)
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=4096).compute(ns=2000) \
        .write(dst=1, buffer="data", offset=4096, nbytes=1024)
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml", {"gpus.count": 2})
    res = eidola.simulate(plat, b.build(), trace=True)
    assert [(int(r["link"]), int(r["bin"]), float(r["start_ns"]), int(r["bytes"])) for r in res.link_bins] == \
        [(0, 0, 0.0, 4096), (0, 2, 2000.0, 1024)]
    assert (int(res.links["src"][0]), int(res.links["dst"][0]), int(res.links["bytes"][0])) == (0, 1, 5120)
    # The trace's counter: 4096 from 0, back to 0 at 1 us, 1024 from 2 us, 0 at 3 us.
    counters = [(e["ts"], e["args"]["bytes"]) for e in build_trace(res)["traceEvents"]
                if e["ph"] == "C" and e["name"] == "pair 0->1"]
    assert counters == [(0.0, 4096), (1.0, 0), (2.0, 1024), (3.0, 0)]
    # The figure: GB/s per 1 us bin (bytes per ns).
    ax = link_time_figure(res).axes[0]
    assert ax.get_lines()[0].get_label() == "pair 0→1"
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx([4.096, 0.0, 1.024])
    assert "payload GB/s" in ax.get_ylabel()
    # What the README lists for a default run: a figure over time too, on the ideal fabric.
    assert {"link_time.png", "link_time.svg"} <= {p.name for p in plot_run(res, tmp_path)}


def test_every_gpu_has_a_syncmon_counter_from_the_start(default_run):
    # The default profile polls: no SyncMon arms, and the tracks say so (0) rather than being absent.
    counters = [e for e in build_trace(default_run)["traceEvents"] if e["ph"] == "C" and e["name"] == "SyncMon occupancy"]
    assert {e["pid"] for e in counters} == {0, 1, 2, 3}
    assert all(e["args"]["addresses"] == 0 for e in counters)
    assert {e["pid"] for e in counters if e["ts"] == 0} == {0, 1, 2, 3}


# ---------------------------------------------------------------- progress (item 8)

def test_progress_reports_how_far_a_long_run_has_got(repo):
    from eidola.generators import ring_allreduce

    plat = eidola.load_platform(repo / "platforms/switch-8gpu.yaml")
    seen: list[tuple[float, int, float]] = []
    ops: list[tuple[int, int] | None] = []
    ended: list[bool] = []
    # 8 MiB: about a second of simulation, since lanes add up (1 MiB ended before its first answer).
    profile = ring_allreduce(8, 8 << 20, workgroups=4)

    def report(*args) -> None:
        seen.append(args)
        ops.append(progress.ops)

    progress = Progress(report, after_s=0.0, every_s=0.02, done=lambda: ended.append(True))
    res = eidola.simulate(plat, profile, progress=progress)
    assert seen, "a run of this size answers at least one question"
    sims, events, walls = zip(*seen)
    assert list(sims) == sorted(sims) and list(events) == sorted(events) and list(walls) == sorted(walls)
    assert 0 <= events[-1] <= res.events, (seen, res.events)
    # Every report once the GPUs have their programs (none before: a part would overstate the share) counts
    # the profile's ops (its programs' lengths, counted here from the profile), and the ops done only grow,
    # up to that.
    total = sum(len(profile.program(*key)) for key in profile.program_keys)
    assert ops[-1] is not None and all(o[1] == total for o in ops if o is not None), (ops, total)
    done = [o[0] for o in ops if o is not None]
    assert done == sorted(done) and 0 <= done[-1] <= total, (done, total)
    # While events were still to come the run was still going: not past its last workgroup's end.
    # (A report taken once the run is over may see the kernel's clock past it, draining responses.)
    going = [sim for sim, n, _ in seen if n < res.events]
    assert all(0 <= sim <= res.kernel_time_ns for sim in going), (seen, res.kernel_time_ns)
    assert ended == [True]


def test_the_progress_line():
    assert progress_line("sw", 12_500.0, 3_410_000, 7.0) == \
        "sw: simulated 12.5 us, 3.41 Mevents, 7 s wall (487 kevents/s)"
    # A quarter of the ops in 7 s: three quarters to go at that pace, 21 s.
    assert progress_line("sw", 12_500.0, 3_410_000, 7.0, (250, 1000)) == \
        "sw: simulated 12.5 us, 3.41 Mevents, 7 s wall (487 kevents/s), 25% of the ops done, about 21 s left"
    # 3% in 70 s: 97 x 70 / 3 = 2263 s; a share under 10% keeps a decimal, and 99.9% is not "100%".
    assert progress_line("sw", 1e6, 10, 70.0, (3, 100)).endswith(", 3.0% of the ops done, about 37 min 43 s left")
    assert progress_line("sw", 1e6, 10, 3600.0, (999, 1000)).endswith(", 99% of the ops done, about 4 s left")
    assert progress_line("sw", 1e6, 10, 60.0, (1, 100)).endswith(", 1.0% of the ops done, about 1 h 39 min left")
    # Nothing done yet: no estimate; everything done: none needed.
    assert progress_line("sw", 1e6, 10, 7.0, (0, 100)).endswith(" (1.43 events/s), 0.0% of the ops done")
    assert progress_line("sw", 1e6, 10, 7.0, (100, 100)).endswith(" (1.43 events/s), 100% of the ops done")


def test_time_left_at_the_pace_so_far():
    assert time_left_s(10.0, (1, 5)) == 40.0  # a fifth in 10 s: four fifths in 40 s
    assert time_left_s(10.0, (0, 5)) is None and time_left_s(10.0, (5, 5)) is None and time_left_s(10.0, None) is None


def test_a_long_packet_run_says_once_that_flows_would_be_quicker(repo, capsys):
    # The report as the CLI makes it, fed by hand (no run needs to last for it): a hint when the run has
    # FLOW_HINT_S or more left on the packet fabric, once; none on other fabrics or with less left.
    packet = eidola.load_platform(repo / "platforms/switch-8gpu.yaml")
    flow = eidola.load_platform(repo / "platforms/switch-8gpu.yaml", overrides={"fabric.model": "flow"})
    assert _on_packets(packet) and not _on_packets(flow)
    progress = _progress("sw", asked=True, on_packets=True)
    capsys.readouterr()
    progress.ops = (1, 1000)  # 999 ops left at 1 s an op
    progress.report(1e3, 10, 1.0)
    progress.report(2e3, 20, 2.0)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3 and "--set fabric.model=flow" in lines[0] and "about 16 min 39 s left" in lines[0], lines
    assert all("fabric.model" not in line for line in lines[1:]), lines
    quick = _progress("sw", asked=True, on_packets=True)
    quick.ops = (1, 2)  # about 1 s left
    quick.report(1e3, 10, 1.0)
    assert 1.0 < FLOW_HINT_S and "fabric.model" not in capsys.readouterr().err
    other = _progress("sw", asked=True, on_packets=False)
    other.ops = (1, 1000)
    other.report(1e3, 10, 1.0)
    assert "fabric.model" not in capsys.readouterr().err


# ---------------------------------------------------------------- paper cuts (item 9)

@pytest.mark.parametrize("text, bytes_per_s", [("400Gb/s", 50e9), ("400Gbps", 50e9), ("1.6Tb/s", 200e9),
                                               ("1.6Tbps", 200e9), ("100Mb/s", 12.5e6), ("8b/s", 1.0),
                                               ("50GB/s", 50e9)])
def test_bandwidths_in_bits_are_bits(text, bytes_per_s):
    assert units.parse(text, "bandwidth") == bytes_per_s


def test_a_link_rate_in_bits_reaches_the_platform_as_bytes(repo):
    bits = eidola.load_platform(repo / "platforms/switch-8gpu.yaml", {"fabric.link.bandwidth": "400Gb/s"})
    bytes_ = eidola.load_platform(repo / "platforms/switch-8gpu.yaml", {"fabric.link.bandwidth": "50GB/s"})
    assert bits.effective_yaml() == bytes_.effective_yaml() and "50GB/s" in bits.effective_yaml()
    with pytest.raises(eidola.ConfigError, match=r"fabric\.link\.bandwidth"):
        eidola.load_platform(repo / "platforms/switch-8gpu.yaml", {"fabric.link.bandwidth": "400gb/s"})


def test_profile_times_take_units(tmp_path, repo):
    b = ProfileBuilder(gpus=1, workgroups=1, name="units")
    b.flag("f")
    p = b.program(0, 0).compute(ns="1.5us").compute(ns=500).compute(ns="250ps")
    p.signal(dst=0, flag="f").wait(flag="f", cond=">=", value=1, interval_ns="0.2us")
    prof = b.build()
    ops = prof.program(0, 0)
    assert [op["ns"] for op in ops[:3]] == [1500, 500, 0.25] and type(ops[0]["ns"]) is int
    assert ops[4]["interval_ns"] == 200
    # In a file, as platforms write times; and the simulation takes them as ns.
    path = tmp_path / "p.yaml"
    path.write_text("eidola_profile: 2\nname: t\ngpus: 1\nworkgroups: 1\nprograms:\n"
                    "- gpu: 0\n  wg: 0\n  ops:\n  - [compute, {ns: 2us}]\n")
    res = eidola.simulate(eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml"), path)
    assert res.kernel_time_ns == 2000.0
    with pytest.raises(eidola.ProfileError, match=r"gpu 0 wg 0 op 0 \(compute\): ns '2GB' is not a time"):
        ProfileBuilder(1, 1).program(0, 0).compute(ns="2GB")


def test_timeout_takes_plain_seconds(cli, repo, tmp_path):
    plat = repo / "platforms/gemv-allreduce-4gpu.yaml"
    assert cli("run", plat, "--timeout", "60", "--out", tmp_path / "a").returncode == 0
    for value in ("0", "-3", "abc", "1e9"):
        r = cli("run", plat, "--timeout", value, "--out", tmp_path / "b")
        assert r.returncode == 2 and f"--timeout {value!r}" in r.stderr, r.stderr


def test_generators_and_profile_are_attributes_of_eidola_imported_on_use():
    code = ("import sys, eidola; before = 'eidola.generators' in sys.modules; "
            "f = eidola.generators.ring_allreduce; print(before, callable(f), eidola.profile.ProfileBuilder.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "ProfileBuilder"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        eidola.nope  # noqa: B018


def test_summary_is_a_property_and_calling_it_still_works(transfers):
    s = transfers.summary
    assert s["kernel_time_ns"] == transfers.kernel_time_ns and s["gpus"] == 2
    assert transfers.summary() == s


def test_program_twice_is_the_same_program():
    b = ProfileBuilder(gpus=1, workgroups=1, name="twice")
    first = b.program(0, 0).compute(ns=100)
    again = b.program(gpu=0, wg=0)
    assert again is first
    again.compute(ns=200)
    assert [op["ns"] for op in b.build().program(0, 0)] == [100, 200]


def test_validate_a_platform_that_names_no_profile(cli, write_platform):
    r = cli("validate", write_platform())
    assert r.returncode == 0 and "ok (4 GPUs; the platform alone" in r.stdout, r.stderr
    bad = cli("validate", write_platform(latency="5GB", name="bad.yaml"))
    assert bad.returncode == 2 and "bad.yaml" in bad.stderr and "fabric.latency" in bad.stderr


def test_a_platform_given_as_the_profile_is_named_as_such(cli, repo):
    plat = repo / "platforms/gemv-allreduce-4gpu.yaml"
    r = cli("run", plat, "--profile", plat)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"{plat}: this is a platform file" in r.stderr and "not a profile" in r.stderr
    assert "unknown key" not in r.stderr


def test_plugin_headers_are_looked_up_along_include_dirs(tmp_path):
    include = tmp_path / "vendor" / "include"
    (include / "bus").mkdir(parents=True)
    (include / "bus" / "bus.h").write_text("#pragma once\n")
    (tmp_path / "local.h").write_text("#pragma once\n")
    raw = {"headers": ["bus/bus.h", "local.h"], "include_dirs": ["vendor/include"], "class": "v::Bus",
           "targets": "t[{i}]", "initiators": "i[{i}]"}
    spec = parse_plugin(raw, "fabric.plugin", tmp_path, "fabric")
    assert spec.headers == (str(include / "bus" / "bus.h"), str(tmp_path / "local.h"))
    # Beside the platform file first, as a compiler looks beside the including file before -I.
    (tmp_path / "bus").mkdir()
    (tmp_path / "bus" / "bus.h").write_text("#pragma once\n")
    assert parse_plugin(raw, "fabric.plugin", tmp_path, "fabric").headers[0] == str(tmp_path / "bus" / "bus.h")
    with pytest.raises(eidola.ConfigError, match=r"fabric.plugin.headers: 'nope.h' does not exist \(looked for .*"
                                                 r"nope.h, .*vendor/include/nope.h\)"):
        parse_plugin({**raw, "headers": ["nope.h"]}, "fabric.plugin", tmp_path, "fabric")


def test_the_summary_json_of_a_run_is_the_property(transfers, tmp_path):
    transfers.save(tmp_path)
    assert json.loads((tmp_path / "summary.json").read_text())["kernel_time_ns"] == transfers.kernel_time_ns
