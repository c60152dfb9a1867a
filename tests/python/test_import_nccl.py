"""Imported collectives as the platform's library runs them (`eidola import ... --algorithm nccl --platform P`,
workload/importers/nccl_calls.py), against `eidola perf`'s own build of the same collective and a NIC bound.

An imported collective starts at its traced start and ends with the lane's kernel boundary (a local signal and
polls of a local flag, every 50 ns), so its simulated span is the library's kernel (`build_collective` with no
harness, the kernel `eidola perf` times) plus that boundary: at most a poll interval and two memory accesses.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
from test_import import SHARED

import eidola
from eidola.profile import ProfileBuilder
from eidola.workload.importers.timeline import Coll, Item, Lane, Report, build_profile
from eidola.workload.nccl import System, append_call, build_collective

MIB = 1 << 20
START = 1000  # ns: a compute phase before the collective on every rank
BOUNDARY_NS = 50 + 2 * 150  # one poll interval and two of the platforms' 150 ns memory accesses


def _lanes(ranks: int, kind: str, nbytes: int, group: tuple[int, ...] | None = None) -> dict[int, list[Lane]]:
    group = tuple(range(ranks)) if group is None else group
    return {r: [Lane("stream 7", [Item(0, START)] + ([Item(START, 2 * START, Coll(kind, nbytes, group, kind))]
                                                    if r in group else []))] for r in range(ranks)}


def _import(plat, lanes, workgroups: int | None, algorithm: str = "nccl"):
    report = Report()
    library = System.of(plat) if algorithm == "nccl" else None
    return build_profile("t", lanes, workgroups, algorithm, "syncmon", report, library=library), report


def test_an_imported_all_reduce_takes_the_librarys_time_across_nodes(repo):
    # Two dgx-h100-rail nodes, 64 MiB: NCCL's ring (rail-local rings through both nodes). A ring all-reduce sends
    # 2 (k - 1) / k of S out of each node, over its 8 NICs at 50 GB/s x 4096 / (4096 + 42): a bound the time is
    # above. The importer's textbook ring on one workgroup leaves each node through one NIC (docs/import.md).
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"fabric.model": "flow"})
    S = 64 * MIB
    lib = System.of(plat)
    profile, report = _import(plat, _lanes(16, "all_reduce", S), lib.channels)
    (line,) = [k for k in report.imported if k.startswith("all_reduce")]
    kernel, plan = build_collective(plat, "all_reduce", S)
    assert line == f"all_reduce (NCCL {plan.algo} {plan.proto}, 16 ranks)"
    span = eidola.simulate(plat, profile).kernel_time_ns - START
    alone = eidola.simulate(plat, kernel).kernel_time_ns
    assert alone <= span <= alone + BOUNDARY_NS, (span, alone)
    nic_bound_ns = 2 * 15 / 16 * S / (8 * 50e9 * 4096 / 4138) * 1e9
    assert span >= nic_bound_ns
    textbook, _ = _import(plat, _lanes(16, "all_reduce", S), 1, "ring")
    assert eidola.simulate(plat, textbook).kernel_time_ns - START > 2 * span


@pytest.mark.parametrize("op, kind", [("all_reduce", "all_reduce"), ("alltoall", "all_to_all"),
                                      ("all_gather", "all_gather"), ("broadcast", "broadcast")])
def test_a_collective_of_the_second_node_on_the_second_lane_runs_as_on_the_first(repo, op, kind):
    # Ranks 8-15 (node 1 of dgx-h100-rail) from their second lane's workgroups: the same GPUs' worth of links as
    # node 0's, so the time of `build_collective` on GPUs 0-7, plus at most the kernel boundary. The broadcast's root
    # is rank 11, the group's fourth: build_collective's root 3.
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"fabric.model": "flow"})
    S = MIB
    kernel, plan = build_collective(plat, op, S, gpus=8, root=3)
    lanes = _lanes(16, kind, S, tuple(range(8, 16)))
    for r in range(8, 16):
        coll = lanes[r][0].items[1].coll
        assert coll is not None
        coll.root = 11
    for r in range(8, 16):
        lanes[r].insert(0, Lane("stream 1", [Item(0, START)]))  # the collective's lane is the second
    profile, report = _import(plat, lanes, plan.workgroups)  # the all-to-all's sends and receives apart
    assert report.imported[f"{kind} (NCCL {plan.algo} {plan.proto}, 8 ranks)"] == 1
    res = eidola.simulate(plat, profile)
    assert res.kernel_time_ns - START == pytest.approx(eidola.simulate(plat, kernel).kernel_time_ns,
                                                        abs=BOUNDARY_NS)
    assert (res.gpus["bytes_sent"][:8] == 0).all()  # node 0 only computes


def test_channels_are_capped_at_the_lanes_workgroups(repo):
    # switch-8gpu: the tuner runs 1 MiB on 16 channels; a lane of 4 workgroups runs it on 4, as NCCL_MAX_NCHANNELS=4
    # would, and takes the time of build_collective forced to 4 channels.
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml")
    assert build_collective(plat, "all_reduce", MIB)[1].channels == 16
    kernel, plan = build_collective(plat, "all_reduce", MIB, channels=4)
    profile, report = _import(plat, _lanes(8, "all_reduce", MIB), 4)
    assert report.imported[f"all_reduce (NCCL {plan.algo} {plan.proto}, 8 ranks)"] == 1
    span = eidola.simulate(plat, profile).kernel_time_ns - START
    alone = eidola.simulate(plat, kernel).kernel_time_ns
    assert alone <= span <= alone + BOUNDARY_NS


@pytest.mark.parametrize("kind, group, why", [
    ("all_reduce", (0, 8), "neither one node's nor whole nodes"),   # one GPU of each node
    ("barrier", None, "no barrier in the model"),
])
def test_what_the_model_cannot_run_takes_the_textbook_schedule_and_says_so(repo, kind, group, why):
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"fabric.model": "flow"})
    profile, report = _import(plat, _lanes(16, kind, 4096, group), 4)
    k = len(group or range(16))
    assert report.imported[f"{kind} ({KIND_ALGO[kind]}, {k} ranks)"] == 1
    assert any("textbook schedule" in a and why in a for a in report.assumed), report.assumed
    assert eidola.simulate(plat, profile).kernel_time_ns > START


KIND_ALGO = {"all_reduce": "ring", "barrier": "direct"}


def test_an_all_to_all_needs_a_workgroup_per_peer(repo):
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml")
    _, report = _import(plat, _lanes(8, "all_to_all", MIB), 4)
    assert report.imported["all_to_all (direct, 8 ranks)"] == 1
    assert any("it needs 7 workgroups per lane (one per peer) and the lanes have 4: import with --workgroups 7" in a
               for a in report.assumed), report.assumed


@pytest.mark.parametrize("lane, apart", [(28, True), (14, False)])
def test_an_all_to_all_runs_its_sends_and_receives_apart_where_the_lane_holds_them(repo, lane, apart):
    # switch-8gpu, 8 ranks, 16 MiB: perf runs two channels per peer (14), each with its sends and receives on
    # workgroups of their own (28). A lane of 28 runs that and takes its time; a lane of 14 runs the 14 channels
    # each on one workgroup (the sends waiting on the receives), NCCL_MAX_NCHANNELS' cap on the lane's workgroups,
    # and takes build_collective's time with them together (measured 47.49 us against 46.76 apart).
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml")
    kernel, plan = build_collective(plat, "alltoall", 16 * MIB)
    assert (plan.channels, plan.workgroups) == (14, 28)
    if not apart:
        kernel = _together(plat, 16 * MIB, plan)
    profile, report = _import(plat, _lanes(8, "all_to_all", 16 * MIB), lane)
    assert report.imported["all_to_all (NCCL p2p Simple, 8 ranks)"] == 1
    assert profile.workgroups == lane and len(profile.program(0, 27 if apart else 13)) > 0
    span = eidola.simulate(plat, profile).kernel_time_ns - START
    alone = eidola.simulate(plat, kernel).kernel_time_ns
    assert alone <= span <= alone + BOUNDARY_NS, (span, alone)


def _together(plat, nbytes: int, plan):
    """build_collective's all-to-all on 8 ranks as `plan`, with each channel's sends and receives on one workgroup."""
    together = dataclasses.replace(plan, split=False)
    b = ProfileBuilder(gpus=8, workgroups=together.workgroups, name="together")
    append_call(b, System.of(plat), "alltoall", nbytes, 8, together, "")
    return b.build()


def _cli(*args: str):
    return subprocess.run([sys.executable, "-m", "eidola", "import", "kineto", *args], capture_output=True, text=True)


def test_cli_nccl_import_of_the_shared_trace(repo, tmp_path):
    out = tmp_path / "nccl8.yaml"
    trace = str(SHARED / "nccl_data.json.gz")
    r = _cli(trace, "--ranks", "8", "--algorithm", "nccl", "--platform", str(repo / "platforms" / "dgx-h100.yaml"),
             "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "nccl8.import.txt").read_text()
    assert "all_reduce (NCCL nvls Simple, 8 ranks)" in text and "broadcast (NCCL ring" in text
    lib = System.of(eidola.load_platform(repo / "platforms" / "dgx-h100.yaml"))
    assert eidola.load_profile(out).workgroups % lib.channels == 0  # the channel count per lane, by default


@pytest.mark.parametrize("args, says", [
    (["--algorithm", "nccl"], "give --platform"),
    (["--platform", "platforms/dgx-h100.yaml"], "--platform and --set are for --algorithm nccl"),
    (["--algorithm", "nccl", "--platform", "platforms/dgx-h100.yaml", "--set", "gpus.count=4"],
     "8 ranks but the --platform has 4 GPUs"),
])
def test_cli_nccl_import_refuses_what_it_cannot_build(repo, tmp_path, args, says):
    trace = str(SHARED / "nccl_data.json.gz")
    r = _cli(trace, "--ranks", "8", *[str(repo / a) if a.startswith("platforms/") else a for a in args],
             "-o", str(tmp_path / "x.yaml"))
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr


def _send_lanes(ranks: int, src: int, dst: int, nbytes: int) -> dict[int, list[Lane]]:
    lanes = {r: [Lane("stream 7", [Item(0, START)])] for r in range(ranks)}
    lanes[src][0].items.append(Item(START, 2 * START, Coll("send", nbytes, (src, dst), "send")))
    lanes[dst][0].items.append(Item(START, 2 * START, Coll("send", nbytes, (dst, src), "recv", recv=True)))
    return lanes


@pytest.mark.parametrize("src, dst, S, payload_Bps", [
    (0, 9, 16 * MIB, 50e9 * 4096 / (4096 + 42)),   # the other node, rail 1: by PXN through GPU 1 and its NIC
    (9, 0, 16 * MIB, 50e9 * 4096 / (4096 + 42)),   # back: by PXN through GPU 8 (rail 0) and its NIC
    (0, 3, 64 * MIB, 18 * 25e9 * 256 / (256 + 54)),  # inside the node: GPU 0's 18 NVLink lanes into the NVSwitch
])
def test_a_matched_send_runs_as_ncclsend_on_its_channels(repo, src, dst, S, payload_Bps):
    # From GPU 0: nccl-tests' send/recv plan for one peer (24 channels, Simple), at least the bytes at the path's
    # payload rate and within 30% of it (the proxy steps, the FIFO's fill and drain: a channel's 1/24 of 16 MiB is
    # under two 512 KiB units, so inside the node, where the wire takes 45 us, the size is 64 MiB).
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"fabric.model": "flow"})
    profile, report = _import(plat, _send_lanes(16, src, dst, S), 24)
    assert report.imported["send (NCCL p2p Simple, 2 ranks)"] == 1
    res = eidola.simulate(plat, profile)
    span, bound = res.kernel_time_ns - START, S / payload_Bps * 1e9
    assert bound <= span <= 1.3 * bound, (span, bound)
    assert int(res.gpus["bytes_received"][dst]) >= S > int(res.gpus["bytes_received"][src])


@pytest.mark.parametrize("algorithm", ["nccl", "ring"])
def test_two_ranks_that_both_send_before_they_receive_send_both_ways(repo, algorithm):
    # A pipeline's steady state (or batch_isend_irecv): ranks 0 and 1 each send 1 MiB to the other, then receive.
    # The two sends are one exchange, so each GPU receives the 1 MiB (and the credits or flags of its own send).
    lanes = {r: [Lane("stream 7", [Item(0, START)])] for r in range(2)}
    for r, peer in ((0, 1), (1, 0)):
        lanes[r][0].items += [Item(START, 2 * START, Coll("send", MIB, (r, peer), "send")),
                              Item(2 * START, 3 * START, Coll("send", MIB, (r, peer), "recv", recv=True))]
    two = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml", {"gpus.count": 2})
    report = Report()
    res = eidola.simulate(two, build_profile("t", lanes, 4, algorithm, "syncmon", report, library=System.of(two)))
    got = res.gpus["bytes_received"]
    assert all(MIB <= int(n) < MIB + 4096 for n in got), got
    assert report.imported["send/recv pairs run both ways at once (two ranks sending to each other)"] == 1
    if algorithm == "nccl":
        # as nccl-tests' send/recv on the pair: both directions at once, each on its own link direction, so no
        # longer than one way alone (a send and a receive) and some slack for the two FIFOs' credits
        assert report.imported["send (NCCL p2p Simple, 2 ranks)"] == 1
        one = eidola.simulate(two, build_profile("t", _send_lanes(2, 0, 1, MIB), 4, "nccl", "syncmon", Report(),
                                                 library=System.of(two)))
        assert res.kernel_time_ns - START <= 1.1 * (one.kernel_time_ns - START), (res.kernel_time_ns, one.kernel_time_ns)


def test_a_group_off_the_links_of_a_torus_takes_the_textbook_schedule(repo):
    # torus2d-16gpu: the model's rings follow the links among GPUs 0..k-1 (System.neighbours); GPUs 0, 5, 10, 15
    # are not that group, so its all-reduce keeps the textbook ring, and the report says why.
    plat = eidola.load_platform(repo / "platforms" / "torus2d-16gpu.yaml", {"fabric.model": "flow"})
    _, report = _import(plat, _lanes(16, "all_reduce", MIB, (0, 5, 10, 15)), 4)
    assert report.imported["all_reduce (ring, 4 ranks)"] == 1
    assert any("not GPUs 0..3" in a for a in report.assumed), report.assumed
    _, report = _import(plat, _lanes(16, "all_reduce", MIB, (0, 1, 2, 3)), 4)
    assert sum(n for k, n in report.imported.items() if "NCCL" in k) == 1


def test_default_workgroups_give_an_all_to_all_a_channel_per_peer(repo):
    # dgx-h100-rail at 32 GPUs: 24 channels, but NCCL's all-to-all on 32 ranks takes 31 (one per peer, as perf runs
    # it), each with its sends and receives on workgroups of their own: with the default the lanes get 62
    # workgroups and the call runs as the library runs it.
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100-rail.yaml", {"gpus.count": 32, "fabric.model": "flow"})
    plan = build_collective(plat, "alltoall", 16 * MIB)[1]
    assert (plan.channels, plan.workgroups) == (31, 62)
    report = Report()
    profile = build_profile("t", _lanes(32, "all_to_all", 16 * MIB), None, "nccl", "syncmon", report,
                            library=System.of(plat))
    assert report.imported["all_to_all (NCCL p2p Simple, 32 ranks)"] == 1 and profile.workgroups == 62


def test_default_workgroups_hold_the_plan_perf_runs(repo):
    # dgx-h100, 8 ranks, 16 MiB all-to-all: perf runs 3 channels per peer (21), each with its sends and receives
    # apart, 42 workgroups. The default lane holds them and the import takes perf's time; a lane of the platform's 24
    # channels runs the 21 together, one workgroup each (its time, within the boundary), not 7 apart.
    plat = eidola.load_platform(repo / "platforms" / "dgx-h100.yaml", {"fabric.model": "flow"})
    kernel, plan = build_collective(plat, "alltoall", 16 * MIB)
    assert (plan.channels, plan.workgroups) == (21, 42)
    lanes = _lanes(8, "all_to_all", 16 * MIB)
    profile, _ = _import(plat, lanes, None)
    assert profile.workgroups == 42
    span = eidola.simulate(plat, profile).kernel_time_ns - START
    alone = eidola.simulate(plat, kernel).kernel_time_ns
    assert alone <= span <= alone + BOUNDARY_NS, (span, alone)
    profile, _ = _import(plat, lanes, 24)
    span = eidola.simulate(plat, profile).kernel_time_ns - START
    alone = eidola.simulate(plat, _together(plat, 16 * MIB, plan)).kernel_time_ns
    assert alone <= span <= alone + BOUNDARY_NS, (span, alone)


def test_workgroups_past_the_platforms_are_refused_at_import(repo):
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml", {"gpus.workgroups": 8})
    lanes = _lanes(8, "all_reduce", MIB)
    for r in lanes:
        lanes[r].append(Lane("stream 9", [Item(0, START)]))
    with pytest.raises(eidola.ProfileError, match=r"2 streams of 6 workgroups need 12 workgroups per GPU; the "
                       r"--platform's GPUs have 8: give --workgroups 4 or fewer"):
        build_profile("t", lanes, 6, "nccl", "syncmon", Report(), library=System.of(plat))


def test_a_profile_larger_than_run_reads_is_flagged_at_import(repo, tmp_path):
    # The NCCL import of the shared trace on 8 dgx-h100 GPUs writes about 34 MB of profile from a 9.8 MB trace: with
    # the input limit at 20 MB the trace still reads, and the import says the profile will not, and how to let it.
    env = {**os.environ, "EIDOLA_MAX_INPUT_BYTES": "20000000"}
    out = tmp_path / "n8.yaml"
    r = subprocess.run([sys.executable, "-m", "eidola", "import", "kineto", str(SHARED / "nccl_data.json.gz"), "--ranks",
                        "8", "--algorithm", "nccl", "--platform", str(repo / "platforms" / "dgx-h100.yaml"), "-o",
                        str(out)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    size = out.stat().st_size
    assert size > 20_000_000
    assert f"EIDOLA_MAX_INPUT_BYTES={-(-size // 2**20) * 2**20} or more" in r.stderr, r.stderr


def test_a_platform_without_a_collectives_section_says_it_runs_the_defaults(repo):
    # switch-8gpu has no collectives: section: the import's report and perf's header say NCCL's defaults run.
    plat = eidola.load_platform(repo / "platforms" / "switch-8gpu.yaml")
    assert not plat.collectives and not System.of(plat).configured
    _, report = _import(plat, _lanes(8, "all_reduce", MIB), 4)
    assert any("no collectives: section" in a for a in report.assumed), report.assumed
    dgx = eidola.load_platform(repo / "platforms" / "dgx-h100.yaml")
    _, report = _import(dgx, _lanes(8, "all_reduce", MIB), 4)
    assert not any("no collectives: section" in a for a in report.assumed)
    out = subprocess.run([sys.executable, "-m", "eidola", "perf", str(repo / "platforms" / "switch-8gpu.yaml"), "--op",
                          "all_reduce", "-b", "1K", "-e", "1K"], capture_output=True, text=True)
    assert out.returncode == 0 and "the platform has no collectives: section, so NCCL's defaults" in out.stdout


def test_one_rank_without_peers_says_the_library_builds_nothing(repo, tmp_path):
    # One rank of the shared trace, imported alone: its collectives have no traced peer and replay their traced
    # times, so --algorithm nccl has nothing to build; the report says so and how to replicate the rank.
    r = _cli(str(SHARED / "nccl_data.json.gz"), "--algorithm", "nccl", "--platform",
             str(repo / "platforms" / "dgx-h100.yaml"), "-o", str(tmp_path / "one.yaml"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "one.import.txt").read_text()
    assert "no collective has a traced peer, so none runs as the library runs it" in text and "--ranks N" in text
    assert "(NCCL " not in text  # no collective imported as the library builds it
