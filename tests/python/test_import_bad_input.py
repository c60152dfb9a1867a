"""Bad trace and run-folder inputs to import and compare: each is exit status 2 with one line naming the
file and what was expected; none exits 1, hangs or grows without bound."""

import gzip
import json
import os
import threading

import pytest
from test_import import SHARED, _gloo

TIMEOUT = 60  # a hang would fail here, not stall the suite


def _event(**fields):
    e = {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 10, "dur": 5, "args": {}}
    e.update(fields)
    return {k: v for k, v in e.items() if v is not ...}


def _trace(tmp_path, name, *events, raw=None):
    path = tmp_path / name
    path.write_text(raw if raw is not None else json.dumps({"traceEvents": list(events)}))
    return path


def _refused(r, *words):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


@pytest.mark.parametrize(("fields", "words"), [
    ({"args": 3}, ["traceEvents[1]", "args is 3", "expected an object"]),
    ({"ts": "10"}, ["traceEvents[1]", "ts is \"10\"", "finite number"]),
    ({"dur": None}, ["traceEvents[1]", "dur is missing", "microseconds"]),
    ({"tid": ...}, ["traceEvents[1]", "tid is missing", "integer or string"]),
    ({"name": True}, ["traceEvents[1]", "name is true", "expected a string"]),
    ({"ts": 1e300}, ["traceEvents[1]", "ts is 1e+300"]),
    ({"dur": -1}, ["traceEvents[1]", "dur is -1"]),
    ({"args": {"In msg nelems": "12", "dtype": "Float"}, "cat": "cpu_op", "name": "record_param_comms"},
     ["traceEvents[1]", "args['In msg nelems']", "integer >= 0"]),
    ({"args": {"Input Dims": [["x"]], "Input type": ["float"]}, "cat": "cpu_op", "name": "nccl:all_reduce"},
     ["nccl:all_reduce at ts 10 us", "Input Dims holds \"x\""]),
    ({"args": {"Process Group Ranks": "[0, a]", "In msg nelems": 4, "dtype": "Float"}, "cat": "cpu_op",
      "name": "nccl:all_reduce"}, ["nccl:all_reduce at ts 10 us", "Process Group Ranks \"[0, a]\""]),
])
def test_event_fields_are_checked(cli, tmp_path, fields, words):
    path = _trace(tmp_path, "t.json", _event(name="aten::mm"), _event(**fields))
    r = cli("import", "kineto", path, "-o", tmp_path / "x.yaml")
    _refused(r, "t.json: ", *words)


def test_nan_and_deep_json(cli, tmp_path):
    r = cli("import", "kineto", _trace(tmp_path, "nan.json", raw='{"traceEvents": [{"ph": "X", "ts": NaN}]}'),
            "-o", tmp_path / "x.yaml")
    _refused(r, "nan.json: not a Kineto trace", "NaN")
    deep = '{"traceEvents": [' + "[" * 100000 + "]" * 100000 + "]}"
    r = cli("import", "kineto", _trace(tmp_path, "deep.json", raw=deep), "-o", tmp_path / "x.yaml")
    _refused(r, "deep.json", "nested too deeply")


