"""Nothing crashes, hangs or escapes: each class of bad input exits 2 with a message naming the file
and key, runs are bounded, output stays under out/, and no simulation outlives its parent."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from processes import alive, children_of, identity, still_running

import eidola
from eidola.cli import safe_dir_name
from eidola.inputs import MAX_YAML_DEPTH
from eidola.platform.yaml_io import MAX_GPUS
from eidola.profile import ProfileBuilder

_BOMB = "lol: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


def _bad(r, *needles):
    """The CLI exited 2 with one clean message holding every needle."""
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)


# ---------------------------------------------------------------- bad files

def test_binary_platform_names_line_and_column(cli, write_platform):
    path = write_platform()
    text = path.read_bytes()
    # Line 3 is "gpus:"; the bad byte replaces its third character.
    lines = text.split(b"\n")
    lines[2] = b"gp\xffs:"
    path.write_bytes(b"\n".join(lines))
    _bad(cli("validate", path), f"{path}:3:3:", "not UTF-8", "0xff")


def test_binary_profile_and_csv(cli, tmp_path, write_platform):
    junk = tmp_path / "junk.yaml"
    junk.write_bytes(bytes(range(256)) * 4)
    _bad(cli("validate", write_platform(), "--profile", junk), str(junk), "not UTF-8")
    csv = tmp_path / "run.csv"
    csv.write_bytes(b"gpu,wg,t_ns,event,peer,flag,value,nbytes\n0,0,0,st\x80rt,,,,\n")
    _bad(cli("import", "timestamps", csv, "-o", tmp_path / "p.yaml"), f"{csv}:2:", "not UTF-8")


def test_alias_bomb_is_refused(cli, tmp_path, write_platform):
    # 10^9 leaves once expanded: refused while counting, before anything walks it.
    plat = write_platform()
    plat.write_text(plat.read_text() + _BOMB.replace("lol:", "bomb:"))
    _bad(cli("validate", plat), str(plat), "billion laughs")
    prof = tmp_path / "bomb-profile.yaml"
    prof.write_text("eidola_profile: 1\nname: b\ngpus: 1\nworkgroups: 1\n" + _BOMB)
    _bad(cli("validate", write_platform(name="ok.yaml"), "--profile", prof),
         str(prof), "billion laughs")


def test_deep_nesting_names_where(cli, write_platform):
    plat = write_platform()
    base = plat.read_text()
    for depth in (100, 100_000):  # libyaml's own scanner stops the second at 1,000 levels
        plat.write_text(base + "deep: " + "[" * depth + "]" * depth + "\n")
        _bad(cli("validate", plat), f"{plat}:12:", "nest")
    plat.write_text(base + "deep: " + "[" * 100 + "]" * 100 + "\n")
    # The root mapping is level 1, so the 64th bracket (column 6 + 64) is one level too many.
    _bad(cli("validate", plat), f"{plat}:12:{6 + MAX_YAML_DEPTH}:", f"more than {MAX_YAML_DEPTH} levels")
    plat.write_text(plat.read_text().split("deep:")[0] + "deep:\n" + "".join("  " * i + "k:\n" for i in range(200)))
    _bad(cli("validate", plat), str(plat), f"more than {MAX_YAML_DEPTH} levels")


def test_a_mapping_where_a_scalar_belongs(cli, write_platform):
    plat = write_platform()
    plat.write_text(plat.read_text().replace("model: ideal", "model: {kind: ideal}"))
    _bad(cli("validate", plat), "fabric.model", "expected one of ideal, packet, flow, plugin")
    plat.write_text(plat.read_text().replace("name: test-platform", "name: [a, b]"))
    _bad(cli("validate", plat), "name: expected a non-empty string")


@pytest.mark.parametrize("count", [100_000, 2**31, 2**63, MAX_GPUS + 1])
def test_huge_gpu_counts_are_refused_at_once(cli, write_platform, count):
    _bad(cli("validate", write_platform(), "--set", f"gpus.count={count}"), "gpus.count",
         f"an integer from 1 to {MAX_GPUS}", str(count))


def test_device_files_and_directories_are_not_read(cli, tmp_path, write_platform):
    for device in ("/dev/zero", "/dev/urandom"):
        _bad(cli("validate", device), device, "must be a regular file")
        _bad(cli("validate", write_platform(), "--profile", device), device, "must be a regular file")
        _bad(cli("import", "timestamps", device, "-o", tmp_path / "p.yaml"), device, "must be a regular file")
    plat = write_platform(profile="/dev/zero")
    _bad(cli("validate", plat), "/dev/zero", "must be a regular file")
    _bad(cli("validate", tmp_path), str(tmp_path), "a directory")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    _bad(cli("validate", fifo), str(fifo), "must be a regular file")


def test_size_limit_is_checked_and_overridable(tmp_path, write_platform):
    plat = write_platform()
    size = plat.stat().st_size
    env = {**os.environ, "EIDOLA_MAX_INPUT_BYTES": str(size - 1)}
    r = subprocess.run([sys.executable, "-m", "eidola", "validate", str(plat), "--profile", str(plat)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    _bad(r, str(plat), f"{size} bytes, more than the limit of {size - 1} bytes", "EIDOLA_MAX_INPUT_BYTES")
    env["EIDOLA_MAX_INPUT_BYTES"] = str(size)  # exactly the size is allowed: the error is the profile's now
    r = subprocess.run([sys.executable, "-m", "eidola", "validate", str(plat), "--profile", str(plat)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    _bad(r, "this is a platform file (it has the key 'eidola'), not a profile")


@pytest.mark.parametrize("op, needle", [
    ("[compute, {ns: 100000000000000000000000000000}]", "ns 100000000000000000000000000000 is out of range"),
    ("[compute, {cycles: 9223372036854775808}]", "cycles 9223372036854775808 is out of range"),
    ("[wait, {flag: f, cond: '>=', value: 1, interval_ns: 1.0e+300}]", "interval_ns 1e+300 is out of range"),
    ("[signal, {dst: 0, flag: f, value: 99999999999999999999999}]", "value 99999999999999999999999 is out of range"),
])
def test_ints_too_large_in_a_profile(cli, tmp_path, write_platform, op, needle):
    prof = tmp_path / "big.yaml"
    prof.write_text(f"eidola_profile: 1\nname: big\ngpus: 1\nworkgroups: 1\nflags: [f]\nprograms:\n"
                    f"- gpu: 0\n  wg: 0\n  ops:\n  - {op}\n")
    _bad(cli("validate", write_platform(), "--profile", prof), str(prof), "gpu 0 wg 0 op 0", needle)


def test_duplicate_keys_are_refused_in_platforms_too(cli, write_platform):
    plat = write_platform()
    plat.write_text(plat.read_text() + "seed: 2\nseed: 3\n")
    _bad(cli("validate", plat), f"{plat}:13:1:", "duplicate key 'seed'")


# ---------------------------------------------------------------- output directories

@pytest.mark.parametrize("name, expected", [
    ("../../x", "_.._x"), ("/etc/passwd", "_etc_passwd"), ("..", "platform"), (".hidden", "hidden"),
    ("ok-name_1.2", "ok-name_1.2"), ("a b/c", "a_b_c"),
])
def test_safe_dir_name(name, expected):
    assert safe_dir_name(name) == expected


def test_a_traversing_name_writes_under_out(cli, tmp_path, write_platform, repo):
    plat = write_platform(profile=repo / "profiles" / "gemv-allreduce-4gpu.yaml")
    plat.write_text(plat.read_text().replace("name: test-platform", "name: ../../escaped"))
    r = cli("run", plat)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "_.._escaped" / "summary.json").exists()
    assert not (tmp_path.parent.parent / "escaped").exists()


# ---------------------------------------------------------------- limits on runs

def test_timeout_values_are_checked(cli, write_platform):
    plat = write_platform()
    _bad(cli("run", plat, "--timeout", "60parsecs"), "--timeout '60parsecs'", "unknown time unit")
    _bad(cli("run", plat, "--timeout=-1s"), "--timeout '-1s'", "expected a duration in (0s, 86400s]")
    _bad(cli("run", plat, "--timeout=-1"), "--timeout '-1'", "expected a duration in (0s, 86400s]")
    plat.write_text(plat.read_text() + "limits: {sim_time: 7200s}\n")
    _bad(cli("validate", plat), "limits.sim_time: expected a duration in (0s, 3600s]")


def test_sim_time_stops_cleanly_with_partial_results(cli, write_platform, tmp_path):
    # GPU 0 computes for 1 ms, then flags GPU 1, which polls; stopped at 5 us, both are unfinished:
    # the run ends at exactly 5 us, exit 0, marked partial, with no deadlock or stall report.
    plat = write_platform(gpus=2, workgroups=1)
    plat.write_text(plat.read_text() + "limits: {sim_time: 5us}\n")
    b = ProfileBuilder(gpus=2, workgroups=1, name="long")
    b.flag("f")
    b.program(gpu=0, wg=0).compute(ns=1_000_000).signal(dst=1, flag="f")
    b.program(gpu=1, wg=0).wait(flag="f", cond=">=", value=1, mode="poll", interval_ns=100)
    res = eidola.simulate(eidola.load_platform(plat), b.build())
    assert res.partial and res.kernel_time_ns == 5000.0
    assert list(res.workgroups["finish_ns"]) == [0.0, 0.0]           # neither finished
    assert res.gpus["flag_reads"][1] == 1 + (5000 - 300) // 400      # polls completed by 5 us (M = 300, M + I = 400)
    prof = tmp_path / "long.yaml"
    b.build().save(prof)
    r = cli("run", plat, "--profile", prof, "--out", tmp_path / "o")
    assert r.returncode == 0 and "PARTIAL" in r.stdout and "stopped at limits.sim_time = 5.000 us" in r.stdout


def _write_4k() -> eidola.Profile:
    """GPU 0 writes 4 KiB to GPU 1: 16 packets of 256 B."""
    b = ProfileBuilder(gpus=2, workgroups=1, name="one")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).write(dst=1, buffer="data", offset=0, nbytes=4096)
    return b.build()


def _write_4k_ns(platform: str) -> float:
    """_write_4k's zero-load time on `platform`, by hand: the last of 16 packets of 256 + 16 B starts, is serialised
    and crosses its hops, the memory takes it, then its 16-byte acknowledgement's hops (a hop is a link's latency
    and a router's)."""
    if platform == "switch-8gpu.yaml":  # 4 lanes of 100 GB/s, 2 hops of 150 + 100 ns
        ser, ack = 272 / 100e9 * 1e9, 16 / 100e9 * 1e9
        # 4 packets a lane, and 4 arrive at once, so the memory serves the last one fourth (256 B at 5.3 TB/s each).
        return 3 * ser + ser + 2 * 250 + ack + 300 + 4 * 256 / 5.3e12 * 1e9 + 2 * (250 + ack)
    assert platform == "mesh2d-16gpu.yaml"  # GPU 0 to GPU 1, one hop of 100 + 50 ns on one lane of 64 GB/s
    ser, ack = 272 / 64e9 * 1e9, 16 / 64e9 * 1e9
    return 15 * ser + ser + 150 + 300 + 256 / 5.3e12 * 1e9 + (150 + ack)


