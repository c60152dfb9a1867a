"""Tests of the annotated timestamps import (CSV -> profile), export (simulated run -> CSV) and CLI."""

import csv

import numpy as np
import pytest

from eidola.errors import ProfileError
from eidola.generators import gemv_allreduce, ring_allreduce
from eidola.profile import ProfileBuilder, load_profile
from eidola.workload.importers.timestamps import export_timestamps, import_timestamps

HEADER = "gpu,wg,t_ns,event,peer,flag,value,nbytes"
EVENT_DTYPE = [("gpu", np.int64), ("wg", np.int64), ("op", np.int64), ("begin_ns", float), ("end_ns", float)]


def write_csv(tmp_path, lines, name="run.csv"):
    """Write `lines` as a CSV file in tmp_path and return its path."""
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- import

def test_hand_written_csv(tmp_path):
    # Columns in another order, optional columns included; gpu 1's rows are out of time order.
    path = write_csv(tmp_path, [
        "event,gpu,wg,t_ns,peer,flag,value,nbytes,t_end_ns,cond,mode",  # line 1
        "start,0,0,0,,,,,,,",
        "write,0,0,150,1,,,512,1450.5,,",
        "write,0,0,1450.5,1,,,1024,,,",           # no t_end_ns: lasts until the next row
        "signal,0,0,2000,1,done,2,,2600,,",
        "end,0,0,3000.25,,,,,,,",
        "wait_end,1,0,2700,,done,,,,,",
        "start,1,0,100,,,,,,,",
        "wait_begin,1,0,400,,done,2,,,==,spin_yield",
        "signal,1,0,2700,0,ack,,,,,",              # ties with wait_end at 2700: file order puts it after
        "end,1,0,2800,,,,,,,",
        "start,0,1,0,,,,,,,",
        "end,0,1,50,,,,,,,",
    ])
    prof = import_timestamps(path)
    # gpu 0 wg 0: start 0 -> write at 150: compute 150; write ends 1450.5 = next write's begin: no
    # compute; that write has no end, so nothing before the signal; signal ends 2600, end at
    # 3000.25: compute 400.25.
    # gpu 0 wg 1: start 0, end 50: compute 50.
    # gpu 1 wg 0: start 100 -> wait_begin 400: compute 300; wait ends 2700 = the signal's begin;
    # the signal has no end: nothing before end.
    # flags by first appearance in the file: done (line 5), ack (line 10); the buffer is the
    # largest write, 1024; gpus = 1 + max(gpu, peer) = 2; workgroups = 1 + max wg = 2.
    b = ProfileBuilder(gpus=2, workgroups=2, name="run")
    b.flag("done").flag("ack").buffer("imported", 1024)
    (b.program(0, 0).compute(ns=150).write(dst=1, buffer="imported", offset=0, nbytes=512)
     .write(dst=1, buffer="imported", offset=0, nbytes=1024).signal(dst=1, flag="done", op="add", value=2)
     .compute(ns=400.25))
    b.program(0, 1).compute(ns=50)
    (b.program(1, 0).compute(ns=300).wait(flag="done", cond="==", value=2, mode="spin_yield", interval_ns=100)
     .signal(dst=0, flag="ack", op="add", value=1))
    expected = b.build()
    assert prof == expected
    ops = prof.program(0, 0)
    assert [op.kind for op in ops] == ["compute", "write", "write", "signal", "compute"]
    assert ops[0]["ns"] == 150 and type(ops[0]["ns"]) is int
    assert ops[4]["ns"] == 400.25
    assert prof.program(1, 0)[1].as_dict() == {"flag": "done", "cond": "==", "value": 2, "mode": "spin_yield",
                                               "interval_ns": 100, "max_interval_ns": 1600, "wake": "all"}
    assert import_timestamps(path, name="other").name == "other"


