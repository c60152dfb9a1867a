"""Property-based tests (hypothesis) over platform dicts, ProfileBuilder programs and timestamps CSVs.

The invariants:
- every outcome is a result, a ConfigError/ProfileError (bad input) or a DeadlockError, never
  another exception; a program deadlocks exactly when, signals being adds that only raise flags,
  some wait can never be satisfied by the signals that can be issued (worked out from the programs
  alone), and the deadlock report names exactly those waits and the flags' final values;
- bytes are conserved: what each GPU sends (writes, plus 8 bytes per atomic signal) and receives
  (those, plus the data of its reads) is what its program says, and on the packet fabric each
  (source, destination) pair carries exactly the bytes its programs address to it;
- the same seed gives identical result arrays.

Examples are derandomized (the same cases every run) and bounded, so this file stays well within
the test command's two-minute fuzz budget; scripts/fuzz.sh runs long campaigns.
"""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import eidola
from eidola.errors import ConfigError, DeadlockError, ProfileError
from eidola.platform.yaml_io import platform_from_dict
from eidola.profile import ProfileBuilder
from eidola.run.simulate import check
from eidola.workload.importers.timestamps import COLUMNS, import_timestamps

# Random programs may wait for flags nothing sets: those runs rightly warn before their deadlock report, which the
# properties compare.
pytestmark = pytest.mark.filterwarnings("ignore::eidola.StuckWaitWarning")

BOUNDED = settings(derandomize=True, database=None, deadline=None, max_examples=60,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SIMULATED = settings(BOUNDED, max_examples=25)

# ---------------------------------------------------------------- platform dicts

_ANY = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["300ns", "1GHz", "64GB/s", "4KiB", "0ns", "-1ns", "1e400s", "1 TiB", "12", "ring", "ideal"]),
    st.lists(st.integers(min_value=-3, max_value=2**40), max_size=3), st.dictionaries(st.text(max_size=4), st.integers()),
)


@st.composite
def platform_dicts(draw: st.DrawFn) -> dict:
    """A shorthand platform document: mostly sensible values, with wrong ones mixed in."""
    def maybe(good: st.SearchStrategy) -> object:
        return draw(st.one_of(good, _ANY) if draw(st.integers(0, 5)) == 0 else good)

    fabric: dict = {"model": maybe(st.sampled_from(["ideal", "packet"]))}
    if fabric["model"] == "packet":
        fabric["topology"] = maybe(st.sampled_from(["fully_connected", "ring", "switch", "mesh2d", "torus2d"]))
        if fabric["topology"] in ("mesh2d", "torus2d"):
            fabric["dims"] = maybe(st.lists(st.integers(1, 4), min_size=2, max_size=2))
        fabric["link"] = {"bandwidth": maybe(st.sampled_from(["64GB/s", "1TB/s", "10GB/s"])),
                          "latency": maybe(st.sampled_from(["100ns", "1ns", "0ns"]))}
    else:
        fabric["latency"] = maybe(st.sampled_from(["500ns", "0ns", "1us"]))
    doc = {
        "eidola": maybe(st.just(1)), "name": maybe(st.sampled_from(["p", "../x", "a b"])),
        "gpus": {"count": maybe(st.integers(1, 8)), "workgroups": maybe(st.integers(1, 4)),
                 "max_payload": maybe(st.sampled_from(["256B", "64B", "4KiB"])),
                 "memory": {"latency": maybe(st.sampled_from(["300ns", "10ns"]))}},
        "fabric": fabric,
        "address_map": {"base": maybe(st.just(0)), "stride": maybe(st.sampled_from(["1TiB", "1MiB", "4KiB"]))},
        "seed": maybe(st.integers(0, 2**32)),
        "limits": maybe(st.just({"wall": "60s"})),
    }
    if draw(st.integers(0, 9)) == 0:
        doc[draw(st.sampled_from(["extra", "gpus", "fabric", "check_protocol"]))] = draw(_ANY)
    return doc


