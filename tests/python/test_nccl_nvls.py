"""NVLS collectives (workload/nccl/nvls.py) and the tuner's NVLS choice, derived by hand.

Traffic. On one switch with NVLS, GPU g's link to the switch (up) and the switch's link to g (down), for an
NVLS all-reduce of S bytes on k GPUs with C channels, packets of p bytes, every chunk a whole number of
packets (here S = k x C x 64 KiB: a channel's part k x 64 KiB is not below 2 k x 32 KiB, so its chunk is 32 KiB
(NCCL's calcCollChunking), two loops, every GPU two 32 KiB chunks per channel, each in rounds of whole packets):
- g reduce_loads S / k in all (its chunks): up S / (k p) read requests, down S / (k p) answers of S / k;
- every reduce_load of every GPU reads its n from every member, g included: the switch sends g S / p reads
  (down) and g answers them with S bytes (up);
- g multicasts its S / k: up S / k in S / (k p) stores, down their S / (k p) acknowledgements;
- every multicast of every GPU writes a copy to every member: down S bytes in S / p copies, up S / p acks;
- the barrier: per channel, a signal of 8 B to each of the k - 1 peers (up), each acknowledged (down),
  and the k - 1 peers' signals to g (down), each acknowledged (up).
So up = down = S + S / k + 8 (k - 1) C bytes, in 2 S / (k p) + 2 S / p + 2 (k - 1) C packets each way, and
the switch reduces k x S bytes (each of the S / p load-reduce packets sums k x p).
All-gather (S the gathered output, g's input block S / k): up S / k + 8 (k - 1) C, down S + 8 (k - 1) C.
Reduce-scatter (S the input, g's output S / k): up S, down S / k, no barrier; the switch reduces k x S / k
per GPU, k x S in all.

Tuner (NCCL's tuning.cc, see tuner.py), on 8 GPUs with G = 18 x 25 GB/s = 450 GB/s into the switch:
- NVLS all-reduce: latency 25 us; bandwidth 0.85 x G x k / (k + 1) = 0.85 x 450 x 8 / 9 = 340 GB/s;
- ring LL: 6.6 + 14 x 0.6 = 15.0 us; min(141, G / 4) x 8 / 14 = 112.5 x 8 / 14 = 64.2857 GB/s;
- ring LL128: 14 + 14 x 1.9 = 40.6 us (above NVLS's 25), min(0.92 G, 16 x 36.7) x 8 / 14 = 236.6 GB/s (below 340);
  ring Simple: 8.4 + 14 x 3.4 = 56 us, 257.1 GB/s: both lose to NVLS at every size;
- NVLS beats ring LL from S = 10 us / (1 / 64.2857 - 1 / 340) us/kB = 792,744 B. So 512 KiB runs ring LL
  and 1 MiB and up NVLS (below, the tree's medium-size correction only slows the tree further).
On 4 of those GPUs: NVLS 0.85 x 450 x 4 / 5 = 306 GB/s at 25 us; ring LL 6.6 + 6 x 0.6 = 10.2 us, 112.5 x 4 / 6
= 75 GB/s; ring LL128 14 + 6 x 1.9 = 25.4 us and 276 GB/s, both worse than NVLS: NVLS from
14.8 / (1 / 75 - 1 / 306) = 1,470,400 B. On a 4-GPU board without an NVSwitch (direct links), never.
"""

import pytest

import eidola
from eidola.errors import ConfigError
from eidola.workload.nccl import build_collective
from eidola.workload.nccl.nvls import NVLS_CHUNK, chunks, nvls, nvls_chunk, rounds

P = 256  # max_payload, B


