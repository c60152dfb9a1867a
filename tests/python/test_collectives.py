"""Tests of the collective generators: bytes, op counts and flag counts checked against formulas.

Notation: P gpus, W workgroups, C chunks, S nbytes, chunk = S / (P*W*C).
"""

import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from eidola.errors import ProfileError
from eidola.generators import all_gather, all_to_all, direct_allreduce, reduce_scatter, ring_allreduce
from eidola.profile import load_profile

ROOT = Path(__file__).resolve().parents[2]

# name -> (generator, extra kwargs, sends per program / ((P-1)*C), reduce computes per program / C)
# Sends: ring algorithms send one chunk per step per c (2(P-1) or P-1 steps); direct ones send each
# chunk to P-1 peers per phase (2 phases for all-reduce, 1 otherwise). Reduce computes: ring ones
# reduce every received reduce-scatter chunk (P-1 steps); direct ones reduce once per chunk.
CASES = {
    "ring_allreduce": (ring_allreduce, {}, 2, "P-1"),
    "direct_allreduce": (direct_allreduce, {}, 2, "1"),
    "all_gather_ring": (all_gather, {"algorithm": "ring"}, 1, "0"),
    "all_gather_direct": (all_gather, {"algorithm": "direct"}, 1, "0"),
    "reduce_scatter_ring": (reduce_scatter, {"algorithm": "ring"}, 1, "P-1"),
    "reduce_scatter_direct": (reduce_scatter, {"algorithm": "direct"}, 1, "1"),
    "all_to_all": (all_to_all, {}, 1, "0"),
}
SHAPES = [(2, 1, 1), (3, 2, 2), (4, 1, 3), (5, 3, 1), (8, 2, 4)]
RATE = 0.5  # reduce_ns_per_byte; chunks are multiples of 8 bytes, so every product is exact


def _make(case, P, W, C, **kw):
    fn, extra, _, _ = CASES[case]
    return fn(gpus=P, nbytes=P * W * C * 8, workgroups=W, chunks=C, **extra, **kw)


def _run(prof):
    """Execute the flag logic with instant signals; return the programs that never finish (deadlocked).

    Flags only grow and waits are ">=", so if this schedule finishes, every schedule does.
    """
    flags = Counter()
    pos = {key: 0 for key, _ in prof.programs}
    progress = True
    while progress:
        progress = False
        for (g, w), ops in prof.programs:
            i = pos[g, w]
            while i < len(ops):
                op = ops[i]
                if op.kind == "wait" and flags[g, op["flag"]] < op["value"]:
                    break
                if op.kind == "signal":
                    flags[op["dst"], op["flag"]] += op["value"]
                i += 1
            progress |= i != pos[g, w]
            pos[g, w] = i
    return [key for key, ops in prof.programs if pos[key] < len(ops)]


@pytest.mark.parametrize("P, W, C", SHAPES)
@pytest.mark.parametrize("case", CASES)
def test_bytes_and_op_counts(case, P, W, C):
    _, _, phases, reduces = CASES[case]
    S, chunk = P * W * C * 8, 8
    prof = _make(case, P, W, C, reduce_ns_per_byte=RATE)
    assert len(prof.programs) == P * W
    n_reduce = {"0": 0, "1": C, "P-1": (P - 1) * C}[reduces]
    for (g, w), ops in prof.programs:
        kinds = Counter(op.kind for op in ops)
        # every chunk sent is one write and one signal; every chunk received is one wait
        assert kinds["write"] == kinds["signal"] == kinds["wait"] == phases * (P - 1) * C
        assert kinds["compute"] == n_reduce
        assert set(kinds) <= {"write", "signal", "wait", "compute"}
        assert all(op["nbytes"] == chunk for op in ops if op.kind == "write")
    for g in range(P):
        ops = [op for w in range(W) for op in prof.program(g, w)]
        # all-reduce: 2(P-1)/P * S; all-gather, reduce-scatter, all-to-all: (P-1)/P * S
        assert sum(op["nbytes"] for op in ops if op.kind == "write") == phases * (P - 1) * S // P
        # reducing: (P-1) partial blocks of S/P are added into the GPU's own data, RATE ns per byte
        reduced = (P - 1) * S // P if reduces != "0" else 0
        assert sum(op["ns"] for op in ops if op.kind == "compute") == RATE * reduced


