"""NVLink SHARP (NVLS) in the packet fabric's crossbar: the multicast and reduce_load ops, timed and counted by hand.

Packet fabric, topology switch (GPU g -- link -- switch -- link -- GPU m), one lane per link: bandwidth
B = 64 GB/s, latency lat = 100 ns, header h = 16 B, router sw = 50 ns (charged as a packet enters any
router, the GPUs' own included), flit f = 16 B / B = 0.25 ns; max_payload p = 256 B, so a full packet
serialises in ser = (p + h) / B = 4.25 ns and a header-only packet (a read request, an acknowledgement) in
f. Memory latency M = 300 ns, bandwidth so high that an access's occupancy rounds to 0 ps. The switch's
NVLS unit: reduction rate R, latency L (fabric.switch.nvls).

A packet crossing one link and taken whole by the router at its end (the NVLS unit, or a GPU) is in
ser + lat + sw after it leaves. So, on an idle switch, from issue at 0:

multicast of one packet (the ack the fence waits for):
    request in the unit      ser + lat + sw
    copies leave             + L
    copies in the members    + ser + lat + sw          (k links in parallel)
    members' memories        + M
    acks in the unit         + f + lat + sw
    ack at the requester     + f + lat + sw
    T_st = 2 ser + 2 f + 4 (lat + sw) + M + L

reduce_load of one packet (the read the workgroup waits for):
    request in the unit      f + lat + sw              (a read request is a header)
    reads in the members     + f + lat + sw
    members' memories        + M
    answers in the unit      + ser + lat + sw
    the sum                  + k p / R                 (k x p bytes of member data through one engine)
    latency                  + L
    answer at the requester  + ser + lat + sw
    T_ld = 2 f + 2 ser + 4 (lat + sw) + M + k p / R + L

NVLS all-reduce of S bytes on k GPUs (share s = S / k, P = s / p packets per share): GPU g reduce_loads its
share from the group, then multicasts the reduced share to the group (multimem.st writes every member, the
issuer too), then fences. Per GPU link, in payload bytes and packets:
    GPU -> switch: S (its data read by the k load-reduces, each reading its s) + s (its store)
                   packets: P read requests + k P read answers + P stores + k P acks of the copies it got
    switch -> GPU: s (its reduced share) + S (k copies of s, its own included)
                   packets: k P reads + P answers + k P copies + P acks of its stores
and the switch reduces k x S bytes (each of the k P load-reduce packets sums k x p).
"""

import numpy as np
import pytest

import eidola
from eidola.errors import ConfigError, ProfileError
from eidola.profile import ProfileBuilder

B, LAT, H, SW, M, P_MAX = 64.0, 100.0, 16, 50.0, 300.0, 256  # GB/s (bytes/ns), ns, B, ns, ns, B
F = H / B                      # a header-only packet (one flit), ns
SER = (P_MAX + H) / B          # a full packet, ns


def _yaml(gpus=4, topology="switch", nvls="{reduce_bandwidth: 1GB/s, latency: 200ns}", model="packet",
          outstanding=1024):
    nvls_key = f", nvls: {nvls}" if nvls else ""
    return f"""
        eidola: 1
        name: nvls
        gpus: {{count: {gpus}, workgroups: 1, max_outstanding: {outstanding}, max_payload: {P_MAX}B,
               memory: {{latency: {M:g}ns, bandwidth: 1000TB/s}}}}
        fabric:
          model: {model}
          topology: {topology}
          link: {{bandwidth: {B:g}GB/s, latency: {LAT:g}ns, header: {H}B}}
          switch: {{latency: {SW:g}ns, buffer: 64{nvls_key}}}
        """


def _platform(write_platform, **kw):
    return eidola.load_platform(write_platform(_yaml(**kw)))


def _one(kind, k=4, issuer=0, members=None, nbytes=P_MAX):
    """GPU `issuer` does one multimem op of `nbytes` on a group of GPUs `members` (default all k), then fences."""
    b = ProfileBuilder(gpus=k, workgroups=1, name=f"one-{kind}")
    b.multicast_group("g", gpus=list(range(k)) if members is None else members)
    b.buffer("d", nbytes=4096)
    p = b.program(issuer, 0)
    getattr(p, kind)(group="g", buffer="d", offset=0, nbytes=nbytes)
    p.fence()
    return b.build()


