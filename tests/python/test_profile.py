"""Tests of the profile builder, its validation and the YAML file format."""

import re

import pytest
import yaml

from eidola.errors import ProfileError
from eidola.profile import Op, Profile, ProfileBuilder, load_profile
from eidola.workload import profile_yaml as profile_module


def example_builder():
    """The 4-GPU example of the profile docs, returned unbuilt."""
    b = ProfileBuilder(gpus=4, workgroups=2, name="example")
    b.flag("ready")
    b.buffer("partials", nbytes=4 * 4096)
    for g in range(4):
        for w in range(2):
            p = b.program(gpu=g, wg=w)
            p.compute(ns=1500)
            for peer in (x for x in range(4) if x != g):
                p.write(dst=peer, buffer="partials", offset=g * 4096, nbytes=4096)
                p.signal(dst=peer, flag="ready", op="add", value=1)
            p.wait(flag="ready", cond=">=", value=6, mode="poll", interval_ns=100)
            p.compute(ns=300)
    return b


def small():
    """A 2-GPU builder with one flag and a 1 KiB buffer, and the program of gpu 1 wg 0."""
    b = ProfileBuilder(gpus=2, workgroups=1, name="small")
    b.flag("ready")
    b.buffer("data", 1024)
    return b, b.program(gpu=1, wg=0)


def test_example_builds():
    prof = example_builder().build()
    assert prof.gpus == 4 and prof.workgroups == 2 and prof.name == "example"
    assert prof.flags == ("ready",)
    assert prof.buffers == (("partials", 16384),)
    assert prof.buffer_size("partials") == 16384
    # compute + 3 * (write + signal) + wait + compute
    assert prof.ops_count() == 8 * (1 + 6 + 1 + 1)
    assert [key for key, _ in prof.programs] == [(g, w) for g in range(4) for w in range(2)]
    ops = prof.program(2, 1)
    assert ops[0] == Op("compute", (("ns", 1500), ("cycles", None)))
    # the example walks peers in increasing order, skipping itself
    assert ops[1].kind == "write" and ops[1]["dst"] == 0 and ops[1]["offset"] == 8192
    assert ops[2].as_dict() == {"dst": 0, "flag": "ready", "op": "add", "value": 1, "compare": None,
                                 "scope": "workgroup", "overlap": False}
    wait = ops[7]
    assert wait.as_dict() == {"flag": "ready", "cond": ">=", "value": 6, "mode": "poll", "interval_ns": 100,
                              "max_interval_ns": 1600, "wake": "all"}
    assert wait.get("nope", 5) == 5
    with pytest.raises(KeyError):
        wait["nope"]
    assert prof.program(9, 9) == ()


def test_save_load_round_trip(tmp_path):
    prof = example_builder().build()
    path = tmp_path / "example.yaml"
    prof.save(path)
    again = load_profile(path)
    assert again == prof
    # The fast reader and PyYAML must agree on what the file says.
    assert Profile.from_dict(yaml.safe_load(path.read_text())) == prof


def test_dict_round_trip():
    prof = example_builder().build()
    assert Profile.from_dict(prof.to_dict()) == prof


def test_round_trip_keeps_every_op_form(tmp_path):
    b = ProfileBuilder(gpus=3, workgroups=2, name="odd name: with 'quotes'")
    b.flag("yes")  # a YAML 1.1 boolean word: must come back as a string
    b.flag("f.2")
    b.buffer("on", 100)
    p = b.program(gpu=2, wg=1)
    p.compute(cycles=7).compute(ns=12.5).compute(ns=1e-05)  # repr "1e-05": an exponent without a dot
    p.read(dst=0, buffer="on", offset=99, nbytes=1).write(dst=2, buffer="on", offset=0, nbytes=100)
    p.signal(dst=1, flag="f.2", op="cas", value=-5, compare=2**63 - 1).signal(dst=0, flag="yes", op="set", value=0)
    for cond in ("==", "!=", ">=", ">", "<=", "<"):
        p.wait(flag="yes", cond=cond, value=-1)
    p.wait(flag="f.2", cond="==", value=3, mode="spin_yield", interval_ns=50.5, max_interval_ns=1000, wake="one")
    p.wait(flag="f.2", cond="==", value=3, mode="syncmon", interval_ns=10, max_interval_ns=160.0)
    p.local(reads=3).local(writes=2, nbytes=128)
    b.program(gpu=0, wg=0).compute(ns=0)
    b.program(gpu=1, wg=1)  # stays empty: not part of the profile
    prof = b.build()
    assert [key for key, _ in prof.programs] == [(0, 0), (2, 1)]
    path = tmp_path / "odd.yaml"
    prof.save(path)
    again = load_profile(path)
    assert again == prof
    assert again.flags == ("yes", "f.2")
    assert again.program(2, 1)[13]["max_interval_ns"] == 1000
    assert Profile.from_dict(yaml.safe_load(path.read_text()), source=str(path)) == prof
    # Saved files take the fast reader, which must return exactly what YAML reads.
    assert profile_module._fast_load(path.read_bytes()) == yaml.safe_load(path.read_text())


