"""Third-party TLM-2.0 models: the example interconnect (AT and LT), a user's GPU model among
eidolons, the protocol checker against deliberately faulty interconnects, and plugin errors."""


import pytest
import yaml

import eidola
from eidola.generators import all_to_all, gemv_allreduce
from eidola.profile import ProfileBuilder


def _outcome(res):
    return res.flags, res.gpus["writes"].tolist(), res.gpus["atomics"].tolist(), res.gpus["bytes_sent"].tolist()


def test_same_profile_on_every_fabric_gives_the_same_flag_semantics(repo, simple_bus_lib):
    # The final flag values and the write and atomic counts per GPU depend only on the profile,
    # never on the interconnect: the atomics' extension must survive the vendor's bus.
    prof = gemv_allreduce(gpus=4, workgroups=2, vector_bytes=4 * 2 * 1024)
    ideal = eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml")
    packet = eidola.load_platform(repo / "platforms/torus2d-16gpu.yaml", {"gpus.count": 4, "fabric.dims": [2, 2]})
    at = eidola.load_platform(repo / "examples/third_party_ip/simple-bus-at.yaml")
    lt = eidola.load_platform(repo / "examples/third_party_ip/simple-bus-lt.yaml")
    outcomes = [_outcome(eidola.simulate(p, prof)) for p in (ideal, packet, at, lt)]
    flags = outcomes[0][0]
    assert flags[(0, "rs_1")] == 2 and flags[(3, "ag_0")] == 2   # 2 workgroups of each peer signalled
    assert all(o == outcomes[0] for o in outcomes[1:])


def test_vendor_at_bus_times_like_the_ideal_fabric(repo, simple_bus_lib):
    # vendor::AtBus adds 500 ns each way and never contends: the ideal fabric at 500 ns, exactly, with requests that
    # reach a GPU in one picosecond in the order they were sent, as the bus hands them on (fabric.arrival: fifo).
    prof = gemv_allreduce(gpus=4, workgroups=4)
    ideal = eidola.simulate(eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml",
                                                 {"fabric.arrival": "fifo"}), prof)
    at = eidola.simulate(eidola.load_platform(repo / "examples/third_party_ip/simple-bus-at.yaml"), prof)
    assert at.kernel_time_ns == ideal.kernel_time_ns


@pytest.mark.parametrize("packets, expected_ns", [(16, 1300 + 16 * 0.048), (64, 1300 + 64 * 0.048),
                                                  (65, 2 * (1300 + 0.048))])
def test_an_lt_bus_keeps_the_gpus_whole_window_in_flight(repo, simple_bus_lib, packets, expected_ns):
    # vendor::LtBus adds 500 ns each way inside b_transport; the AT-to-LT adapter carries each request on a worker
    # thread. GPU 0's posted 256 B writes to GPU 1 fill its 64-packet window at once, so up to 64 take one round
    # trip, 500 + 300 (memory) + 500 ns, plus their memory service one after another (256 B / 5.3 TB/s = 48.3 ps,
    # 48 ps in whole picoseconds); a 65th waits for the first slot back (its answer at 1,300.048 ns) and takes a
    # round trip and a memory service of its own after that. With the adapter's old fixed 16 workers, 64 packets
    # took four round trips (a user trial, 2026-12-07).
    b = ProfileBuilder(gpus=4, workgroups=1, name="window")
    b.buffer("buf", 1 << 20)
    b.program(0, 0).write(dst=1, buffer="buf", offset=0, nbytes=256 * packets)
    res = eidola.simulate(eidola.load_platform(repo / "examples/third_party_ip/simple-bus-lt.yaml"), b.build())
    assert res.kernel_time_ns == pytest.approx(expected_ns, abs=1e-6)


def test_the_summary_says_a_third_party_fabric_reports_no_links(repo, cli, simple_bus_lib, tmp_path):
    # The run moves bytes, but a plugin fabric fills no per-link table: the summary said "none (no link traffic)"
    # beside "moved 394 kB" (a user trial, 2026-12-07). A built-in fabric's busiest link is named as before: on the
    # default profile GPU 0 -> 1 carries 4 workgroups x 2 phases x (4,096 B + an 8 B signal) = 32,832 B, "32.8 kB".
    r = cli("run", repo / "examples/third_party_ip/simple-bus-at.yaml", "--out", tmp_path / "at")
    assert r.returncode == 0, r.stderr
    assert "busiest link  not reported (a third-party fabric" in r.stdout and "no link traffic" not in r.stdout
    r = cli("run", repo / "platforms/gemv-allreduce-4gpu.yaml", "--out", tmp_path / "ideal")
    assert r.returncode == 0 and "busiest link  0 -> 1, 32.8 kB" in r.stdout, r.stdout