def _all_reduce(k, size):
    """The NVLS all-reduce built from the ops: reduce_load the own share, multicast it, fence."""
    share = size // k
    b = ProfileBuilder(gpus=k, workgroups=1, name=f"nvls-ar-{k}")
    b.multicast_group("all", gpus=range(k))
    b.buffer("in", nbytes=size)
    b.buffer("out", nbytes=size)
    for g in range(k):
        p = b.program(g, 0)
        p.reduce_load(group="all", buffer="in", offset=g * share, nbytes=share)
        p.multicast(group="all", buffer="out", offset=g * share, nbytes=share)
        p.fence()
    return b.build()


def _link(res, src, dst):
    row = res.links[(res.links["src"] == src) & (res.links["dst"] == dst)]
    assert len(row) == 1
    return row[0]


# ---------------------------------------------------------------- one access on an idle switch

@pytest.mark.parametrize("k, rate_gbs, latency_ns", [(4, 1.0, 200.0), (8, 1.0, 0.0), (2, 4.0, 50.0)])
def test_one_multicast_is_acknowledged_after_both_trips_and_the_members_memory(write_platform, k, rate_gbs,
                                                                               latency_ns):
    plat = _platform(write_platform, gpus=k, nvls=f"{{reduce_bandwidth: {rate_gbs:g}GB/s, latency: {latency_ns:g}ns}}")
    res = eidola.simulate(plat, _one("multicast", k))
    t_st = 2 * SER + 2 * F + 4 * (LAT + SW) + M + latency_ns
    assert res.kernel_time_ns == pytest.approx(t_st, abs=1e-6)
    # A store does no reduction: the rate does not enter, and the engine stays idle.
    assert int(res.nvls["reduced_bytes"][0]) == 0 and float(res.nvls["reduce_busy_ns"][0]) == 0


@pytest.mark.parametrize("k, rate_gbs, latency_ns", [(4, 1.0, 200.0), (8, 1.0, 0.0), (2, 4.0, 50.0)])
def test_one_reduce_load_waits_for_every_member_then_the_sum(write_platform, k, rate_gbs, latency_ns):
    plat = _platform(write_platform, gpus=k, nvls=f"{{reduce_bandwidth: {rate_gbs:g}GB/s, latency: {latency_ns:g}ns}}")
    res = eidola.simulate(plat, _one("reduce_load", k))
    t_ld = 2 * F + 2 * SER + 4 * (LAT + SW) + M + k * P_MAX / rate_gbs + latency_ns
    assert res.kernel_time_ns == pytest.approx(t_ld, abs=1e-6)
    assert int(res.nvls["reduced_bytes"][0]) == k * P_MAX
    assert float(res.nvls["reduce_busy_ns"][0]) == pytest.approx(k * P_MAX / rate_gbs, abs=1e-3)


def test_a_multicast_writes_every_member_once_and_no_one_else(write_platform):
    # GPU 0 stores to the group {1, 3}, of which it is not a member: one copy crosses the links to 1 and 3
    # each, none to 0 or 2; the store itself crosses 0 -> switch once, its one ack switch -> 0.
    plat = _platform(write_platform, gpus=4)
    res = eidola.simulate(plat, _one("multicast", 4, issuer=0, members=[1, 3], nbytes=3 * P_MAX))
    sw = 4  # the switch node follows the GPUs
    expect = {(0, sw): (3 * P_MAX, 3), (sw, 0): (0, 3), (sw, 1): (3 * P_MAX, 3), (1, sw): (0, 3),
              (sw, 3): (3 * P_MAX, 3), (3, sw): (0, 3), (sw, 2): (0, 0), (2, sw): (0, 0)}
    for (src, dst), (nbytes, packets) in expect.items():
        row = _link(res, src, dst)
        assert (int(row["bytes"]), int(row["packets"])) == (nbytes, packets), (src, dst)
        assert int(row["wire_bytes"]) == nbytes + H * packets
    assert res.gpus["bytes_received"].tolist() == [0, 3 * P_MAX, 0, 3 * P_MAX]
    assert tuple(res.nvls[["stores", "copies", "copy_bytes"]][0]) == (3, 6, 6 * P_MAX)


