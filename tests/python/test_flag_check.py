"""The static check of waits (workload/flag_check.py): a wait that no op of the profile can ever satisfy is a
certain deadlock, refused by `eidola validate` (exit 2) before anything is simulated."""

import numpy as np
import pytest

import eidola
from eidola import generators as G
from eidola.profile import ProfileBuilder
from eidola.workload.flag_check import check_flags


def _builder(gpus=2, workgroups=2):
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="flags")
    for f in ("ready", "never", "raedy"):
        b.flag(f)
    b.buffer("data", nbytes=4096)
    return b


def _stuck(b):
    return [(w.gpu, w.wg, w.op, w.flag, w.cond, w.value) for w in check_flags(b.build()).stuck]


def test_a_wait_for_a_flag_nobody_changes_is_stuck():
    b = _builder()
    b.program(gpu=0, wg=0).signal(dst=1, flag="ready")
    b.program(gpu=0, wg=1).compute(ns=100).wait(flag="never", cond="==", value=7)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1)
    found = check_flags(b.build())
    assert found.stuck_count == 1
    (w,) = found.stuck
    assert (w.gpu, w.wg, w.op, w.flag, w.writers) == (0, 1, 1, "never", 0)
    assert w.text().startswith("gpu 0 wg 1 op 1: waits for never == 7, but no op changes flag 'never' on GPU 0")


def test_waits_the_initial_zero_satisfies_need_no_writer():
    b = _builder(workgroups=1)
    p = b.program(gpu=0, wg=0)
    for cond, value in (("==", 0), (">=", 0), ("<=", 3), ("<=", 0), ("!=", 5), ("<", 1), (">", -1)):
        p.wait(flag="never", cond=cond, value=value)
    assert _stuck(b) == []


def test_the_flag_is_per_gpu():
    # GPU 0 signals its own copy (a local signal): its wait ends, GPU 1's copy of the same flag never changes.
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).signal(dst=0, flag="ready").wait(flag="ready", cond=">=", value=1)
    b.program(gpu=1, wg=0).compute(ns=5).wait(flag="ready", cond=">=", value=1)
    assert _stuck(b) == [(1, 0, 1, "ready", ">=", 1)]


def test_a_puts_landing_flag_satisfies_a_wait():
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).put(dst=1, buffer="data", offset=0, nbytes=256, flag="ready", value=2)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=2)
    assert _stuck(b) == []
    # One put adding 2 takes the flag to 2 at most: 3 is out of reach.
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=3)
    found = check_flags(b.build())
    assert [(w.op, w.writers, w.reach) for w in found.stuck] == [(1, 1, 2)]
    assert "can reach at most 2" in found.stuck[0].text()


def test_adds_bound_the_values_a_flag_can_take():
    # Two signals to GPU 1's ready, adding 1 and 2: its value stays within 0..3.
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).signal(dst=1, flag="ready", value=1).signal(dst=1, flag="ready", value=2)
    p = b.program(gpu=1, wg=0)
    cases = [(">=", 3, False), (">=", 4, True), (">", 2, False), (">", 3, True), ("==", 3, False), ("==", 4, True),
             ("==", -1, True), ("<", 0, True), ("<=", -1, True), ("!=", 0, False)]
    for cond, value, _ in cases:
        p.wait(flag="ready", cond=cond, value=value)
    assert [op for _, _, op, *_ in _stuck(b)] == [i for i, (_, _, stuck) in enumerate(cases) if stuck]


def test_adds_of_zero_leave_a_flag_at_zero():
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).signal(dst=1, flag="ready", value=0)
    b.program(gpu=1, wg=0).wait(flag="ready", cond="!=", value=0)
    assert _stuck(b) == [(1, 0, 0, "ready", "!=", 0)]


@pytest.mark.parametrize("op, value", [("set", 9), ("cas", 9), ("add", -1)])
def test_a_set_cas_or_negative_add_is_not_judged(op, value):
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).signal(dst=1, flag="ready", op=op, value=value, compare=0 if op == "cas" else None)
    b.program(gpu=1, wg=0).wait(flag="ready", cond="==", value=1000)
    assert _stuck(b) == []


def test_bulk_signals_are_keyed_by_their_row_dst():
    # Every GPU's workgroup 0 signals GPU 0 and waits for its own copy: GPU 0 gets 4 adds, GPUs 1-3 none.
    b = _builder(gpus=4, workgroups=1)
    ring = b.programs_at(gpus=np.arange(4), wgs=0)
    ring.signal(dst=np.zeros(4, dtype=np.int64), flag="ready")
    ring.wait(flag="ready", cond=">=", value=np.array([4, 1, 1, 1]))
    assert _stuck(b) == [(g, 0, 1, "ready", ">=", 1) for g in (1, 2, 3)]


def test_many_stuck_waits_are_counted_after_the_first_ten():
    b = _builder(gpus=1, workgroups=15)
    for wg in range(15):
        b.program(gpu=0, wg=wg).wait(flag="never", cond=">=", value=1)
    found = check_flags(b.build())
    assert found.stuck_count == 15 and len(found.stuck) == 10
    lines = found.stuck_lines()
    assert len(lines) == 11 and lines[-1] == "... and 5 more" and lines[9].startswith("gpu 0 wg 9 op 0:")