def test_flags_written_as_booleans_stay_in_the_fast_reader(tmp_path):
    # save() writes a signal's overlap and a write's blocking as True; the fast reader refused the word, so the
    # whole file fell back to PyYAML: an imported 377,000-op profile (whose ring signals overlap) loaded in 37.6 s,
    # and a 1.13 M-op one passed the YAML size limit and could not be run at all (a user trial, 2026-12-07).
    b = ProfileBuilder(gpus=2, workgroups=1, name="bools")
    b.flag("f")
    b.buffer("d", nbytes=64)
    b.program(gpu=0, wg=0).write(dst=1, buffer="d", offset=0, nbytes=64, blocking=True).signal(
        dst=1, flag="f", overlap=True).signal(dst=1, flag="f", overlap=False)
    path = tmp_path / "bools.yaml"
    b.build().save(path)
    assert "overlap: True" in path.read_text() and "blocking: True" in path.read_text()
    fast = profile_module._fast_load(path.read_bytes())
    assert fast is not None and fast == yaml.safe_load(path.read_text())
    assert load_profile(path) == b.build()


def test_file_may_omit_defaults_and_use_any_layout(tmp_path):
    path = tmp_path / "hand.yaml"
    path.write_text(
        "eidola_profile: 1\nname: hand\ngpus: 2\nworkgroups: 1\nflags: [f]\nbuffers: {b: 8}\n"
        "programs:\n"
        "- {gpu: 1, wg: 0, ops: [[wait, {flag: f, cond: '>=', value: 1, interval_ns: 20}]]}  # comment\n"
        "- gpu: 0\n  wg: 0\n  ops:\n  - [write, {dst: 1, buffer: b, offset: 0, nbytes: 8}]\n  - [signal, {dst: 1, flag: f}]\n"
    )
    prof = load_profile(path)
    assert prof.program(1, 0)[0]["max_interval_ns"] == 320
    assert prof.program(0, 0)[1].as_dict() == {"dst": 1, "flag": "f", "op": "add", "value": 1, "compare": None,
                                                   "scope": "workgroup", "overlap": False}


def test_profile_is_immutable():
    prof = example_builder().build()
    with pytest.raises(AttributeError):
        prof.gpus = 5
    with pytest.raises(AttributeError):
        prof.programs[0][1][0].kind = "read"


# ---------------------------------------------------------------- builder validation