def test_wait_value_is_inferred_from_the_signals_that_released_it(tmp_path):
    path = write_csv(tmp_path, [
        HEADER,
        "0,0,0,start,,,,",
        "0,0,10,signal,2,go,2,",      # counts: 2
        "1,0,0,start,,,,",
        "1,0,20,signal,2,go,3,",      # counts: 3
        "1,0,30,signal,0,go,7,",      # to gpu 0, not 2: excluded
        "1,0,40,signal,2,go,,",       # value empty = 1: counts
        "0,0,500,signal,2,go,4,",     # t_ns 500 <= wait_end 500: counts
        "0,0,600,signal,2,go,100,",   # after the wait ended: excluded
        "1,0,40,signal,2,other,50,",  # another flag: excluded
        "0,0,700,end,,,,",
        "1,0,700,end,,,,",
        "2,0,0,start,,,,",
        "2,0,5,wait_begin,,go,,",
        "2,0,500,wait_end,,go,,",
        "2,0,600,end,,,,",
    ])
    ops = import_timestamps(path).program(2, 0)
    # value = 2 + 3 + 1 + 4 = 10; compute 5 before the wait, 600 - 500 = 100 after it.
    assert [op.kind for op in ops] == ["compute", "wait", "compute"]
    assert ops[1]["value"] == 10 and ops[1]["cond"] == ">=" and ops[1]["mode"] == "poll"
    assert ops[1]["interval_ns"] == 100
    assert ops[0]["ns"] == 5 and ops[2]["ns"] == 100


START, END = "0,0,0,start,,,,", "0,0,900,end,,,,"


@pytest.mark.parametrize("lines, line, needle", [
    ([START, "0,0,5,wirte,1,,,64", END], 3,
     "event 'wirte' is not one of start, write, put, signal, fence, wait_begin, wait_end, end"),
    (["x,0,0,start,,,,", END], 2, "gpu 'x' is not an integer >= 0"),
    ([START, "0,1.5,5,write,1,,,64", END], 3, "wg '1.5' is not an integer >= 0"),
    ([START, "0,0,5,write,two,,,64", END], 3, "peer 'two' is not an integer >= 0"),
    ([START, "0,0,5,write,1,,,4k", END], 3, "nbytes '4k' is not an integer >= 1"),
    ([START, "0,0,5,write,1,,,0", END], 3, "nbytes '0' is not an integer >= 1"),
    ([START, "0,0,-1,write,1,,,64", END], 3, "t_ns '-1' is not a number >= 0"),
    ([START, "0,0,soon,write,1,,,64", END], 3, "t_ns 'soon' is not a number >= 0"),
    ([START, "0,0,nan,write,1,,,64", END], 3, "t_ns 'nan' is not a number >= 0"),
    ([START, "0,0,5,write,,,,64", END], 3, "write without peer"),
    ([START, "0,0,5,write,1,,,", END], 3, "write without nbytes"),
    ([START, "0,0,5,signal,,f,,", END], 3, "signal without peer"),
    ([START, "0,0,5,signal,1,,,", END], 3, "signal without flag"),
    ([START, "0,0,5,signal,1,bad-name,,", END], 3, "flag 'bad-name' is not a valid name"),
    ([START, "0,0,5,wait_begin,,,1,", END], 3, "wait_begin without flag"),
    ([START, "0,0,5,wait_end,,f,,", END], 3, "wait_end without wait_begin"),
    ([START, "0,0,5,wait_begin,,f,1,", END], 3, "wait_begin without matching wait_end"),
    ([START, "0,0,5,wait_begin,,f,1,", "0,0,6,signal,1,f,,", "0,0,7,wait_end,,f,,", END], 3,
     "wait_begin without matching wait_end"),
    ([START, "0,0,5,wait_begin,,f,1,", "0,0,7,wait_end,,g,,", END], 4,
     "wait_end names flag 'g' but its wait_begin (line 3) waits on 'f'"),
    ([START, END, "0,0,901,write,1,,,64"], 4, "'write' row after the end of gpu 0 wg 0 (end at line 3"),
    (["0,0,5,write,1,,,64", END], 2, "gpu 0 wg 0 has no start row"),
    ([START, "0,0,5,write,1,,,64"], 3, "gpu 0 wg 0 has no end row"),
    ([START, "0,0,1,start,,,,", END], 3, "a second start row for gpu 0 wg 0 (the first is line 2)"),
    ([START, "0,0,5,wait_begin,,f,,", "0,0,7,wait_end,,f,,", END], 3,
     "no signal or put row targets gpu 0 flag 'f' by t_ns 7"),
    ([START, "0,0,5,write,1,,,64,", END], 3, "expected 8 cells (one per header column), got 9"),
    ([START, "0,0,5,signal,1,f,9223372036854775808,", END], 3, "value '9223372036854775808' is not an integer"),
    ([START, "0,0,5,wait_begin,,f,1,", "0,0,6,wait_end,,f,,", "0,0,5,signal,1,imported,,",
      "0,0,7,write,1,,,64", END], 5, "flag name 'imported' is reserved"),
])
def test_bad_rows_name_the_line(tmp_path, lines, line, needle):
    path = write_csv(tmp_path, [HEADER, *lines])
    with pytest.raises(ProfileError) as e:
        import_timestamps(path)
    assert str(e.value).startswith(f"{path}: line {line}: "), str(e.value)
    assert needle in str(e.value), str(e.value)


