"""The put op (a write that carries its own flag, NCCL's LL/LL128) and the GPU's kernel launch, timed by hand.

Packet fabric, fully connected, one lane: bandwidth B = 64 GB/s, latency lat = 100 ns, header h = 16 B,
router sw = 50 ns, flit f = 16 B / B = 0.25 ns; max_payload p = 256 B, so a packet serialises in
ser = (p + h) / B = 4.25 ns. Memory latency M = 300 ns and a bandwidth so high (1000 TB/s) that an
access's occupancy rounds to 0 ps. From tests/python/test_packet_fabric.py: a packet crossing H hops at
zero load is delivered ser + H (lat + sw) + (H - 1) f after it starts, and packets of one write leave back
to back, so packet k of a write issued at 0 is delivered at (k + 1) ser + H (lat + sw) + (H - 1) f. A
write's acknowledgement is one flit: it takes f + H (lat + sw) + (H - 1) f back. SyncMon waits wake at once
(wake latency 0).

A put of N bytes (P = ceil(N / p) packets) sets its flag when its last packet is served:
    wake_put = P ser + H (lat + sw) + (H - 1) f + M                          (one one-way trip)
A write then a signal (a release) sends the 8-byte flag once the last packet's acknowledgement is back:
    wake_ws = P ser + H (lat + sw) + (H - 1) f + M  + [H (lat + sw) + H f]  + [ser(8) + H (lat + sw) + (H - 1) f + M]
so wake_ws - wake_put = the acknowledgement's trip back plus the flag's own trip: the round trip a
flag-in-data protocol saves per step.
"""

import numpy as np
import pytest

import eidola
from eidola.profile import ProfileBuilder

B, LAT, H, SW, M, P_MAX = 64.0, 100.0, 16, 50.0, 300.0, 256  # GB/s (bytes/ns), ns, B, ns, ns, B
F = 16 / B                                                     # one flit, ns


def ser(payload):
    return (payload + H) / B


def one_way(hops):
    """Zero-load head-to-delivery cost of a packet over `hops` hops, less its serialisation."""
    return hops * (LAT + SW) + (hops - 1) * F


def ack_back(hops):
    """A one-flit acknowledgement's trip back over `hops` hops."""
    return F + one_way(hops)


def _platform(write_platform, gpus=2, topology="fully_connected", lanes=1, model="packet", extra=""):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: put
        gpus: {{count: {gpus}, workgroups: 1, max_outstanding: 1024, max_payload: {P_MAX}B,
               memory: {{latency: {M:g}ns, bandwidth: 1000TB/s}}{extra}}}
        fabric:
          model: {model}
          topology: {topology}
          link: {{bandwidth: {B:g}GB/s, latency: {LAT:g}ns, header: {H}B, count: {lanes}}}
          switch: {{latency: {SW:g}ns, buffer: 64}}
        """))


def _ideal(write_platform, gpus=2, latency=500.0, extra=""):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: put-ideal
        gpus: {{count: {gpus}, workgroups: 1, max_outstanding: 1024, max_payload: {P_MAX}B,
               memory: {{latency: {M:g}ns, bandwidth: 1000TB/s}}{extra}}}
        fabric: {{model: ideal, latency: {latency:g}ns}}
        """))


def _step(gpus, src, dst, nbytes, kind="put", value=1, op="add"):
    """GPU `src` puts (or writes then signals) `nbytes` to `dst`; `dst` waits for the flag (SyncMon)."""
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="step")
    b.flag("f").buffer("fifo", 1 << 20)
    p = b.program(src, 0)
    if kind == "put":
        p.put(dst=dst, buffer="fifo", offset=0, nbytes=nbytes, flag="f", value=value, op=op)
    else:
        p.write(dst=dst, buffer="fifo", offset=0, nbytes=nbytes).signal(dst=dst, flag="f", value=value, op=op)
    b.program(dst, 0).wait(flag="f", cond=">=", value=1, mode="syncmon")
    return b.build()


def _wake(res, gpu):
    return float(res.workgroups["finish_ns"][res.workgroups["gpu"] == gpu][0])


