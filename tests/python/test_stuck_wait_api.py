"""The stuck-wait check through the Python API (run.simulate.check_waits, the one path behind `eidola run` and
`eidola validate` too): simulate() warns (StuckWaitWarning) before it runs into the deadlock, as `eidola run` does;
check() refuses the profile (ProfileError), as `eidola validate` does. Profiles made by hand."""

import warnings

import pytest

import eidola
from eidola.profile import ProfileBuilder
from eidola.run.simulate import StuckWaitWarning, check, check_waits


def _platform(write_platform):
    return eidola.load_platform(write_platform(gpus=2, workgroups=2))


def _stuck_profile():
    # GPU 1 wg 1 waits at its op 2 for ready >= 3, but the only op that changes GPU 1's ready is GPU 0's one signal
    # adding 2: the flag can reach 2 at most, so the wait never ends.
    b = ProfileBuilder(gpus=2, workgroups=2, name="stuck")
    b.flag("ready")
    b.program(gpu=0, wg=0).compute(ns=100).signal(dst=1, flag="ready", op="add", value=2)
    b.program(gpu=1, wg=1).compute(ns=50).compute(ns=50).wait(flag="ready", cond=">=", value=3)
    return b.build()


def _satisfiable_profile():
    # The same, but two signals add 2 each (ready reaches 4) and the wait asks for 3 or more.
    b = ProfileBuilder(gpus=2, workgroups=2, name="fine")
    b.flag("ready")
    p = b.program(gpu=0, wg=0).compute(ns=100)
    p.signal(dst=1, flag="ready", op="add", value=2).signal(dst=1, flag="ready", op="add", value=2)
    b.program(gpu=1, wg=1).compute(ns=50).compute(ns=50).wait(flag="ready", cond=">=", value=3)
    return b.build()


WHERE = "gpu 1 wg 1 op 2: waits for ready >= 3"


def test_simulate_warns_of_a_stuck_wait_and_runs_into_the_deadlock(write_platform):
    plat = _platform(write_platform)
    with pytest.warns(StuckWaitWarning) as caught, pytest.raises(eidola.DeadlockError):
        eidola.simulate(plat, _stuck_profile())
    (w,) = [c for c in caught if c.category is StuckWaitWarning]
    assert str(w.message) == (f"profile 'stuck': {WHERE}, but flag 'ready' on GPU 1 can reach at most 2: the one op "
                              "that changes it (a signal or put with dst 1 and flag ready) adds 2: the run will end "
                              "in a deadlock")
    (stuck,) = w.message.found.stuck
    assert (stuck.gpu, stuck.wg, stuck.op, stuck.flag, stuck.writers, stuck.reach) == (1, 1, 2, "ready", 1, 2)
    assert w.filename == __file__  # names the caller's line, not the library's


def test_simulate_names_the_profile_file(write_platform, tmp_path):
    prof = tmp_path / "stuck.yaml"
    _stuck_profile().save(prof)
    with pytest.warns(StuckWaitWarning, match=rf"^{prof}: {WHERE}, but") as caught, pytest.raises(eidola.DeadlockError):
        eidola.simulate(_platform(write_platform), prof)
    assert len([c for c in caught if c.category is StuckWaitWarning]) == 1


def test_check_refuses_a_stuck_wait(write_platform):
    with pytest.raises(eidola.ProfileError) as e:
        check(_platform(write_platform), _stuck_profile(), source="my.yaml")
    assert str(e.value).splitlines() == [
        "my.yaml: 1 wait(s) can never be satisfied by the profile's ops, so the run would end in a deadlock:",
        f"  {WHERE}, but flag 'ready' on GPU 1 can reach at most 2: the one op that changes it (a signal or put with "
        "dst 1 and flag ready) adds 2"]
    assert e.value.exit_status == 2


def test_a_satisfiable_wait_passes_quietly(write_platform):
    plat, prof = _platform(write_platform), _satisfiable_profile()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StuckWaitWarning)
        check(plat, prof)
        assert check_waits(plat, prof).stuck_count == 0
        res = eidola.simulate(plat, prof)
    assert res.workgroups["finish_ns"].max() > 0


def test_the_warning_can_be_made_an_error_or_silenced(write_platform):
    plat, prof = _platform(write_platform), _stuck_profile()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StuckWaitWarning)
        with pytest.raises(StuckWaitWarning, match=WHERE):
            eidola.simulate(plat, prof)  # raised before anything is built or run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StuckWaitWarning)
        assert check_waits(plat, prof).stuck_count == 1
