"""eidola perf: nccl-tests' sizes and columns, the table's arithmetic, the CSV, the fabric rule,
--compare on nccl-tests and rccl-tests logs, and bad input (exit 2, one line naming the option or file).

Numbers are worked out here by hand from nccl-tests' definitions (src/common.cu, src/*.cu): the
sizes of -b/-e/-f, each collective's size and count columns, algbw = size / time and busbw =
algbw x factor, the mean busbw, and the geometric mean of |predicted / measured - 1|.
"""

import csv
import math

import pytest

from eidola.cli import main
from eidola.errors import ConfigError
from eidola.platform import load_platform
from eidola.report.nccl_log import read_log
from eidola.run import nccl_tests
from eidola.run.perf import AUTO_PACKET_BYTES, Fabrics, written_bytes
from eidola.run.perf_source import build_collective

MIB = 2**20
# The fixtures' out-of-place and in-place times (us), as written into tests/data/nccl/*.log.
NCCL_TIMES = {8192: (14.20, 14.05), 65536: (16.00, 15.80), 1048576: (40.00, 39.50), 16777216: (160.00, 158.00),
              2147483648: (11000.0, 10950.0)}
RCCL_TIMES = {8192: (22.10, 21.90), 65536: (25.30, 25.00), 1048576: (52.00, 51.00), 16777216: (330.0, 328.0),
              2147483648: (37000.0, 36900.0)}