def _small_profile() -> eidola.Profile:
    b = ProfileBuilder(gpus=1, workgroups=1, name="one")
    b.flag("f")
    b.program(gpu=0, wg=0).compute(ns=10).signal(dst=0, flag="f").wait(flag="f", cond=">=", value=1)
    return b.build()


@BOUNDED
@given(platform_dicts())
def test_platform_dicts_load_or_fail_cleanly(doc: dict) -> None:
    try:
        plat = platform_from_dict(doc, source="fuzz.yaml")
        check(plat, _small_profile())
    except ConfigError as e:
        assert str(e)  # a message, never an empty error


# ---------------------------------------------------------------- ProfileBuilder programs

_OP = st.one_of(
    st.tuples(st.just("compute"), st.integers(0, 2000)),
    st.tuples(st.just("write"), st.integers(0, 3), st.integers(0, 3), st.integers(1, 1500)),
    st.tuples(st.just("read"), st.integers(0, 3), st.integers(0, 3), st.integers(1, 700)),
    st.tuples(st.just("signal"), st.integers(0, 3), st.integers(0, 1)),
    st.tuples(st.just("wait"), st.integers(0, 1), st.integers(0, 3), st.sampled_from(["poll", "syncmon"])),
    st.tuples(st.just("local"), st.integers(0, 3), st.integers(0, 3)),
)
_PROGRAMS = st.dictionaries(st.tuples(st.integers(0, 3), st.integers(0, 1)), st.lists(_OP, max_size=6), max_size=6)


def _build(programs: dict, gpus: int = 4) -> tuple[eidola.Profile, dict, dict]:
    """The profile, and the bytes each GPU sends and receives as worked out from the programs alone."""
    b = ProfileBuilder(gpus=gpus, workgroups=2, name="prop")
    b.flag("f0")
    b.flag("f1")
    b.buffer("buf", nbytes=4096)
    sent: Counter = Counter()
    received: Counter = Counter()
    pair: Counter = Counter()
    for (g, w), ops in sorted(programs.items()):
        p = b.program(gpu=g, wg=w)
        for op in ops:
            kind = op[0]
            if kind == "compute":
                p.compute(ns=op[1])
            elif kind in ("write", "read"):
                _, dst, slot, n = op
                getattr(p, kind)(dst=dst, buffer="buf", offset=slot * 512, nbytes=n)
                if dst == g:
                    continue  # a GPU's access to its own memory never leaves it: not counted as traffic
                if kind == "write":
                    sent[g] += n
                    received[dst] += n
                    pair[g, dst] += n
                else:
                    received[g] += n  # the read's data comes back to the reader
            elif kind == "signal":
                p.signal(dst=op[1], flag=f"f{op[2]}", op="add", value=1)
                if op[1] == g:
                    continue
                sent[g] += 8  # an atomic carries one 8-byte flag word
                received[op[1]] += 8
                pair[g, op[1]] += 8
            elif kind == "wait":
                p.wait(flag=f"f{op[1]}", cond=">=", value=op[2], mode=op[3], interval_ns=50)
            else:
                p.local(reads=op[1], writes=op[2] or (0 if op[1] else 1), nbytes=64)
    return b.build(), sent, {"received": received, "pair": pair}


def _never_satisfied(programs: dict) -> dict:
    """The waits that can never be satisfied, worked out from the programs alone: (gpu, wg) ->
    (op index, flag, value, the flag's final value).

    Every signal adds 1 to its flag and every wait is ">=", so flags only rise and running every
    program as far as it can go, in any order, reaches the same end: a wait still short there can
    never be satisfied, and its program never issues the signals after it.
    """
    flags: Counter = Counter()  # (gpu, flag) -> value
    pc = dict.fromkeys(programs, 0)
    moved = True
    while moved:
        moved = False
        for key, ops in programs.items():
            g = key[0]
            while pc[key] < len(ops):
                op = ops[pc[key]]
                if op[0] == "wait" and flags[g, f"f{op[1]}"] < op[2]:
                    break
                if op[0] == "signal":
                    flags[op[1], f"f{op[2]}"] += 1
                pc[key] += 1
                moved = True
    return {key: (pc[key], f"f{ops[pc[key]][1]}", ops[pc[key]][2], flags[key[0], f"f{ops[pc[key]][1]}"])
            for key, ops in programs.items() if pc[key] < len(ops)}