def _one_write(n_bytes=256):
    b = ProfileBuilder(gpus=4, workgroups=1, name="one")
    b.buffer("buf", 1 << 20)
    b.program(0, 0).write(dst=1, buffer="buf", offset=0, nbytes=n_bytes)
    return b.build()


def test_a_pattern_without_i_binds_every_gpu_to_one_multi_socket(tmp_path, repo):
    # multi::Bus's sockets are tlm_utils multi-sockets, bound once per GPU in GPU order. A 256 B write from GPU 0 to
    # GPU 1 takes 100 ns there, the memory's 300 ns plus its 48 ps (256 B / 5.3 TB/s, whole ps) and 100 ns back.
    doc = {"eidola": 1, "name": "multi", "gpus": {"count": 4, "workgroups": 1,
                                                   "memory": {"latency": "300ns", "bandwidth": "5.3TB/s"}},
           "address_map": {"base": 0, "stride": "1TiB"},
           "fabric": {"model": "plugin", "plugin": {
               "headers": [str(repo / "tests/plugins/multi_bus.h")], "class": "multi::Bus", "args": [],
               "protocol": "lt", "targets": "targets", "initiators": "initiators"}}}
    path = tmp_path / "multi.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = eidola.simulate(eidola.load_platform(path, {"check_protocol": True}), _one_write())
    assert res.kernel_time_ns == pytest.approx(500.048, abs=1e-6)


def test_a_plain_socket_bound_by_every_gpu_is_refused(tmp_path, repo, cli):
    # faulty::Bus's target_socket[0] is a plain (tagged simple) socket: one binding. A pattern without {i} bound every
    # GPU to it, which SystemC refused only at the end of elaboration, as "complete binding failed: port not bound",
    # exit 3 (a user trial, 2026-12-07). It is bad input: exit 2, naming the pattern and the socket.
    path = _faulty_platform(tmp_path, repo, 0)
    doc = yaml.safe_load(path.read_text())
    doc["fabric"]["plugin"]["targets"] = "target_socket[0]"
    path.write_text(yaml.safe_dump(doc))
    r = cli("run", path, "--profile", _save(tmp_path, _one_write()))
    assert r.returncode == 2, r.stderr
    assert "socket pattern targets: 'target_socket[0]'" in r.stderr and "takes one binding" in r.stderr
    assert "Traceback" not in r.stderr


def _save(tmp_path, profile):
    path = tmp_path / "profile.yaml"
    profile.save(path)
    return path


def test_a_b_transport_only_bus_declared_at_is_noted(repo, cli, simple_bus_lib, tmp_path):
    # vendor::LtBus registers only b_transport; declared `at`, tlm_utils' simple socket answers each nb_transport
    # with a BEGIN_RESP that implies END_REQ, so every request holds the GPU's next one for a whole transaction.
    # GPU 0 of the default profile sends 4 workgroups x 2 phases x (3 peers x 4096 B / 256 B + 3 signals) = 408.
    # The AT bus ends each request at once (TLM_UPDATED with END_REQ): no note.
    lt = repo / "examples/third_party_ip/simple-bus-lt.yaml"
    r = cli("run", lt, "--set", "fabric.plugin.protocol=at", "--out", tmp_path / "lt-as-at")
    assert r.returncode == 0, r.stderr
    assert "note: GPU 0's fabric ended 408 of its 408 requests only with their response" in r.stdout
    assert "fabric.plugin.protocol: lt" in r.stdout
    r = cli("run", repo / "examples/third_party_ip/simple-bus-at.yaml", "--out", tmp_path / "at")
    assert r.returncode == 0 and "requests only with their response" not in r.stdout, r.stdout


