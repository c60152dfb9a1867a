"""The put op on the Python side: builder, bulk appends, YAML round trip and bad input (no simulation)."""

import re

import numpy as np
import pytest

from eidola.errors import ProfileError
from eidola.profile import Op, ProfileBuilder, load_profile
from eidola.workload.ops import LINE_FORMATS


def _builder():
    b = ProfileBuilder(gpus=4, workgroups=2, name="puts")
    b.flag("f").flag("g").buffer("fifo", 4096)
    return b


def test_put_keeps_every_argument_and_fills_defaults():
    b = _builder()
    b.program(0, 0).put(dst=1, buffer="fifo", offset=16, nbytes=128, flag="f")
    b.program(0, 0).put(2, "fifo", 0, 64, "g", value=7, op="set")
    prog = b.build().program(0, 0)
    assert prog[0] == Op("put", (("dst", 1), ("buffer", "fifo"), ("offset", 16), ("nbytes", 128), ("flag", "f"),
                                 ("value", 1), ("op", "add")))
    assert prog[1].as_dict() == {"dst": 2, "buffer": "fifo", "offset": 0, "nbytes": 64, "flag": "g", "value": 7,
                                 "op": "set"}


def test_put_round_trips_through_yaml_and_dict(tmp_path):
    b = _builder()
    p = b.program(1, 1)
    for i in range(3):  # the second and third take the builder's fast path (template seen before)
        p.put(dst=(i + 2) % 4, buffer="fifo", offset=128 * i, nbytes=128, flag="f")
    p.put(dst=0, buffer="fifo", offset=0, nbytes=16, flag="g", value=-3, op="set").wait(flag="f", cond=">=", value=1)
    prof = b.build()
    prof.save(tmp_path / "p.yaml")
    text = (tmp_path / "p.yaml").read_text()
    # Defaults are left out of the file, as for every op.
    assert "  - [put, {dst: 2, buffer: fifo, offset: 0, nbytes: 128, flag: f}]\n" in text
    assert "  - [put, {dst: 0, buffer: fifo, offset: 0, nbytes: 16, flag: g, value: -3, op: set}]\n" in text
    again = load_profile(tmp_path / "p.yaml")
    assert again == prof
    assert [op.kind for op in again.program(1, 1)] == ["put"] * 4 + ["wait"]
    assert [op["dst"] for op in again.program(1, 1)[:3]] == [2, 3, 0]
    assert type(prof).from_dict(prof.to_dict()) == prof
    assert prof.used_gpus() == frozenset({0, 1, 2, 3})


def test_put_in_bulk_matches_put_one_by_one():
    one = _builder()
    for g in range(4):
        one.program(g, 0).put(dst=(g + 1) % 4, buffer="fifo", offset=64 * g, nbytes=64, flag="f")
    bulk = _builder()
    g = np.arange(4)
    bulk.programs_at(g, 0).put(dst=(g + 1) % 4, buffer="fifo", offset=64 * g, nbytes=64, flag="f")
    assert bulk.build() == one.build()


@pytest.mark.parametrize("args, expected", [
    ({"flag": "nope"}, "gpu 0 wg 1 op 1 (put): flag 'nope' is not declared"),
    ({"offset": 4000, "nbytes": 128}, "gpu 0 wg 1 op 1 (put): offset 4000 + nbytes 128 = 4128 exceeds buffer 'fifo'"),
    ({"op": "cas"}, "gpu 0 wg 1 op 1 (put): op 'cas' is not one of add, set"),
    ({"value": 1.5}, "gpu 0 wg 1 op 1 (put): value must be an int"),
    ({"dst": 4}, "gpu 0 wg 1 op 1 (put): dst 4 is out of range"),
    ({"nbytes": 0}, "gpu 0 wg 1 op 1 (put): nbytes 0 is out of range"),
])
def test_bad_put_names_gpu_wg_and_op(args, expected):
    b = _builder()
    p = b.program(0, 1).compute(ns=1)
    good = {"dst": 1, "buffer": "fifo", "offset": 0, "nbytes": 128, "flag": "f"}
    p.put(**good)  # a good put first: the bad one must not slip through the fast path
    p = b.program(0, 1)
    b2 = _builder()
    p2 = b2.program(0, 1).compute(ns=1)
    with pytest.raises(ProfileError, match=re.escape(expected)):
        p2.put(**{**good, **args})
    # The same put after a good one of the same template: the fast path must reject it too.
    with pytest.raises(ProfileError, match=r"\(put\)"):
        p.put(**{**good, **args})


def test_bad_put_in_a_file_names_file_gpu_wg_and_op(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("eidola_profile: 2\nname: bad\ngpus: 2\nworkgroups: 1\nflags: [f]\nbuffers: {b: 64}\n"
                    "programs:\n- gpu: 0\n  wg: 0\n  ops:\n  - [put, {dst: 1, buffer: b, offset: 0, nbytes: 16, "
                    "flag: f, op: max}]\n")
    with pytest.raises(ProfileError, match=r"bad\.yaml.*gpu 0 wg 0 op 0 \(put\): op 'max' is not one of add, set"):
        load_profile(path)


def test_line_formats_give_the_protocols_wire_efficiency():
    # LL: 8 B of data per 16 B line; LL128: 120 of 128; RCCL's LL128: 56 of 64.
    assert {k: p / line for k, (line, p) in LINE_FORMATS.items()} == {"LL": 0.5, "LL128": 0.9375,
                                                                       "LL128_rccl": 0.875}