def _plat(write_platform, gpus=4, model="packet", nvls=True, topology="switch", bandwidth="64GB/s", count=1,
          workgroups=16):
    nvls_key = ", nvls: {reduce_bandwidth: 1TB/s, latency: 200ns}" if nvls else ""
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: nvls-coll
        gpus: {{count: {gpus}, workgroups: {workgroups}, max_outstanding: 1024, max_payload: {P}B,
               memory: {{latency: 300ns, bandwidth: 1000TB/s}}}}
        fabric:
          model: {model}
          topology: {topology}
          link: {{bandwidth: {bandwidth}, latency: 100ns, header: 16B, count: {count}}}
          switch: {{latency: 50ns, buffer: 64{nvls_key}}}
        """))


def _link(res, src, dst):
    row = res.links[(res.links["src"] == src) & (res.links["dst"] == dst)]
    assert len(row) == 1
    return row[0]


@pytest.mark.parametrize("k, channels, model", [(4, 2, "packet"), (3, 4, "packet"), (8, 2, "flow"), (4, 16, "flow")])
def test_nvls_all_reduce_traffic_per_link_and_the_switch_work(write_platform, k, channels, model):
    S = k * channels * 65536
    plat = _plat(write_platform, gpus=k, model=model)
    prof, plan = build_collective(plat, "all_reduce", S, algo="nvls", channels=channels)
    assert (plan.algo, plan.proto, plan.channels) == ("nvls", "Simple", channels)
    # one workgroup per channel, each GPU's in rounds of the workers' hunks: 32 KiB is 2 rounds of 16 KiB on
    # 8 GPUs (4 workers x 4 KiB), 24 KiB + 8 KiB on fewer (6 workers); the barrier's k - 1 signals at the end
    per_chunk = 2
    for g in range(k):
        for c in range(channels):
            ops = prof.program(g, c)
            assert [o.kind for o in ops].count("reduce_load") == 2 * per_chunk
            assert [o.kind for o in ops].count("signal") == k - 1
    assert prof.workgroups == channels
    res = eidola.simulate(plat, prof)
    flags = 8 * (k - 1) * channels
    packets = 2 * S // (k * P) + 2 * S // P + 2 * (k - 1) * channels
    for g in range(k):
        for row in (_link(res, g, k), _link(res, k, g)):
            assert int(row["bytes"]) == S + S // k + flags
            assert int(row["packets"]) == packets
            assert int(row["wire_bytes"]) == S + S // k + flags + 16 * packets
    n = res.nvls[0]
    assert int(n["load_reduces"]) == int(n["stores"]) == S // P
    assert int(n["member_reads"]) == int(n["copies"]) == k * S // P
    assert int(n["reduced_bytes"]) == int(n["copy_bytes"]) == k * S
    assert float(n["reduce_busy_ns"]) == pytest.approx(k * S / 1000.0, rel=1e-9)  # 1 TB/s = 1,000 B/ns
    # What reached each GPU: the k copies of every share (S), its loads' sums (S / k), its peers' flag updates.
    assert res.gpus["bytes_received"].tolist() == [S + S // k + flags] * k


@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter"])
def test_nvls_all_gather_and_reduce_scatter_traffic(write_platform, op):
    k, channels = 4, 2
    S = k * channels * 16384
    plat = _plat(write_platform, gpus=k)
    prof, plan = build_collective(plat, op, S, algo="nvls", channels=channels)
    assert plan.algo == "nvls"
    res = eidola.simulate(plat, prof)
    flags = 8 * (k - 1) * channels if op == "all_gather" else 0
    up, down = (S // k, S) if op == "all_gather" else (S, S // k)
    for g in range(k):
        assert int(_link(res, g, k)["bytes"]) == up + flags
        assert int(_link(res, k, g)["bytes"]) == down + flags
    n = res.nvls[0]
    if op == "all_gather":
        assert (int(n["stores"]), int(n["copy_bytes"]), int(n["reduced_bytes"])) == (S // P, k * S, 0)
    else:
        assert (int(n["load_reduces"]), int(n["reduced_bytes"]), int(n["copies"])) == (S // P, k * S, 0)


def test_chunks_follow_ncc_loops_of_k_chunks():
    # A channel part of 2.5 loops on k = 4: two full loops of 4 x 128 KiB, then the remainder 256 KiB over 4,
    # 64 KiB each (a multiple of 16 KiB): GPU 1 takes chunk 1 of every loop.
    part = 2 * 4 * NVLS_CHUNK + 4 * 65536
    assert chunks(part, 4, 1) == [(NVLS_CHUNK, NVLS_CHUNK), (5 * NVLS_CHUNK, NVLS_CHUNK), (8 * NVLS_CHUNK + 65536, 65536)]
    # 40 KiB over 4: 10 KiB rounds up to 16 KiB, so GPUs 0 and 1 take 16 KiB, GPU 2 the last 8 KiB, GPU 3 none.
    assert [chunks(40960, 4, g) for g in range(4)] == [[(0, 16384)], [(16384, 16384)], [(32768, 8192)], []]
    assert sum(n for g in range(4) for _, n in chunks(part, 4, g)) == part


def _h200(write_platform, gpus=8, nvls=True, topology="switch"):
    return _plat(write_platform, gpus=gpus, nvls=nvls, topology=topology, bandwidth="25GB/s", count=18,
                 workgroups=132)


@pytest.mark.parametrize("nbytes, algo", [(1 << 19, "ring"), (780_000, "ring"), (800_000, "nvls"), (1 << 20, "nvls"),
                                          (2 << 20, "nvls"), (1 << 30, "nvls")])
def test_tuner_picks_nvls_on_8_gpus_from_the_hand_crossover(write_platform, nbytes, algo):
    _, plan = build_collective(_h200(write_platform), "all_reduce", nbytes)
    assert plan.algo == algo
    if algo == "ring":
        assert plan.proto == "LL"
    else:
        assert (plan.proto, plan.channels) == ("Simple", 16)  # nvlsChannels whatever the size (enqueue.cc)


@pytest.mark.parametrize("nbytes, algo", [(1 << 20, "ring"), (1_460_000, "ring"), (1_480_000, "nvls"), (1 << 24, "nvls")])
def test_tuner_on_4_of_8_gpus_follows_the_same_formulas(write_platform, nbytes, algo):
    _, plan = build_collective(_h200(write_platform), "all_reduce", nbytes, gpus=4)
    assert plan.algo == algo


@pytest.mark.parametrize("nbytes", [1 << 20, 1 << 24, 1 << 30])
def test_tuner_never_picks_nvls_without_an_nvswitch(write_platform, nbytes):
    # A 4-GPU board of direct links (HGX H100 4-GPU): no switch, no NVLS; nor a switch without fabric.switch.nvls.
    for plat in (_h200(write_platform, gpus=4, nvls=False, topology="fully_connected"),
                 _h200(write_platform, gpus=8, nvls=False)):
        _, plan = build_collective(plat, "all_reduce", nbytes)
        assert plan.algo != "nvls"


@pytest.mark.parametrize("kwargs, says", [
    ({"algo": "nvls", "op": "broadcast"}, "algo: nvls runs all_reduce, all_gather, reduce_scatter; broadcast"),
    ({"algo": "nvls", "proto": "LL"}, "proto: nvls runs Simple only"),
    ({"algo": "nvls", "channels": 17}, "at most 16 channels"),
    # 2 ranks of the 8-GPU node: NCCL counts the communicator's GPUs (ncclNvlsInit, 2.21-2.23: off at 2 or fewer)
    ({"algo": "nvls", "gpus": 2}, "algo: nvls needs at least 3 of the collective's GPUs in a node .*; it has 2"),
])
def test_bad_nvls_requests_are_config_errors(write_platform, kwargs, says):
    kw = {"op": "all_reduce", **kwargs}
    with pytest.raises(ConfigError, match=says):
        build_collective(_h200(write_platform), kw.pop("op"), 1 << 20, **kw)


def test_algo_nvls_without_an_nvls_switch_is_refused(write_platform):
    with pytest.raises(ConfigError, match=r"algo: nvls needs an NVLS switch \(fabric.switch.nvls"):
        build_collective(_h200(write_platform, nvls=False), "all_reduce", 1 << 20, algo="nvls")


def test_perf_algo_nvls_without_nvls_exits_2(cli, write_platform):
    path = write_platform("""
        eidola: 1
        name: plain-switch
        gpus: {count: 4, workgroups: 16, max_outstanding: 1024, max_payload: 256B}
        fabric: {model: packet, topology: switch, link: {bandwidth: 64GB/s, latency: 100ns}}
        """)
    out = cli("perf", path, "--op", "all_reduce", "-b", "1M", "-e", "1M", "--algo", "nvls")
    assert out.returncode == 2
    assert "algo: nvls needs an NVLS switch" in out.stderr and "Traceback" not in out.stderr


def test_written_bytes_counts_a_copy_per_member():
    from eidola.profile import ProfileBuilder
    from eidola.run.perf import written_bytes

    b = ProfileBuilder(gpus=4, workgroups=1, name="w")
    b.multicast_group("g", gpus=[0, 1, 2])
    b.buffer("d", nbytes=4096)
    p = b.program(0, 0)
    p.multicast(group="g", buffer="d", offset=0, nbytes=1000)    # 3 copies: 3,000
    p.reduce_load(group="g", buffer="d", offset=0, nbytes=500)   # 3 member reads: 1,500
    p.write(dst=3, buffer="d", offset=0, nbytes=70)              # 70
    b.program(1, 0).multicast(group="g", buffer="d", offset=0, nbytes=1000)  # the same op again: 3,000
    assert written_bytes(b.build()) == 3000 + 1500 + 70 + 3000


@pytest.mark.parametrize("k", [8, 4])
def test_nvls_chunk_halves_as_calc_coll_chunking_does(k):
    # enqueue.cc, per channel part P on k heads: 128 KiB; 64 KiB if P < 64 k x 128 KiB; then 32 KiB if
    # P < 8 k x 64 KiB; then 16 KiB if P < 2 k x 32 KiB.
    KiB = 1024
    for part, chunk in [(64 * k * 128 * KiB, 128 * KiB), (64 * k * 128 * KiB - 1, 64 * KiB), (8 * k * 64 * KiB, 64 * KiB),
                        (8 * k * 64 * KiB - 1, 32 * KiB), (2 * k * 32 * KiB, 32 * KiB), (2 * k * 32 * KiB - 1, 16 * KiB),
                        (1, 16 * KiB)]:
        assert nvls_chunk(part, k) == chunk


def test_16_mib_on_8_gpus_is_ncc_chunks_in_rounds_of_the_workers_hunks(write_platform):
    # 16 MiB on 8 GPUs, 16 channels: a part of 1 MiB, below 8 x 8 x 64 KiB = 4 MiB so 32 KiB chunks, loops of
    # 256 KiB: 4 loops, GPU g's chunk g in each. 5 reduce warps on 8 GPUs, 4 of them work: rounds of 4 x 4 KiB.
    S = 16 << 20
    prof, plan = build_collective(_h200(write_platform), "all_reduce", S, algo="nvls")
    assert plan.channels == 16
    c, g = 3, 5
    loads = [(o["offset"], o["nbytes"]) for o in prof.program(g, c) if o.kind == "reduce_load"]
    stores = [(o["offset"], o["nbytes"]) for o in prof.program(g, c) if o.kind == "multicast"]
    base = c * (1 << 20)
    want = [(base + loop * 262144 + g * 32768 + r * 16384, 16384) for loop in range(4) for r in range(2)]
    assert loads == stores == want
    # on 4 GPUs: 7 reduce warps, 6 work, rounds of 24 KiB: a 32 KiB chunk is 24 KiB then 8 KiB
    assert rounds(32768, 4) == [(0, 24576), (24576, 8192)]


def test_one_round_per_chunk_past_the_coarsening_moves_time_under_1_percent(write_platform):
    # 64 MiB on 4 GPUs, NCCL's 16 channels: a part of 4 MiB, 64 KiB chunks (4 MiB < 64 x 4 x 128 KiB), 16 per GPU
    # and channel. Made one load and one store per chunk (coarse=16) against NCCL's rounds of 24 KiB (3 per
    # chunk): where the rounds in flight (16 channels x 24 KiB) cover a GPU's bandwidth-delay product, as on
    # dgx-h200, the pipeline of chunks overlaps each chunk's store with the next chunk's load either way, and
    # the time moves by the last chunk's tail only. (With 2 channels they do not cover it: the rounds are then
    # latency-bound and the coarse walk about 10% fast, which is why the coarsening waits for 64 chunks.)
    from eidola.workload.builder import ProfileBuilder

    k, C, S = 4, 16, 64 << 20
    plat = _plat(write_platform, gpus=k, model="flow")
    times = []
    for coarse in (16, 10**9):
        b = ProfileBuilder(gpus=k, workgroups=C, name=f"coarse{coarse}")
        nvls(b, "all_reduce", S, k, C, "", coarse=coarse)
        prof = b.build()
        loads = [o.kind for o in prof.program(0, 0)].count("reduce_load")
        assert loads == (16 if coarse == 16 else 16 * 3)
        times.append(float(eidola.simulate(plat, prof).kernel_time_ns))
    assert times[0] == pytest.approx(times[1], rel=0.01)
