"""Platforms built in Python: same results as YAML, round trips, one source for parameters,
validation that names component and socket, graphs, and the examples."""

import re
import shutil
import subprocess
import sys

import pytest

import eidola
from eidola import Platform, models
from eidola.platform import catalog


def _mi300x_example(repo):
    sys.path.insert(0, str(repo / "platforms" / "examples"))
    try:
        import mi300x_8gpu
        return mi300x_8gpu.build()
    finally:
        sys.path.remove(str(repo / "platforms" / "examples"))


def test_python_built_platform_matches_yaml_bit_for_bit(repo):
    built = _mi300x_example(repo)
    loaded = eidola.load_platform(repo / "platforms" / "mi300x-8gpu.yaml")
    prof = eidola.load_profile(repo / "profiles" / "gemv-allreduce-8gpu.yaml")
    a, b = eidola.simulate(built, prof), eidola.simulate(loaded, prof)
    for table in ("gpus", "workgroups", "links", "pairs"):
        assert getattr(a, table).tobytes() == getattr(b, table).tobytes(), table
    # Same components with the same effective parameters, same bindings.
    assert {n: c.resolved() for n, c in built.components.items()} == \
           {n: c.resolved() for n, c in loaded.components.items()}
    assert [(str(i), str(t)) for i, t in built.connections] == [(str(i), str(t)) for i, t in loaded.connections]


@pytest.mark.parametrize("name", ["gemv-allreduce-4gpu", "mi300x-8gpu", "custom-4gpu", "hierarchical-16gpu"])
def test_yaml_platform_yaml_round_trip(repo, tmp_path, name):
    first = eidola.load_platform(repo / "platforms" / f"{name}.yaml")
    first.to_yaml(tmp_path / "a.yaml")
    second = eidola.load_platform(tmp_path / "a.yaml")
    assert second.components == first.components
    assert second.connections == first.connections
    assert second.to_yaml() == first.to_yaml()


def _cpp_declared(repo, source, model):
    """Parameter names declared as Param members of a model's parameter struct in its C++ header."""
    text = (repo / "tlm_models" / "include" / "eidola" / source).read_text()
    block = text[text.index(f"struct {model}Params : ParamGroup"):]
    block = block[:block.index("\n};\n")]
    return re.findall(r'Param\s+\w+\{\s*[*\w]+,\s*"([\w.]+)"', block)


@pytest.mark.parametrize("model, source", [("EidolonGpu", "eidolon_gpu.h"), ("IdealFabric", "ideal_fabric.h"),
                                           ("PacketFabric", "packet_fabric.h")])
def test_describe_python_and_cpp_list_the_same_parameters(repo, cli, model, source):
    cpp = _cpp_declared(repo, source, model)
    library = [p.name for p in catalog.model(model).params]
    python = [p.name for p in getattr(models, model).params_spec.params]
    described = re.findall(r"^  ([\w.]+) +(?:time|frequency|bandwidth|size|int|float|bool|choice|ints|edges|buffer) ",
                           cli("describe", model).stdout, re.M)
    assert cpp == library == python == described
    # Defaults agree too: the class docstring and describe print the same default text.
    for p in catalog.model(model).params:
        assert f"default {p.default_text()}" in getattr(models, model).__doc__


def _ring(n=2, bind=False):
    p = Platform("t")
    gpus = [p.add(models.EidolonGpu(f"gpu{i}", workgroups=1)) for i in range(n)]
    fab = p.add(models.IdealFabric("fabric"))
    for i, g in enumerate(gpus if bind else []):
        p.connect(g.initiator, fab.targets[i])
        p.connect(fab.initiators[i], g.target)
    return p, gpus, fab


def test_unbound_socket_is_named():
    p, gpus, fab = _ring()
    p.connect(gpus[0].initiator, fab.targets[0])
    p.connect(fab.initiators[0], gpus[0].target)
    p.connect(gpus[1].initiator, fab.targets[1])
    with pytest.raises(eidola.ConfigError, match=r"socket gpu1\.target \(target, .*\) is not bound"):
        p.validate()