@pytest.mark.parametrize("P, W, C", SHAPES)
@pytest.mark.parametrize("case", CASES)
def test_flags_balance_and_no_deadlock(case, P, W, C):
    prof = _make(case, P, W, C)
    adds = Counter()  # (destination gpu, flag) -> total added
    senders = defaultdict(set)  # (destination gpu, flag) -> {(gpu, wg)}
    for key, ops in prof.programs:
        for op in ops:
            if op.kind == "signal":
                assert (op["op"], op["value"]) == ("add", 1)
                adds[op["dst"], op["flag"]] += 1
                senders[op["dst"], op["flag"]].add(key)
    top = defaultdict(int)  # (gpu, flag) -> largest value waited for
    for (g, _), ops in prof.programs:
        last = {}
        for op in ops:
            if op.kind == "wait":
                assert op["cond"] == ">="
                # each flag's waits count up 1, 2, ..., one per chunk received in order
                assert op["value"] == last.get(op["flag"], 0) + 1
                last[op["flag"]] = op["value"]
                top[g, op["flag"]] = max(top[g, op["flag"]], op["value"])
    assert top == adds
    # one sending workgroup per flag: a cumulative count then says exactly which chunks arrived
    assert all(len(s) == 1 for s in senders.values())
    assert _run(prof) == []


@pytest.mark.parametrize("case", CASES)
def test_writes_never_overlap_in_a_receiver(case):
    P, W, C = 4, 2, 3
    prof = _make(case, P, W, C)
    sizes = dict(prof.buffers)
    spans = defaultdict(list)  # (destination gpu, buffer) -> [(offset, end)]
    for (g, _), ops in prof.programs:
        for op in ops:
            if op.kind == "write":
                assert op["dst"] != g
                spans[op["dst"], op["buffer"]].append((op["offset"], op["offset"] + op["nbytes"]))
    for (_, buffer), s in spans.items():
        s.sort()
        assert all(a[1] <= b[0] for a, b in zip(s, s[1:]))
        assert s[-1][1] <= sizes[buffer]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("P, W, C", SHAPES)
