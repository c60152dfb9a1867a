"""Synthetic traffic (eidola.generators.synthetic) against numbers worked out by hand.

The platform is a 4 x 4 mesh set up as a network-on-chip study would be: 16 GB/s links (16 B
flits, one flit per ns), 1 ns wires, 3 ns routers, cut-through, FIFO injection and link-limited
ejection. A write of n = 48 payload bytes with its 16-byte header is 64 B: 4 flits, L = 4 ns on a
link; its acknowledgement is the header alone, one flit (1 ns).

Zero-load one-way latency over H hops (docs/router.md, cut-through): serialisation once, each hop
its wire and router, each hop after the first its head flit, L + H (lat + sw) + (H - 1) f; with
link-limited ejection the channel into the GPU is one more flit-wide channel the head crosses
(+ f). So 4 + 4 H + H = 4 + 5 H ns.

Uniform traffic on a k x k mesh picks any other of the N = k^2 GPUs: the mean of |dx| over the k^2
ordered column pairs is (k^2 - 1) / (3 k) = 1.25 for k = 4, the same in y, so over all N^2 pairs
the mean hop count is 2.5, and without the N zero-hop pairs it is 2.5 N / (N - 1) = 8/3. The mean
zero-load latency is then 4 + 5 x 8/3 = 17.33 ns.

Saturation (dimension-order routing, x first): the x channel crossing the middle of a row carries
every packet from the k/2 GPUs left of it to the k^2 / 2 GPUs in the right-hand columns, a fraction
(k^2 / 2) / (N - 1) of each one's traffic: lambda (k/2)(k^2/2)/(N-1) = 16/15 lambda for k = 4, the
bisection's load per channel. Each channel direction also carries as many acknowledgements (those
of the writes going the other way), so it is busy 16/15 lambda (L + 1 ns) = 16/15 x 5 lambda ns per
ns. The bisection bound is therefore lambda <= 15/80 = 0.1875 packets per GPU per ns (the GPU's own
port, lambda x 5 ns, allows 0.2).
"""

import numpy as np
import pytest

import eidola
from eidola.cli import main
from eidola.generators import synthetic
from eidola.profile import ProfileBuilder
from eidola.workload.traffic import destinations

K, N = 4, 16
PACKET = 48                    # payload bytes: 64 B = 4 flits with the header
LAT, SW, FLIT, SER = 1.0, 3.0, 1.0, 4.0
BISECTION_BOUND = 15 / 80      # packets per GPU per ns (see the module doc)


def zero_load_ns(hops):
    return SER + hops * (LAT + SW) + (hops - 1) * FLIT + FLIT  # the last FLIT: the ejection channel


