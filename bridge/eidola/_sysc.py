"""All cppyy and SystemC glue: the only module that touches C++ objects.

`load()` brings cppyy and the compiled models into the process once (the parent does it before
forking, so every child starts with them loaded and the entry points' wrappers generated).
`elaborate_and_run()` builds one platform through `eidola::Simulation` and runs it; it must be
called at most once per process, because a SystemC kernel elaborates once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np

from ._native import native_library
from .errors import ConfigError

__all__ = ["load", "elaborate_and_run"]


@functools.lru_cache(maxsize=None)
def load():
    """Loads cppyy, the models library and the Simulation header; returns the `eidola` C++ namespace."""
    lib = native_library()  # loads the sc_main shim first, so libsystemc resolves
    import cppyy

    cppyy.add_include_path(str(lib.include_dir))
    cppyy.include("eidola/simulation.h")  # free of SystemC headers: nothing else is parsed
    cppyy.load_library(str(lib.library))
    for extra in lib.extra:  # $EIDOLA_MODEL_LIBS: already loaded by ctypes; made known to cppyy alike
        cppyy.load_library(str(extra))
    ns = cppyy.gbl.eidola
    _warm(ns)
    return ns


def _warm(ns) -> None:
    # Generating the wrappers here, before fork(), spares every child simulation the JIT cost.
    # Nothing below creates a SystemC object, so the kernel stays untouched in the parent.
    params = ns.ParamSet()
    params.set("x", 1.0)
    params.set_choice("y", "z")
    sim = ns.Simulation("warm-up")
    sim.set_address_map(0, 1, 0)
    sim.set_flags(["f"])
    sim.set_tracing(False)
    sim.load_programs(0, 0, 0, 0)
    table = sim.table("gpus")
    table.rows()
    list(table.columns)
    table.copy_to(0)
    sim.events()
    sim.end_ps()
    sim.failure()
    sim.failure_kind()


def _sc_cplusplus() -> str:
    """The C++ standard the loaded libsystemc was built for, read from its exported API-version symbol.

    Why: SystemC checks that its headers and library agree on SC_CPLUSPLUS; Cling defaults to a newer
    standard than Debian's build, so the value must be set before cppyy includes <systemc>.
    """
    maps = Path("/proc/self/maps").read_text()
    paths = sorted({line.split()[-1] for line in maps.splitlines() if "libsystemc" in line and "/" in line})
    for path in paths:
        found = re.search(rb"sc_api_version_\d+_\d+_\d+_cxx(\d+)L", Path(path).read_bytes())
        if found:
            return found.group(1).decode() + "L"
    raise ConfigError("cannot find libsystemc's API version symbol to set SC_CPLUSPLUS for third-party headers")


@functools.lru_cache(maxsize=None)
def _load_systemc_headers():
    """Parses <systemc> and <tlm> into cppyy (about a second): needed only by plugins."""
    import cppyy

    load()
    cppyy.cppdef(f"#ifndef SC_CPLUSPLUS\n#define SC_CPLUSPLUS {_sc_cplusplus()}\n#endif")
    cppyy.include("systemc")
    cppyy.include("tlm")
    return cppyy


@contextlib.contextmanager
def _diagnostics():
    """Collects what the C++ compiler prints on stderr during the block (cppyy reports there)."""
    captured = {"text": ""}
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured["text"] = tmp.read().decode(errors="replace")


def _condensed(*texts) -> str:
    """The first compiler error line of the diagnostics, else the first line of the message."""
    lines = [line.strip() for t in texts for line in str(t).splitlines() if line.strip()]
    for line in lines:
        if "error:" in line:
            return line[line.index("error:"):] if "fatal error:" not in line else line[line.index("fatal error:"):]
    return lines[0] if lines else "unknown error"


def _plugin_class(cppyy, spec, where: str):
    node = cppyy.gbl
    for part in spec.class_path:
        try:
            node = getattr(node, part)
        except AttributeError:
            raise ConfigError(f"{where}: class {spec.class_text!r}: no '{part}' is declared by the headers "
                              f"{', '.join(Path(h).name for h in spec.headers)}") from None
    if spec.template_args:
        args = []
        for a in spec.template_args:
            if isinstance(a, tuple):
                t = cppyy.gbl
                for part in a:
                    t = getattr(t, part, None)
                    if t is None:
                        raise ConfigError(f"{where}: class {spec.class_text!r}: template argument "
                                          f"{'::'.join(a)!r} is not a declared type")
                args.append(t)
            else:
                args.append(a)
        try:
            node = node[tuple(args)] if len(args) > 1 else node[args[0]]
        except Exception as e:
            raise ConfigError(f"{where}: class {spec.class_text!r}: {_condensed(e)}") from None
    return node


def _instantiate_plugin(plugin: dict):
    """Includes a plugin's headers, loads its library, constructs its class; ConfigError with the diagnostic."""
    cppyy = _load_systemc_headers()
    spec, name = plugin["spec"], plugin["name"]
    where = f"plugin {name!r}"
    for d in spec.include_dirs:
        cppyy.add_include_path(d)
    for header in spec.headers:
        with _diagnostics() as diag:
            try:
                cppyy.include(header)
                error = None
            except Exception as e:
                error = e
        if error is not None:
            raise ConfigError(f"{where}: header {header}: {_condensed(error, diag['text'])}")
    if spec.library:
        try:
            cppyy.load_library(spec.library)
        except Exception as e:
            raise ConfigError(f"{where}: library {spec.library}: {_condensed(e)}") from None
    cls = _plugin_class(cppyy, spec, where)
    with _diagnostics() as diag:
        try:
            obj = cls(name, *spec.args)
            error = None
        except Exception as e:
            error = e
    if error is not None:
        raise ConfigError(f"{where}: constructing {spec.class_text}({', '.join(map(repr, (name, *spec.args)))}): "
                          f"{_condensed(diag['text'], error)}")
    obj.__python_owns__ = False  # SystemC keeps pointers to its modules until the process ends
    return obj