def _main(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _bad(capsys, needles, *argv):
    code, _, err = _main(capsys, *argv)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _data_rows(text):
    """The printed data lines, split into fields."""
    return [line.split() for line in text.splitlines() if line.strip() and not line.startswith("#")]


# --- nccl-tests' conventions -------------------------------------------------------------------

@pytest.mark.parametrize("text,size", [("8", 8), ("8G", 8 * 2**30), ("64k", 65536), ("1M", 2**20), ("1.5K", 1536),
                                       (" 256m ", 256 * 2**20)])
def test_sizes_parse_as_nccl_tests_does(text, size):
    assert nccl_tests.parse_size(text, "-b") == size


@pytest.mark.parametrize("text", ["8X", "", "G", "-1", "8 GiB", "0"])
def test_a_bad_size_names_the_option(text):
    with pytest.raises(ConfigError, match=r"^-e "):
        nccl_tests.parse_size(text, "-e")


def test_size_lists():
    full = nccl_tests.sizes(8, 8 * 2**30, 2)
    assert len(full) == 31  # 2^3 .. 2^33
    assert full[0] == 8 and full[-1] == 2**33 and all(b == 2 * a for a, b in zip(full, full[1:]))
    assert nccl_tests.sizes(8, 100, 3) == [8, 24, 72]
    assert nccl_tests.sizes(1024, 1024, 2) == [1024]
    assert nccl_tests.sizes(1000, 64000, 4) == [1000, 4000, 16000, 64000]


@pytest.mark.parametrize("op,size,expected", [
    ("all_reduce", 1000, (1000, 250)), ("all_reduce", 1001, (1000, 250)), ("broadcast", 1000, (1000, 250)),
    # 250 elements / 8 ranks = 31, down to a multiple of 4 (16 B) = 28 per rank; 28 x 8 x 4 B = 896 B
    ("all_gather", 1000, (896, 28)), ("reduce_scatter", 1000, (896, 28)), ("alltoall", 1000, (896, 28)),
    ("all_gather", 8, (0, 0)), ("all_gather", 2**20, (2**20, 2**15)),
])
def test_size_and_count_columns(op, size, expected):
    assert nccl_tests.columns(op, size, 8) == expected


def test_bus_factors_and_columns():
    assert nccl_tests.bus_factor("all_reduce", 8) == 14 / 8
    for op in ("all_gather", "reduce_scatter", "alltoall"):
        assert nccl_tests.bus_factor(op, 8) == 7 / 8
    assert nccl_tests.bus_factor("broadcast", 8) == 1
    assert [nccl_tests.redop(op) for op in ("all_reduce", "reduce_scatter", "all_gather", "broadcast")] == \
        ["sum", "sum", "none", "none"]
    assert nccl_tests.root("broadcast") == 0 and nccl_tests.root("alltoall") == -1


def test_numbers_print_in_their_width():
    f = nccl_tests.float_str
    assert f(14.2, 7) == "  14.20" and f(11000.0, 7) == "11000.0" and f(123456.7, 7) == " 123457"
    assert f(123456789.0, 7) == "1.2e+08" and f(1234.56, 6) == "1234.6" and f(0.004, 6) == "  0.00"


# --- the log reader ------------------------------------------------------------------------------

@pytest.mark.parametrize("name,times,tool,test", [
    ("nccl-tests-all_reduce-8gpu.log", NCCL_TIMES, "nccl-tests", "all_reduce_perf"),
    ("rccl-tests-all_reduce-8gpu.log", RCCL_TIMES, "rccl-tests", None)])
def test_both_logs_read(repo, name, times, tool, test):
    path = repo / "tests/data/nccl" / name
    for i, column in enumerate(("out-of-place", "in-place")):
        log = read_log(path, column)
        assert {r.size: r.time_us for r in log.rows} == {s: t[i] for s, t in times.items()}
        assert [r.count for r in log.rows] == [s // 4 for s in times]
        assert log.nranks == 8 and log.tool == tool and log.test == test and log.column == column
        assert all(r.redop == "sum" for r in log.rows)


def test_in_place_only_and_per_iteration_layouts(tmp_path):
    # rccl-tests -O 0: only the in-place group
    only = tmp_path / "inplace.log"
    only.write_text("# nThread 1 nGpus 4 minBytes 1024 maxBytes 1024 step: 2(factor)\n"
                    "#                                                       in-place          \n"
                    "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
                    "        1024           256     float    none      -1    12.50    0.08    0.06    N/A\n")
    log = read_log(only, "in-place")
    assert log.nranks == 4 and [r.time_us for r in log.rows] == [12.5]
    with pytest.raises(ConfigError, match=r"inplace\.log: has no out-of-place column"):
        read_log(only, "out-of-place")
    # nccl-tests -I 1: four per-iteration columns after each #wrong
    per = tmp_path / "per.log"
    per.write_text("#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
                   "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n"
                   "        1024           256     float     sum      -1    10.00    0.10    0.18       0     9.0    11.0"
                   "    11.0      3.0    20.00    0.05    0.09       0    19.0    21.0    21.0      2.0\n")
    assert read_log(per, "in-place").rows[0].time_us == 20.0
    assert read_log(per).rows[0].time_us == 10.0 and read_log(per).nranks is None


def test_lines_that_are_not_data_are_passed_over(tmp_path):
    path = tmp_path / "noisy.log"
    path.write_text("node01:1:1 [0] NCCL INFO Bootstrap : Using eth0\n"
                    "8 more processes have sent help message help-mpi-btl.txt\n"
                    "        2048           512     float     sum      -1    11.00    0.19    0.33       0"
                    "    10.50    0.20    0.34       0\n")
    log = read_log(path)  # no heads: groups of four after the fifth column, out-of-place first
    assert [(r.size, r.time_us) for r in log.rows] == [(2048, 11.0)]


@pytest.mark.parametrize("line,needle", [
    ("     1048576        262144     float     sum      -1    40.00", ":20: a data line with 6 fields"),
    ("     1048576        262144     float     sum      -1    fast   26.21   45.88       0    39.50   26.55   46.46"
     "       0", ":20: time 'fast'"),
    ("     1048576        262144     float     sum      -1    -4.00   26.21   45.88       0    39.50   26.55   46.46"
     "       0", ":20: time '-4.00'"),
])
def test_a_malformed_data_line_is_named(repo, tmp_path, line, needle):
    lines = (repo / "tests/data/nccl/nccl-tests-all_reduce-8gpu.log").read_text().splitlines()
    assert lines[19].split()[0] == "1048576"
    lines[19] = line
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=f"cut.log{needle}"):
        read_log(path)


# --- the fabric rule --------------------------------------------------------------------------------

def test_auto_fabric_follows_the_bytes_written(repo):
    path = repo / "platforms/mi300x-8gpu.yaml"
    fabrics = Fabrics(str(path), {}, "auto")
    # A ring all-reduce of S on 8 GPUs writes 2 x 7/8 x S per GPU, 14 S in all.
    small, _ = build_collective(fabrics.base, "all_reduce", 4 * MIB)
    large, _ = build_collective(fabrics.base, "all_reduce", 8 * MIB)
    assert written_bytes(small) == 14 * 4 * MIB and written_bytes(large) == 14 * 8 * MIB
    assert AUTO_PACKET_BYTES == 64 * MIB
    assert fabrics.choose(written_bytes(small)) == "packet" and fabrics.choose(written_bytes(large)) == "flow"
    assert Fabrics(str(path), {}, "flow").choose(1) == "flow"


def test_auto_fabric_in_the_table_and_an_ideal_platform_stays_ideal(repo, write_platform, capsys):
    code, out, err = _main(capsys, "perf", repo / "platforms/mi300x-8gpu.yaml", "--op", "all_reduce",
                           "-b", "64K", "-e", "8M", "-f", "128")
    assert code == 0, err
    assert [(int(r[0]), r[-1]) for r in _data_rows(out)] == [(65536, "packet"), (8 * MIB, "flow")]
    assert "packet while the collective writes at most 64 MiB" in out
    code, out, err = _main(capsys, "perf", write_platform(gpus=4), "--op", "alltoall", "-b", "1K", "-e", "64K",
                           "-f", "64")
    assert code == 0, err
    assert [r[-1] for r in _data_rows(out)] == ["ideal", "ideal"] and "ideal for every size" in out


# --- the table and the CSV ---------------------------------------------------------------------------

@pytest.mark.parametrize("op,gpus,redop,root", [("all_reduce", 8, "sum", "-1"), ("all_gather", 8, "none", "-1"),
                                               ("reduce_scatter", 4, "sum", "-1"), ("alltoall", 8, "none", "-1"),
                                               ("broadcast", 8, "none", "0")])
def test_table_and_csv_arithmetic(repo, tmp_path, capsys, op, gpus, redop, root):
    table = tmp_path / "perf.csv"
    code, out, err = _main(capsys, "perf", repo / "platforms/mi300x-8gpu.yaml", "--op", op, "-g", gpus,
                           "-b", "16K", "-e", "256K", "-f", "16", "--csv", table)
    assert code == 0, err
    factor = {"all_reduce": 2 * (gpus - 1) / gpus, "broadcast": 1.0}.get(op, (gpus - 1) / gpus)
    rows = _data_rows(out)
    assert [int(r[0]) for r in rows] == [16384, 262144]
    with open(table) as fh:
        reader = csv.reader(fh)
        assert next(reader) == ["size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algo", "proto", "channels",
                                "fabric"]
        lines = list(reader)
    assert len(lines) == 2
    busbws = []
    for printed, line in zip(rows, lines):
        size, count, type_, red, rt, time_us, alg, bus, algo, proto, channels, fabric = printed
        # count: elements of 4 bytes, per rank's share for the collectives that split the buffer
        assert int(count) == (int(size) // 4 if op in ("all_reduce", "broadcast") else int(size) // 4 // gpus)
        assert (type_, red, rt) == ("float", redop, root)
        t = float(line[1])
        assert int(line[0]) == int(size) and t > 0
        assert float(line[2]) == pytest.approx(int(size) / (t * 1e-6) / 1e9, rel=1e-12)
        assert float(line[3]) == pytest.approx(float(line[2]) * factor, rel=1e-12)
        assert float(time_us) == pytest.approx(t, abs=0.005)
        assert float(alg) == pytest.approx(float(line[2]), abs=0.005)
        assert float(bus) == pytest.approx(float(line[3]), abs=0.005)
        assert [algo, proto, channels, fabric] == line[4:] and proto == "Simple"
        assert algo == ("direct" if op == "alltoall" else "ring")
        busbws.append(float(line[3]))
    assert f"# Avg bus bandwidth    : {sum(busbws) / 2:g}" in out
    assert f"nGpus {gpus} minBytes 16384 maxBytes 262144" in out


@pytest.mark.parametrize("op,steps,factor", [("all_reduce", 6, 1.5), ("all_gather", 3, 0.75),
                                              ("reduce_scatter", 3, 0.75), ("broadcast", 3, 1.0)])
def test_ring_times_derived_on_the_ideal_fabric(tmp_path, capsys, op, steps, factor):
    # The textbook ring on the ideal fabric, one channel (4 KiB is below the auto rule's 64 KiB per
    # rank and channel), latency L = 500 ns each way, memory latency M = 300 ns, memory bandwidth
    # too high to matter: every step costs D = 3L + 2M (the write's acknowledgement 2L + M, then the
    # flag's L + M) and the last signal's acknowledgement adds L (test_collectives derives this):
    # T = steps x D + L. Steps on 4 ranks: all_reduce 2(P-1) = 6; all_gather, reduce_scatter and
    # the broadcast's chain from root 0 P-1 = 3.
    L, M, P, size = 500, 300, 4, 4096
    time_ns = steps * (3 * L + 2 * M) + L  # all_reduce 13 100 ns, the others 6 800 ns
    plat = _ideal(tmp_path)
    table = tmp_path / "t.csv"
    code, out, err = _main(capsys, "perf", plat, "--op", op, "-b", "4K", "-e", "4K", "--csv", table)
    assert code == 0, err
    with open(table) as fh:
        (row,) = list(csv.DictReader(fh))
    algbw = size / (time_ns * 1e-9) / 1e9  # all_reduce: 0.3127 GB/s; the others 0.6024 GB/s
    assert float(row["time_us"]) == time_ns / 1000
    assert float(row["algbw_GBps"]) == pytest.approx(algbw, rel=1e-12)
    assert float(row["busbw_GBps"]) == pytest.approx(algbw * factor, rel=1e-12)
    (printed,) = _data_rows(out)
    assert printed[5:8] == [f"{time_ns / 1000:.2f}", f"{algbw:.2f}", f"{algbw * factor:.2f}"]
    assert (row["algo"], row["channels"], row["fabric"], P) == ("ring", "1", "ideal", 4)


# --- compare -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,times", [("nccl-tests-all_reduce-8gpu.log", NCCL_TIMES),
                                        ("rccl-tests-all_reduce-8gpu.log", RCCL_TIMES)])
