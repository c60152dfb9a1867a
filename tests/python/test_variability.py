"""Tests of the variability section of profiles (skew, jitter, delays) and of its sampling."""

import math

import numpy as np
import pytest
import yaml

from eidola.errors import ProfileError
from eidola.profile import Profile, ProfileBuilder, load_profile
from eidola.workload import profile_yaml as profile_module
from eidola.workload.variability import NO_VARIABILITY, compute_scales, hold_ns


def builder(gpus=2, workgroups=2, computes=2):
    """A builder whose every program is: compute, signal, (compute, wait)... with `computes` computes."""
    b = ProfileBuilder(gpus=gpus, workgroups=workgroups, name="var")
    b.flag("f")
    for g in range(gpus):
        for w in range(workgroups):
            p = b.program(gpu=g, wg=w)
            for i in range(computes):
                p.compute(ns=100 + i).signal(dst=(g + 1) % gpus, flag="f")
    return b


def many_phases(n, dist, **params):
    """A one-program profile with `n` compute phases, jittered by `dist`; returns its factors."""
    b = ProfileBuilder(gpus=1, workgroups=1, name="many")
    p = b.program(gpu=0, wg=0)
    for _ in range(n):
        p.compute(ns=10)
    b.jitter(dist=dist, **params)
    return compute_scales(b.build(), seed=7)[0, 0]


def full_profile():
    """A 2x2 profile with normal skew, uniform jitter and two delays."""
    b = builder()
    b.skew(dist="normal", mean=1.0, std=0.05)
    b.jitter(dist="uniform", low=0.9, high=1.1)
    b.delay(gpu=0, ns=5000).delay(gpu=1, wg=1, ns=100.5)
    return b.build()


# ---------------------------------------------------------------- file format

@pytest.mark.parametrize("skew, jitter", [
    ({"dist": "normal", "mean": 1.0, "std": 0.05}, {"dist": "uniform", "low": 0.9, "high": 1.1}),
    ({"dist": "lognormal", "mu": 0.0, "sigma": 0.1}, {"dist": "empirical", "samples": [0.5, 1, 2.25]}),
])
def test_round_trip(tmp_path, skew, jitter):
    b = builder()
    b.skew(**skew).jitter(**jitter).delay(gpu=0, ns=5000).delay(gpu=1, wg=1, ns=100.5)
    prof = b.build()
    assert prof.variability and prof.variability.skew.dist == skew["dist"]
    assert prof.variability.jitter.to_dict() == jitter
    path = tmp_path / "v.yaml"
    prof.save(path)
    text = path.read_bytes()
    assert profile_module._fast_load(text) is not None  # the file stays in the fast reader's layout
    assert load_profile(path) == prof
    assert Profile.from_dict(yaml.safe_load(text), "v.yaml") == prof  # the plain YAML path
    assert Profile.from_dict(prof.to_dict()) == prof
    assert hash(load_profile(path)) == hash(prof)


def test_yaml_form_of_the_docs(tmp_path):
    path = tmp_path / "doc.yaml"
    path.write_text(
        "eidola_profile: 1\nname: doc\ngpus: 2\nworkgroups: 4\nflags: [f]\nbuffers: {}\n"
        "variability:\n"
        "  skew: {dist: normal, mean: 1.0, std: 0.05}\n"
        "  jitter: {dist: uniform, low: 0.9, high: 1.1}\n"
        "  delays: [{gpu: 0, ns: 5000}, {gpu: 1, wg: 3, ns: 100}]\n"
        "programs:\n- gpu: 0\n  wg: 0\n  ops:\n  - [compute, {ns: 5}]\n")
    v = load_profile(path).variability
    assert v.skew["mean"] == 1.0 and v.skew["std"] == 0.05
    assert v.jitter["low"] == 0.9 and v.jitter["high"] == 1.1
    assert [(d.gpu, d.wg, d.ns) for d in v.delays] == [(0, None, 5000), (1, 3, 100)]


def test_absent_section_means_none(tmp_path):
    prof = builder().build()
    assert prof.variability == NO_VARIABILITY and not prof.variability
    path = tmp_path / "plain.yaml"
    prof.save(path)
    assert "variability" not in path.read_text() and "variability" not in prof.to_dict()
    assert load_profile(path) == prof
    d = prof.to_dict()
    d["variability"] = None
    assert Profile.from_dict(d) == prof


# ---------------------------------------------------------------- sampling

def test_same_seed_same_factors_different_seed_different():
    prof = full_profile()
    a, b, c = compute_scales(prof, 1), compute_scales(prof, 1), compute_scales(prof, 2)
    assert a.keys() == b.keys() == c.keys()
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)