@pytest.mark.parametrize("model", ["packet", "flow"])
def test_a_run_done_before_sim_time_is_whole(repo, model):
    # One 4 KiB write, done in about a microsecond, under limits.sim_time of 100 us: the run ends by itself, so its
    # result is the one without the limit, not partial. Each GPU's stall watchdog stays booked for up to its time
    # (1 ms on the packet fabric, 1 s on the flow fabric) after its last response, and the run was reported
    # partial, its kernel time 100 us, whenever that fell after the limit.
    profile = _write_4k()
    path = repo / "platforms" / "switch-8gpu.yaml"
    whole = eidola.simulate(eidola.load_platform(path, overrides={"fabric.model": model}), profile)
    limited = eidola.simulate(eidola.load_platform(path, overrides={"fabric.model": model,
                                                                    "limits.sim_time": "100us"}), profile)
    assert not whole.partial and whole.kernel_time_ns < 10_000
    assert whole.kernel_time_ns == pytest.approx(_write_4k_ns("switch-8gpu.yaml"), rel=0.005)
    assert not limited.partial and limited.kernel_time_ns == whole.kernel_time_ns


@pytest.mark.parametrize("model", ["packet", "flow"])
@pytest.mark.parametrize("platform", ["switch-8gpu.yaml", "mesh2d-16gpu.yaml"])
def test_a_buffer_past_any_count_is_bottomless(repo, platform, model):
    # A 4 KiB write never fills a buffer of 2^20 packets, so any larger buffer must time it the same. 1 TiB of
    # 16-byte flits is 2^36 credits, which a 32-bit count took as 0, and 2^30 packets times a mesh router's six
    # injection queues wrapped to 0: every packet waited for room and the run stopped with a stall (the fuzz
    # memory campaign's exit 3s, 2026-12-06). Credits are now capped at 2^30, past which no buffer fills.
    profile = _write_4k()
    path = repo / "platforms" / platform

    def kernel(buffer):
        plat = eidola.load_platform(path, overrides={"fabric.model": model, "fabric.switch.buffer": buffer})
        return eidola.simulate(plat, profile).kernel_time_ns

    deep = kernel(2**20)
    want = _write_4k_ns(platform)
    assert deep == pytest.approx(want, abs=2e-3 if model == "packet" else want * 0.005)
    for buffer in ("1TiB", "1PiB", 2**30, 2**31):
        assert kernel(buffer) == deep, buffer