@pytest.mark.parametrize("column", ["out-of-place", "in-place"])
def test_compare_errors_and_geometric_means(repo, tmp_path, capsys, name, times, column):
    table = tmp_path / "predicted.csv"
    code, out, err = _main(capsys, "perf", repo / "platforms/mi300x-8gpu.yaml", "--op", "all_reduce",
                           "--compare", repo / "tests/data/nccl" / name, "--column", column, "--csv", table)
    assert code == 0, err
    with open(table) as fh:
        predicted = {int(r["size_bytes"]): float(r["time_us"]) for r in csv.DictReader(fh)}
    assert sorted(predicted) == sorted(times)
    i = 0 if column == "out-of-place" else 1
    errors = {s: predicted[s] / times[s][i] - 1 for s in times}
    rows = _data_rows(out)
    for r in rows:
        size = int(r[0])
        assert float(r[2]) == pytest.approx(times[size][i], abs=0.005)
        assert float(r[3]) == pytest.approx(predicted[size], abs=0.005)
        assert r[4] == f"{100 * errors[size]:+.2f}%"
    every = math.exp(sum(math.log(abs(e)) for e in errors.values()) / 5)
    inside = [errors[s] for s in (65536, 1048576, 16777216)]  # 64 KiB to 1 GiB: not 8 KiB, not 2 GiB
    cal = math.exp(sum(math.log(abs(e)) for e in inside) / 3)
    assert f"# geometric mean of |error|, all 5 sizes: {100 * every:.2f}%" in out
    assert f"# geometric mean of |error|, 64 KiB to 1 GiB (3 sizes): {100 * cal:.2f}%" in out
    assert f"{column} column" in out