def test_draw_order_is_skew_per_gpu_then_jitter_per_compute_op():
    # The documented order: one vector of `gpus` skew draws, then one vector with a jitter draw per
    # compute op (programs in order, ops in order); so each factor is skew[gpu] * jitter[k].
    prof = full_profile()
    rng = np.random.Generator(np.random.PCG64(11))
    skew = rng.normal(1.0, 0.05, prof.gpus)
    n_compute = sum(op.kind == "compute" for _, ops in prof.programs for op in ops)
    jitter = iter(rng.uniform(0.9, 1.1, n_compute))
    scales = compute_scales(prof, 11)
    assert list(scales) == [key for key, _ in prof.programs]
    for (g, w), ops in prof.programs:
        expected = [skew[g] * next(jitter) if op.kind == "compute" else 1.0 for op in ops]
        assert scales[g, w].tolist() == expected


def test_no_variability_gives_ones_for_every_program():
    prof = builder().build()
    scales = compute_scales(prof, 3)
    assert list(scales) == [key for key, _ in prof.programs]
    for key, ops in prof.programs:
        assert scales[key].dtype == float and scales[key].tolist() == [1.0] * len(ops)
    assert hold_ns(prof) == {}


def test_skew_is_constant_per_gpu_and_non_compute_ops_get_one():
    b = builder(gpus=4, workgroups=3, computes=3)
    b.skew(dist="normal", mean=1.0, std=0.05)
    prof = b.build()
    scales = compute_scales(prof, 5)
    per_gpu = {}
    for (g, w), ops in prof.programs:
        for op, s in zip(ops, scales[g, w]):
            if op.kind == "compute":
                per_gpu.setdefault(g, set()).add(float(s))
            else:
                assert s == 1.0
    assert all(len(values) == 1 for values in per_gpu.values())
    assert len({v for values in per_gpu.values() for v in values}) == 4  # a continuous draw never repeats


def test_non_compute_ops_get_one_with_jitter_too():
    b = builder()
    b.skew(dist="uniform", low=2, high=3).jitter(dist="uniform", low=2, high=3)
    prof = b.build()
    for (g, w), ops in prof.programs:
        s = compute_scales(prof, 9)[g, w]
        assert [x == 1.0 for x in s] == [op.kind != "compute" for op in ops]


def test_uniform_factors_within_bounds():
    n, low, high = 5000, 0.9, 1.1
    f = many_phases(n, "uniform", low=low, high=high)
    assert f.min() >= low and f.max() <= high
    # U(a, b): mean (a+b)/2 and std (b-a)/sqrt(12) = 0.0577; standard error of the mean std/sqrt(n) =
    # 8.2e-4; of the sample variance, sqrt((mu4 - s^4)/n) with mu4 = (b-a)^4/80: 4.3e-5. Allow 4 of each.
    std = (high - low) / math.sqrt(12)
    assert abs(f.mean() - (low + high) / 2) <= 4 * std / math.sqrt(n)
    assert abs(f.var(ddof=1) - std**2) <= 4 * math.sqrt(((high - low) ** 4 / 80 - std**4) / n)


def test_empirical_draws_samples_uniformly():
    samples = [0.5, 1.0, 2.25]
    f = many_phases(10_000, "empirical", samples=samples)
    assert set(f.tolist()) <= set(samples)
    # Each count is Binomial(n=10000, p=1/3): mean n p = 3333.3, sigma = sqrt(n p (1-p)) = 47.14.
    n, p = 10_000, 1 / 3
    sigma = math.sqrt(n * p * (1 - p))
    for s in samples:
        assert abs(np.count_nonzero(f == s) - n * p) <= 3 * sigma


def test_normal_mean_and_std():
    n, mean, std = 20_000, 1.0, 0.05
    f = many_phases(n, "normal", mean=mean, std=std)
    # Standard errors: of the mean std/sqrt(n) = 3.5e-4, of the sample std std/sqrt(2(n-1)) = 2.5e-4.
    # (Clipping at 0 is 20 std away and never happens here.) Allow 4 standard errors.
    assert abs(f.mean() - mean) <= 4 * std / math.sqrt(n)
    assert abs(f.std(ddof=1) - std) <= 4 * std / math.sqrt(2 * (n - 1))


def test_lognormal_is_exp_of_normal():
    # exp(N(mu, sigma)): its log has mean mu and std sigma; standard errors as for the normal.
    n, mu, sigma = 20_000, 0.2, 0.1
    logs = np.log(many_phases(n, "lognormal", mu=mu, sigma=sigma))
    assert abs(logs.mean() - mu) <= 4 * sigma / math.sqrt(n)
    assert abs(logs.std(ddof=1) - sigma) <= 4 * sigma / math.sqrt(2 * (n - 1))


def test_factors_are_clipped_at_zero():
    f = many_phases(1000, "normal", mean=0.0, std=1.0)
    assert f.min() == 0.0
    # Half the draws of N(0, 1) are negative: count ~ Binomial(1000, 1/2), sigma = 15.8.
    assert abs(np.count_nonzero(f == 0.0) - 500) <= 4 * 15.8


def test_hold_ns_wg_delay_overrides_gpu_delay():
    b = builder(gpus=3, workgroups=2)
    b.delay(gpu=0, ns=5000).delay(gpu=0, wg=1, ns=7).delay(gpu=2, wg=0, ns=0)
    assert hold_ns(b.build()) == {(0, 0): 5000.0, (0, 1): 7.0, (2, 0): 0.0}