def test_a_misspelt_flag_is_listed_as_changed_but_never_waited_for():
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).signal(dst=1, flag="raedy")
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1)
    found = check_flags(b.build())
    assert found.stuck_count == 1 and found.unwaited == ("raedy",)


@pytest.mark.parametrize("gpus", [2, 3, 8])
def test_generated_collectives_have_no_stuck_waits(gpus):
    W = 2
    profiles = [G.gemv_allreduce(gpus=gpus, workgroups=W, vector_bytes=gpus * W * 256),
                G.neighbor_exchange(gpus=gpus, nbytes=(gpus - 1) * W * 4096, neighbors=gpus - 1, workgroups=W)]
    profiles += [getattr(G, fn)(gpus=gpus, nbytes=gpus * W * 2 * 512, workgroups=W, chunks=2)
                 for fn in ("ring_allreduce", "direct_allreduce", "all_gather", "reduce_scatter", "all_to_all")]
    b = ProfileBuilder(gpus=gpus, workgroups=W, name="calls")
    for kind in ("all_reduce", "broadcast", "barrier", "all_to_all"):  # two calls: counters keep counting
        for _ in range(2):
            b.collective(kind, 0 if kind == "barrier" else gpus * W * 512, workgroups=W)
    profiles.append(b.build())
    for p in profiles:
        found = check_flags(p)
        assert (found.stuck_count, found.unwaited) == (0, ()), (p.name, found.stuck_lines())


@pytest.mark.parametrize("op, algo, proto", [("all_reduce", "ring", "LL"), ("all_reduce", "tree", "LL128"),
                                             ("all_reduce", "nvls", "Simple"), ("all_gather", "ring", "Simple"),
                                             ("alltoall", "p2p", "LL128"), ("broadcast", "ring", "LL")])
def test_nccl_collectives_have_no_stuck_waits(repo, op, algo, proto):
    # A connection's credit flags (head) are returned whether or not the sender ever waits for them, so only
    # the stuck waits are asserted here.
    from eidola.workload.nccl import build_collective

    plat = eidola.load_platform(repo / "platforms/dgx-h100.yaml")
    profile, _ = build_collective(plat, op, 1 << 20, algo=algo, proto=proto, calls=2)
    assert check_flags(profile).stuck_count == 0


def test_validate_refuses_a_wait_nothing_signals(cli, write_platform, tmp_path):
    b = _builder()
    b.program(gpu=0, wg=0).signal(dst=1, flag="raedy")
    b.program(gpu=0, wg=1).compute(ns=100).wait(flag="never", cond="==", value=7)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1)
    prof = tmp_path / "stuck.yaml"
    b.build().save(prof)
    plat = write_platform(gpus=2, workgroups=2)
    r = cli("validate", plat, "--profile", prof)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert f"{prof}: 2 wait(s) can never be satisfied" in r.stderr
    assert "gpu 0 wg 1 op 1: waits for never == 7, but no op changes flag 'never' on GPU 0" in r.stderr
    assert "gpu 1 wg 0 op 0: waits for ready >= 1, but no op changes flag 'ready' on GPU 1" in r.stderr
    assert "never waited for (misspelt?): raedy" in r.stderr
    # run simulates anyway (its deadlock report is the same as before) after a warning line.
    r = cli("run", plat, "--profile", prof, "--out", tmp_path / "out")
    assert r.returncode == 3, r.stderr
    warning = r.stderr.index("warning: ")
    assert r.stderr.index("gpu 0 wg 1 op 1: waits for never == 7, but", warning) < r.stderr.index("deadlock found")
    assert "(and 1 more; eidola validate lists them)" in r.stderr


def test_validate_accepts_a_wait_a_put_satisfies(cli, write_platform, tmp_path):
    b = _builder(workgroups=1)
    b.program(gpu=0, wg=0).put(dst=1, buffer="data", offset=0, nbytes=256, flag="ready")
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1).wait(flag="never", cond="==", value=0)
    prof = tmp_path / "put.yaml"
    b.build().save(prof)
    r = cli("validate", write_platform(gpus=2, workgroups=1), "--profile", prof)
    assert r.returncode == 0 and ": ok (" in r.stdout, r.stderr
    assert "wait(s)" not in r.stdout + r.stderr and "note:" not in r.stdout, r.stdout


def test_a_plugin_gpu_may_write_the_flag(cli, repo):
    # examples/user_gpu: GPU 1 is a user's model that stores GPU 0's flag from outside the profile, so the
    # profile alone does not decide; validate says so in a note and exits 0.
    r = cli("validate", repo / "examples/user_gpu/user-gpu-2gpu.yaml")
    assert r.returncode == 0, r.stderr
    assert ("note: 1 wait(s) can be satisfied only from outside the profile, by plugin GPU(s) 1 "
            "(first: gpu 0 wg 0 op 0: waits for ready >= 1)") in r.stdout