def hops(src, dst):
    return abs(src % K - dst % K) + abs(src // K - dst // K)


@pytest.fixture
def mesh(write_platform):
    return eidola.load_platform(write_platform(f"""
        eidola: 1
        name: noc-mesh
        gpus: {{count: {N}, workgroups: 2, max_outstanding: 100000, max_payload: 256B,
               memory: {{latency: 10ns, bandwidth: 1000TB/s}}}}
        fabric:
          model: packet
          topology: mesh2d
          dims: [{K}, {K}]
          link: {{bandwidth: 16GB/s, latency: 1ns, header: 16B}}
          switch: {{latency: 3ns, buffer: 8, injection: fifo, ejection: link}}
        """))


def test_low_load_latency_is_the_zero_load_latency_of_the_hop_distribution(mesh):
    # At 0.005 packets per GPU per ns the links are 2% busy: queueing adds next to nothing. The
    # mean of this run's own packets (by the pairs they took) must match within 1%, and the
    # pattern's mean, 4 + 5 x 8/3 = 17.33 ns, within sampling noise (about 4,000 packets, hop count
    # standard deviation 1.2: 0.6% of the mean, so 3%).
    res = eidola.simulate(mesh, synthetic(gpus=N, rate=0.005, packet=PACKET, duration="50us", warmup=0))
    t = res.traffic
    pairs = res.pairs
    sample = sum(int(p["packets"]) * zero_load_ns(hops(int(p["src"]), int(p["dst"]))) for p in pairs)
    assert t["measured_packets"] == pairs["packets"].sum()
    assert t["latency_mean_ns"] == pytest.approx(sample / pairs["packets"].sum(), rel=0.01)
    assert t["latency_mean_ns"] == pytest.approx(zero_load_ns(8 / 3), rel=0.03)
    # The farthest pair is 6 hops apart; the slowest packet took at least that, and at this load waited
    # behind at most a couple of others.
    assert zero_load_ns(6) <= t["latency_max_ns"] <= zero_load_ns(6) + 2 * SER
    # The round trip adds the memory (10 ns, 48 B at 1000 TB/s) and the 1-flit acknowledgement's way back.
    assert t["round_trip_mean_ns"] > t["latency_mean_ns"] + 10


def test_accepted_equals_offered_below_saturation_and_saturates_below_the_bisection_bound(mesh):
    # Offered load is Bernoulli(rate x 1 ns) per cycle: about 16 x 20,000 x 0.05 = 16,000 packets,
    # so within 3% of the rate.
    low = eidola.simulate(mesh, synthetic(gpus=N, rate=0.05, packet=PACKET, duration="20us", warmup="2us")).traffic
    assert low["offered"] == pytest.approx(0.05, rel=0.03)
    assert low["accepted"] == pytest.approx(low["offered"], rel=0.02)
    # Far past saturation the accepted load stays under the bisection bound, and (one virtual
    # channel, FIFO ports) well above half of it.
    high = eidola.simulate(mesh, synthetic(gpus=N, rate=0.4, packet=PACKET, duration="4us", warmup="1us")).traffic
    assert high["offered"] == pytest.approx(0.4, rel=0.05)
    assert 0.5 * BISECTION_BOUND < high["accepted"] < BISECTION_BOUND
    assert high["latency_mean_ns"] > 5 * low["latency_mean_ns"]  # source queues grow past saturation


def test_same_seed_same_traffic_and_another_seed_differs(mesh):
    def run(seed):
        return eidola.simulate(mesh, synthetic(gpus=N, rate=0.05, packet=PACKET, duration="5us", seed=seed))

    a, b, c = run(7), run(7), run(8)
    assert a.traffic == b.traffic
    assert np.array_equal(a.traffic_gpus, b.traffic_gpus)
    assert not np.array_equal(a.traffic_gpus["created"], c.traffic_gpus["created"])


def test_hotspot_concentrates_deliveries_on_the_hotspot(mesh):
    res = eidola.simulate(mesh, synthetic(gpus=N, pattern="hotspot", hotspots=[5], rate=0.01, packet=PACKET,
                                          duration="5us"))
    g = res.traffic_gpus
    assert g["injecting"][5] == 0 and g["created"][5] == 0          # the hotspot has nowhere else to send
    assert g["received"][5] == g["created"].sum() > 0               # every packet went to it
    assert g["received"][np.arange(N) != 5].sum() == 0
    assert res.traffic["sources"] == N - 1


def test_permutation_traffic_only_uses_its_pairs(mesh):
    # Transpose on 4 x 4: (x, y) -> (y, x); the diagonal sends nothing.
    res = eidola.simulate(mesh, synthetic(gpus=N, pattern="transpose", rate=0.02, packet=PACKET, duration="5us"))
    used = {(int(p["src"]), int(p["dst"])) for p in res.pairs if p["packets"] > 0}
    assert used == {(x + K * y, y + K * x) for x in range(K) for y in range(K) if x != y}
    assert res.traffic["sources"] == N - K


@pytest.mark.parametrize("pattern, src, dst", [
    ("transpose", 1, 4),        # (1, 0) -> (0, 1)
    ("transpose", 6, 9),        # (2, 1) -> (1, 2)
    ("bit_complement", 1, 14),  # 0001 -> 1110
    ("bit_reverse", 1, 8),      # 0001 -> 1000
    ("bit_reverse", 6, 6),      # 0110 is a palindrome: sends nothing
    ("shuffle", 9, 3),          # 1001 rotated left -> 0011
    ("tornado", 0, 5),          # k = 4: x + 1, y + 1
    ("tornado", 15, 0),         # (3, 3) -> (0, 0)
    ("neighbor", 3, 4),         # (3, 0) -> (0, 1)
])
def test_pattern_destinations(pattern, src, dst):
    dests = destinations(synthetic(gpus=N, pattern=pattern, rate=0.01).traffic)
    assert dests is not None
    assert dests[src] == ([] if src == dst else [dst])


def test_tornado_on_a_ring_of_eight_goes_three_ahead():
    dests = destinations(synthetic(gpus=8, pattern="tornado", rate=0.01, dims=[8]).traffic)
    assert dests == [[(g + 3) % 8] for g in range(8)]


def test_traffic_mixes_with_profile_programs_and_round_trips_through_a_file(mesh, tmp_path):
    b = ProfileBuilder(gpus=N, workgroups=1, name="mixed")
    b.flag("done")
    b.buffer("data", nbytes=4096)
    p = b.program(gpu=0, wg=0)
    p.write(dst=15, buffer="data", offset=0, nbytes=4096)
    p.signal(dst=15, flag="done", op="add", value=1)
    b.program(gpu=15, wg=0).wait(flag="done", cond=">=", value=1)
    prof = synthetic(gpus=N, rate=0.02, packet=PACKET, duration="3us", profile=b.build())
    prof.save(tmp_path / "mixed.yaml")
    assert eidola.load_profile(tmp_path / "mixed.yaml") == prof
    res = eidola.simulate(mesh, prof)
    assert res.flags[(15, "done")] == 1
    assert res.traffic["accepted"] == pytest.approx(res.traffic["offered"], rel=0.1)
    # The traffic's writes land past the profile's data: they never touch a flag.
    assert res.gpus["writes"].sum() >= res.traffic_gpus["created"].sum()


@pytest.mark.parametrize("kwargs, names", [
    ({"rate": 0}, "rate"),
    ({"rate": 2.0}, "rate"),
    ({"pattern": "zigzag"}, "pattern"),
    ({"pattern": "hotspot"}, "hotspots"),
    ({"pattern": "hotspot", "hotspots": [16]}, "hotspots"),
    ({"hotspots": [1]}, "hotspots"),
    ({"duration": "10"}, "duration"),
    ({"warmup": -1}, "warmup"),
    ({"packet": 0}, "packet"),
    ({"dims": [3, 3]}, "dims"),
    ({"gpus": 12, "pattern": "bit_reverse"}, "bit_reverse"),
    ({"gpus": 8, "pattern": "transpose"}, "transpose"),
])
def test_bad_arguments_name_the_parameter(kwargs, names):
    args = {"gpus": N, "rate": 0.01, **kwargs}
    with pytest.raises(eidola.ProfileError, match=names) as err:
        synthetic(**args)
    assert err.value.exit_status == 2


def test_a_packet_larger_than_max_payload_names_packet(mesh):
    with pytest.raises(eidola.ConfigError, match=r"packet = 512 bytes exceeds .*max_payload"):
        eidola.simulate(mesh, synthetic(gpus=N, rate=0.01, packet=512, duration="1us"))


def test_netsweep_prints_the_table_and_draws_both_figures(mesh, tmp_path, capsys):
    status = main(["netsweep", str(mesh.source), "--rates", "0.01,0.02", "--packet", "48B", "--duration", "2us",
                   "--warmup", "0us", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 0
    assert len([line for line in out.splitlines() if line.strip().startswith(("0.01 ", "0.02 "))]) == 2
    for stem in ("latency-vs-offered", "accepted-vs-offered"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 0 and (tmp_path / f"{stem}.svg").stat().st_size > 0


@pytest.mark.parametrize("args, names", [
    (["--rates", "0.2:0.1:0.01"], "--rates"),
    (["--rates", "fast"], "--rates"),
    (["--pattern", "zigzag"], "--pattern"),
    (["--duration", "5"], "duration"),
])
def test_netsweep_bad_input_exits_2_naming_it(mesh, tmp_path, capsys, args, names):
    assert main(["netsweep", str(mesh.source), "--out", str(tmp_path), *args]) == 2
    assert names in capsys.readouterr().err