def test_limits_round_trip_in_the_effective_configuration(write_platform):
    plat = write_platform()
    plat.write_text(plat.read_text() + "limits: {wall: 90s}\n")
    p = eidola.load_platform(plat)
    assert p.limits == {"wall": 90.0}
    assert "limits:\n  wall: 90s" in p.effective_yaml()
    with pytest.raises(eidola.ConfigError, match="timeout: expected a number of seconds"):
        eidola.simulate(p, timeout=-1)


# A simulation that takes hours of wall time: GPU 1 polls every 1 ns for a flag that GPU 0 sets
# only after 10^4 s of simulated compute (not a deadlock: a pending signal will release it).
_LONG_RUN = textwrap.dedent("""
    import os, sys
    import eidola
    from eidola.profile import ProfileBuilder
    b = ProfileBuilder(gpus=2, workgroups=1, name="long")
    b.flag("ready")
    b.program(gpu=0, wg=0).compute(ns=1e13).signal(dst=1, flag="ready", op="add", value=1)
    b.program(gpu=1, wg=0).wait(flag="ready", cond=">=", value=1, mode="poll", interval_ns=1)
    plat = eidola.load_platform(sys.argv[1])
    print(os.getpid(), flush=True)
    eidola.simulate(plat, b.build())
""")