@pytest.mark.parametrize("call, fragments", [
    (lambda p: p.write(dst=0, buffer="partialz", offset=0, nbytes=8), ["(write)", "'partialz'", "declared: data"]),
    (lambda p: p.signal(dst=0, flag="redy"), ["(signal)", "'redy'", "declared: ready"]),
    (lambda p: p.wait(flag="redy", cond="==", value=1), ["(wait)", "'redy'"]),
    (lambda p: p.write(dst=2, buffer="data", offset=0, nbytes=8), ["(write)", "dst 2", "0 <= dst < 2"]),
    (lambda p: p.read(dst=-1, buffer="data", offset=0, nbytes=8), ["(read)", "dst -1"]),
    (lambda p: p.write(dst=0, buffer="data", offset=1000, nbytes=25), ["(write)", "1025", "size 1024"]),
    (lambda p: p.write(dst=0, buffer="data", offset=0, nbytes=0), ["(write)", "nbytes 0"]),
    (lambda p: p.write(dst=0, buffer="data", offset=True, nbytes=8), ["(write)", "offset", "bool True"]),
    (lambda p: p.signal(dst=0, flag="ready", value=False), ["(signal)", "value", "bool False"]),
    (lambda p: p.write(dst=1.0, buffer="data", offset=0, nbytes=8), ["(write)", "dst", "float 1.0"]),
    (lambda p: p.wait(flag="ready", cond="=>", value=1), ["(wait)", "cond '=>'", ">="]),
    (lambda p: p.wait(flag="ready", cond="==", value=1, mode="busy"), ["(wait)", "mode 'busy'", "syncmon"]),
    (lambda p: p.wait(flag="ready", cond="==", value=1, wake="some"), ["(wait)", "wake 'some'"]),
    (lambda p: p.wait(flag="ready", cond="==", value=1, interval_ns=0), ["(wait)", "interval_ns", "> 0"]),
    (lambda p: p.wait(flag="ready", cond="==", value=1, interval_ns=100, max_interval_ns=50),
     ["(wait)", "max_interval_ns 50", ">= interval_ns 100"]),
    (lambda p: p.signal(dst=0, flag="ready", op="cas", value=1), ["(signal)", "'cas' requires compare"]),
    (lambda p: p.signal(dst=0, flag="ready", op="add", value=1, compare=0), ["(signal)", "compare", "'add'"]),
    (lambda p: p.signal(dst=0, flag="ready", op="xor"), ["(signal)", "op 'xor'"]),
    (lambda p: p.signal(dst=0, flag="ready", value=2**63), ["(signal)", "value", str(2**63)]),
    (lambda p: p.compute(), ["(compute)", "neither"]),
    (lambda p: p.compute(ns=1, cycles=1), ["(compute)", "both"]),
    (lambda p: p.compute(ns=-1), ["(compute)", "ns", ">= 0"]),
    (lambda p: p.compute(ns=float("nan")), ["(compute)", "finite"]),
    (lambda p: p.compute(cycles=1.5), ["(compute)", "cycles", "float"]),
    (lambda p: p.local(), ["(local)", "reads + writes"]),
    (lambda p: p.local(reads=1, nbytes=0), ["(local)", "nbytes 0"]),
])
def test_builder_rejects_bad_op(call, fragments):
    _, p = small()
    p.compute(ns=1).compute(ns=2)  # so the bad op is op 2
    with pytest.raises(ProfileError) as info:
        call(p)
    msg = str(info.value)
    assert msg.startswith("gpu 1 wg 0 op 2 ")
    for fragment in fragments:
        assert fragment in msg


def test_bool_never_hits_the_entry_made_for_an_int():
    _, p = small()
    p.signal(dst=0, flag="ready", value=1)
    with pytest.raises(ProfileError, match=r"op 1 .*bool True"):
        p.signal(dst=0, flag="ready", value=True)


def test_builder_rejects_bad_declarations_and_programs():
    b, _ = small()
    assert b.program(gpu=1, wg=0) is b.program(gpu=1, wg=0)   # asked again: the same program
    with pytest.raises(ProfileError, match="gpu 2 is out of range"):
        b.program(gpu=2, wg=0)
    with pytest.raises(ProfileError, match="wg 1 is out of range"):
        b.program(gpu=0, wg=1)
    with pytest.raises(ProfileError, match="gpu must be an int, got bool"):
        b.program(gpu=True, wg=0)
    with pytest.raises(ProfileError, match="flag 'ready' is already declared as a flag"):
        b.flag("ready")
    with pytest.raises(ProfileError, match="buffer 'ready' is already declared as a flag"):
        b.buffer("ready", 8)
    with pytest.raises(ProfileError, match="buffer name '2x' is invalid"):
        b.buffer("2x", 8)
    with pytest.raises(ProfileError, match="flag name 'a-b' is invalid"):
        b.flag("a-b")
    with pytest.raises(ProfileError, match="nbytes 0 is out of range"):
        b.buffer("empty", 0)
    with pytest.raises(ProfileError, match="gpus 0 is out of range"):
        ProfileBuilder(gpus=0, workgroups=1)
    with pytest.raises(ProfileError, match="workgroups must be an int"):
        ProfileBuilder(gpus=1, workgroups="2")
    with pytest.raises(ProfileError, match="name must be a non-empty string"):
        ProfileBuilder(gpus=1, workgroups=1, name="")


# ---------------------------------------------------------------- file validation

HEADER = "eidola_profile: 1\nname: t\ngpus: 2\nworkgroups: 2\nflags: [ready]\nbuffers: {data: 64}\n"