# ---------------------------------------------------------------- the all-reduce's traffic, exactly

@pytest.mark.parametrize("k, size", [(4, 4 * 4096), (8, 8 * 2048), (3, 3 * 1024)])
def test_nvls_all_reduce_moves_s_plus_s_over_k_each_way_on_every_link(write_platform, k, size):
    plat = _platform(write_platform, gpus=k)
    res = eidola.simulate(plat, _all_reduce(k, size))
    share = size // k
    packets = share // P_MAX                      # P: packets of one share
    sw = k
    for g in range(k):
        up, down = _link(res, g, sw), _link(res, sw, g)
        assert int(up["bytes"]) == size + share    # the k reads of its data + its store
        assert int(down["bytes"]) == share + size  # its reduced share + the k copies
        assert int(up["packets"]) == packets + k * packets + packets + k * packets
        assert int(down["packets"]) == k * packets + packets + k * packets + packets
        assert int(up["wire_bytes"]) == size + share + H * int(up["packets"])
    n = res.nvls[0]
    assert int(n["load_reduces"]) == int(n["stores"]) == k * packets
    assert int(n["member_reads"]) == int(n["copies"]) == k * k * packets
    assert int(n["reduced_bytes"]) == k * size     # k GPUs x k members x S / k
    assert int(n["copy_bytes"]) == k * size
    # Each link carries S + S/k + headers one way: the kernel cannot beat that at the link's rate.
    assert res.kernel_time_ns >= (size + share + H * 2 * (k + 1) * packets) / B


def test_nvls_all_reduce_sends_less_per_gpu_than_a_ring_needs(write_platform):
    # The point of NVLS: a ring all-reduce sends 2 (k-1)/k S per GPU; NVLS sends S + S/k, of which the
    # S are reads served for the switch (the GPU computes no sum). At k = 8: 1.125 S against 1.75 S.
    k, size = 8, 8 * 2048
    res = eidola.simulate(_platform(write_platform, gpus=k), _all_reduce(k, size))
    up = sum(int(_link(res, g, k)["bytes"]) for g in range(k)) / k
    assert up == size * (1 + 1 / k) < 2 * (k - 1) / k * size


def test_a_release_after_a_multicast_goes_out_once_every_member_has_its_copy(write_platform):
    # GPU 0 multicasts one packet, then signals GPU 1's flag (a release, workgroup scope): the signal leaves
    # when the store's one acknowledgement is back, T_st, which the switch sends only once every member
    # acknowledged its copy. The 8-byte signal then crosses two links as any packet (test_put.py):
    # (8 + h) / B + 2 (lat + sw) + f, and lands after M; GPU 1's SyncMon wait wakes then.
    plat = _platform(write_platform, gpus=4)
    b = ProfileBuilder(gpus=4, workgroups=1, name="release")
    b.multicast_group("g", gpus=[0, 1, 2, 3])
    b.flag("ready")
    b.buffer("d", nbytes=4096)
    p = b.program(0, 0)
    p.multicast(group="g", buffer="d", offset=0, nbytes=P_MAX)
    p.signal(dst=1, flag="ready", op="add", value=1)
    b.program(1, 0).wait(flag="ready", cond=">=", value=1, mode="syncmon")
    res = eidola.simulate(plat, b.build())
    t_st = 2 * SER + 2 * F + 4 * (LAT + SW) + M + 200
    wake = t_st + (8 + H) / B + 2 * (LAT + SW) + F + M
    wg1 = res.workgroups[(res.workgroups["gpu"] == 1)][0]
    assert float(wg1["finish_ns"]) == pytest.approx(wake, abs=1e-6)


def test_same_inputs_give_identical_results(write_platform):
    plat = _platform(write_platform, gpus=8)
    a = eidola.simulate(plat, _all_reduce(8, 8 * 4096))
    b = eidola.simulate(plat, _all_reduce(8, 8 * 4096))
    assert a.kernel_time_ns == b.kernel_time_ns
    for table in ("gpus", "links", "workgroups", "nvls"):
        assert np.array_equal(getattr(a, table), getattr(b, table)), table


# ---------------------------------------------------------------- the profile side

