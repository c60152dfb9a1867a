"""Python classes for the registered C++ models, built from their declarations in the library.

``models.EidolonGpu("gpu0", workgroups=304, max_outstanding=64)`` makes a `Component` whose keyword
arguments are checked at once against the C++ declaration (name, unit, range), with the
component's name in the error. Parameters, defaults, units and docs are not typed a second time:
each class and its docstring are generated from `eidola.catalog` (dotted parameter names such as
``memory.latency`` are written ``memory_latency``). ``models.Plugin(...)`` declares third-party IP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .errors import ConfigError
from .platform import catalog
from .platform.model import Component
from .platform.yaml_io import plugin_component

__all__ = ["Plugin"]  # extended below with every registered model


def _model_class(spec: catalog.ModelSpec) -> type:
    by_keyword = {p.name.replace(".", "_"): p for p in spec.params}

    def __init__(self: Component, name: str, **params: Any) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{spec.name}: the component name must be a non-empty string, got {name!r}")
        values = {}
        flat = {}
        for key, value in params.items():  # link={"bandwidth": ...} is link.bandwidth, as in YAML
            if isinstance(value, dict) and spec.param(key) is None:
                flat.update({f"{key}.{k}": v for k, v in value.items()})
            else:
                flat[key] = value
        for key, value in flat.items():
            p = by_keyword.get(key) or spec.param(key)
            if p is None:
                raise ConfigError(f"component {name!r} ({spec.name}): unknown parameter {key!r}; it has: "
                                  f"{', '.join(by_keyword)}")
            try:
                p.convert(value)
            except ValueError as e:
                raise ConfigError(f"component {name!r} ({spec.name}) parameter {p.name!r}: {e}") from None
            values[p.name] = value
        Component.__init__(self, spec.name, name, values, {})

    lines = [spec.doc, "", "Parameters (keyword, type, default, doc):"]
    lines += [f"    {k}: {p.type}, default {p.default_text()} - {p.doc}" for k, p in by_keyword.items()]
    lines += ["", "Sockets:"] + [f"    {s.name}: {s.direction}, {s.protocol} - {s.doc}" for s in spec.sockets]
    return type(spec.name, (Component,), {"__init__": __init__, "__doc__": "\n".join(lines),
                                          "__module__": __name__, "params_spec": spec})


def Plugin(name: str, *, role: str = "fabric", ports: int = 1, gpu_id: int | None = None, base: str | Path = ".",
           **declaration: Any) -> Component:
    """A third-party TLM-2.0 model: role "fabric" (with `ports`) or "gpu" (with `gpu_id`).

    `declaration` takes the YAML keys: headers, include_dirs, library, class_ (or "class" via a
    dict), args, protocol, and the socket patterns (targets/initiators, or initiator/target).
    """
    raw = {("class" if k == "class_" else k): v for k, v in declaration.items()}
    if role not in ("fabric", "gpu"):
        raise ConfigError(f"plugin {name!r}: role must be 'fabric' or 'gpu', got {role!r}")
    if role == "gpu" and gpu_id is None:
        raise ConfigError(f"plugin {name!r}: a GPU plugin needs gpu_id")
    params = {"ports": ports} if role == "fabric" else {"id": gpu_id}
    return plugin_component(name, raw, role, params, f"plugin {name!r}", Path(base))


def __getattr__(name: str) -> type:
    models = catalog.models()
    if name in models:
        cls = _model_class(models[name])
        globals()[name] = cls  # made once per process
        return cls
    raise AttributeError(f"module 'eidola.models' has no model {name!r}; registered: {', '.join(models)}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(catalog.models()))