# ---------------------------------------------------------------- validation

@pytest.mark.parametrize("call, needles", [
    (lambda b: b.skew(dist="gauss", mean=1, std=1), ["variability.skew.dist", "'gauss'", "normal, lognormal"]),
    (lambda b: b.skew(dist="normal", mean=1, stdev=1), ["variability.skew", "'stdev'", "expected mean, std"]),
    (lambda b: b.jitter(dist="lognormal", mu=0), ["variability.jitter", "missing parameter 'sigma'"]),
    (lambda b: b.jitter(dist="normal", mean=float("nan"), std=1), ["variability.jitter.mean", "finite"]),
    (lambda b: b.jitter(dist="normal", mean=1, std="1"), ["variability.jitter.std", "number"]),
    (lambda b: b.skew(dist="normal", mean=1, std=-0.1), ["variability.skew.std", ">= 0"]),
    (lambda b: b.skew(dist="lognormal", mu=0, sigma=-1), ["variability.skew.sigma", ">= 0"]),
    (lambda b: b.jitter(dist="uniform", low=1.1, high=0.9), ["variability.jitter", "low 1.1 must be <= high 0.9"]),
    (lambda b: b.jitter(dist="empirical", samples=[]), ["variability.jitter.samples", "non-empty"]),
    (lambda b: b.jitter(dist="empirical", samples=[1, -2]), ["variability.jitter.samples[1]", ">= 0"]),
    (lambda b: b.delay(gpu=2, ns=1), ["variability.delays[0].gpu", "0 <= gpu < 2"]),
    (lambda b: b.delay(gpu=0, wg=5, ns=1), ["variability.delays[0].wg", "0 <= wg < 2"]),
    (lambda b: b.delay(gpu=0, ns=-1), ["variability.delays[0].ns", ">= 0"]),
    (lambda b: b.delay(gpu=True, ns=1), ["variability.delays[0].gpu", "int"]),
    (lambda b: b.skew(dist="normal", mean=1, std=0).skew(dist="normal", mean=1, std=0),
     ["variability.skew", "already set"]),
    (lambda b: b.delay(gpu=1, wg=0, ns=1).delay(gpu=1, ns=2).delay(gpu=1, wg=0, ns=3),
     ["variability.delays[2]", "second delay for gpu 1 wg 0", "delays[0]"]),
])
def test_builder_errors_name_the_key(call, needles):
    with pytest.raises(ProfileError) as e:
        call(builder())
    for needle in needles:
        assert needle in str(e.value), (needle, str(e.value))


@pytest.mark.parametrize("section, needles", [
    ("[1, 2]", ["variability: expected a mapping"]),
    ("{skw: {dist: normal, mean: 1, std: 1}}", ["unknown key 'skw'", "skew, jitter, delays"]),
    ("{jitter: {dist: uniform, low: 1, hihg: 2}}", ["variability.jitter", "'hihg'", "expected low, high"]),
    ("{jitter: {mean: 1}}", ["variability.jitter", "expected a mapping {dist"]),
    ("{skew: {dist: normal, mean: .inf, std: 1}}", ["variability.skew.mean", "finite"]),
    ("{delays: [{gpu: 0}]}", ["variability.delays[0]", "missing key 'ns'"]),
    ("{delays: [{gpu: 0, ns: 1, at: 2}]}", ["variability.delays[0]", "unknown key 'at'"]),
    ("{delays: {gpu: 0, ns: 1}}", ["variability.delays", "expected a list"]),
    ("{delays: [{gpu: 0, ns: 1}, {gpu: 0, ns: 2}]}", ["variability.delays[1]", "second delay"]),
])
def test_file_errors_name_the_file_and_key(tmp_path, section, needles):
    path = tmp_path / "bad.yaml"
    path.write_text("eidola_profile: 1\nname: bad\ngpus: 2\nworkgroups: 2\n"
                    f"variability: {section}\nprograms: []\n")
    with pytest.raises(ProfileError) as e:
        load_profile(path)
    assert str(e.value).startswith(f"{path}: variability")
    for needle in needles:
        assert needle in str(e.value), (needle, str(e.value))


def test_start_skews_hold_each_gpu_back_up_to_the_bound_the_least_not_at_all():
    from eidola.generators import ring_allreduce
    from eidola.workload.variability import start_skews

    profile = ring_allreduce(8, 1 << 20, workgroups=2)
    assert start_skews(profile, 0) is profile  # seed 0: in step
    one, again = start_skews(profile, 3, 8.0), start_skews(profile, 3, 8.0)
    held = {d.gpu: d.ns for d in one.variability.delays}
    assert one.variability == again.variability  # deterministic for a seed
    assert len(held) == 7 and all(0 < ns <= 8.0 for ns in held.values())  # 8 GPUs, the least held 0 and left out
    assert all(d.wg is None for d in one.variability.delays)  # a GPU's every workgroup
    assert start_skews(profile, 4).variability != one.variability
