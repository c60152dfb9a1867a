"""NVLink SHARP (NVLS) in the flow fabric, against the hand-derived times of test_nvls.py and the packet fabric.

The platform and the one-access formulas are test_nvls.py's (T_st, T_ld: one packet on an idle switch). A
multimem access of P packets is one flow through the switch; after its last packet left the requester, the
last packet's stages follow at zero load. So on an idle switch:
- a store of P full packets: its packets leave the requester's link one after another, P x ser on a link of
  one lane, and the last one then takes T_st: T_st + (P - 1) ser;
- a load-reduce of P packets on k members with a slow engine (k p / R above every link's ser): the engine
  sums one packet's k x p bytes at a time, so the last sum starts (P - 1) k p / R after the first would:
  T_ld + (P - 1) k p / R.
The packet fabric gives the same up to a packet time (the packets' own interleaving), which is the bound.
"""

import numpy as np
import pytest
from conftest import REPO
from test_nvls import LAT, P_MAX, SER, SW, F, M, _one, _platform, _yaml

import eidola
from eidola.workload.nccl import build_collective

T_ST = 2 * SER + 2 * F + 4 * (LAT + SW) + M  # + the unit's latency L


@pytest.mark.parametrize("k, rate_gbs, latency_ns", [(4, 1.0, 200.0), (8, 1.0, 0.0), (2, 4.0, 50.0)])
def test_one_multicast_on_the_flow_fabric_is_t_st(write_platform, k, rate_gbs, latency_ns):
    plat = _platform(write_platform, gpus=k, model="flow",
                     nvls=f"{{reduce_bandwidth: {rate_gbs:g}GB/s, latency: {latency_ns:g}ns}}")
    res = eidola.simulate(plat, _one("multicast", k))
    assert res.kernel_time_ns == pytest.approx(T_ST + latency_ns, abs=1e-6)
    assert tuple(res.nvls[["stores", "copies", "copy_bytes", "reduced_bytes"]][0]) == (1, k, k * P_MAX, 0)


@pytest.mark.parametrize("k, rate_gbs, latency_ns", [(4, 1.0, 200.0), (8, 1.0, 0.0), (2, 4.0, 50.0)])
def test_one_reduce_load_on_the_flow_fabric_is_t_ld(write_platform, k, rate_gbs, latency_ns):
    plat = _platform(write_platform, gpus=k, model="flow",
                     nvls=f"{{reduce_bandwidth: {rate_gbs:g}GB/s, latency: {latency_ns:g}ns}}")
    res = eidola.simulate(plat, _one("reduce_load", k))
    t_ld = 2 * F + 2 * SER + 4 * (LAT + SW) + M + k * P_MAX / rate_gbs + latency_ns
    assert res.kernel_time_ns == pytest.approx(t_ld, abs=1e-6)
    assert int(res.nvls["reduced_bytes"][0]) == k * P_MAX
    assert float(res.nvls["reduce_busy_ns"][0]) == pytest.approx(k * P_MAX / rate_gbs, abs=1e-3)


@pytest.mark.parametrize("packets", [3, 16])
def test_a_multi_packet_multicast_streams_at_the_link_rate(write_platform, packets):
    plat = _platform(write_platform, gpus=4, model="flow")
    res = eidola.simulate(plat, _one("multicast", 4, nbytes=packets * P_MAX))
    assert res.kernel_time_ns == pytest.approx(T_ST + 200 + (packets - 1) * SER, abs=SER)
    packet = eidola.simulate(_platform(write_platform, gpus=4), _one("multicast", 4, nbytes=packets * P_MAX))
    assert res.kernel_time_ns == pytest.approx(packet.kernel_time_ns, abs=SER)


@pytest.mark.parametrize("packets", [3, 8])
def test_a_multi_packet_reduce_load_is_paced_by_the_engine(write_platform, packets):
    k, rate = 4, 1.0  # GB/s: k p / R = 1,024 ns a packet, far above a link's ser
    plat = _platform(write_platform, gpus=k, model="flow")
    res = eidola.simulate(plat, _one("reduce_load", k, nbytes=packets * P_MAX))
    t_ld = 2 * F + 2 * SER + 4 * (LAT + SW) + M + k * P_MAX / rate + 200
    assert res.kernel_time_ns == pytest.approx(t_ld + (packets - 1) * k * P_MAX / rate, abs=SER)
    assert tuple(res.nvls[["load_reduces", "member_reads", "reduced_bytes"]][0]) == \
        (packets, k * packets, k * packets * P_MAX)


def test_a_multicast_outside_the_group_counts_links_as_the_packet_fabric(write_platform):
    # GPU 0 stores 3 packets to the group {1, 3}: test_nvls.py's per-link table, on the flow fabric.
    res = eidola.simulate(_platform(write_platform, gpus=4, model="flow"),
                          _one("multicast", 4, issuer=0, members=[1, 3], nbytes=3 * P_MAX))
    ref = eidola.simulate(_platform(write_platform, gpus=4),
                          _one("multicast", 4, issuer=0, members=[1, 3], nbytes=3 * P_MAX))
    cols = ["src", "dst", "bytes", "packets", "wire_bytes"]
    assert np.array_equal(res.links[cols], ref.links[cols])
    assert res.gpus["bytes_received"].tolist() == [0, 3 * P_MAX, 0, 3 * P_MAX]


def test_a_large_nvls_all_reduce_matches_the_packet_fabric():
    # 16 MiB NVLS all-reduce (16 channels, NCCL's 32 KiB chunks in rounds of 16 KiB, a barrier) on switch-8gpu with NVLS:
    # the flow fabric within 3% of the packet fabric, every link's counts identical.
    size = 16 << 20
    over = {"fabric.switch.nvls.reduce_bandwidth": "3.2TB/s", "fabric.switch.nvls.latency": "500ns"}
    runs = {}
    for model in ("packet", "flow"):
        plat = eidola.load_platform(REPO / "platforms" / "switch-8gpu.yaml", overrides={**over, "fabric.model": model})
        prof, plan = build_collective(plat, "all_reduce", size, algo="nvls")
        assert (plan.algo, plan.channels) == ("nvls", 16)
        runs[model] = eidola.simulate(plat, prof)
    packet, flow = runs["packet"], runs["flow"]
    assert flow.kernel_time_ns == pytest.approx(packet.kernel_time_ns, rel=0.03)
    cols = ["src", "dst", "bytes", "packets", "wire_bytes"]
    assert np.array_equal(flow.links[cols], packet.links[cols])
    assert np.array_equal(flow.nvls, packet.nvls)
    k, share = 8, size // 8
    up = flow.links[(flow.links["src"] == 0) & (flow.links["dst"] == k)][0]
    assert int(up["bytes"]) == size + share + 8 * (k - 1) * 16  # the answers, its stores, its barrier signals


def test_nvls_on_a_flow_fabric_off_topology_switch_exits_2(cli, write_platform):
    out = cli("validate", write_platform(_yaml(model="flow", topology="fully_connected")))
    assert out.returncode == 2
    assert "fabric.switch.nvls" in out.stderr and "needs topology: switch" in out.stderr
    assert "Traceback" not in out.stderr


def test_multimem_ops_on_a_flow_fabric_without_nvls_exit_2(cli, write_platform, tmp_path):
    path = tmp_path / "one.yaml"
    _one("multicast", 4).save(path)
    out = cli("run", write_platform(_yaml(model="flow", nvls=None)), "--profile", path)
    assert out.returncode == 2
    assert "needs an NVLS switch" in out.stderr and "a flow fabric without fabric.switch.nvls" in out.stderr