def load_text(tmp_path, text):
    """Write `text` to a file, load it, and return the ProfileError message and the file path."""
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    return str(info.value), str(path)


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ProfileError, match="no such profile file") as info:
        load_profile(path)
    assert str(path) in str(info.value)


def test_bad_yaml_names_path_and_line(tmp_path):
    msg, path = load_text(tmp_path, HEADER + "programs:\n- gpu: 0\n  wg: a: b\n  ops: []\n")
    assert msg.startswith(f"{path}:9:")
    assert "invalid YAML" in msg


def test_broken_json_is_called_json(tmp_path):
    # A truncated .json profile was reported as "invalid YAML" (the parser reads JSON as YAML): a user trial,
    # 2026-12-07. The message names a line and column (the parser's, at the end of the text, where the closing
    # brace is missing).
    path = tmp_path / "broken.json"
    path.write_text('{"eidola_profile": 2, "name": "x",\n "gpus": 2')
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    msg = str(info.value)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: invalid JSON: ", msg) and "YAML" not in msg, msg


def test_duplicate_yaml_key(tmp_path):
    msg, path = load_text(tmp_path, HEADER.replace("{data: 64}", "{data: 64, data: 8}"))
    assert msg.startswith(f"{path}:6:") and "duplicate key 'data'" in msg


def test_empty_file(tmp_path):
    msg, path = load_text(tmp_path, "")
    assert msg.startswith(path) and "empty" in msg


def test_unknown_top_level_key(tmp_path):
    msg, path = load_text(tmp_path, HEADER + "colour: red\n")
    assert msg.startswith(f"{path}: ")
    assert "unknown key 'colour'" in msg and "allowed: eidola_profile, name, gpus" in msg


@pytest.mark.parametrize("version", ["3", "'2'", "true"])
def test_wrong_version(tmp_path, version):
    msg, path = load_text(tmp_path, HEADER.replace("eidola_profile: 1", f"eidola_profile: {version}"))
    assert msg.startswith(f"{path}: ") and "eidola_profile" in msg and "expected 2" in msg


def test_version_1_files_keep_their_blocking_writes(tmp_path):
    # Format 1 predates posted writes: its writes completed on their last acknowledgement.
    text = HEADER + "programs:\n- gpu: 0\n  wg: 0\n  ops:\n  - [write, {dst: 1, buffer: data, offset: 0, nbytes: 8}]\n"
    path = tmp_path / "v1.yaml"
    path.write_text(text)
    assert load_profile(path).program(0, 0)[0]["blocking"] is True
    path.write_text(text.replace("eidola_profile: 1", "eidola_profile: 2"))
    assert load_profile(path).program(0, 0)[0]["blocking"] is False


def test_write_modes_scopes_and_fences_round_trip(tmp_path):
    b = ProfileBuilder(gpus=2, workgroups=1, name="semantics")
    b.flag("f")
    b.buffer("b", nbytes=64)
    b.program(gpu=0, wg=0).write(dst=1, buffer="b", offset=0, nbytes=8).write(dst=1, buffer="b", offset=8, nbytes=8,
                                                                             blocking=True) \
        .fence().signal(dst=1, flag="f", scope="peer").signal(dst=1, flag="f")
    prof = b.build()
    prof.save(tmp_path / "p.yaml")
    again = load_profile(tmp_path / "p.yaml")
    assert again == prof
    ops = again.program(0, 0)
    assert [op.kind for op in ops] == ["write", "write", "fence", "signal", "signal"]
    assert [ops[0]["blocking"], ops[1]["blocking"], ops[3]["scope"], ops[4]["scope"]] == [False, True, "peer", "workgroup"]


@pytest.mark.parametrize("call, needle", [
    (lambda p: p.write(dst=1, buffer="b", offset=0, nbytes=8, blocking=1), "blocking must be true or false"),
    (lambda p: p.signal(dst=1, flag="f", scope="device"), "scope 'device' is not one of workgroup, peer"),
])
def test_bad_write_mode_or_scope(call, needle):
    b = ProfileBuilder(gpus=2, workgroups=1)
    b.flag("f")
    b.buffer("b", nbytes=64)
    with pytest.raises(ProfileError, match=needle):
        call(b.program(gpu=0, wg=0))


def test_missing_version(tmp_path):
    msg, path = load_text(tmp_path, HEADER.replace("eidola_profile: 1\n", ""))
    assert msg.startswith(f"{path}: ") and "missing key 'eidola_profile'" in msg