def test_a_repeated_size_is_compared_at_its_mean(tmp_path, capsys):
    # rccl-tests' stress cycles print a size again: it is compared at the mean of its times. On the
    # ideal 4-GPU platform of the derivation above the all_reduce of 4 KiB takes 13.1 us.
    plat = _ideal(tmp_path)
    row = "        4096          1024     float     sum      -1  {t:7.2f}    0.31    0.47       0" + \
        "  {t:7.2f}    0.31    0.47       0\n"
    log = tmp_path / "cycles.log"
    log.write_text("# nThread 1 nGpus 4 minBytes 4096 maxBytes 4096 step: 2(factor)\n" + row.format(t=10.0)
                   + "# Testing 2 cycle.\n" + row.format(t=16.2))
    code, out, err = _main(capsys, "perf", plat, "--op", "all_reduce", "--compare", log)
    assert code == 0, err
    (printed,) = _data_rows(out)
    measured = (10.0 + 16.2) / 2
    assert printed[2:5] == [f"{measured:.2f}", "13.10", f"{100 * (13.1 / measured - 1):+.2f}%"]


def test_our_own_table_reads_back_as_a_log(repo, tmp_path, capsys):
    # eidola perf's output is in nccl-tests' format: read back, each size's "measured" time is the
    # printed one (two decimals), so predicted and measured differ by at most its rounding, 0.005 us.
    plat = repo / "platforms/mi300x-8gpu.yaml"
    code, out, err = _main(capsys, "perf", plat, "--op", "alltoall", "-b", "1K", "-e", "1M", "-f", "32")
    assert code == 0, err
    own = tmp_path / "own.log"
    own.write_text(out)
    log = read_log(own)
    assert log.nranks == 8 and log.column == "the only" and [r.size for r in log.rows] == [1024, 32768, 1048576]
    code, out, err = _main(capsys, "perf", plat, "--op", "alltoall", "--compare", own)
    assert code == 0, err
    rows = _data_rows(out)
    assert len(rows) == 3 and all(abs(float(r[3]) - float(r[2])) <= 0.005 for r in rows)
    assert "64 KiB to 1 GiB (1 size):" in out