def test_every_write_is_one_chunk_of_the_writers_own_slice(case, P, W, C):
    # The layout (schedules.py): a buffer is P blocks, each W slices (one per workgroup), each C
    # chunks; chunk (block, w, c) lives at ((block * W + w) * C + c) * chunk. With 8-byte chunks,
    # chunk number k = offset / 8 gives block = k // (W*C), slice = (k // C) % W, c = k % C. Each
    # write must be one whole chunk in its writer's own slice, and a writer must send the chunks of
    # a block to a receiver's buffer once each, in chunk order.
    prof = _make(case, P, W, C)
    sent = defaultdict(list)  # (writer gpu, wg, receiver, buffer, block) -> chunk numbers c, in order
    for (g, w), ops in prof.programs:
        for op in ops:
            if op.kind != "write":
                continue
            assert op["nbytes"] == 8 and op["offset"] % 8 == 0
            k = op["offset"] // 8
            assert (k // C) % W == w, f"GPU {g} wg {w} wrote into slice {(k // C) % W}"
            sent[g, w, op["dst"], op["buffer"], k // (W * C)].append(k % C)
    assert sent and all(cs == list(range(C)) for cs in sent.values())


@pytest.mark.parametrize("case", ["ring_allreduce", "all_gather_ring", "reduce_scatter_ring"])
def test_ring_only_writes_and_signals_the_successor(case):
    P, W, C = 5, 2, 2
    prof = _make(case, P, W, C)
    assert prof.flags == tuple(f"ring_w{w}" for w in range(W))
    for (g, w), ops in prof.programs:
        assert {op["dst"] for op in ops if op.kind in ("write", "signal")} == {(g + 1) % P}
        assert {op["flag"] for op in ops if op.kind in ("signal", "wait")} == {f"ring_w{w}"}


def test_ring_allreduce_exact_program():
    # P=3, W=1, C=2, chunk 8 -> S=48. GPU 0 sends block (0 - s - 1) mod 3 at step s: 2, 1, 0, 2,
    # into partials for the reduce-scatter steps 0-1 and into data for the all-gather steps 2-3.
    # Chunk (block, c) is at (block*2 + c) * 8. Each chunk c of step s>0 first waits for chunk c
    # of step s-1 (the (s-1)*2 + c + 1-th arrival) and reduces it if step s-1 is a reduce-scatter.
    prof = ring_allreduce(gpus=3, nbytes=48, chunks=2, reduce_ns_per_byte=0.25, mode="syncmon", interval_ns=50)
    W = ("wait", "ring_w0")
    R = ("compute", 2.0)  # 0.25 ns/byte * 8 bytes

    def send(buffer, offset):
        return [("write", 1, buffer, offset), ("signal", 1, "ring_w0")]

    expected = (send("partials", 32) + send("partials", 40)
                + [(*W, 1), R] + send("partials", 16) + [(*W, 2), R] + send("partials", 24)
                + [(*W, 3), R] + send("data", 0) + [(*W, 4), R] + send("data", 8)
                + [(*W, 5)] + send("data", 32) + [(*W, 6)] + send("data", 40)
                + [(*W, 7), (*W, 8)])
    got = []
    for op in prof.program(0, 0):
        if op.kind == "write":
            assert op["nbytes"] == 8
            got.append(("write", op["dst"], op["buffer"], op["offset"]))
        elif op.kind == "signal":
            got.append(("signal", op["dst"], op["flag"]))
        elif op.kind == "wait":
            assert (op["cond"], op["mode"], op["interval_ns"]) == (">=", "syncmon", 50)
            got.append(("wait", op["flag"], op["value"]))
        else:
            got.append(("compute", op["ns"]))
    assert got == expected


def test_direct_allreduce_exact_program():
    # P=3, W=2, C=2, chunk 8 -> S=96; GPU 1 wg 1 sends in rotated order starting w = 1 peers
    # further on: (1 + 1 + (1+k) mod 2) mod 3 = 0, 2; it waits in the base order (1+k) mod 3 = 2, 0.
    # Own chunk (block 1, wg 1, c) is at ((1*2 + 1)*2 + c) * 8 = 48 + 8c in every peer's buffer.
    # Reduce: 1.0 ns/byte * (P-1) chunks of 8 = 16 ns.
    prof = direct_allreduce(gpus=3, nbytes=96, workgroups=2, chunks=2, reduce_ns_per_byte=1.0)

    def send(stage, buffer, c):
        return ([("write", q, buffer, 48 + 8 * c) for q in (0, 2)]
                + [("signal", q, f"{stage}_w1_1") for q in (0, 2)])

    def recv(stage, c):
        return [("wait", f"{stage}_w1_{q}", c + 1) for q in (2, 0)]

    expected = (send("rs", "partials", 0) + send("rs", "partials", 1)
                + recv("rs", 0) + [("compute", 16.0)] + send("ag", "data", 0)
                + recv("rs", 1) + [("compute", 16.0)] + send("ag", "data", 1)
                + recv("ag", 0) + recv("ag", 1))
    got = [(op.kind, op["dst"], op["buffer"], op["offset"]) if op.kind == "write"
           else (op.kind, op["dst"], op["flag"]) if op.kind == "signal"
           else (op.kind, op["flag"], op["value"]) if op.kind == "wait"
           else (op.kind, op["ns"]) for op in prof.program(1, 1)]
    assert got == expected


@pytest.mark.parametrize("case", ["direct_allreduce", "all_gather_direct", "reduce_scatter_direct", "all_to_all"])
def test_direct_peer_rotation_has_no_hotspot(case):
    P = 5
    prof = _make(case, P, 1, 1)
    for k in range(1, P):
        targets = [[op for op in prof.program(g, 0) if op.kind == "write"][k - 1]["dst"] for g in range(P)]
        assert targets == [(g + k) % P for g in range(P)]


def test_all_gather_ring_delivers_every_block():
    # Every GPU must receive each of the P-1 blocks it does not own, each chunk exactly once.
    P, W, C = 4, 2, 2
    prof = all_gather(gpus=P, nbytes=P * W * C * 8, workgroups=W, chunks=C)
    for dst in range(P):
        offsets = sorted(op["offset"] for (g, _), ops in prof.programs for op in ops
                         if op.kind == "write" and op["dst"] == dst)
        block = W * C * 8
        assert offsets == [o for o in range(0, P * block, 8) if o // block != dst]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("P, W, C, nbytes", [(4, 1, 1, 6), (3, 2, 2, 18), (8, 28, 1, 1 << 20), (5, 3, 2, 1001)])
def test_any_size_splits_and_every_byte_moves(case, P, W, C, nbytes):
    # Sizes that do not divide by gpus x workgroups x chunks (a power of two over 28 workgroups):
    # the remainder is spread one byte per piece, so every byte of every block still moves and
    # the total sent is the collective's (P-1) x S per stage, exactly.
    fn, extra, stages, _ = CASES[case]
    prof = fn(gpus=P, nbytes=nbytes, workgroups=W, chunks=C, **extra)
    writes = [op for _, ops in prof.programs for op in ops if op.kind == "write"]
    assert sum(op["nbytes"] for op in writes) == stages * (P - 1) * nbytes
    sizes = {op["nbytes"] for op in writes}
    assert max(sizes) - min(sizes) <= 1
    for dst in range(P):  # what lands in one buffer covers its blocks without overlap
        buffers = {op["buffer"] for op in writes}
        for buf in buffers:
            spans = sorted((op["offset"], op["offset"] + op["nbytes"]) for op in writes
                           if op["dst"] == dst and op["buffer"] == buf)
            assert all(e <= s2 for (_, e), (s2, _) in zip(spans, spans[1:]))


@pytest.mark.parametrize("case", CASES)
def test_a_size_smaller_than_the_pieces_names_nbytes(case):
    fn, extra, _, _ = CASES[case]
    with pytest.raises(ProfileError) as info:
        fn(gpus=4, nbytes=7, workgroups=2, chunks=1, **extra)
    assert "nbytes 7 must be at least gpus * workgroups * chunks = 8" in str(info.value)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"gpus": 1}, "gpus must be an int >= 2"),
    ({"nbytes": 0}, "nbytes must be an int >= 1"),
    ({"workgroups": 0}, "workgroups must be an int >= 1"),
    ({"chunks": True}, "chunks must be an int >= 1"),
    ({"reduce_ns_per_byte": -1}, "reduce_ns_per_byte must be a finite number >= 0"),
    ({"mode": "busy"}, "mode 'busy'"),
    ({"algorithm": "tree"}, "algorithm must be 'ring' or 'direct'"),
])
def test_rejects_bad_parameters(kwargs, fragment):
    args = {"gpus": 4, "nbytes": 64, **kwargs}
    with pytest.raises(ProfileError) as info:
        reduce_scatter(**args)
    assert fragment in str(info.value)