def program_text(*ops, gpu=1, wg=0):
    """YAML text of one program made of the given op lines."""
    return f"programs:\n- gpu: {gpu}\n  wg: {wg}\n  ops:\n" + "".join(f"  - {op}\n" for op in ops)


OK_OP = "[compute, {ns: 5}]"


@pytest.mark.parametrize("bad_op, fragments", [
    ("[fly, {to: moon}]", ["op 1:", "unknown op kind 'fly'",
                           "allowed: compute, write, read, signal, put, multicast, reduce_load, fence, wait, local"]),
    ("[write, {dst: 0, buffer: data, offset: 0, size: 8}]",
     ["op 1 (write)", "unknown argument 'size'", "allowed: dst, buffer, offset, nbytes"]),
    ("[write, {dst: 0, buffer: data, offset: 0}]", ["op 1 (write)", "missing argument 'nbytes'"]),
    ("[write, {dst: 0, buffer: datum, offset: 0, nbytes: 8}]", ["op 1 (write)", "buffer 'datum' is not declared"]),
    ("[write, {dst: 0, buffer: data, offset: 60, nbytes: 8}]", ["op 1 (write)", "68", "size 64"]),
    ("[write, {dst: 5, buffer: data, offset: 0, nbytes: 8}]", ["op 1 (write)", "dst 5"]),
    ("[write, {dst: true, buffer: data, offset: 0, nbytes: 8}]", ["op 1 (write)", "dst must be an int, got bool"]),
    ("[signal, {dst: 0, flag: ready, op: cas}]", ["op 1 (signal)", "requires compare"]),
    ("[wait, {flag: ready, cond: '=<', value: 1}]", ["op 1 (wait)", "cond '=<'"]),
    ("[wait, {flag: ready, cond: '>', value: 1, mode: spin}]", ["op 1 (wait)", "mode 'spin'"]),
    ("[compute, 5]", ["op 1 (compute):", "expected [kind, {args}]"]),
])
def test_bad_op_in_file(tmp_path, bad_op, fragments):
    msg, path = load_text(tmp_path, HEADER + program_text(OK_OP, bad_op))
    assert msg.startswith(f"{path}: gpu 1 wg 0 op 1")
    for fragment in fragments:
        assert fragment in msg


def test_duplicate_program_in_file(tmp_path):
    text = HEADER + program_text(OK_OP) + program_text(OK_OP, wg=1)[10:] + program_text(OK_OP)[10:]
    msg, path = load_text(tmp_path, text)
    assert msg.startswith(f"{path}: programs[2]: ")
    assert "duplicate program for gpu 1 wg 0 (first at programs[0])" in msg


@pytest.mark.parametrize("program, fragment", [
    ("- {gpu: 2, wg: 0, ops: []}", "programs[0]: gpu 2 is out of range"),
    ("- {gpu: 0, wg: 0, ops: [], cpu: 1}", "programs[0]: unknown key 'cpu' (allowed: gpu, wg, ops)"),
    ("- {gpu: 0, ops: []}", "programs[0]: missing key 'wg'"),
])
def test_bad_program_in_file(tmp_path, program, fragment):
    msg, path = load_text(tmp_path, HEADER + "programs:\n" + program + "\n")
    assert msg.startswith(f"{path}: ") and fragment in msg


@pytest.mark.parametrize("old, new, fragment", [
    ("gpus: 2", "gpus: 0", "gpus 0 is out of range"),
    ("name: t", "name: ''", "name must be a non-empty string"),
    ("flags: [ready]", "flags: [ready, ready]", "flag 'ready' is already declared"),
    ("flags: [ready]", "flags: [9lives]", "flag name '9lives' is invalid"),
    ("{data: 64}", "{data: -1}", "buffer 'data' nbytes -1"),
    ("{data: 64}", "[data]", "buffers must be a mapping"),
])
def test_bad_header_in_file(tmp_path, old, new, fragment):
    msg, path = load_text(tmp_path, HEADER.replace(old, new))
    assert msg.startswith(f"{path}: ") and fragment in msg


def test_from_dict_names_its_source():
    d = example_builder().build().to_dict()
    d["programs"][0]["ops"][1][1]["buffer"] = "partialz"
    with pytest.raises(ProfileError) as info:
        Profile.from_dict(d, source="mem")
    assert str(info.value) == "mem: gpu 0 wg 0 op 1 (write): buffer 'partialz' is not declared (declared: partials)"