def test_an_lt_plugins_workers_bound_its_adapters_threads(repo, simple_bus_lib, tmp_path, cli):
    # fabric.plugin.workers: 1 gives each AT-to-LT adapter one worker thread: GPU 0's 4 posted 256 B writes to
    # GPU 1 go through vendor::LtBus one after another, each 500 + 300 + 0.048 (memory) + 500 ns: 4 x 1,300.048.
    b = ProfileBuilder(gpus=4, workgroups=1, name="window")
    b.buffer("buf", 1 << 20)
    b.program(0, 0).write(dst=1, buffer="buf", offset=0, nbytes=4 * 256)
    plat = eidola.load_platform(repo / "examples/third_party_ip/simple-bus-lt.yaml", {"fabric.plugin.workers": 1})
    res = eidola.simulate(plat, b.build())
    assert res.kernel_time_ns == pytest.approx(4 * 1300.048, abs=1e-6)
    assert "workers: 1" in res.effective_config
    r = cli("validate", repo / "examples/third_party_ip/simple-bus-lt.yaml", "--set", "fabric.plugin.workers=-2")
    assert r.returncode == 2 and "fabric.plugin.workers: expected a whole number" in r.stderr, r.stderr
    r = cli("validate", repo / "examples/third_party_ip/simple-bus-at.yaml", "--set", "fabric.plugin.workers=4")
    assert r.returncode == 2 and "only an LT plugin" in r.stderr, r.stderr


def test_user_gpu_model_among_eidolons(repo):
    # GPU 1 is examples/user_gpu/traffic_gpu.h (LT). From 1 us it writes 1 KiB in four 256-byte
    # b_transport calls over the ideal fabric, each costing L + M + L = 1300 ns (0 ps of memory
    # bandwidth), then stores the flag at 1000 + 4 x 1300 = 6200 ns (an LT write takes effect when
    # it is called). GPU 0 polls every M + I = 400 ns from 0: completions at 300 + 400k, and the
    # one at 6300 (k = 15) is the first to see it.
    b = ProfileBuilder(gpus=2, workgroups=1, name="wait-for-user")
    b.flag("ready")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).wait(flag="ready", cond=">=", value=1, mode="poll", interval_ns=100)
    for check in (False, True):
        plat = eidola.load_platform(repo / "examples/user_gpu/user-gpu-2gpu.yaml", {"check_protocol": check})
        res = eidola.simulate(plat, b.build())
        assert res.kernel_time_ns == 6300.0
        assert res.gpus["flag_reads"][0] == 16
        assert res.gpus["writes"][0] == 5 and res.flags[(0, "ready")] == 1


