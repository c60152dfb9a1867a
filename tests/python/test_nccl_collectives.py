"""NCCL/RCCL collectives (eidola.workload.nccl) checked against derivations: bytes, credits, channels, timing, tuner.

Timing cases use the ideal fabric (docs/fabrics.md "Ideal"): every packet and every acknowledgement
takes L one way, with no bandwidth limit; a memory access takes M. From test_put.py: a put lands (and
wakes a SyncMon waiter) L + M after it is issued; a write is acknowledged 2L + M after it is issued;
a signal lands L + M after it goes. Memory bandwidth 1000 TB/s makes every reduction's compute delay
round to 0 ps, so the timing is the protocol's alone.
"""

from __future__ import annotations

import numpy as np
import pytest

import eidola
from eidola.errors import ConfigError
from eidola.profile import ProfileBuilder
from eidola.run.perf import Fabrics, run_sizes
from eidola.workload.nccl import Plan, build_collective, tuner
from eidola.workload.nccl.fifo import Conn, primitive
from eidola.workload.nccl.protocols import protocol
from eidola.workload.nccl.system import System, hamiltonian_cycles

L, M = 500.0, 300.0  # ideal fabric latency and memory latency, ns


def _ideal(write_platform, gpus, collectives="", workgroups=32):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: ideal-{gpus}
        gpus: {{count: {gpus}, workgroups: {workgroups}, max_outstanding: 4096, max_payload: 256B,
               memory: {{latency: {M:g}ns, bandwidth: 1000TB/s}}}}
        fabric: {{model: ideal, latency: {L:g}ns}}
        {collectives}
        """))


def _h100_like(write_platform, extra="", overrides=None):
    # 8 GPUs on NVSwitch, 18 lanes of 25 GB/s each: 450 GB/s per GPU; NCCL with 16 channels, Hopper.
    return eidola.load_platform(write_platform("""
        eidola: 1
        name: h100-like
        gpus: {count: 8, workgroups: 132, memory: {latency: 300ns, bandwidth: 3.35TB/s}}
        fabric:
          model: packet
          topology: switch
          link: {bandwidth: 25GB/s, latency: 150ns, header: 16B, count: 18}
          switch: {latency: 100ns, buffer: 192}
        collectives: {library: nccl, channels: 16, link_type: nvlink, arch: hopper""" + extra + "}\n"),
        overrides=overrides)


# --- bytes on the wire -------------------------------------------------------------------------------------


@pytest.mark.parametrize("proto,wire_per_block,flag_bytes", [
    ("LL", 1200 * 16 // 8, 0),        # 150 lines of 16 B: wire = 2 x data
    ("LL128", 1200 * 128 // 120, 0),  # 10 lines of 128 B: wire = 128/120 x data
    ("Simple", 1200, 8),              # the data, then an 8-byte step-counter store per slice
])
def test_ring_allreduce_sends_the_formula_per_protocol(write_platform, proto, wire_per_block, flag_bytes):
    # k = 4 ranks, C = 2 channels, S = k x C x 1200 B: every block of every channel is 1200 B, one unit
    # (an LL step holds 32 KiB, an LL128 step 576,000 B, a Simple slice at least 32 KiB).
    k, C, block = 4, 2, 1200
    S = k * C * block
    plat = _ideal(write_platform, k)
    prof, plan = build_collective(plat, "all_reduce", S, proto=proto, channels=C, algo="ring")
    assert plan == Plan("ring", proto, C)
    res = eidola.simulate(plat, prof)
    steps = 2 * (k - 1)  # sends per channel; as many receives, each returning one 8-byte credit
    data = 2 * (k - 1) / k * S
    assert steps * C * block == data
    expected = steps * C * (wire_per_block + flag_bytes) + steps * C * 8
    assert res.gpus["bytes_sent"].tolist() == [expected] * k
    assert res.gpus["bytes_received"].tolist() == [expected] * k


def test_all_gather_and_reduce_scatter_send_k_minus_1_blocks(write_platform):
    k, C, block = 4, 2, 4000  # LL: 500 lines a block
    plat = _ideal(write_platform, k)
    for op in ("all_gather", "reduce_scatter"):
        prof, _ = build_collective(plat, op, k * C * block, proto="LL", channels=C)
        res = eidola.simulate(plat, prof)
        assert res.gpus["bytes_sent"].tolist() == [(k - 1) * C * (2 * block + 8)] * k


def test_ll128_units_move_on_pass_by_pass(write_platform):
    # NCCL's LL128 loop (prims_ll128.h GenericOp) takes a step in passes of 20 warps x 32 threads x 8 x 8 B =
    # 40,960 B of lines, each stored on to the next peer as soon as its flags show. A broadcast of S = 200,000 B
    # on 3 GPUs, one channel: one unit of ceil(200,000 / 120) = 1,667 lines (213,376 B), so ceil(213,376 /
    # 40,960) = 6 passes of 278 lines (the first 5) and 277 (1,667 = 6 x 277 + 5).
    k, S, passes = 3, 200_000, 6
    lines = -(-S // 120)
    sizes = [(lines // passes + (j < lines % passes)) * 128 for j in range(passes)]
    assert sizes == [278 * 128] * 5 + [277 * 128]
    plat = _ideal(write_platform, k)
    prof, plan = build_collective(plat, "broadcast", S, proto="LL128", channels=1)
    assert plan == Plan("ring", "LL128", 1)

    def ops(gpu):
        return [(op.kind, op["nbytes"] if op.kind == "put" else op["value"]) for op in prof.program(gpu, 0)
                if op.kind in ("put", "wait")]

    # The root puts the passes back to back; the middle waits for pass j (its tail counts passes) and forwards it
    # at once, then returns the slot (one 8-byte credit for the unit); the end waits for each pass in turn.
    assert ops(0) == [("put", n) for n in sizes]
    assert ops(1) == [x for j, n in enumerate(sizes) for x in (("wait", j + 1), ("put", n))] + [("put", 8)]
    assert ops(2) == [("wait", j + 1) for j in range(passes)] + [("put", 8)]
    # The wire bytes are the unit's lines whatever the passes: every rank but the last forwards them.
    sent = eidola.simulate(plat, prof).gpus["bytes_sent"].tolist()
    assert sent == [lines * 128, lines * 128 + 8, 8]


def test_tree_broadcast_and_alltoall_bytes(write_platform):
    # k = 4, one channel, LL (wire = 2 x data), S = 4000 B: one LL step per hop. Credits are 8 B per unit received.
    k, S = 4, 4000
    plat = _ideal(write_platform, k)
    sent = {}
    for op, algo in (("all_reduce", "tree"), ("broadcast", "auto")):
        prof, plan = build_collective(plat, op, S, algo=algo, proto="LL", channels=1)
        sent[op] = eidola.simulate(plat, prof).gpus["bytes_sent"].tolist()
    # Tree (a chain 0-1-2-3, root 0): S goes up from 3, 2, 1 and down from 0, 1, 2; each receiver credits its sender.
    assert sent["all_reduce"] == [2 * S + 8, 2 * (2 * S + 8), 2 * (2 * S + 8), 2 * S + 8]
    # Broadcast along 0 -> 1 -> 2 -> 3: every rank but the last forwards S; every rank but the root credits.
    assert sent["broadcast"] == [2 * S, 2 * S + 8, 2 * S + 8, 8]
    # All-to-all: S / k to each of the k-1 peers (one channel each), a Simple write and its counter, and a credit
    # for each unit received: (k-1) x (S/k + 8 + 8).
    # Each channel's sends and its receives on workgroups of their own (split: 2 (k-1) workgroups a GPU).
    prof, plan = build_collective(plat, "alltoall", S, proto="Simple", channels=k - 1)
    assert plan == Plan("p2p", "Simple", k - 1, split=True) and plan.workgroups == 2 * (k - 1)
    res = eidola.simulate(plat, prof)
    assert res.gpus["bytes_sent"].tolist() == [(k - 1) * (S // k + 16)] * k


def test_alltoall_copies_the_own_block_once(write_platform):
    # k = 4, S = 4 MiB, Simple on 2 channels per peer (W = 6 workgroups a GPU): the rank's own block, S/k, is a
    # local copy (2 bytes of memory traffic a byte) done once, shared by the W workgroups at W-th shares of the
    # memory bandwidth: each copies the largest piece, ceil(S/k / W) = 174,763 B, in 2 x 174,763 x W / bandwidth,
    # all alike so that they start their sends together. Each used to copy S/k / 2 at its W-th share, the block
    # k - 1 = 3 times over, holding every send back 3x as long.
    k, S, W, mem_bw = 4, 4 << 20, 6, 1000e12  # _ideal: 1000 TB/s
    piece = -(-(S // k) // W)
    plat = _ideal(write_platform, k)
    prof, plan = build_collective(plat, "alltoall", S, proto="Simple", channels=W)
    assert plan == Plan("p2p", "Simple", W, split=True) and piece == 174_763
    for g in range(k):
        first = [prof.program(g, w)[0] for w in range(W)]
        assert all(op.kind == "compute" for op in first)
        assert all(prof.program(g, w)[0].kind != "compute" for w in range(W, 2 * W))  # the receivers copy nothing
        # W pieces of ceil(S/k / W) bytes: the block once, to the byte each piece rounds up
        assert [op["ns"] for op in first] == pytest.approx([2 * piece * W / mem_bw * 1e9] * W, rel=1e-12)


def test_reduce_and_sendrecv_bytes(write_platform):
    # k = 4, S = 4000 B. Reduce to root 0 on one LL channel (wire = 2 x data, one step a hop): NCCL's reduce.h
    # starts the chain at the rank whose ring predecessor is the root, so it runs 1 -> 2 -> 3 -> 0; GPUs 1-3 each
    # send 2S, every rank but the chain's start credits its sender 8 B, and the root sends only that credit:
    # the broadcast's chain from the other end.
    k, S = 4, 4000
    plat = _ideal(write_platform, k)
    prof, plan = build_collective(plat, "reduce", S, proto="LL", channels=1)
    assert plan == Plan("ring", "LL", 1)
    res = eidola.simulate(plat, prof)
    assert res.gpus["bytes_sent"].tolist() == [8, 2 * S, 2 * S + 8, 2 * S + 8]
    assert res.gpus["bytes_received"].tolist() == [2 * S, 8, 2 * S + 8, 2 * S + 8]
    # Send/recv (nccl-tests: each rank sends S to rank + 1, receives S from rank - 1), Simple on 2 channels: each
    # channel writes S/2, its step counter (8 B) and the credit for the unit it received (8 B).
    prof, plan = build_collective(plat, "sendrecv", S, proto="Simple", channels=2)
    assert plan == Plan("p2p", "Simple", 2, split=True)
    res = eidola.simulate(plat, prof)
    assert res.gpus["bytes_sent"].tolist() == [S + 2 * 16] * k
    assert res.gpus["bytes_received"].tolist() == [S + 2 * 16] * k


def test_gather_and_scatter_bytes(write_platform):
    # k = 4, S = 4000 B (1000 B a rank), Simple on one channel per peer of root 0 (3): in a gather every other rank
    # writes its 1000 B to the root and bumps the root's tail (8 B), and the root credits the unit it received
    # (8 B); the root's own 1000 B are a local copy. A scatter is the same the other way.
    k, S = 4, 4000
    plat = _ideal(write_platform, k)
    unit = S // k + 8
    for op, sent, received in (("gather", [3 * 8] + [unit] * 3, [3 * unit] + [8] * 3),
                               ("scatter", [3 * unit] + [8] * 3, [3 * 8] + [unit] * 3)):
        prof, plan = build_collective(plat, op, S, proto="Simple", channels=k - 1)
        assert plan == Plan("p2p", "Simple", k - 1)
        res = eidola.simulate(plat, prof)
        assert res.gpus["bytes_sent"].tolist() == sent, op
        assert res.gpus["bytes_received"].tolist() == received, op


def test_rooted_collectives_take_any_root(write_platform):
    # k = 4, S = 4000 B, as the root-0 tests above. Broadcast from root 2 on one LL channel: the chain follows the
    # ring from the root, 2 -> 3 -> 0 -> 1, so GPU 2 sends 2S, 3 and 0 forward 2S and credit 8 B, 1 only credits.
    # Gather to root 3 (Simple, one channel per peer): GPUs 0-2 each send S/k and a tail bump, the root 3 credits.
    k, S = 4, 4000
    plat = _ideal(write_platform, k)
    prof, _ = build_collective(plat, "broadcast", S, proto="LL", channels=1, root=2)
    assert eidola.simulate(plat, prof).gpus["bytes_sent"].tolist() == [2 * S + 8, 8, 2 * S, 2 * S + 8]
    unit = S // k + 8
    prof, _ = build_collective(plat, "gather", S, proto="Simple", channels=k - 1, root=3)
    res = eidola.simulate(plat, prof)
    assert res.gpus["bytes_sent"].tolist() == [unit] * 3 + [3 * 8]
    assert res.gpus["bytes_received"].tolist() == [8] * 3 + [3 * unit]
    for bad in (-1, 4, 1.0):
        with pytest.raises(ConfigError, match="root: expected a GPU from 0 to 3"):
            build_collective(plat, "scatter", S, root=bad)
    build_collective(plat, "all_reduce", S, root=7)  # no root: ignored, as nccl-tests ignores -r there


@pytest.mark.parametrize("platform, root_rate", [
    # switch-8gpu: the root's one link of 4 x 100 GB/s carries (k-1)/k of S in 256-byte packets with 16-byte headers
    ("switch-8gpu", 400e9 * 256 / 272),
    # mi300x-8gpu: the root's 7 links of 64 GB/s, 85-byte headers
    ("mi300x-8gpu", 7 * 64e9 * 256 / 341),
])
def test_gather_and_scatter_at_64mib_against_the_roots_links(repo, platform, root_rate):
    # nccl-tests' busbw of gather and scatter is (k-1)/k of S over the time: the data into (out of) the root, which
    # cannot beat the root's links' payload rate and, every peer streaming at once, must come within 10% of it at
    # 64 MiB on the flow fabric.
    size = 64 << 20
    fabrics = Fabrics(str(repo / "platforms" / f"{platform}.yaml"), {}, "flow")
    for op in ("gather", "scatter"):
        (row,) = run_sizes(fabrics, op, [(size, size // 4)], 8)
        assert row.plan.algo == "p2p"
        assert 0.9 * root_rate / 1e9 < row.busbw < root_rate / 1e9, (op, row, root_rate)


@pytest.mark.parametrize("platform, wire_per_payload, link_bw, links_out", [
    # switch-8gpu: 4 lanes of 100 GB/s; GPU r's uplink carries its data to r + 1 (256 B + a 16-byte header a
    # packet) and the 16-byte acknowledgements of r - 1's packets to it
    ("switch-8gpu", (256 + 16 + 16) / 256, 400e9, 1),
    # mi300x-8gpu: one 64 GB/s xGMI link a pair, 85-byte headers; link r -> r + 1 carries r's data only (the
    # acknowledgements go back over r + 1 -> r, which carries nothing else); RCCL's 28 rings spread a reduce's
    # chains over all 7 links of a GPU
    ("mi300x-8gpu", (256 + 85) / 256, 64e9, 7),
])
def test_sendrecv_and_reduce_at_64mib_against_the_wire(repo, platform, wire_per_payload, link_bw, links_out):
    # nccl-tests' busbw of sendrecv and reduce is the algorithm bandwidth (factor 1): S over the time. A
    # sendrecv sends S over one path, so it cannot beat one link's payload rate, and, every pair streaming at
    # once over its own path, must come within 10% of it at 64 MiB on the flow fabric. In a reduce every GPU
    # but the root sends S in all over its channels' chains: it cannot beat the GPU's links out.
    size = 64 << 20
    bound = link_bw / wire_per_payload / 1e9
    fabrics = Fabrics(str(repo / "platforms" / f"{platform}.yaml"), {}, "flow")
    (sendrecv,) = run_sizes(fabrics, "sendrecv", [(size, size // 4)], 8)
    assert sendrecv.plan.algo == "p2p"
    assert 0.9 * bound < sendrecv.busbw < bound, (sendrecv, bound)
    (reduce,) = run_sizes(fabrics, "reduce", [(size, size // 4)], 8)
    assert reduce.plan.algo == "ring" and reduce.busbw < links_out * bound


# --- the channel split ---------------------------------------------------------------------------------------


def _put_bytes(prof, gpu, wg):
    return sum(op["nbytes"] for op in prof.program(gpu, wg) if op.kind == "put" and op["buffer"].endswith("fifo"))


def test_channels_each_carry_their_share_first_ones_a_byte_more(write_platform):
    # S = 2 x (3 x 8) x 64 + 5 bytes on k = 2, C = 3: channel parts 1029 B (c < 5 mod 3 = 2) ... split(S, 3):
    # 3077 = 3 x 1025 + 2 -> 1026, 1026, 1025. Each part splits into k = 2 blocks, a byte more first.
    k, C, S = 2, 3, 3077
    prof, plan = build_collective(_ideal(write_platform, k), "all_reduce", S, proto="LL", channels=C)
    parts = [1026, 1026, 1025]
    assert plan.channels == C and sum(parts) == S
    for c, part in enumerate(parts):
        blocks = [part - part // 2, part // 2]  # block 0 takes the odd byte
        lines = [-(-b // 8) for b in blocks]
        # Rank p sends block p-1 then (the all-gather half) its own block p: both blocks once each.
        for gpu in range(k):
            assert _put_bytes(prof, gpu, c) == 16 * sum(lines)
    assert prof.workgroups == C


@pytest.mark.parametrize("nbytes,proto,expected", [
    (1024, "LL", 1),         # ring LL: 8 B x k = 64 B per thread, 512 threads: 32,768 B per channel
    (65536, "LL", 2),        # 65536 < 2 x 32768 is false: stops at 2
    (200_000, "LL", 6),      # 6 x 32768 = 196,608 <= 200,000 < 7 x 32768
    (20_000, "LL128", 3),    # 8 B x 640 threads = 5,120 B per channel: 3 x 5120 <= 20,000 < 4 x 5120
    (307_200, "Simple", 9),  # 64 B x 512 threads = 32,768 B per channel: 9 x 32768 <= 307,200 < 10 x 32768
    (1 << 30, "Simple", 16),  # no drop: the platform's 16
])
def test_tuner_drops_channels_by_the_thread_threshold_rule(write_platform, nbytes, proto, expected):
    sys = System.of(_h100_like(write_platform))
    assert tuner.reduce_channels(sys, "ring", proto, 8, nbytes, sys.channels) == expected
    assert tuner.choose(sys, "all_reduce", nbytes, 8, "ring", proto)[2] == expected


# --- the FIFO's credits -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("proto,unit_steps,depth", [("LL", 1, 8), ("Simple", 2, 4)])
def test_sender_issues_exactly_the_fifo_depth_then_waits_for_credit(write_platform, proto, unit_steps, depth):
    # The receiver is busy for D = 1 ms before it consumes anything. With `depth` units (8 steps) the
    # sender never needs a credit and finishes within a few round trips; one unit more and it must
    # wait for the receiver's first credit, which cannot leave before D.
    D = 1e6
    plat = _ideal(write_platform, 2, workgroups=1)
    for units, waits in ((depth, False), (depth + 1, True)):
        b = ProfileBuilder(gpus=2, workgroups=1, name="credits")
        conn = Conn(b, "x", protocol(proto), unit_steps, 1)
        tx, rx = b.programs_at(0, 0), b.programs_at(1, 0)
        ch = np.zeros(1, dtype=np.int64)
        send, recv = conn.side(tx, ch, np.array([1])), conn.side(rx, ch, np.array([0]))
        rx.compute(ns=D)
        for _ in range(units):
            primitive(tx, None, send, np.array([4096]), 0.0)
            primitive(rx, recv, None, np.array([4096]), 0.0)
        res = eidola.simulate(plat, b.build())
        sender = float(res.gpus["finish_ns"][0])
        if waits:
            # At D the receiver's first wait finds unit 0 there after its flag read M, and puts the credit,
            # which lands L + M later; the sender's next unit then goes: LL's put is acknowledged 2L + M
            # later; Simple's write is, and only then its signal goes, itself acknowledged 2L + M later.
            tail = (2 * L + M) * (2 if proto == "Simple" else 1)
            assert sender == pytest.approx(D + M + (L + M) + tail, abs=1e-3)
        else:
            assert sender < 20 * (L + M)


# --- the pipeline's time -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 4, 8])
def test_ring_allreduce_LL_takes_2k_minus_2_one_way_trips(write_platform, k):
    # One channel, one LL unit per step. Send j (j = 0 .. 2k-3) of every rank is put at j (L + M) and
    # lands at (j+1)(L + M), waking the next rank's receive j at once (its wait was armed earlier and its
    # flag read M < L + M had finished). Sends from the 9th on first check their credit: the credit is
    # there already, but the wait reads the head flag (M), so each of the 2(k-1) - 8 such sends adds M.
    # The last receive wakes at 2(k-1)(L + M) + that; its credit put is then acknowledged 2L + M later,
    # when the kernel ends (a kernel ends once its stores are acknowledged).
    plat = _ideal(write_platform, k)
    prof, plan = build_collective(plat, "all_reduce", 8 * k, proto="LL", channels=1, algo="ring")
    res = eidola.simulate(plat, prof)
    sends = 2 * (k - 1)
    assert res.kernel_time_ns == pytest.approx(sends * (L + M) + max(sends - 8, 0) * M + (2 * L + M), abs=1e-3)


def test_simple_step_adds_the_release_round_trip(write_platform):
    # The same ring with Simple: each send is a write, acknowledged 2L + M after issue, then the
    # step-counter signal, landing L + M later: a step is 3L + 2M instead of LL's L + M. A Simple unit
    # is a slice of 2 steps, so the FIFO holds 4: sends 5 and 6 of the 6 read their (present) credit, M each.
    k = 4
    plat = _ideal(write_platform, k)
    prof, _ = build_collective(plat, "all_reduce", 8 * k, proto="Simple", channels=1, algo="ring")
    res = eidola.simulate(plat, prof)
    sends = 2 * (k - 1)
    assert res.kernel_time_ns == pytest.approx(sends * (3 * L + 2 * M) + (sends - 4) * M + (2 * L + M), abs=1e-3)


# One link of a packet fabric (tests/python/test_put.py's derivation): 64 GB/s, 100 ns, header 16 B, router
# 50 ns, flit 16 B; 256 B packets serialise in (256 + 16) / 64 = 4.25 ns; a packet arrives ser + 150 ns after it
# starts; an acknowledgement (one flit) takes 0.25 + 150 ns back.
B_LINK, HDR, HOP, FLIT = 64.0, 16, 150.0, 0.25


def _ser(payload):
    return (payload + HDR) / B_LINK


def _packets(wire):
    full, last = divmod(wire, 256)
    return full * _ser(256) + (_ser(last) if last else 0.0)


@pytest.mark.parametrize("proto,wake", [
    ("LL", _packets(4096 * 2) + HOP + M),                  # 512 lines = 8,192 B: one one-way trip
    ("LL128", _packets(35 * 128) + HOP + M),               # ceil(4096 / 120) = 35 lines of 128 B
    ("Simple", _packets(4096) + HOP + M + (FLIT + HOP) + _ser(8) + HOP + M),  # + the ack, then the counter
])
def test_one_step_of_each_protocol_on_one_link(write_platform, proto, wake):
    # A 2-GPU broadcast of 4096 B on one channel: one unit from GPU 0 to GPU 1, whose one wait ends when
    # the unit's flag lands (LL/LL128: the put's last byte; Simple: the counter after the release).
    plat = eidola.load_platform(write_platform(f"""
        eidola: 1
        gpus: {{count: 2, workgroups: 1, max_outstanding: 1024, max_payload: 256B,
               memory: {{latency: {M:g}ns, bandwidth: 1000TB/s}}}}
        fabric:
          model: packet
          topology: fully_connected
          link: {{bandwidth: {B_LINK:g}GB/s, latency: 100ns, header: {HDR}B, count: 1}}
          switch: {{latency: 50ns, buffer: 64}}
        """))
    prof, plan = build_collective(plat, "broadcast", 4096, proto=proto, channels=1)
    assert plan == Plan("ring", proto, 1)
    res = eidola.simulate(plat, prof)
    receiver = res.workgroups[res.workgroups["gpu"] == 1]
    assert float(receiver["wait_ns"][0]) == pytest.approx(wake, abs=1e-3)


# --- the tuner -----------------------------------------------------------------------------------------------------


def test_tuner_picks_ring_LL_at_1KiB_and_ring_Simple_at_1GiB(write_platform):
    sys = System.of(_h100_like(write_platform))
    assert sys.gpu_bw == 450e9 and sys.channels == 16
    # 1 KiB: ring LL 6.6 + 14 x 0.6 = 15.0 us (+ 1024 B at min(141, 450 / 4) x 8/14 GB/s: 0.016 us); tree LL
    # 6.8 + 14 x 0.6 = 15.2 us; ring LL128 14 + 14 x 1.9 = 40.6 us; ring Simple 8.4 + 14 x 3.4 = 56 us.
    ring_ll = tuner.predict(sys, "all_reduce", 8, "ring", "LL", 16)
    assert ring_ll.latency_us == pytest.approx(15.0) and ring_ll.algbw_GBps == pytest.approx(112.5 * 8 / 14)
    assert tuner.predict(sys, "all_reduce", 8, "tree", "LL", 16).latency_us == pytest.approx(15.2)
    assert tuner.choose(sys, "all_reduce", 1024, 8) == ("ring", "LL", 1)
    # 1 GiB: ring Simple 56 + 2^30 B / (450 x 8/14 GB/s) = 4231.7 us; ring LL128 40.6 + 2^30 / (min(414,
    # 16 x 36.7) x 8/14) = 4579.4 us; tree Simple 8.4 + 14 x 4 + 2^30 / (450 x 0.92 / 2) = 5251.6 us
    # (no tree correction: log2(2^30 / 64) = 24 is past NCCL's table).
    simple = tuner.predict(sys, "all_reduce", 8, "ring", "Simple", 16)
    assert simple.time_us(1 << 30) == pytest.approx(56 + (1 << 30) / (450e3 * 8 / 14))
    ll128 = tuner.predict(sys, "all_reduce", 8, "ring", "LL128", 16)
    assert ll128.time_us(1 << 30) == pytest.approx(40.6 + (1 << 30) / (414e3 * 8 / 14))
    tree = tuner.predict(sys, "all_reduce", 8, "tree", "Simple", 16)
    assert tree.time_us(1 << 30) == pytest.approx(64.4 + (1 << 30) / (450e3 * 0.92 / 2))
    assert tuner.choose(sys, "all_reduce", 1 << 30, 8) == ("ring", "Simple", 16)
    # 4 MiB: tree LL128's bandwidth is corrected by NCCL's factor 0.7 (LL128 row, entry log2(4 MiB / 64) = 16).
    t = tuner.predict(sys, "all_reduce", 8, "tree", "LL128", 16)
    assert t.time_us(4 << 20) == pytest.approx(t.latency_us + (4 << 20) / (t.algbw_GBps * 0.7 * 1e3))


def test_tuner_counts_k_steps_for_broadcast_and_reduce(write_platform):
    # NCCL's tuning.cc: nsteps = nRanks for broadcast and reduce (2(k-1) for all-reduce, k-1 for all-gather and
    # reduce-scatter), and the ring's algorithm bandwidth is the bus bandwidth x nRanks / nsteps: x 1 here. Up to
    # 2.20 its ring LL takes a quarter of the bus for all-reduce and reduce, a third for the others (v2.20.5 line
    # 181). On the H100-like platform (450 GB/s, 16 channels): broadcast Simple at 450 GB/s, LL at
    # min(141, 450 / 3) = 141 GB/s; reduce LL at min(141, 450 / 4) = 112.5 GB/s; all-gather Simple
    # 8.4 + 7 x 3.4 = 32.2 us at 450 x 8/7 GB/s.
    # Broadcast's and reduce's latency (v2.20.5 lines 234-239): the base and one ring hop where the ring graph has
    # `sameChannels`, as one switch link per GPU gives (Simple 8.4 + 3.4 = 11.8 us, LL 6.6 + 0.6 = 7.2 us);
    # else nsteps = 8 hops, Simple's at the tree's NVLink figure (4.0 us: NCCL 2.18.5 and 2.23.4 on; 2.19-2.22 have
    # 28): 8.4 + 8 x 4.0 = 40.4 us, LL 6.6 + 8 x 0.6 = 11.4 us, as on a fully connected node, whose rings spread.
    sys = System.of(_h100_like(write_platform))
    assert sys.same_channels(8)
    simple = tuner.predict(sys, "broadcast", 8, "ring", "Simple", 16)
    assert simple.latency_us == pytest.approx(11.8) and simple.algbw_GBps == pytest.approx(450)
    ll = tuner.predict(sys, "broadcast", 8, "ring", "LL", 16)
    assert ll.latency_us == pytest.approx(7.2) and ll.algbw_GBps == pytest.approx(141)
    reduce_ll = tuner.predict(sys, "reduce", 8, "ring", "LL", 16)
    assert reduce_ll.latency_us == pytest.approx(7.2) and reduce_ll.algbw_GBps == pytest.approx(112.5)
    gather = tuner.predict(sys, "all_gather", 8, "ring", "Simple", 16)
    assert gather.latency_us == pytest.approx(32.2) and gather.algbw_GBps == pytest.approx(450 * 8 / 7)
    # Simple has the lower latency and the higher bandwidth than LL128 (14 + 1.9 us, 0.92 x 450 GB/s): NCCL never
    # picks LL128 for a broadcast here; LL up to where 7.2 + S / 141 = 11.8 + S / 450 (S = 0.94 MB).
    assert [tuner.choose(sys, "broadcast", n, 8)[1] for n in (512 << 10, 1 << 20, 16 << 20)] == ["LL", "Simple", "Simple"]
    meshed = System.of(_h100_like(write_platform, overrides={"fabric.topology": "fully_connected"}))
    assert not meshed.same_channels(8)
    assert tuner.predict(meshed, "broadcast", 8, "ring", "Simple", 16).latency_us == pytest.approx(40.4)
    assert tuner.predict(meshed, "reduce", 8, "ring", "LL", 16).latency_us == pytest.approx(11.4)


def test_tuner_gives_every_collective_a_quarter_for_LL_across_nodes():
    # NCCL up to 2.20 (tuning.cc: `nNodes > 1 || coll == ncclFuncAllReduce || coll == ncclFuncReduce ? 1.0/4.0 :
    # 1.0/3.0`): across nodes every collective's ring LL takes a quarter of the bus bandwidth. dgx-h100-rail on its 16
    # GPUs (2 nodes, NCCL, Hopper: the 2.20 shares), the bus 24 channels x 450 / 24 GB/s: broadcast LL at
    # min(141, 450 / 4) = 112.5 GB/s x 16 / 16 steps, all-gather at 112.5 x 16 / 15 = 120, all-reduce at 112.5 x
    # 16 / 30 = 60 (a third would give broadcast and all-gather 141 and 150.4).
    sys = System.of(eidola.load_platform("platforms/dgx-h100-rail.yaml"))
    assert (sys.library, sys.arch, sys.gpu_bw, sys.channels, sys.nodes(16)) == ("nccl", "hopper", 450e9, 24, 2)
    for op, algbw in (("broadcast", 112.5), ("all_gather", 120.0), ("all_reduce", 60.0)):
        assert tuner.predict(sys, op, 16, "ring", "LL", 24).algbw_GBps == pytest.approx(algbw), op


def test_tuner_takes_network_hops_for_a_broadcast_across_nodes():
    # Across nodes NCCL's hw is the network for every algorithm (tuning.cc: `hw[a] = nNodes == 1 ? intraHw[a] :
    # NCCL_HW_NET`). dgx-h100-rail's rings enter each node at a GPU of their own, so no sameChannels: nsteps = 16
    # network hops, Simple's at the network tree figure: LL 6.6 + 16 x 2.7 = 49.8 us, Simple 8.4 + 16 x 14.0 = 232.4 us.
    sys = System.of(eidola.load_platform("platforms/dgx-h100-rail.yaml"))
    assert not sys.same_channels(16)
    assert tuner.predict(sys, "broadcast", 16, "ring", "LL", 24).latency_us == pytest.approx(49.8)
    assert tuner.predict(sys, "reduce", 16, "ring", "Simple", 24).latency_us == pytest.approx(232.4)
    # RCCL keeps the flag on its matched models (mi300x-rail): RCCL's base and one network hop of its model
    # (tuning_model_5's NET ring row, LL 9.5 us, Simple 320 us): 12 + 9.5 = 21.5 us, 17 + 320 = 337 us.
    rccl = System.of(eidola.load_platform("platforms/mi300x-rail.yaml"))
    assert rccl.same_channels(16)
    assert tuner.predict(rccl, "broadcast", 16, "ring", "LL", rccl.channels).latency_us == pytest.approx(21.5)
    assert tuner.predict(rccl, "reduce", 16, "ring", "Simple", rccl.channels).latency_us == pytest.approx(337.0)


def test_rccl_across_nodes_is_its_own_model():
    # RCCL's tuning.cc on its MI300X model (tuning_model_5, RCCL 2.20.5-2.21.5), two nodes of 8 (mi300x-rail, 16
    # channels, the bus 448 GB/s up to 2 nodes): ring all-reduce 30 steps, 2 x 2 network ones: LL 12 + 26 x max(0.8,
    # 2.0) + 4 x 9.5 = 102 us at 0.08 x 448 x 16 / 30 GB/s, Simple 17 + 26 x max(2.1, 6.0) + 4 x 320 = 1,453 us at
    # 448 x 16 / 30; tree 2 x (7 intra + 1 network) hops: LL 12 + 2 (7 x 0.9 + 10.5) = 45.6 us at 0.06 x 448 / 2,
    # Simple 17 + 2 (7 x 2.3 + 25) = 99.2 us at 0.11 x 448 / 2. Then the bandwidth x its correction by log2(bytes / 64)
    # (ring across nodes, tree always; the last entry for every larger size).
    sys = System.of(eidola.load_platform("platforms/mi300x-rail.yaml"))
    assert (sys.library, sys.gpu_bw, sys.channels, sys.nodes(16)) == ("rccl", 448e9, 16, 2)
    want = {("ring", "LL"): (102.0, 0.08 * 448 * 16 / 30), ("ring", "Simple"): (1453.0, 448 * 16 / 30),
            ("tree", "LL"): (45.6, 0.06 * 448 / 2), ("tree", "Simple"): (99.2, 0.11 * 448 / 2)}
    for (algo, proto), (lat, bw) in want.items():
        c = tuner.predict(sys, "all_reduce", 16, algo, proto, 16)
        assert (c.latency_us, c.algbw_GBps) == (pytest.approx(lat), pytest.approx(bw)), (algo, proto)
    ring_ll = [0.1] * 11 + [1.0, 0.2, 1.0, 0.4, 0.4, 0.1, 0.2, 0.2] + [0.1] * 8
    ring_simple = [0.1] * 23 + [0.8, 1.0, 1.0, 1.0]
    tree_ll = [0.1] * 6 + [1.0] * 5 + [0.6, 1.0, 0.9, 1.0, 1.0] + [0.1] * 11
    tree_simple = [0.1] * 15 + [0.7] + [1.0] * 10 + [0.8]

    def time_us(algo: str, proto: str, n: int) -> float:
        lat, bw = want[(algo, proto)]
        table = {("ring", "LL"): ring_ll, ("ring", "Simple"): ring_simple, ("tree", "LL"): tree_ll,
                 ("tree", "Simple"): tree_simple}[(algo, proto)]
        return lat + n / (bw * table[min((n >> 6).bit_length() - 1, 26)] * 1e3)

    for n in (1 << 10, 1 << 20, 4 << 20, 64 << 20, 256 << 20, 512 << 20, 1 << 30, 16 << 30):
        best = min(want, key=lambda ap: time_us(*ap, n))
        assert tuner.choose(sys, "all_reduce", n, 16)[:2] == best, n
        assert tuner.predict(sys, "all_reduce", 16, *best, 16).time_us(n) == pytest.approx(time_us(*best, n)), n
    # What that gives: tree LL to 1 MiB, tree Simple from 4 to 256 MiB, ring Simple from 512 MiB.
    assert [tuner.choose(sys, "all_reduce", n, 16)[:2] for n in (1 << 20, 4 << 20, 256 << 20, 512 << 20)] == [
        ("tree", "LL"), ("tree", "Simple"), ("tree", "Simple"), ("ring", "Simple")]


def test_rccl_gives_broadcast_and_reduce_LL_more_bandwidth_on_one_mi300x_node():
    # RCCL's tuning.cc (release/rocm-rel-6.3.0.1): after its model's ratio (ring LL 0.08), `busBw * 1.65` for ring
    # LL broadcast and reduce when every rank is on one node of gfx94 GPUs. mi300x-8gpu: 28 channels of the GPU's
    # bandwidth / 28. Its rings are RCCL's matched model's, read after the search set sameChannels, which stays 1
    # (RCCL's search.cc), so the base and one xGMI hop: 12 + 0.8 = 12.8 us for LL.
    sys = System.of(eidola.load_platform("platforms/mi300x-8gpu.yaml"))
    bus = sys.gpu_bw / 1e9 * 0.08
    for op, factor in (("broadcast", 1.65), ("reduce", 1.65), ("all_gather", 8 / 7)):
        assert tuner.predict(sys, op, 8, "ring", "LL", 28).algbw_GBps == pytest.approx(bus * factor), op
    assert sys.same_channels(8)
    assert tuner.predict(sys, "broadcast", 8, "ring", "LL", 28).latency_us == pytest.approx(12.8)


def test_rccl_never_picks_a_protocol_its_model_gives_no_bandwidth():
    # tuning_model_5's LL128 ratio is 0 across nodes (RCCL: busBw 0, the protocol skipped). Enabled on mi300x-rail it is
    # never the tuner's pick, and asked for it still runs.
    sys = System.of(eidola.load_platform("platforms/mi300x-rail.yaml",
                                         overrides={"collectives.protocols": ["LL", "LL128", "Simple"]}))
    assert "LL128" in sys.protocols
    assert all(tuner.choose(sys, "all_reduce", n, 16)[1] != "LL128" for n in (1 << 10, 1 << 24, 1 << 34))
    assert tuner.choose(sys, "all_reduce", 1 << 24, 16, proto="LL128")[1] == "LL128"


def test_overrides_are_honoured_and_bad_ones_named(write_platform):
    plat = _h100_like(write_platform)
    _, plan = build_collective(plat, "all_reduce", 1 << 20, algo="tree", proto="LL128", channels=5)
    assert plan == Plan("tree", "LL128", 5)
    for kwargs, word in ((dict(proto="LL256"), "proto"), (dict(algo="nvls"), "nvls"), (dict(channels=-1), "channels"),
                         (dict(algo="tree", op="all_gather"), "tree"), (dict(op="hypercube"), "op"),
                         (dict(gpus=9), "gpus"), (dict(nbytes=0), "nbytes")):
        args = {"op": "all_reduce", "nbytes": 1024, **kwargs}
        with pytest.raises(ConfigError, match=word):
            build_collective(plat, **args)


def test_rccl_constants_and_no_LL128_on_mi300x():
    plat = eidola.load_platform("platforms/mi300x-8gpu.yaml")
    sys = System.of(plat)
    assert (sys.library, sys.link_type, sys.protocols, sys.channels) == ("rccl", "xgmi", ("LL", "Simple"), 28)
    # RCCL: base 12 us for LL, xGMI ring hop 0.8 us: 12 + 14 x 0.8 = 23.2 us
    assert tuner.predict(sys, "all_reduce", 8, "ring", "LL", 28).latency_us == pytest.approx(23.2)
    with pytest.raises(ConfigError, match="LL128 is not enabled"):
        build_collective(plat, "all_reduce", 1024, proto="LL128")


def test_rings_spread_over_every_link_of_a_fully_connected_node():
    # 7 rings through 8 GPUs using each of the 56 directed links once; 28 channels = 4 per link.
    cycles = hamiltonian_cycles(8)
    assert cycles is not None and len(cycles) == 7
    arcs = [(r[i], r[(i + 1) % 8]) for r in cycles for i in range(8)]
    assert sorted(arcs) == [(a, b) for a in range(8) for b in range(8) if a != b]
    rings = System.of(eidola.load_platform("platforms/mi300x-8gpu.yaml")).rings(8, 28)
    load = {}
    for r in rings:
        for i in range(8):
            load[r[i], r[(i + 1) % 8]] = load.get((r[i], r[(i + 1) % 8]), 0) + 1
    assert set(load.values()) == {4} and len(load) == 56


def test_collectives_section_is_checked(write_platform):
    base = "eidola: 1\ngpus: {count: 2}\nfabric: {model: ideal}\n"
    for section, key in (("{channels: 0}", "collectives.channels"), ("{library: mpi}", "collectives.library"),
                         ("{protocols: [LL, LL]}", "collectives.protocols"), ("{threads: 3}", "unknown key")):
        with pytest.raises(ConfigError, match=key):
            eidola.load_platform(write_platform(base + f"collectives: {section}\n"))
    plat = eidola.load_platform(write_platform(base + "collectives: {library: rccl, channels: 4}\n"))
    assert plat.collectives == {"library": "rccl", "channels": 4}
    assert "collectives" in plat.effective_yaml()


def test_sends_and_receives_stay_together_where_the_harness_leaves_no_room(write_platform):
    # 4 GPUs of 7 workgroups: an all-to-all on one channel per peer (3) runs its sends and receives apart on 6; the
    # steady run's host takes a seventh, still apart; back-to-back calls' host and marker would need 8, so the
    # channels keep them together (3 + 2), where the profile was refused before.
    plat = _ideal(write_platform, 4, workgroups=7)
    _, plan = build_collective(plat, "alltoall", 4096, proto="Simple", channels=3, steady=True)
    assert plan.split and plan.workgroups == 6
    prof, plan = build_collective(plat, "alltoall", 4096, proto="Simple", channels=3, calls=2)
    assert not plan.split and prof.workgroups == 3 + 2
    assert eidola.simulate(plat, prof).kernel_time_ns > 0