@pytest.mark.parametrize("header, needle", [
    (HEADER + ",t_end_ns", "t_end_ns '4' is before t_ns '5'"),
    (HEADER + ",cond", "cond '=>' is not one of ==, !=, >=, >, <=, <"),
    (HEADER + ",mode", "mode 'busy' is not one of poll, spin_yield, syncmon"),
])
def test_bad_optional_columns(tmp_path, header, needle):
    value = {"t_end_ns": "0,0,5,write,1,,,64,4", "cond": "0,0,5,wait_begin,,f,1,,=>",
             "mode": "0,0,5,wait_begin,,f,1,,busy"}[header.rsplit(",", 1)[1]]
    path = write_csv(tmp_path, [header, START + ",", value, END + ","])
    with pytest.raises(ProfileError) as e:
        import_timestamps(path)
    assert f"{path}: line 3: " in str(e.value) and needle in str(e.value), str(e.value)


@pytest.mark.parametrize("lines, needle", [
    ([HEADER + ",when", START + ",", END + ","], "line 1: unknown column 'when' (allowed: gpu, wg, t_ns"),
    (["gpu,wg,t_ns,event,peer,flag,value", "0,0,0,start,,,"], "line 1: missing column 'nbytes'"),
    ([HEADER + ",gpu", START + ",0", END + ",0"], "line 1: column 'gpu' appears twice"),
    ([HEADER], "no event rows"),
    ([""], "file is empty"),
])
def test_bad_files(tmp_path, lines, needle):
    path = write_csv(tmp_path, lines)
    if lines == [""]:
        path.write_text("")
    with pytest.raises(ProfileError) as e:
        import_timestamps(path)
    assert str(e.value).startswith(f"{path}: ") and needle in str(e.value), str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(ProfileError, match="no such timestamps file"):
        import_timestamps(tmp_path / "nope.csv")


# ---------------------------------------------------------------- export

def fabricate_events(prof, wait_ns):
    """Op events of programs run back to back: compute its ns, write/signal 1300 ns, wait wait_ns(g, w, k)."""
    rows = []
    for (g, w), ops in prof.programs:
        t = 12.5 * g + 0.25 * w  # programs start at different times
        for k, op in enumerate(ops):
            d = {"compute": op["ns"] if op.kind == "compute" else 0, "write": 1300, "signal": 1300,
                 "wait": wait_ns(g, w, k)}.get(op.kind, 77.125)
            rows.append((g, w, k, t, t + d))
            t += d
    events = np.array(rows, dtype=EVENT_DTYPE)
    return events[np.random.default_rng(0).permutation(len(events))]  # rows in any order


def segments(ops):
    """Split a program at its non-compute ops: (their keys, the compute ns summed between them)."""
    comm, sums = [], [0]
    for op in ops:
        if op.kind == "compute":
            sums[-1] += op["ns"]
        else:
            comm.append((op.kind, op.get("dst"), op.get("nbytes"), op.get("flag"), op.get("value"),
                         op.get("cond")))
            sums.append(0)
    return comm, sums


