"""Vendor IP through YAML alone: prelude, defines, setup statements, pointer sockets, and the
compiled-plugin cache (issue 18)."""

import shutil

import pytest
import yaml

import eidola
from eidola.generators import gemv_allreduce
from eidola.platform.plugin import parse_plugin
from eidola.run.plugin_build import Window, build_plugin, generate_source


def _outcome(res):
    return res.flags, res.gpus["writes"].tolist(), res.gpus["atomics"].tolist(), res.gpus["bytes_sent"].tolist()


def test_vendor_crossbar_runs_through_yaml_alone_behind_the_checker(repo, simple_bus_lib):
    # acme::Crossbar and vendor::LtBus are written independently but share one timing contract:
    # b_transport adds 500 ns there and 500 ns back. So behind the same AT-to-LT adapters they
    # must give the same kernel time, and the same flags and counts as the ideal fabric.
    prof = gemv_allreduce(gpus=4, workgroups=4)
    crossbar = eidola.simulate(eidola.load_platform(repo / "examples/vendor_ip/crossbar-4gpu.yaml"), prof)
    lt_bus = eidola.simulate(eidola.load_platform(repo / "examples/third_party_ip/simple-bus-lt.yaml"), prof)
    ideal = eidola.simulate(eidola.load_platform(repo / "platforms/gemv-allreduce-4gpu.yaml"), prof)
    assert crossbar.kernel_time_ns == lt_bus.kernel_time_ns
    assert _outcome(crossbar) == _outcome(ideal)
    assert crossbar.meta["inserted"].count("adapter0 (AtToLtAdapter)") == 1     # visible in the summary
    assert sum("ProtocolChecker" in x for x in crossbar.meta["inserted"]) == 12  # 8 bindings, 4 split by adapters


def test_setup_each_placeholders_are_integer_literals_and_other_braces_pass_through(repo):
    raw = yaml.safe_load((repo / "examples/vendor_ip/crossbar-4gpu.yaml").read_text())["fabric"]["plugin"]
    raw["setup_each"] = ["{ int unused{3}; (void)unused; {self}.memmap({i}, {base}, {last}); }"]
    raw["setup"] = ["{self}.memmap(99, {size}, 0)"]  # {size} means nothing in setup: it stays as written
    spec = parse_plugin(raw, "plugin", repo / "examples/vendor_ip", "fabric")
    tib = 2 ** 40
    source = generate_source(spec, tuple(Window(i, i * tib, tib) for i in range(4)))
    assert f"self.memmap(2, {2 * tib}ULL, {3 * tib - 1}ULL);" in source
    assert "{ int unused{3}; (void)unused;" in source
    assert "self.memmap(99, {size}, 0);" in source


def _crossbar_platform(tmp_path, repo, **changes):
    doc = yaml.safe_load((repo / "examples/vendor_ip/crossbar-4gpu.yaml").read_text())
    doc["fabric"]["plugin"]["headers"] = [str(tmp_path / "crossbar.h")]
    doc["fabric"]["plugin"].update(changes)
    doc["profile"] = str(repo / "profiles/gemv-allreduce-4gpu.yaml")
    shutil.copy(repo / "examples/vendor_ip/include/acme/crossbar.h", tmp_path / "crossbar.h")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_cache_is_reused_until_a_header_changes(tmp_path, repo, monkeypatch):
    monkeypatch.setenv("EIDOLA_CACHE_DIR", str(tmp_path / "cache"))
    plat = eidola.load_platform(_crossbar_platform(tmp_path, repo))
    spec = plat.components["fabric"].spec.plugin
    windows = tuple(Window(i, i * 2 ** 40, 2 ** 40) for i in range(4))
    first = build_plugin(spec, windows, "plugin 'fabric'")
    again = build_plugin(spec, windows, "plugin 'fabric'")
    assert not first.cached and again.cached and again.library == first.library
    header = tmp_path / "crossbar.h"
    header.write_text(header.read_text() + "\n// a vendor's patch\n")
    assert not build_plugin(spec, windows, "plugin 'fabric'").cached


@pytest.mark.parametrize("change, needle", [
    ({"setup_each": ["{self}.memmap({i}, {base})"]}, "setup_each[0] `{self}.memmap({i}, {base});`"),
    ({"prelude": ["#include <map>"]}, "crossbar.h:"),           # the socket headers are missing now
    ({"targets": "t_socket[{i}]"}, "socket pattern targets: 't_socket[{i}]'"),
    ({"defines": {"ACME_MAX_PORTS": 2}}, "port count out of range"),
])
def test_declaration_errors_name_the_statement(tmp_path, repo, cli, change, needle):
    r = cli("validate" if "defines" not in change else "run", _crossbar_platform(tmp_path, repo, **change))
    assert r.returncode == (2 if "defines" not in change else 3), r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