def test_multicast_groups_round_trip_through_a_file(tmp_path):
    prof = _all_reduce(4, 4 * 1024)
    assert prof.multicast_groups == (("all", (0, 1, 2, 3)),)
    prof.save(tmp_path / "p.yaml")
    back = eidola.load_profile(tmp_path / "p.yaml")
    assert back == prof
    assert back.program(2, 0)[0].kind == "reduce_load" and back.program(2, 0)[0]["offset"] == 2 * 1024


@pytest.mark.parametrize("gpus, says", [
    ([0, 0, 1], "gpu 0 is listed twice"),
    ([0, 4], "gpu 4 is out of range (expected 0 <= gpu < 4)"),
    ([2], "needs at least two GPUs"),
    ("0123", "gpus must be a list of GPU indices"),
])
def test_bad_multicast_group_is_a_profile_error(gpus, says):
    b = ProfileBuilder(gpus=4, workgroups=1, name="bad")
    with pytest.raises(ProfileError, match="multicast group 'g'") as e:
        b.multicast_group("g", gpus=gpus)
    assert says in str(e.value)


def test_multimem_op_names_a_declared_group_and_stays_in_its_buffer():
    b = ProfileBuilder(gpus=4, workgroups=1, name="bad")
    b.multicast_group("g", gpus=[0, 1])
    b.buffer("d", nbytes=4096)
    with pytest.raises(ProfileError, match=r"gpu 0 wg 0 op 0.*multicast group 'h' is not declared \(declared: g\)"):
        b.program(0, 0).multicast(group="h", buffer="d", offset=0, nbytes=64)
    with pytest.raises(ProfileError, match="exceeds buffer 'd' size 4096"):
        b.program(0, 0).reduce_load(group="g", buffer="d", offset=4090, nbytes=64)


# ---------------------------------------------------------------- refused where there is no NVLS

def _profile_file(tmp_path, k=4):
    path = tmp_path / "ar.yaml"
    _all_reduce(k, k * 1024).save(path)
    return path


def test_ops_on_a_switch_without_nvls_exit_2_naming_the_op(cli, write_platform, tmp_path):
    plat = write_platform(_yaml(nvls=None))
    out = cli("run", plat, "--profile", _profile_file(tmp_path))
    assert out.returncode == 2
    assert "op reduce_load (group 'all') needs an NVLS switch" in out.stderr
    assert "fabric.switch.nvls" in out.stderr and "Traceback" not in out.stderr


def test_ops_on_the_ideal_fabric_are_refused(write_platform):
    plat = eidola.load_platform(write_platform(gpus=4, workgroups=1))
    with pytest.raises(ConfigError, match=r"needs an NVLS switch.*the IdealFabric fabric, which has no NVLS switch"):
        eidola.simulate(plat, _all_reduce(4, 4 * 1024))


def test_nvls_off_topology_switch_exits_2_naming_the_key(cli, write_platform):
    out = cli("validate", write_platform(_yaml(topology="fully_connected")))
    assert out.returncode == 2
    assert "fabric.switch.nvls" in out.stderr and "needs topology: switch" in out.stderr
    assert "fully_connected" in out.stderr and "Traceback" not in out.stderr


def test_nvls_on_the_flow_fabric_validates(cli, write_platform):
    # The flow fabric models NVLS too (test_nvls_flow.py).
    out = cli("validate", write_platform(_yaml(model="flow")))
    assert out.returncode == 0, out.stderr


def test_nvls_on_the_ideal_fabric_is_an_unknown_key(cli, write_platform):
    text = _yaml().replace("model: packet", "model: ideal\n          latency: 500ns").replace(
        "topology: switch", "").replace("          link: {bandwidth: 64GB/s, latency: 100ns, header: 16B}\n", "")
    out = cli("validate", write_platform(text))
    assert out.returncode == 2
    assert "switch" in out.stderr and "Traceback" not in out.stderr


def test_nvls_parameters_are_described():
    from eidola.platform import catalog

    params = {p.name: p for p in catalog.models()["PacketFabric"].params}
    assert "reduce" in params["switch.nvls.reduce_bandwidth"].doc
    assert params["switch.nvls.reduce_bandwidth"].default == 0
    assert "latency" in params["switch.nvls.latency"].doc
