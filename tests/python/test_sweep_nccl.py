"""The sweep's `nccl` generator: collectives as the platform's library runs them, re-tuned at every point."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO

from eidola.errors import ConfigError
from eidola.run.perf import Fabrics, run_sizes
from eidola.run.sweep import sweep

H100_NVLINK_GBPS = 450.0  # NVIDIA H100 SXM datasheet: 900 GB/s of NVLink, 450 GB/s each way


def _spec(tmp: Path, generator: str, grid: str, metrics: str, fixed: str = "fabric.model: flow",
          platform: str = "dgx-h100.yaml") -> Path:
    spec = tmp / "nccl-sweep.yaml"
    spec.write_text(f"""\
sweep: 1
platform: {REPO / "platforms" / platform}
generator: {generator}
set: {{{fixed}}}
grid: {grid}
metrics: [{metrics}]
""")
    return spec


def test_the_tuner_chooses_at_every_point_as_nccl_does(tmp_path):
    # NCCL on 8 H100s: ring LL for small all-reduces, NVLS from about 2 MiB on (../shared/NCCL.md, "NVLS"); never NVLS
    # for 2 ranks (NCCL 2.21-2.23's ncclNvlsInit: off where the communicator has 2 GPUs or fewer). busbw is
    # algbw x 2(k-1)/k, by hand from the kernel time.
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 1MiB}",
                 "{generator.nbytes: [64KiB, 16MiB], generator.gpus: [2, 8]}",
                 "kernel_time_us, algbw_GBps, busbw_GBps, nccl_channels, nccl_plan.ring, nccl_plan.nvls, "
                 "nccl_plan.LL, nccl_plan.Simple")
    table = sweep(spec, out=tmp_path / "out", workers=2)
    assert (table["status"] == "ok").all(), table["error"].tolist()
    for _, row in table.iterrows():
        size = {"64KiB": 64 << 10, "16MiB": 16 << 20}[row["generator.nbytes"]]
        k = int(row["generator.gpus"])
        assert row["algbw_GBps"] == pytest.approx(size / (row["kernel_time_us"] * 1e-6) / 1e9, rel=1e-12)
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * 2 * (k - 1) / k, rel=1e-12)
        nvls = size == 16 << 20 and k == 8
        assert row["nccl_plan.nvls"] == float(nvls)
        assert row["nccl_plan.ring"] == float(not nvls)
        if size == 64 << 10:
            assert row["nccl_plan.LL"] == 1.0 and row["nccl_plan.Simple"] == 0.0
        assert row["nccl_channels"] >= 1


def test_a_point_is_the_time_eidola_perf_prints(tmp_path):
    # The sweep times the steady state of nccl-tests' loop, as `eidola perf` does: the same figure for the same
    # platform and size, and a forced ring stays under the NVLink datasheet's 450 GB/s a direction.
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 1MiB, algo: ring}",
                 "{generator.nbytes: [1MiB, 64MiB]}", "kernel_time_us, busbw_GBps")
    table = sweep(spec, out=tmp_path / "out", workers=1)
    fabrics = Fabrics(str(REPO / "platforms" / "dgx-h100.yaml"), {"fabric.model": "flow"})
    rows = run_sizes(fabrics, "all_reduce", [(1 << 20, 1 << 18), (64 << 20, 1 << 24)], 8, algo="ring")
    assert table["kernel_time_us"].tolist() == [r.time_us for r in rows]
    assert (table["busbw_GBps"] < H100_NVLINK_GBPS).all()
    assert table["busbw_GBps"][1] > 0.5 * H100_NVLINK_GBPS  # a 64 MiB ring runs near the links' rate


@pytest.mark.parametrize(("generator", "metrics", "message"), [
    ("{name: nccl, op: all_reduce, nbytes: 0}", "kernel_time_us", "generator.nbytes: expected a size of at least 1"),
    ("{name: nccl, op: all_reduce, nbytes: 1MiB, gpus: abc}", "kernel_time_us",
     "generator.gpus: expected an integer >= 2, GPUs, got 'abc'"),
    ("{name: nccl, op: all_reduce, nbytes: 1MiB, channels: -1}", "kernel_time_us",
     "generator.channels: expected an integer >= 0"),
    ("{name: nccl, op: allreduce, nbytes: 1MiB}", "kernel_time_us",
     "generator.op: expected one of all_reduce"),
    ("{name: nccl, op: all_reduce}", "kernel_time_us", "generator: nccl needs nbytes"),
    ("{name: nccl, op: all_reduce, nbytes: 1MiB, chunks: 4}", "kernel_time_us",
     "generator.chunks: nccl has no parameter 'chunks'"),
    ("{name: nccl, op: all_reduce, nbytes: 1MiB, proto: LL64}", "kernel_time_us",
     "generator.proto: expected one of auto, LL, LL128, Simple, got 'LL64'"),
])
def test_bad_generator_input_is_named_before_any_point_runs(tmp_path, cli, generator, metrics, message):
    spec = _spec(tmp_path, generator, "{seed: [1]}", metrics)
    proc = cli("sweep", spec, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "nccl-sweep.yaml" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "points").exists()


def test_a_size_runs_as_nccl_tests_counts_it_as_perf_does(tmp_path):
    # nccl-tests runs 4-byte elements: 7 bytes of all-reduce run as 4 (perf's size column), and busbw is of those 4
    # bytes; 3 bytes are no element at all, refused before the point runs (a user trial: busbw of 7 B over 4 B's time).
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 7}", "{seed: [1]}", "kernel_time_us, algbw_GBps")
    row = sweep(spec, out=tmp_path / "out", workers=1).iloc[0]
    assert row["algbw_GBps"] == pytest.approx(4 / (row["kernel_time_us"] * 1e-6) / 1e9, rel=1e-12)
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 3}", "{seed: [1]}", "kernel_time_us")
    row = sweep(spec, out=tmp_path / "three", workers=1).iloc[0]
    assert row["status"] == "error" and row["exit_status"] == 2 and "3 B is no element of all_reduce" in row["error"]


def test_plan_metrics_need_the_nccl_generator_and_a_known_name(tmp_path):
    spec = _spec(tmp_path, "{name: ring_allreduce, gpus: 8, nbytes: 64KiB}", "{seed: [1]}", "nccl_channels")
    row = sweep(spec, out=tmp_path / "a", workers=1).iloc[0]
    assert row["status"] == "error" and row["exit_status"] == 2 and "need the nccl generator" in row["error"]
    # A name the plans never have is refused with the spec, before any point runs.
    spec = _spec(tmp_path, "{name: nccl, op: all_gather, nbytes: 64KiB}", "{seed: [1]}", "nccl_plan.ringg")
    with pytest.raises(ConfigError, match=r"metrics: nccl_plan.ringg: expected nccl_plan. and one of ring"):
        sweep(spec, out=tmp_path / "b", workers=1)
    assert not (tmp_path / "b" / "points").exists()


def test_the_fabrics_own_checks_reach_the_table_and_the_log(tmp_path):
    # rail-16gpu with one spine: the 16 MiB all-to-all's windows fill (a note per GPU that matters), and since the
    # 2026-12-07 mend no link is busier than the run (fabric_overrun 0; 1 before, at 1.466x the run).
    spec = _spec(tmp_path, "{name: nccl, op: alltoall, nbytes: 16MiB}", "{generator.nbytes: [16MiB]}",
                 "fabric_notes, fabric_overrun, nccl_plan.p2p, busbw_GBps", "fabric.model: flow, fabric.rail.spines: 1",
                 "rail-16gpu.yaml")
    row = sweep(spec, out=tmp_path / "out", workers=1).iloc[0]
    assert row["status"] == "ok" and row["fabric_overrun"] == 0.0 and row["nccl_plan.p2p"] == 1.0
    log = (tmp_path / "out" / row["folder"] / "log.txt").read_text()
    assert log.count("note: ") == row["fabric_notes"] >= 1
    # The time is at least the spine's bound (299.2 us, derived in test_flow_oversubscribed.py), and an all-to-all's
    # busbw is algbw x (k-1)/k.
    assert row["busbw_GBps"] <= (16 << 20) / 299.2e-6 / 1e9 * 15 / 16


def test_a_packet_platform_runs_large_sizes_on_the_flow_fabric_as_perf_does(tmp_path):
    # dgx-h100 is a packet platform: perf's --fabric auto runs 64 KiB per packet and 64 MiB as flows, and the
    # sweep's nccl generator the same (fabric: auto, the default); fabric: packet keeps the small one per packet.
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 64KiB}", "{generator.nbytes: [64KiB, 64MiB]}",
                 "kernel_time_us, flow_fabric", fixed="")
    table = sweep(spec, out=tmp_path / "out", workers=1)
    assert table["flow_fabric"].tolist() == [0.0, 1.0]
    rows = run_sizes(Fabrics(str(REPO / "platforms" / "dgx-h100.yaml"), {}), "all_reduce",
                     [(64 << 10, 1 << 14), (64 << 20, 1 << 24)], 8)
    assert [r.fabric for r in rows] == ["packet", "flow"]
    assert table["kernel_time_us"].tolist() == [r.time_us for r in rows]


def test_a_point_whose_collective_does_not_fit_its_memory_limit_is_recorded(tmp_path):
    # Built in the sweep's own process, under the point's limits.memory (run/build_memory.py): 1.5 million ops do
    # not fit 20 MiB; the other point (64 KiB) runs.
    spec = _spec(tmp_path, "{name: nccl, op: all_reduce, nbytes: 1GiB}", "{generator.nbytes: [64KiB, 1GiB]}",
                 "kernel_time_us", "fabric.model: flow, gpus.count: 64, limits.memory: 20MiB", "rail-16gpu.yaml")
    table = sweep(spec, out=tmp_path / "out", workers=1)
    assert table["status"].tolist() == ["ok", "failed"] and table["exit_status"].tolist() == [0, 3]
    assert "building it needed more than limits.memory = 21 MB" in table["error"][1]