def test_plot_with_measured_points(repo, tmp_path, capsys):
    figure = tmp_path / "perf.png"
    code, _, err = _main(capsys, "perf", repo / "platforms/mi300x-8gpu.yaml", "--op", "all_reduce", "--compare",
                         repo / "tests/data/nccl/nccl-tests-all_reduce-8gpu.log", "--plot", figure)
    assert code == 0, err
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- bad input -----------------------------------------------------------------------------------------

def test_bad_options_exit_2_naming_the_option(repo, tmp_path, capsys):
    plat = repo / "platforms/mi300x-8gpu.yaml"
    log = repo / "tests/data/nccl/nccl-tests-all_reduce-8gpu.log"
    _bad(capsys, ["-b 1048576 is larger than -e 1024"], "perf", plat, "--op", "all_reduce", "-b", "1M", "-e", "1K")
    _bad(capsys, ["-f 1", "at least 2"], "perf", plat, "--op", "all_reduce", "-f", "1")
    _bad(capsys, ["-f 'two'"], "perf", plat, "--op", "all_reduce", "-f", "two")
    _bad(capsys, ["--op 'allreduce'", "all_reduce"], "perf", plat, "--op", "allreduce")
    _bad(capsys, ["--proto 'LL256'", "LL128"], "perf", plat, "--op", "all_reduce", "--proto", "LL256")
    _bad(capsys, ["--algo 'double_tree'"], "perf", plat, "--op", "all_reduce", "--algo", "double_tree")
    _bad(capsys, ["--fabric 'fluid'"], "perf", plat, "--op", "all_reduce", "--fabric", "fluid")
    _bad(capsys, ["-g 9", "2 to 8"], "perf", plat, "--op", "all_reduce", "-g", "9")
    _bad(capsys, ["--plot", ".png"], "perf", plat, "--op", "all_reduce", "--plot", tmp_path / "x.gif")
    _bad(capsys, ["nope.log"], "perf", plat, "--op", "all_reduce", "--compare", tmp_path / "nope.log")
    empty = tmp_path / "empty.log"
    empty.write_text("# nThread 1 nGpus 8 minBytes 8 maxBytes 8 step: 2(factor)\n#\n# Avg bus bandwidth    : 0\n")
    _bad(capsys, ["empty.log: no data lines"], "perf", plat, "--op", "all_reduce", "--compare", empty)
    _bad(capsys, ["-g 4", "measured on 8 ranks"], "perf", plat, "--op", "all_reduce", "--compare", log, "-g", "4")
    _bad(capsys, ["-b", "sizes are the LOG's"], "perf", plat, "--op", "all_reduce", "--compare", log, "-b", "8")
    _bad(capsys, ["--op all_gather", "all_reduce_perf"], "perf", plat, "--op", "all_gather", "--compare", log)
    _bad(capsys, ["--column 'both'"], "perf", plat, "--op", "all_reduce", "--compare", log, "--column", "both")
    _bad(capsys, ["--fabric flow", "ideal"], "perf", _ideal(tmp_path), "--op", "all_reduce", "--fabric", "flow")