def _plugin_socket_name(obj, plugin: dict, socket: str, index) -> str:
    """The hierarchical name of the plugin socket that a platform socket maps to, by its pattern."""
    spec = plugin["spec"]
    pattern = spec.sockets[socket]
    node = obj
    for member, i in pattern.resolve(index):
        try:
            node = getattr(node, member)
            if i is not None:
                node = node[i]
        except Exception:
            raise ConfigError(f"plugin {plugin['name']!r}: socket pattern {socket}: {pattern.text!r} does not match "
                              f"a member of {spec.class_text} (at '{member}'"
                              f"{'' if i is None else f'[{i}]'})") from None
    try:
        return str(node.name())
    except Exception:
        raise ConfigError(f"plugin {plugin['name']!r}: {pattern.text!r} is not a SystemC socket") from None


def _table(sim, which: str) -> dict:
    t = sim.table(which)
    columns = [str(c) for c in t.columns]
    values = np.empty(t.rows() * len(columns), dtype=np.float64)
    if values.size:
        t.copy_to(values.ctypes.data)
    values = values.reshape(t.rows(), len(columns)) if columns else values.reshape(0, 0)
    return {c: values[:, i].copy() for i, c in enumerate(columns)}


def elaborate_and_run(plan: dict) -> dict:
    """Builds the platform described by `plan` (see simulate._plan), runs it, returns raw result tables."""
    ns = load()
    clock = time.perf_counter()
    sim = ns.Simulation(plan["name"])
    sim.set_address_map(plan["base"], plan["stride"], plan["windows"])
    for comp in plan["components"]:
        params = ns.ParamSet()
        for key, value in comp["numbers"].items():
            params.set(key, float(value))
        for key, value in comp["choices"].items():
            params.set_choice(key, value)
        try:
            sim.add(comp["model"], comp["name"], params)
        except Exception as e:  # the C++ check agrees with the Python one; this names what slipped through
            raise ConfigError(f"component {comp['name']!r} ({comp['model']}): {e}") from None
    plugins = {p["name"]: (p, _instantiate_plugin(p)) for p in plan["plugins"]}

    def socket_name(ref) -> str:
        if ref["component"] in plugins:
            plugin, obj = plugins[ref["component"]]
            return _plugin_socket_name(obj, plugin, ref["socket"], ref["index"])
        suffix = "" if ref["index"] is None else f"[{ref['index']}]"
        return f"{ref['component']}.{ref['socket']}{suffix}"

    for initiator, target in plan["bindings"]:
        i_name, t_name = socket_name(initiator), socket_name(target)
        try:
            sim.bind(i_name, t_name)
        except Exception as e:
            raise ConfigError(f"binding {i_name} -> {t_name}: {_condensed(e)}") from None
    sim.set_flags(list(plan["flags"]))
    sim.set_tracing(bool(plan["trace"]))
    ops, programs = plan["ops"], plan["programs"]
    sim.load_programs(ops.ctypes.data, len(ops), programs.ctypes.data, len(programs))
    built = time.perf_counter()
    status = sim.run()
    ran = time.perf_counter()
    tables = {w: _table(sim, w) for w in ("gpus", "workgroups", "links", "link_bins", "pairs", "flags", "stuck")
              + (("ops", "syncmon_trace") if plan["trace"] else ())}
    return {
        "timings": {"elaborate_s": built - clock, "simulate_s": ran - built, "tables_s": time.perf_counter() - ran},
        "status": int(status),
        "failure": str(sim.failure()),
        "failure_kind": str(sim.failure_kind()),
        "end_ps": int(sim.end_ps()),
        "events": int(sim.events()),
        "tables": tables,
    }