def test_export_import_round_trip(tmp_path):
    prof = gemv_allreduce(gpus=4, workgroups=2, vector_bytes=4 * 2 * 256)
    events = fabricate_events(prof, lambda g, w, k: 250.125 + 10 * g + w + k)
    path = tmp_path / "sim.csv"
    export_timestamps(prof, events, path)
    back = import_timestamps(path)
    assert back.name == "sim" and back.gpus == 4 and back.workgroups == 2
    assert [key for key, _ in back.programs] == [key for key, _ in prof.programs]
    for key, ops in prof.programs:
        comm, sums = segments(ops)
        comm_back, sums_back = segments(back.program(*key))
        assert comm_back == comm
        # Every time is a multiple of 0.125 ns, exact in 3 decimals: the sums are equal, not close.
        assert sums_back == sums
    # gemv: tile 2000 before the first write, reduce 400 after the rs waits, nothing at the end.
    assert segments(back.program(0, 0))[1] == [2000] + [0] * 8 + [400] + [0] * 9


def test_overlapping_signals_round_trip(tmp_path):
    # The ring's signals overlap (the workgroup goes on while the release waits) and release only
    # the writes to their peer: both survive export and import, and so does every other op's key.
    prof = ring_allreduce(gpus=3, nbytes=3 * 2 * 64, chunks=2)
    path = tmp_path / "ring.csv"
    export_timestamps(prof, fabricate_events(prof, lambda g, w, k: 100.0), path)
    back = import_timestamps(path)
    for key, ops in prof.programs:
        assert segments(back.program(*key))[0] == segments(ops)[0]
        signals = [(op["scope"], op["overlap"]) for op in back.program(*key) if op.kind == "signal"]
        assert signals == [("peer", True)] * (2 * 2 * 2)  # 2(P-1) steps x 2 chunks