def test_cli_writes_the_same_profile(tmp_path):
    # The installed package (as the tests import it), which finds its own compiled models.
    out = tmp_path / "c.yaml"
    subprocess.run([sys.executable, "-m", "eidola.generators", "all_gather", "--gpus", "3", "--nbytes", "96",
                    "--workgroups", "2", "--chunks", "2", "--algorithm", "direct", "--mode", "syncmon",
                    "-o", str(out)], check=True, cwd=tmp_path)
    assert load_profile(out) == all_gather(3, 96, workgroups=2, chunks=2, algorithm="direct", mode="syncmon")
    bad = subprocess.run([sys.executable, "-m", "eidola.generators", "ring_allreduce", "--nbytes", "3",
                          "-o", str(tmp_path / "x.yaml")], cwd=tmp_path, capture_output=True, text=True)
    assert bad.returncode == 2 and "nbytes 3 must be at least" in bad.stderr


# ---------------------------------------------------------------- ring timing: what a step costs

def _ring_on_ideal(P, C, L, M):
    """Kernel time of a syncmon ring all-reduce on the ideal fabric (latency L each way, memory
    latency M, zero occupancy), W=1, worked out by hand (all ranks move in lockstep).

    Rank r issues chunk c of step s at y(s, c); its writes are posted, and its signal, held until
    the chunk's acknowledgement is back (2L + M), then lands in the successor's flag L + M later:
    chunk (s, c) arrives D = 3L + 2M after it was issued. Before issuing (s, c) the rank waits for
    (s-1, c); a wait costs at least the arm of its monitor (a memory access, M) and ends when the
    flag lands. So y(s, c) = max(y(s, c-1) + M, y(s-1, c) + D), with y(s, -1) = y(s-1, C-1) and
    y(0, c) = 0. The last step's chunks are received as a step 2(P-1) that sends nothing; the
    kernel ends when that is done and the last signal is acknowledged (issued at
    y(2(P-1)-1, C-1) + 2L + M, acknowledged 2L + M later).
    """
    n, D = 2 * (P - 1), 3 * L + 2 * M
    y = [[0.0] * C]
    for _ in range(n):
        row, prev = [], y[-1][-1]
        for c in range(C):
            prev = max(prev + M, y[-1][c] + D)
            row.append(prev)
        y.append(row)
    return max(y[n][C - 1], y[n - 1][C - 1] + 2 * (2 * L + M))


