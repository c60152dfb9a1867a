"""All cppyy and SystemC glue: the only module that touches C++ objects.

`load()` brings cppyy and the compiled models into the process once (the parent does it before
forking, so every child starts with them loaded and the entry points' wrappers generated).
`elaborate_and_run()` builds one platform through `eidola::Simulation` and runs it; it must be
called at most once per process, because a SystemC kernel elaborates once.
"""

from __future__ import annotations

import functools

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
    for initiator, target in plan["connections"]:
        try:
            sim.bind(initiator, target)
        except Exception as e:
            raise ConfigError(f"connection {initiator} -> {target}: {e}") from None
    sim.set_flags(list(plan["flags"]))
    sim.set_tracing(bool(plan["trace"]))
    ops, programs = plan["ops"], plan["programs"]
    sim.load_programs(ops.ctypes.data, len(ops), programs.ctypes.data, len(programs))
    status = sim.run()
    return {
        "status": int(status),
        "failure": str(sim.failure()),
        "failure_kind": str(sim.failure_kind()),
        "end_ps": int(sim.end_ps()),
        "events": int(sim.events()),
        "tables": {w: _table(sim, w) for w in ("gpus", "workgroups", "links", "link_bins", "pairs", "stuck")
                   + (("ops",) if plan["trace"] else ())},
    }