def test_gzip_corrupt_truncated_and_bomb(cli, tmp_path):
    raw = (SHARED / "nccl_data.json.gz").read_bytes()
    (tmp_path / "corrupt.json.gz").write_bytes(raw[:100] + b"\xff" * 64 + raw[164:])
    _refused(cli("import", "kineto", tmp_path / "corrupt.json.gz", "-o", tmp_path / "x.yaml"),
             "corrupt.json.gz", "corrupt gzip")
    (tmp_path / "cut.json.gz").write_bytes(raw[: len(raw) // 2])
    _refused(cli("import", "kineto", tmp_path / "cut.json.gz", "-o", tmp_path / "x.yaml"), "cut.json.gz", "truncated")
    # 4 MiB of gzip that would grow to ~4 GiB: stopped at the limit, in bounded memory
    block = gzip.compress(b"\0" * (64 * 2**20), compresslevel=9)
    (tmp_path / "bomb.json.gz").write_bytes(block * max(1, (4 * 2**20) // len(block)))
    _refused(cli("import", "kineto", tmp_path / "bomb.json.gz", "-o", tmp_path / "x.yaml"),
             "bomb.json.gz", "decompresses to more than the limit")


def test_size_limit_is_the_environment_s(tmp_path):  # EIDOLA_MAX_INPUT_BYTES
    """EIDOLA_MAX_INPUT_BYTES caps a trace before it is parsed (plain) and while it decompresses (gzip)."""
    import subprocess
    import sys

    env = {**os.environ, "EIDOLA_MAX_INPUT_BYTES": "100000"}
    plain = _trace(tmp_path, "big.json", _event(name="x" * 200000))
    for trace in (str(plain), str(SHARED / "nccl_data.json.gz")):
        r = subprocess.run([sys.executable, "-m", "eidola", "import", "kineto", trace, "-o", str(tmp_path / "x.yaml")],
                           capture_output=True, text=True, env=env, timeout=TIMEOUT)
        _refused(r, "limit of 100000 bytes", "EIDOLA_MAX_INPUT_BYTES")


def test_devices_fifos_and_directories(cli, tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    opener = threading.Timer(TIMEOUT / 2, lambda: open(fifo, "w").close())  # unblocks a reader, should one wait
    opener.daemon = True
    opener.start()
    try:
        for source in ("kineto", "chakra"):
            _refused(cli("import", source, fifo, "-o", tmp_path / "x.yaml"), "fifo.json", "must be a regular file")
            _refused(cli("import", source, tmp_path, "-o", tmp_path / "x.yaml"), "a directory")
        _refused(cli("import", "kineto", "/dev/zero", "-o", tmp_path / "x.yaml"), "/dev/zero", "regular file")
    finally:
        opener.cancel()


def test_options_are_named(cli, tmp_path):
    gloo = _gloo(2)
    _refused(cli("import", "kineto", gloo[0], "--compute", "host", "--workgroups", "0", "-o", tmp_path / "x.yaml"),
             "--workgroups 0", ">= 1")
    _refused(cli("import", "chakra", gloo[0], "--workgroups", "-3", "-o", tmp_path / "x.yaml"), "--workgroups -3")
    _refused(cli("import", "kineto", gloo[0], "--ranks", "1", "-o", tmp_path / "x.yaml"), "--ranks 1")
    _refused(cli("import", "kineto", *gloo, "--ranks", "4", "-o", tmp_path / "x.yaml"),
             "--ranks replicates one traced rank", "rank-0.json.gz", "rank-1.json.gz")
    r = cli("import", "kineto", gloo[0], str(SHARED / "sampled_rank-0.json.gz"), "--compute", "host",
            "-o", tmp_path / "x.yaml")
    _refused(r, "mismatched ranks", "rank-0.json.gz world_size 2", "sampled_rank-0.json.gz world_size 128")


def _run_dir(tmp_path, summary=None, ops=None):
    d = tmp_path / "run"
    d.mkdir(exist_ok=True)
    if summary is not None:
        (d / "summary.json").write_text(summary)
    if ops is not None:
        (d / "ops.csv").write_text(ops)
    return d


HEADER = "gpu,wg,op,begin_ns,end_ns,kind,peer,flag,detail\n"


@pytest.mark.parametrize(("summary", "ops", "words"), [
    (None, None, ["not a run directory (no summary.json)"]),
    ("[1, 2]", HEADER, ["summary.json: not a run summary"]),
    ("{", HEADER, ["summary.json: not a run summary: invalid JSON"]),
    ("{}", None, ["no ops.csv"]),
    ("{}", "", ["ops.csv: empty"]),
    ("{}", "a,b\n1,2\n", ["ops.csv:1: no column 'gpu'"]),
    ("{}", HEADER + "0,0,x,0,1,compute,-1,,\n", ["ops.csv:2: column 'op' is 'x'"]),
    ("{}", HEADER + "0,0,0,nan,1,compute,-1,,\n", ["ops.csv:2: column 'begin_ns' is 'nan'"]),
    ("{}", HEADER + "0,0,0,5,1,compute,-1,,\n", ["ops.csv:2: end_ns 1.0 is before begin_ns 5.0"]),
    ("{}", HEADER + "0,0\n", ["ops.csv:2: 2 cells; expected 9"]),
    ("{}", b"\xff\xfe".decode("latin-1") + HEADER, ["ops.csv:1:1: not UTF-8"]),
])
def test_compare_checks_the_run_folder(cli, tmp_path, summary, ops, words):
    d = _run_dir(tmp_path, summary, ops)
    if ops is not None and "\xff" in ops:
        (d / "ops.csv").write_bytes(b"\xff\xfe" + HEADER.encode())
    _refused(cli("compare", d, *_gloo(2)), *words)


def test_compare_run_folder_fifos(cli, tmp_path):
    d = _run_dir(tmp_path, "{}")
    os.mkfifo(d / "ops.csv")
    _refused(cli("compare", d, *_gloo(2)), "ops.csv", "must be a regular file")
    os.remove(d / "summary.json")
    os.mkfifo(d / "summary.json")
    _refused(cli("compare", d, *_gloo(2)), "summary.json", "must be a regular file")
