"""Annotated timestamps: a simulated run exported and imported replays to the same end times."""

import numpy as np

import eidola
from eidola.generators import gemv_allreduce
from eidola.workload.importers.timestamps import export_timestamps, import_timestamps


def _finish(res):
    return {(int(r["gpu"]), int(r["wg"])): float(r["finish_ns"]) for r in res.workgroups if r["finish_ns"] > 0}


def test_export_import_resimulate_gives_the_same_end_times(repo, tmp_path):
    # A skewed, jittered, delayed run on the default platform (finite memory bandwidth, so packets
    # queue): every op's begin and end is exported; gaps become compute; replaying the imported
    # profile on the same platform must end every workgroup at the same picosecond.
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    prof = gemv_allreduce(gpus=4, workgroups=2, skew={"dist": "uniform", "low": 0.8, "high": 1.2},
                          delays=[{"gpu": 2, "ns": 3000}])
    res = eidola.simulate(plat, prof, seed=7, trace=True)
    assert len(res.ops) == prof.ops_count()
    export_timestamps(prof, res.ops, tmp_path / "run.csv")
    imported = import_timestamps(tmp_path / "run.csv")
    replay = eidola.simulate(plat, imported, trace=True)
    assert _finish(replay) == _finish(res)
    assert replay.gpus["bytes_sent"].tolist() == res.gpus["bytes_sent"].tolist()
    assert replay.gpus["flag_reads"].tolist() == res.gpus["flag_reads"].tolist()


def test_trace_records_every_op_in_program_order(repo):
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    prof = gemv_allreduce(gpus=4, workgroups=1, vector_bytes=1024)
    res = eidola.simulate(plat, prof, trace=True)
    for (gpu, wg), ops in prof.programs:
        rows = res.ops[(res.ops["gpu"] == gpu) & (res.ops["wg"] == wg)]
        assert rows["op"].tolist() == list(range(len(ops)))
        # Ops run back to back: each begins when the previous one ended; the first at 0.
        assert rows["begin_ns"][0] == 0
        assert np.array_equal(rows["begin_ns"][1:], rows["end_ns"][:-1])
        # Compute ops last exactly their nominal time (no variability in this profile).
        for op, row in zip(ops, rows):
            if op.kind == "compute":
                assert row["end_ns"] - row["begin_ns"] == op["ns"]


def test_variability_is_seeded(repo):
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    prof = gemv_allreduce(gpus=4, workgroups=2, skew={"dist": "normal", "mean": 1.0, "std": 0.1},
                          jitter={"dist": "lognormal", "mu": 0.0, "sigma": 0.05})
    a, b, c = (eidola.simulate(plat, prof, seed=s) for s in (3, 3, 4))
    assert a.workgroups.tobytes() == b.workgroups.tobytes()
    assert a.kernel_time_ns != c.kernel_time_ns


def test_delay_knob_equals_an_explicit_compute_before_the_first_write(repo):
    # Holding GPU 0's first communication back by 5 us is the same as 5 us more of tile compute.
    plat = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    held = eidola.simulate(plat, gemv_allreduce(gpus=4, workgroups=2, delays=[{"gpu": 0, "ns": 5000}]))
    longer = eidola.simulate(plat, gemv_allreduce(gpus=4, workgroups=2, tile_ns=[7000, 2000, 2000, 2000]))
    assert held.workgroups.tobytes() == longer.workgroups.tobytes()


def test_nccl_ll_collective_round_trips_with_its_puts(repo, tmp_path):
    # NCCL's LL ring all-reduce is puts (data lines carrying their flag) and credit puts: exported
    # and imported, every put keeps its peer, bytes, flag and value, and the replay ends every
    # workgroup at the same picosecond with the same bytes sent.
    from eidola.workload.nccl import build_collective

    plat = eidola.load_platform(repo / "platforms/switch-8gpu.yaml")
    prof, plan = build_collective(plat, "all_reduce", 64 * 1024, gpus=4, proto="LL", channels=2)
    assert plan.proto == "LL"
    res = eidola.simulate(plat, prof, trace=True)
    export_timestamps(prof, res.ops, tmp_path / "ll.csv")
    imported = import_timestamps(tmp_path / "ll.csv")
    for key, ops in prof.programs:
        puts = [(op["dst"], op["nbytes"], op["flag"], op["value"]) for op in ops if op.kind == "put"]
        back = [(op["dst"], op["nbytes"], op["flag"], op["value"]) for op in imported.program(*key) if op.kind == "put"]
        assert puts and back == puts
    replay = eidola.simulate(plat, imported, trace=True)
    assert _finish(replay) == _finish(res)
    assert replay.gpus["bytes_sent"].tolist() == res.gpus["bytes_sent"].tolist()