def _platform(repo: Path, fabric: str) -> eidola.Platform:
    if fabric == "ideal":
        return eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml", {"gpus.workgroups": 2})
    return eidola.load_platform(repo / "platforms/ring-8gpu.yaml", {"gpus.count": 4, "gpus.workgroups": 2})


@SIMULATED
@given(_PROGRAMS, st.sampled_from(["ideal", "packet"]))
def test_programs_conserve_bytes_or_deadlock(repo: Path, programs: dict, fabric: str) -> None:
    profile, sent, expected = _build(programs)
    stuck = _never_satisfied(programs)
    try:
        res = eidola.simulate(_platform(repo, fabric), profile)
    except DeadlockError as e:
        event("deadlock")
        assert stuck, "a deadlock was reported, but every wait can be satisfied"
        got = {(r["gpu"], r["wg"]): (r["op"], r["flag"], r["value"], r["flag_value"]) for r in e.report["stuck"]}
        assert got == stuck
        return
    event("finished")
    assert not stuck, f"finished, but these waits can never be satisfied: {stuck}"
    assert res.gpus["bytes_sent"].tolist() == [sent[g] for g in range(4)]
    assert res.gpus["bytes_received"].tolist() == [expected["received"][g] for g in range(4)]
    if fabric == "packet":
        carried = {(int(r["src"]), int(r["dst"])): int(r["bytes"]) for r in res.pairs if r["bytes"]}
        assert carried == dict(expected["pair"])


@settings(SIMULATED, max_examples=10)
@given(_PROGRAMS, st.integers(0, 2**32), st.floats(0.01, 0.5))
def test_same_seed_gives_identical_arrays(repo: Path, programs: dict, seed: int, sigma: float) -> None:
    base, _, _ = _build(programs)
    d = base.to_dict()  # the same programs, with jitter added through the dict form
    d["variability"] = {"jitter": {"dist": "lognormal", "mu": 0, "sigma": sigma}}
    profile = eidola.Profile.from_dict(d)
    plat = _platform(repo, "packet")
    runs = []
    for _ in range(2):
        try:
            runs.append(eidola.simulate(plat, profile, seed=seed))
        except DeadlockError as e:
            runs.append(e.report)
    a, b2 = runs
    if isinstance(a, dict):
        assert a == b2
        return
    for table in ("gpus", "workgroups", "links", "pairs"):
        assert np.array_equal(getattr(a, table), getattr(b2, table)), table
    assert a.kernel_time_ns == b2.kernel_time_ns


# ---------------------------------------------------------------- timestamps CSVs

_CELL = st.one_of(st.just(""), st.integers(-2, 4).map(str), st.sampled_from(["x", "1.5", "-0", "1e3", "99999999999999999999"]))
_ROW = st.fixed_dictionaries({
    "gpu": st.one_of(st.integers(0, 2).map(str), _CELL), "wg": st.one_of(st.integers(0, 1).map(str), _CELL),
    "t_ns": st.one_of(st.decimals(0, 10_000, places=2).map(str), _CELL),
    "event": st.sampled_from(["start", "write", "signal", "wait_begin", "wait_end", "end", "bogus", ""]),
    "peer": st.one_of(st.integers(0, 2).map(str), _CELL), "flag": st.sampled_from(["", "f", "g", "imported", "9x"]),
    "value": _CELL, "nbytes": st.one_of(st.integers(1, 5000).map(str), _CELL),
})


@BOUNDED
@given(st.lists(_ROW, min_size=0, max_size=12))
def test_timestamps_csv_imports_or_fails_cleanly(tmp_path_factory, rows: list) -> None:
    path = tmp_path_factory.mktemp("csv") / "run.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    try:
        profile = import_timestamps(path)
    except ProfileError as e:
        assert str(e).startswith(str(path))  # names the file
        return
    again = path.with_suffix(".yaml")
    profile.save(again)
    assert eidola.load_profile(again) == profile