def test_export_rows(tmp_path):
    b = ProfileBuilder(gpus=2, workgroups=1, name="small")
    b.flag("f").buffer("data", 4096)
    (b.program(0, 0).compute(ns=100).read(dst=1, buffer="data", offset=0, nbytes=64)
     .write(dst=1, buffer="data", offset=64, nbytes=128).signal(dst=1, flag="f", value=3).local(reads=1)
     .wait(flag="f", cond="==", value=2, mode="syncmon"))
    prof = b.build()
    # op: compute 100-200, read 200-250, write 250-1550.5, signal 1600-1700, local 1700-1710, wait 1710-2000
    times = [(100, 200), (200, 250), (250, 1550.5), (1600, 1700), (1700, 1710), (1710, 2000)]
    events = np.array([(0, 0, k, b_, e) for k, (b_, e) in enumerate(times)], dtype=EVENT_DTYPE)[::-1]
    path = tmp_path / "small.csv"
    export_timestamps(prof, events, path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [
        ["gpu", "wg", "t_ns", "event", "peer", "flag", "value", "nbytes", "cond", "mode", "t_end_ns", "blocking",
         "scope", "overlap"],
        ["0", "0", "100.000", "start", "", "", "", "", "", "", "", "", "", ""],
        ["0", "0", "250.000", "write", "1", "", "", "128", "", "", "1550.500", "false", "", ""],
        ["0", "0", "1600.000", "signal", "1", "f", "3", "", "", "", "1700.000", "", "workgroup", "false"],
        ["0", "0", "1710.000", "wait_begin", "", "f", "2", "", "==", "syncmon", "", "", "", ""],
        ["0", "0", "2000.000", "wait_end", "", "f", "", "", "", "", "", "", "", ""],
        ["0", "0", "2000.000", "end", "", "", "", "", "", "", "", "", "", ""],
    ]
    # compute + read (100-250) become 150 ns; signal end to wait begin (1700-1710) 10 ns.
    back = import_timestamps(path)
    assert [(op.kind, op.get("ns")) for op in back.program(0, 0)] == [
        ("compute", 150), ("write", None), ("compute", 49.5), ("signal", None), ("compute", 10), ("wait", None)]


def test_export_rejects_bad_events(tmp_path):
    prof = gemv_allreduce(gpus=2, workgroups=1, vector_bytes=512)
    with pytest.raises(ProfileError, match="missing field 'end_ns'"):
        export_timestamps(prof, np.zeros(1, dtype=EVENT_DTYPE[:4]), tmp_path / "x.csv")
    with pytest.raises(ProfileError, match="gpu 0 wg 0: op indices"):
        export_timestamps(prof, np.array([(0, 0, 99, 0, 1)], dtype=EVENT_DTYPE), tmp_path / "x.csv")


# ---------------------------------------------------------------- CLI
# Through the `cli` fixture: the installed package, which finds its own compiled models, as a
# user's command does (not the source tree with a build directory only scripts/test.sh makes).


def test_cli_import(cli, tmp_path):
    csv_path = write_csv(tmp_path, [HEADER, START, "0,0,5,write,1,,,64", "0,0,9,signal,1,f,,", END])
    out = tmp_path / "prof.yaml"
    r = cli("import", "timestamps", csv_path, "-o", out, "--name", "measured")
    assert r.returncode == 0, r.stderr
    # ops: compute 5, write (no end: nothing after), signal, nothing before end = 3 ops in 1 program
    assert r.stdout.strip() == f"wrote {out}: profile measured, 1 programs, 3 ops"
    prof = load_profile(out)
    assert prof.name == "measured" and [op.kind for op in prof.program(0, 0)] == ["compute", "write", "signal"]


def test_cli_bad_file_exits_2(cli, tmp_path):
    csv_path = write_csv(tmp_path, [HEADER, START, "0,0,5,wirte,1,,,64", END])
    r = cli("import", "timestamps", csv_path, "-o", tmp_path / "prof.yaml")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert f"{csv_path}: line 3: event 'wirte'" in r.stderr
    assert not (tmp_path / "prof.yaml").exists()


def test_put_rows_import_and_count_towards_an_inferred_wait(tmp_path):
    # Two puts of value 2 and 3 land on gpu 1's flag "tail" by t=500: the wait's value is inferred as 5;
    # the put becomes put(dst, "imported", 0, nbytes, flag, value, "add") and sizes the buffer.
    path = write_csv(tmp_path, [
        "gpu,wg,t_ns,event,peer,flag,value,nbytes,t_end_ns",
        "0,0,0,start,,,,,",
        "0,0,10,put,1,tail,2,4096,110",
        "0,0,150,put,1,tail,3,8192,",
        "0,0,400,end,,,,,",
        "1,0,0,start,,,,,",
        "1,0,20,wait_begin,,tail,,,",
        "1,0,500,wait_end,,tail,,,",
        "1,0,500,end,,,,,",
    ])
    prof = import_timestamps(path)
    ops = prof.program(0, 0)
    assert [op.kind for op in ops] == ["compute", "put", "compute", "put"]
    assert ops[0]["ns"] == 10 and ops[2]["ns"] == 40  # 150 - 110 (the first put's end)
    assert [(op["dst"], op["nbytes"], op["flag"], op["value"], op["op"]) for op in ops[1::2]] == \
        [(1, 4096, "tail", 2, "add"), (1, 8192, "tail", 3, "add")]
    wait = prof.program(1, 0)[-1]
    assert wait.kind == "wait" and wait["value"] == 5


def test_put_row_without_flag_names_the_line(tmp_path):
    path = write_csv(tmp_path, ["gpu,wg,t_ns,event,peer,flag,value,nbytes", "0,0,0,start,,,,",
                                "0,0,1,put,1,,,64", "0,0,2,end,,,,"])
    with pytest.raises(ProfileError, match=r"line 3: .*flag"):
        import_timestamps(path)


def test_export_refuses_nvls_ops_instead_of_dropping_their_traffic(tmp_path):
    b = ProfileBuilder(gpus=2, workgroups=1, name="nvls")
    b.buffer("data", 4096)
    b.multicast_group("g", gpus=[0, 1])
    b.program(0, 0).multicast(group="g", buffer="data", offset=0, nbytes=64)
    prof = b.build()
    events = np.array([(0, 0, 0, 0.0, 10.0)], dtype=EVENT_DTYPE)
    with pytest.raises(ProfileError, match=r"gpu 0 wg 0 has a multicast op"):
        export_timestamps(prof, events, tmp_path / "x.csv")