def test_the_user_gpu_example_runs_as_written(repo, cli, tmp_path):
    # The README points at examples/user_gpu/; it named no profile, so `eidola run` on it stopped at "pass --profile"
    # (a user trial, 2026-12-07). It ships the profile of the test above: 6.300 us, derived there.
    r = cli("run", repo / "examples/user_gpu/user-gpu-2gpu.yaml", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert "kernel time   6.300 us" in r.stdout


def _faulty_platform(tmp_path, repo, fault, check=True, template=None):
    doc = {
        "eidola": 1, "name": f"faulty-{fault}",
        "gpus": {"count": 4, "workgroups": 4, "memory": {"latency": "300ns", "bandwidth": "5.3TB/s"}},
        "fabric": {"model": "plugin", "plugin": {
            "headers": [str(repo / "tests/plugins/faulty_bus.h")],
            "class": template or f"faulty::Bus<{fault}>", "args": [4], "protocol": "at",
            "targets": "target_socket[{i}]", "initiators": "initiator_socket[{i}]"}},
        "check_protocol": check,
    }
    path = tmp_path / f"faulty-{fault}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


_PROFILE = all_to_all(gpus=4, nbytes=4 * 4 * 256, workgroups=4, mode="syncmon")


def test_correct_bus_passes_the_checker(tmp_path, repo, write_platform):
    # faulty::Bus<0> breaks no rule and adds 100 ns each way without contention: behind the checker
    # it must time exactly like the ideal fabric at 100 ns (the checker adds no time), whose requests that reach a
    # GPU in one picosecond go in the order they were sent, as the bus hands them on.
    res = eidola.simulate(eidola.load_platform(_faulty_platform(tmp_path, repo, 0)), _PROFILE)
    ideal = eidola.load_platform(write_platform(gpus=4, workgroups=4, latency="100ns"), {"fabric.arrival": "fifo"})
    assert res.kernel_time_ns == eidola.simulate(ideal, _PROFILE).kernel_time_ns


@pytest.mark.parametrize("fault, rule, socket", [
    (1, "response sent twice", "checker"),
    (2, "response never sent", "checker"),
    (3, "transaction reuse", "checker"),
    (4, "response status", "checker"),
    (5, "data length", "checker"),
    (6, "address", "checker"),
    (7, "phase sequence", "checker"),
    (8, "byte enables", "checker"),
    (9, "streaming width", "checker"),
    (11, "misrouted", "checker"),
    (12, "response status", "checker"),
    (13, "ignorable phase", "checker"),
])
def test_checker_names_the_rule_and_socket(tmp_path, repo, fault, rule, socket):
    plat = eidola.load_platform(_faulty_platform(tmp_path, repo, fault))
    with pytest.raises(eidola.SimulationError) as info:
        eidola.simulate(plat, _PROFILE)
    text = str(info.value)
    assert f"[{rule}]" in text
    # An error status is legal under IEEE 1666's base protocol; here it is a failed transaction, not a violation.
    kind = "TLM-2.0 transaction failed" if fault == 12 else "TLM-2.0 base protocol violation"
    assert kind in text and ".target" in text and "phase history" in text
    assert "transaction: " in text or "was never answered" in text


def test_a_lost_transaction_without_the_checker_ends_in_a_stall_report(tmp_path, repo):
    plat = eidola.load_platform(_faulty_platform(tmp_path, repo, 2, check=False))
    with pytest.raises(eidola.SimulationError) as info:
        eidola.simulate(plat, _PROFILE)
    text = str(info.value)
    assert "stall" in text and "no response" in text and "releasing (1 writes not yet acknowledged)" in text


@pytest.mark.parametrize("fault, ok", [(0, True), (12, False)])
def test_the_fabrics_end_of_simulation_runs_on_success_and_failure(tmp_path, repo, fault, ok):
    # faulty::Bus writes the transactions it saw at end_of_simulation(), as a vendor's IP writes its statistics.
    # A run that ran out of events is only paused until sc_stop(): its IP's end_of_simulation() never ran (a user
    # trial, 2026-12-07), where a failed run's did. _PROFILE's all-to-all: 4 GPUs x 3 peers x 4 workgroups x one
    # 256 B write and one signal each, 96 transactions; the error status ends the run at the bus's fifth.
    path = _faulty_platform(tmp_path, repo, fault, check=False)
    doc = yaml.safe_load(path.read_text())
    doc["fabric"]["plugin"]["args"] = [4, str(tmp_path / "eos.txt")]
    path.write_text(yaml.safe_dump(doc))
    plat = eidola.load_platform(path)
    if ok:
        eidola.simulate(plat, _PROFILE)
        assert (tmp_path / "eos.txt").read_text() == "transactions 96\n"
    else:
        with pytest.raises(eidola.SimulationError):
            eidola.simulate(plat, _PROFILE)
        assert int((tmp_path / "eos.txt").read_text().split()[1]) >= 5


def test_an_error_in_the_fabrics_end_of_simulation_fails_the_run(tmp_path, repo, cli):
    # end_of_simulation() now runs after a successful run, outside the simulation's own try: an IP's SC_REPORT_ERROR
    # there (a "transactions still open" check) must fail the run with its message, exit 3, not a traceback.
    path = _faulty_platform(tmp_path, repo, 0, check=False)
    doc = yaml.safe_load(path.read_text())
    doc["fabric"]["plugin"]["args"] = [4, "error"]
    path.write_text(yaml.safe_dump(doc))
    r = cli("run", path, "--profile", _save(tmp_path, _one_write()), "--out", tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "at the end of simulation:" in r.stderr and "transactions still open at the end" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_response_sent_twice_without_the_checker_is_refused_by_the_gpu(tmp_path, repo):
    # faulty::Bus<1> sends BEGIN_RESP twice for its fifth transaction. Taken twice, the GPU freed the packet's window
    # slot and payload twice and counted a write acknowledged while it was in flight: a wrong kernel time with
    # exit 0, or a C++ abort on the payload's reference count (a user trial, 2026-12-07).
    plat = eidola.load_platform(_faulty_platform(tmp_path, repo, 1, check=False))
    with pytest.raises(eidola.SimulationError, match=r"initiator: BEGIN_RESP for a transaction to address 0x[0-9a-f]+ "
                       r"that is not awaiting a response"):
        eidola.simulate(plat, _PROFILE)


@pytest.mark.parametrize("change, needle", [
    ({"headers": ["no/such/header.h"]}, "does not exist"),
    ({"class": "faulty::Nope<1>"}, "'Nope' in namespace 'faulty' does not name a template type"),
    ({"class": "faulty::Bus<1; system(x)>"}, "is not a C++ class name"),
    ({"targets": "target_sockets[{i}]"}, "has no member named 'target_sockets'"),
    ({"targets": "target_socket[{j}]"}, "expected a socket pattern"),
    ({"class": "faulty::Bus<99>"}, "static assertion failed"),
])
def test_plugin_errors_exit_2_with_the_relevant_line(tmp_path, repo, cli, change, needle):
    path = _faulty_platform(tmp_path, repo, 0, check=False)
    doc = yaml.safe_load(path.read_text())
    doc["fabric"]["plugin"].update(change)
    path.write_text(yaml.safe_dump(doc))
    prof = tmp_path / "a2a.yaml"
    _PROFILE.save(prof)
    r = cli("run", path, "--profile", prof)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) <= 3, r.stderr   # condensed, not a compiler dump


def test_validate_a_plugin_platform(repo, cli):
    r = cli("validate", repo / "examples" / "user_gpu" / "user-gpu-2gpu.yaml", "--profile",
            repo / "profiles" / "gemv-allreduce-4gpu.yaml")
    assert r.returncode == 2 and "needs 4 GPUs" in r.stderr


def test_profile_program_on_a_plugin_gpu_is_refused(repo, cli, tmp_path):
    b = ProfileBuilder(gpus=2, workgroups=1, name="busy-plugin")
    b.program(gpu=1, wg=0).compute(ns=10)
    b.build().save(tmp_path / "p.yaml")
    r = cli("validate", repo / "examples" / "user_gpu" / "user-gpu-2gpu.yaml", "--profile", tmp_path / "p.yaml")
    assert r.returncode == 2 and "GPU 1 is a plugin model" in r.stderr


def test_a_runaway_plugin_is_killed_at_the_wall_limit(tmp_path, repo, cli):
    # faulty::Bus<10> loops forever inside nb_transport_fw on its fifth transaction: without a
    # limit `eidola run` would never return. --timeout 2s must kill it, exit 3 and name the limit.
    path = _faulty_platform(tmp_path, repo, 10, check=False)
    prof = tmp_path / "a2a.yaml"
    _PROFILE.save(prof)
    r = cli("run", path, "--profile", prof, "--timeout", "2s")
    assert r.returncode == 3, r.stderr
    assert "exceeded the wall limit of 2 s" in r.stderr and "Traceback" not in r.stderr
    # The same limit from the platform file, through the Python API.
    # The report says how far the run got: here GPU 0 computes 5 us, then its 5 posted packets go
    # at once, and the fifth one spins in the bus at 5 us of simulated time.
    b = ProfileBuilder(gpus=4, workgroups=1, name="late-spin")
    b.buffer("data", nbytes=4096)
    b.program(gpu=0, wg=0).compute(ns=5000).write(dst=1, buffer="data", offset=0, nbytes=5 * 256)
    plat = eidola.load_platform(path, {"limits": {"wall": "2s"}})
    with pytest.raises(eidola.WallLimitExceeded) as info:
        eidola.simulate(plat, b.build())
    assert info.value.report == {"limit": "wall", "wall_s": 2.0, "sim_time_ns": 5000.0}
    assert "it had reached 5 us of simulated time" in str(info.value)


def test_checker_names_the_misrouted_window(tmp_path, repo):
    # faulty::Bus<11> sends its fifth request to the next GPU's port with its address unchanged:
    # the checker in front of that GPU knows its own window and names both.
    plat = eidola.load_platform(_faulty_platform(tmp_path, repo, 11))
    with pytest.raises(eidola.SimulationError) as info:
        eidola.simulate(plat, _PROFILE)
    text = str(info.value)
    window = int(text.split("the address is in window ")[1].split()[0])
    assert f"reached the GPU owning window {(window + 1) % 4}" in text


def test_checker_flags_an_error_status(tmp_path, repo):
    plat = eidola.load_platform(_faulty_platform(tmp_path, repo, 12))
    with pytest.raises(eidola.SimulationError, match="TLM_GENERIC_ERROR_RESPONSE, not TLM_OK_RESPONSE"):
        eidola.simulate(plat, _PROFILE)