def test_a_malformed_log_exits_2_naming_file_and_line(repo, tmp_path, capsys):
    lines = (repo / "tests/data/nccl/rccl-tests-all_reduce-8gpu.log").read_text().splitlines()
    lines[17] = lines[17][:60]  # the 64 KiB line, cut inside its out-of-place group
    path = tmp_path / "cut.log"
    path.write_text("\n".join(lines) + "\n")
    _bad(capsys, ["cut.log:18:", "fields"], "perf", repo / "platforms/mi300x-8gpu.yaml", "--op", "all_reduce",
         "--compare", path)


def test_textbook_source_refuses_what_it_does_not_have(repo):
    plat = load_platform(repo / "platforms/mi300x-8gpu.yaml")
    with pytest.raises(ConfigError, match="--proto LL"):
        build_collective(plat, "all_reduce", 1024, proto="LL")
    with pytest.raises(ConfigError, match="--algo tree"):
        build_collective(plat, "all_reduce", 1024, algo="tree")
    _, plan = build_collective(plat, "all_reduce", 64 * MIB, channels=4)
    assert (plan.algo, plan.proto, plan.channels) == ("ring", "Simple", 4)


def _ideal(tmp_path):
    """4 GPUs, one workgroup each, on the ideal fabric: L = 500 ns, M = 300 ns, memory bandwidth out of the way."""
    path = tmp_path / "ideal.yaml"
    path.write_text("eidola: 1\nname: ideal-4\ngpus: {count: 4, workgroups: 1, max_outstanding: 4096, "
                    "memory: {latency: 300ns, bandwidth: 1000TB/s}}\nfabric: {model: ideal, latency: 500ns}\n")
    return path


def test_a_plugin_fabric_runs_as_it_is(repo, simple_bus_lib, capsys):
    # vendor::AtBus (examples/third_party_ip) stands where the fabric sits: one row, fabric "plugin";
    # neither the flow fabric nor the packet fabric can stand in for a third-party interconnect.
    plat = repo / "examples/third_party_ip/simple-bus-at.yaml"
    code, out, err = _main(capsys, "perf", plat, "--op", "all_gather", "-b", "4K", "-e", "4K")
    assert code == 0, err
    assert [r[-1] for r in _data_rows(out)] == ["plugin"] and "plugin for every size" in out
    _bad(capsys, ["--fabric flow", "plugin fabric"], "perf", plat, "--op", "all_gather", "--fabric", "flow")
    _bad(capsys, ["--fabric packet", "plugin"], "perf", plat, "--op", "all_gather", "--fabric", "packet")