def _children(pid):
    """The simulation children of `pid`: processes forked from it (same command line), read from /proc.

    Other short-lived children (a compiler probe, say) run other programs and are left out.
    """
    try:
        cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return []

    def same_program(child):
        try:
            return open(f"/proc/{child}/cmdline", "rb").read() == cmdline
        except OSError:
            return False

    return [child for child in children_of(pid) if same_program(child)]


def _the_child(parent, seconds=60.0):
    """The simulation child of `parent`, once the same single child has been seen twice 0.2 s apart.

    Why twice: on a loaded machine a short-lived process can show up for a moment (a fork that
    execs, a child that is being reaped); the simulation child stays.
    """
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        first = _children(parent)
        time.sleep(0.2)
        if len(first) == 1 and _children(parent) == first and alive(first[0]):
            return first[0]
    raise AssertionError("the simulation's child process never started")


def _wait_for(predicate, seconds=60.0):
    """Polls until `predicate()` holds; False if it never did (a bound, not a measurement)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _start_long_run(tmp_path, write_platform, argv=None):
    script = tmp_path / "long.py"
    script.write_text(_LONG_RUN)
    proc = subprocess.Popen(argv or [sys.executable, str(script), str(write_platform())], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    return proc


def _kill_tree(proc, seen):
    """Kills `proc`, its simulation children and the `seen` ones ((pid, start) pairs from identity()) whatever
    the test's outcome: a failed assertion must not leave a simulation running.

    Nothing is signalled by pid alone: `proc`, once reaped, and a simulation child, reaped by init once its
    parent is gone, may have handed their pids to other processes. Popen knows whether `proc` has been
    reaped; a child is killed only while its pid still has the start time it was seen with.
    """
    if proc.poll() is None:
        seen = [*seen, *map(identity, _children(proc.pid))]
        proc.kill()
    for pid, started in seen:
        if still_running((pid, started)):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=60)


def test_a_killed_parent_leaves_no_orphan(tmp_path, write_platform):
    proc = _start_long_run(tmp_path, write_platform)
    seen = []
    try:
        parent = int(proc.stdout.readline())
        seen.append(identity(_the_child(parent)))
        os.kill(parent, signal.SIGKILL)
        proc.wait(timeout=60)
        assert _wait_for(lambda: not alive(seen[0][0])), f"child {seen[0][0]} outlived its killed parent"
    finally:
        _kill_tree(proc, seen)


@pytest.mark.parametrize("sig, status, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_ctrl_c_and_sigterm_kill_the_run_and_exit_cleanly(tmp_path, write_platform, repo, interruptible, sig, status,
                                                         word):
    b_script = tmp_path / "make_profile.py"
    b_script.write_text(_LONG_RUN.replace("plat = eidola.load_platform(sys.argv[1])", "b.build().save(sys.argv[1])")
                        .split("print(os.getpid()")[0])
    prof = tmp_path / "long.yaml"
    subprocess.run([sys.executable, str(b_script), str(prof)], check=True, timeout=120)
    proc = interruptible([sys.executable, "-m", "eidola", "run", str(write_platform(profile=prof))],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    seen = []
    try:
        seen.append(identity(_the_child(proc.pid)))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == status, err
        assert err.strip() == f"eidola run: {word}"
        assert not alive(seen[0][0])
    finally:
        _kill_tree(proc, seen)


def test_a_bounded_fuzz_run_finds_nothing(repo, tmp_path):
    # 60 cases of each campaign (scripts/fuzz.sh runs long ones): every exit must be 0, 2 or 3. A case may take 60 s
    # before it counts as a hang: memory #56 runs 4 GPUs of 2^20 workgroups each (1.7 s of simulation) and writes
    # their 4 million rows to workgroups.csv, 20-26 s in all on this machine (2026-12-05), past the default 20.
    r = subprocess.run([sys.executable, str(repo / "scripts" / "fuzz.py"), "--cases", "60", "--seed", "11", "--json",
                        "--limit", "60", "--keep", str(tmp_path / "findings")], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads(r.stdout)
    # 60 of each, but netsweep runs half and rundir a tenth (their cases draw figures: seconds each), and flow half
    # (its cases run: a third of a second each).
    assert summary["cases"] == 60 * 7 + 30 + 6 + 30 and summary["findings"] == 0