@pytest.mark.parametrize("nbytes", [16, 4096, 4096 + 16])
def test_put_wakes_the_receiver_after_one_one_way_trip(write_platform, nbytes):
    plat = _platform(write_platform)
    packets = -(-nbytes // P_MAX)
    last = P_MAX if nbytes % P_MAX == 0 else nbytes % P_MAX   # the last packet may be short
    # Packets leave back to back; the last one is delivered once every earlier one and itself have serialised.
    land = (packets - 1) * ser(P_MAX) + ser(last) + one_way(1)
    put = eidola.simulate(plat, _step(2, 0, 1, nbytes))
    assert _wake(put, 1) == pytest.approx(land + M, abs=1e-3)
    ws = eidola.simulate(plat, _step(2, 0, 1, nbytes, kind="write+signal"))
    assert _wake(ws, 1) == pytest.approx(land + M + ack_back(1) + ser(8) + one_way(1) + M, abs=1e-3)
    # What the release costs on top: the last acknowledgement's trip back and the flag's own trip.
    assert _wake(ws, 1) - _wake(put, 1) == pytest.approx(ack_back(1) + ser(8) + one_way(1) + M, abs=1e-3)
    # The sender still waits for the put's acknowledgements before its kernel ends (stores visible).
    assert put.kernel_time_ns == pytest.approx(land + M + ack_back(1), abs=1e-3)
    # Counted as a write (its packets, its bytes) and its flag update as one atomic at the target.
    for res, flag_bytes in ((put, 0), (ws, 8)):
        assert res.gpus["writes"].tolist() == [0, packets]
        assert res.gpus["atomics"].tolist() == [0, 1]
        assert res.gpus["bytes_sent"].tolist() == [nbytes + flag_bytes, 0]
        assert res.gpus["bytes_received"].tolist() == [0, nbytes + flag_bytes]
        assert res.flags[1, "f"] == 1


def test_put_on_the_ideal_fabric_saves_the_acknowledgement_round_trip(write_platform):
    # Ideal fabric, L = 500 ns each way, no bandwidth limit: every packet lands at L + M, a write is
    # acknowledged at 2L + M, and a signal lands L + M after it goes.
    L = 500.0
    plat = _ideal(write_platform, latency=L)
    put = eidola.simulate(plat, _step(2, 0, 1, 4096))
    ws = eidola.simulate(plat, _step(2, 0, 1, 4096, kind="write+signal"))
    assert _wake(put, 1) == L + M
    assert _wake(ws, 1) == (2 * L + M) + (L + M)
    assert _wake(ws, 1) - _wake(put, 1) == 2 * L + M   # the acknowledgement's round trip
    assert put.flags[1, "f"] == 1 and put.gpus["atomics"].tolist() == [0, 1]


@pytest.mark.parametrize("kind", ["put", "write+signal"])
def test_a_chain_of_puts_costs_one_one_way_trip_per_step(write_platform, kind):
    # A ring of 4 GPUs: GPU 0 sends to 1 at once; each GPU waits for its predecessor's flag, then sends to
    # its successor; GPU 0 finally waits for GPU 3's. k = 4 steps of N bytes over one hop each.
    gpus, nbytes = 4, 1024
    b = ProfileBuilder(gpus=gpus, workgroups=1, name="chain")
    b.flag("f").buffer("fifo", 4096)
    for g in range(gpus):
        p = b.program(g, 0)
        if g:
            p.wait(flag="f", cond=">=", value=1, mode="syncmon")
        nxt = (g + 1) % gpus
        if kind == "put":
            p.put(dst=nxt, buffer="fifo", offset=0, nbytes=nbytes, flag="f")
        else:
            p.write(dst=nxt, buffer="fifo", offset=0, nbytes=nbytes).signal(dst=nxt, flag="f")
        if not g:
            p.wait(flag="f", cond=">=", value=1, mode="syncmon")
    res = eidola.simulate(_platform(write_platform, gpus=gpus), b.build(), trace=True)
    step = 4 * ser(P_MAX) + one_way(1) + M
    if kind != "put":
        step += ack_back(1) + ser(8) + one_way(1) + M
    ops = res.ops
    end_of_wait = {int(r["gpu"]): float(r["end_ns"]) for r in ops if (int(r["op"]) == 0) == (int(r["gpu"]) != 0)
                   and (int(r["gpu"]) != 0 or int(r["op"]) == (1 if kind == "put" else 2))}
    assert end_of_wait == pytest.approx({g: (g if g else gpus) * step for g in range(gpus)}, abs=1e-3)


def _lanes_step(write_platform, model, nbytes, value):
    plat = _platform(write_platform, gpus=8, topology="switch", lanes=4, model=model)
    return eidola.simulate(plat, _step(8, 1, 6, nbytes, value=value, op="add"), trace=True)


def test_a_put_over_four_lanes_sets_its_flag_once_after_its_last_packet(write_platform):
    # switch-8gpu-like: GPU -> switch -> GPU (2 hops), 4 lanes per link. The packets stripe over the
    # lanes, 4 at a time, and land in groups; the flag must change once, by `value`, when the last
    # group is in: ceil(P / 4) serialisations + the two hops + M, not when the first lands.
    nbytes, value = 16 * P_MAX + 100, 5
    res = _lanes_step(write_platform, "packet", nbytes, value)
    packets = 17
    # Packets 0-15 go 4 at a time; the 17th (100 B) goes alone in the 5th round.
    last_in = 4 * ser(P_MAX) + ser(100) + one_way(2)
    assert _wake(res, 6) == pytest.approx(last_in + M, abs=1e-3)
    assert _wake(res, 6) > ser(P_MAX) + one_way(2) + M    # later than the first group's landing
    assert res.flags[6, "f"] == value
    assert res.gpus["atomics"][6] == 1 and res.gpus["writes"][6] == packets


def test_a_put_on_the_flow_fabric_lands_as_one_flow(write_platform):
    # One flow carries the whole put: the flag changes when the flow's bytes are in, which the flow
    # fabric times within a packet time of the packet fabric's (docs/fabrics.md, Flow), and exactly
    # when the same write's data is in: a blocking write's completion less its acknowledgement's trip.
    nbytes, value = 16 * P_MAX + 100, 5
    res = _lanes_step(write_platform, "flow", nbytes, value)
    packet_wake = 4 * ser(P_MAX) + ser(100) + one_way(2) + M   # the packet fabric's, derived above
    assert _wake(res, 6) == pytest.approx(packet_wake, abs=ser(P_MAX))
    assert res.flags[6, "f"] == value and res.gpus["atomics"][6] == 1
    b = ProfileBuilder(gpus=8, workgroups=1, name="blocking")
    b.buffer("fifo", 1 << 20)
    b.program(1, 0).write(dst=6, buffer="fifo", offset=0, nbytes=nbytes, blocking=True)
    plat = _platform(write_platform, gpus=8, topology="switch", lanes=4, model="flow")
    blocking = eidola.simulate(plat, b.build())
    assert _wake(res, 6) == pytest.approx(blocking.kernel_time_ns - ack_back(2), abs=1e-3)


def test_a_put_in_trains_sets_its_flag_once(write_platform):
    # Trains (one transaction for up to 16 packets) cut the put differently; the flag still changes once,
    # by its value, after the last byte: 64 packets back to back over one hop.
    plat = _platform(write_platform, extra=", train: 16")
    nbytes = 64 * P_MAX
    res = eidola.simulate(plat, _step(2, 0, 1, nbytes, value=3))
    assert res.flags[1, "f"] == 3 and res.gpus["atomics"][1] == 1
    assert _wake(res, 1) == pytest.approx(64 * ser(P_MAX) + one_way(1) + M, rel=1e-3)


def test_a_put_through_a_third_party_bus_and_the_protocol_checker(repo, simple_bus_lib):
    # vendor::AtBus knows nothing of the landing flag: it passes the extension through untouched, and
    # times like the ideal fabric at 500 ns (examples/third_party_ip). Behind the protocol checker, too.
    # Through the LT bus (b_transport) the flag still changes once.
    prof = _step(4, 0, 3, 1024, value=7)
    at = eidola.simulate(eidola.load_platform(repo / "examples/third_party_ip/simple-bus-at.yaml",
                                              {"check_protocol": True}), prof)
    lt = eidola.simulate(eidola.load_platform(repo / "examples/third_party_ip/simple-bus-lt.yaml",
                                              {"check_protocol": True}), prof)
    for res in (at, lt):
        assert res.flags[3, "f"] == 7 and res.gpus["atomics"][3] == 1 and res.gpus["writes"][3] == 4
    # 4 packets pipelined within max_outstanding: all land at 500 ns + the memory (300 ns, 5.3 TB/s: the
    # 4 x 256 B are served one after another, 48.3 ps each, rounded to whole ps).
    assert _wake(at, 3) == pytest.approx(500 + 4 * 256 / 5.3e3 + 300, abs=2e-3)


def test_a_put_to_itself_lands_at_issue(write_platform):
    # A local put never leaves the GPU: its flag changes at issue, as a local signal's does.
    b = ProfileBuilder(gpus=2, workgroups=1, name="self")
    b.flag("f").buffer("fifo", 4096)
    b.program(0, 0).put(dst=0, buffer="fifo", offset=0, nbytes=256, flag="f", value=2, op="set") \
        .wait(flag="f", cond="==", value=2, mode="poll")
    res = eidola.simulate(_ideal(write_platform), b.build())
    assert res.flags[0, "f"] == 2 and res.gpus["atomics"][0] == 1


def test_put_runs_are_bit_identical(write_platform):
    plat = _platform(write_platform, gpus=8, topology="switch", lanes=4)
    b = ProfileBuilder(gpus=8, workgroups=1, name="all-puts")
    b.flag("f").buffer("fifo", 1 << 16)
    for g in range(8):
        p = b.program(g, 0)
        for d in range(8):
            if d != g:
                p.put(dst=d, buffer="fifo", offset=4096 * g, nbytes=4000, flag="f")
        p.wait(flag="f", cond=">=", value=7, mode="syncmon")
    prof = b.build()
    one, two = (eidola.simulate(plat, prof, trace=True) for _ in range(2))
    assert all(v == 7 for v in one.flags.values())
    for table in ("gpus", "workgroups", "links", "ops"):
        assert np.array_equal(getattr(one, table), getattr(two, table)), table
    assert one.kernel_time_ns == two.kernel_time_ns


@pytest.mark.parametrize("op, says", [
    ("[put, {dst: 1, buffer: fifo, offset: 0, nbytes: 16, flag: nope}]", "flag 'nope' is not declared"),
    ("[put, {dst: 1, buffer: fifo, offset: 4090, nbytes: 16, flag: f}]", "exceeds buffer 'fifo' size 4096"),
    ("[put, {dst: 1, buffer: fifo, offset: 0, nbytes: 16, flag: f, op: cas}]", "op 'cas' is not one of add, set"),
])
def test_bad_put_exits_2_naming_gpu_wg_and_op(cli, write_platform, tmp_path, op, says):
    plat = write_platform(gpus=2, workgroups=1)
    prof = tmp_path / "bad.yaml"
    prof.write_text("eidola_profile: 2\nname: bad\ngpus: 2\nworkgroups: 1\nflags: [f]\nbuffers: {fifo: 4096}\n"
                    f"programs:\n- gpu: 1\n  wg: 0\n  ops:\n  - [compute, {{ns: 5}}]\n  - {op}\n")
    out = cli("run", plat, "--profile", prof)
    assert out.returncode == 2
    assert "bad.yaml" in out.stderr and "gpu 1 wg 0 op 1 (put)" in out.stderr and says in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("launch_ns", [0, 4000])
def test_kernel_launch_delays_every_program_by_exactly_launch(write_platform, launch_ns):
    # One 256-byte write on the ideal fabric (L = 500 ns): acknowledged at 2L + M = 1300 ns after it starts,
    # which is `launch` after time zero.
    plat = _ideal(write_platform, extra=f", launch: {launch_ns}ns")
    b = ProfileBuilder(gpus=2, workgroups=1, name="one-write")
    b.buffer("data", 4096)
    b.program(0, 0).write(dst=1, buffer="data", offset=0, nbytes=256)
    res = eidola.simulate(plat, b.build(), trace=True)
    assert res.kernel_time_ns == launch_ns + 2 * 500 + M
    assert float(res.ops["begin_ns"][0]) == launch_ns


def test_launch_is_a_described_gpu_parameter():
    from eidola.platform import catalog

    launch = next(p for p in catalog.models()["EidolonGpu"].params if p.name == "launch")
    assert launch.default == 0 and "kernel launch latency" in launch.doc