def test_socket_bound_twice_is_named():
    p, gpus, fab = _ring()
    p.connect(gpus[0].initiator, fab.targets[0])
    p.connect(gpus[0].initiator, fab.targets[1])
    with pytest.raises(eidola.ConfigError, match=r"socket gpu0\.initiator is bound twice"):
        p.validate()


def test_initiator_bound_to_initiator_is_named():
    p, gpus, fab = _ring()
    p.connect(gpus[0].initiator, fab.initiators[0])
    with pytest.raises(eidola.ConfigError, match=r"fabric\.initiators\[0\] is a initiator socket, expected a target"):
        p.validate()


def test_overlapping_windows_are_named():
    p, gpus, fab = _ring(bind=True)
    gpus[1].params["id"] = 0
    with pytest.raises(eidola.ConfigError, match=r"GPUs 'gpu0' and 'gpu1' both have id 0"):
        p.validate()


def test_window_outside_the_map_is_named():
    p, gpus, fab = _ring(bind=True)
    gpus[1].params["id"] = 7
    with pytest.raises(eidola.ConfigError, match=r"GPU 'gpu1' has id 7, outside the address map's 2 windows"):
        p.validate()


def test_fabric_ports_and_gpu_count_disagree():
    p = Platform("t")
    gpus = [p.add(models.EidolonGpu(f"gpu{i}", workgroups=1)) for i in range(2)]
    fab = p.add(models.IdealFabric("fabric", ports=3))
    for i, g in enumerate(gpus):
        p.connect(g.initiator, fab.targets[i])
        p.connect(fab.initiators[i], g.target)
    with pytest.raises(eidola.ConfigError, match=r"component 'fabric' \(IdealFabric\) has 3 ports but the platform "
                                                 r"has 2 GPUs"):
        p.validate()


def test_model_keywords_are_checked_on_construction():
    with pytest.raises(eidola.ConfigError, match=r"component 'g' \(EidolonGpu\): unknown parameter 'wrokgroups'"):
        models.EidolonGpu("g", wrokgroups=4)
    with pytest.raises(eidola.ConfigError, match=r"component 'g' \(EidolonGpu\) parameter 'memory.latency'"):
        models.EidolonGpu("g", memory={"latency": "300"})
    with pytest.raises(eidola.ConfigError, match=r"component 'f' \(IdealFabric\) parameter 'ports'.*out of range"):
        models.IdealFabric("f", ports=0)


def test_graph_has_every_component_and_binding(tmp_path):
    p, gpus, fab = _ring(bind=True)
    dot = p.graph(tmp_path / "ring.dot").read_text()
    for name in ("gpu0", "gpu1", "fabric"):
        assert f'"{name}" [label=' in dot
    assert dot.count(" -> ") == 2 * len(p.connections)   # one edge, one label arrow per binding
    assert '"gpu1" -> "fabric" [label="initiator -> targets[1]"]' in dot
    if shutil.which("dot"):  # scripts/setup.sh installs Graphviz
        for ext in ("svg", "png"):
            assert (tmp_path / f"ring.{ext}").stat().st_size > 0
        assert "gpu1" in (tmp_path / "ring.svg").read_text()


def _yaml_mi300x_us(repo):
    """The kernel time the YAML form of the MI300X platform gives: the Python-built one must print it."""
    res = eidola.simulate(eidola.load_platform(repo / "platforms" / "mi300x-8gpu.yaml"))
    return f"kernel time {res.kernel_time_ns / 1000:.3f} us"


@pytest.mark.parametrize("script, needle", [("mi300x_8gpu.py", _yaml_mi300x_us),
                                            ("hierarchical_16gpu.py", "all-to-all in"),
                                            ("sweep_gpu_counts.py", " 16 GPUs: kernel")])
def test_examples_run(repo, script, needle):
    out = subprocess.run([sys.executable, repo / "platforms" / "examples" / script], cwd=repo, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert (needle(repo) if callable(needle) else needle) in out.stdout