@pytest.mark.parametrize("P", [2, 4, 8])
@pytest.mark.parametrize("C", [1, 2, 4, 8])
def test_ring_allreduce_time_on_the_ideal_fabric(write_platform, P, C):
    import eidola
    L, M = 500.0, 300.0
    plat = eidola.load_platform(write_platform(gpus=P, workgroups=1, latency="500ns", mem_latency="300ns",
                                               mem_bw="1000TB/s", max_outstanding=4096))
    res = eidola.simulate(plat, ring_allreduce(gpus=P, nbytes=P * C * 1024, chunks=C, mode="syncmon"))
    expected = _ring_on_ideal(P, C, L, M)
    assert res.kernel_time_ns == expected
    # In closed form while a step's chunks fit in one step's latency (C M <= D): every step costs
    # D, each extra chunk one wait (M), and the end one acknowledgement hop (L):
    # T = 2(P-1)(3L + 2M) + (C-1) M + L; C=1 is the unchunked ring, 2(P-1) D + L.
    if C * M <= 3 * L + 2 * M:
        assert expected == 2 * (P - 1) * (3 * L + 2 * M) + (C - 1) * M + L


def test_ring_chunks_pipeline_on_the_mi300x_node(repo):
    # The report's case: a 2 MiB ring all-reduce on 8 GPUs, one workgroup, the generator's defaults
    # (poll). Each GPU's link to its successor carries 2(P-1) blocks of S/P = 256 KiB in 256-byte
    # packets with 85-byte headers: n B = 14 x 1024 x 341 B / 64 GB/s = 76.38 us, a floor no
    # chunking can beat. Before overlapping releases every chunk paid a round trip with the link
    # idle, so 4 and 16 chunks were slower than 1; pipelined, more chunks must be faster here (a
    # 16 KiB chunk is 341 ns on the wire, still above a wait's flag read, 300 ns).
    import eidola
    path = repo / "platforms/mi300x-8gpu.yaml"
    S, P = 2 << 20, 8
    wire = 2 * (P - 1) * (S // P // 256) * 341 / 64e9 * 1e9
    t = {C: eidola.simulate(eidola.load_platform(path), ring_allreduce(gpus=P, nbytes=S, chunks=C)).kernel_time_ns
         for C in (1, 4, 16)}
    assert t[1] > t[4] > t[16] > wire


RING = """
eidola: 1
name: ring-timing
gpus: {count: 8, workgroups: 1, max_outstanding: 1024, max_payload: 256B, memory: {latency: 300ns, bandwidth: 5.3TB/s}}
fabric:
  model: packet
  topology: ring
  link: {bandwidth: 64GB/s, latency: 100ns, header: 16B}
  switch: {latency: 50ns, buffer: 64}
"""


@pytest.mark.parametrize("C", [1, 2, 4, 8, 16, 32])
def test_ring_step_cost_formula_on_a_packet_ring(write_platform, C):
    # docs/profiles.md, "What a collective step costs": with C chunks of wire time tau each, a
    # workgroup's cycle per chunk sigma = max(tau, M) (a wait reads its flag: at least the memory
    # latency M), and a step latency lambda,
    #   T = (n - 1) max(C sigma, tau + lambda) + C sigma + lambda + one acknowledgement hop.
    # Link 64 GB/s, latency 100 ns, 16-byte headers, routers 50 ns, memory 300 ns at 5.3 TB/s:
    # a 256-byte packet is 4.25 ns on the wire; lambda = the last packet's tail to the successor's
    # memory and its acknowledgement back (100 + 50 + 300 + 0.048 + 150.25 ns), then the signal's
    # flag (0.375 + 100 + 50 + 300 + 0.0015 ns) = 1050.7 ns.
    import eidola
    P, S, n = 8, 2 << 20, 14
    tau = S // (P * C) // 256 * 4.25
    sigma = max(tau, 300.0)
    ack = 100 + 0.25 + 50
    lam = (100 + 50 + 300 + 256 / 5.3e3 + ack) + (0.375 + 100 + 50 + 300 + 8 / 5.3e3)
    formula = (n - 1) * max(C * sigma, tau + lam) + C * sigma + lam + ack
    res = eidola.simulate(eidola.load_platform(write_platform(RING)), ring_allreduce(gpus=P, nbytes=S, chunks=C,
                                                                                    mode="syncmon"))
    # The formula is a lower bound: every chunk does cross the link and every wait does read its
    # flag. What it leaves out: a chunk's flag queues on the link behind data issued before its
    # release, a little more the more chunks are in flight.
    assert res.kernel_time_ns >= formula - 1
    if tau >= 300:  # the link or the step latency bounds the pipeline
        assert res.kernel_time_ns <= 1.005 * formula
    else:  # a wait per chunk bounds it
        assert res.kernel_time_ns <= 1.04 * formula
