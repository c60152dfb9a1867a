"""The metrics a sweep can record per point: a registry of named functions of a Result.

Each metric is a number computed from one simulation's Result (and, for bandwidths, the
collective's size). `register()` adds one; a name with a registered prefix (`traffic.`) is
resolved by its prefix's handler, so a family of figures needs one entry.

Bandwidths follow the nccl-tests convention. S is the collective's size in bytes (the
generator's `nbytes`; `vector_bytes` for gemv_allreduce) and t the kernel time:
algbw = S / t, and busbw = algbw x factor, where the factor makes busbw comparable to a link's
bandwidth: all-reduce 2(P-1)/P; all-gather, reduce-scatter and all-to-all (P-1)/P; with the `nccl` generator
every op's nccl-tests factor (broadcast, reduce and sendrecv 1). Both are in GB/s (10^9 bytes per second).
`nccl_channels` and `nccl_plan.<name>` read the tuner's choice at the point (the `nccl` generator only).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigError
from .. import nccl_tests
from ..fabric_notes import link_overrun
from ..perf_source import ALGOS, PROTOS
from ..result import BUS_FACTOR
from .collective import NAME as NCCL

__all__ = [
    "METRICS",
    "Metric",
    "MetricContext",
    "check_metrics",
    "compute",
    "describe",
    "register",
    "register_prefix",
]


@dataclass(frozen=True)
class MetricContext:
    """What a metric may read besides the Result: the workload that produced it."""

    generator: Mapping[str, Any] | None  #: the generator's name and parameters at this point, or None
    profile: Any                         #: the Profile that was replayed


@dataclass(frozen=True)
class Metric:
    """A named figure of one simulation."""

    name: str                                       #: the table column's name
    doc: str                                        #: one line: what it is, with its unit
    fn: Callable[[Any, MetricContext], float]       #: computes it from (Result, context)
    needs_trace: bool = False                       #: needs the ops table (simulate(trace=True))


METRICS: dict[str, Metric] = {}
#: What nccl_plan.<name> may name: an algorithm or a protocol of the tuner's plans.
_PLAN_CHOICES = tuple(c for c in (*ALGOS, *PROTOS) if c != "auto")
_PREFIXES: dict[str, tuple[str, Callable[[Any, MetricContext, str], float]]] = {}

# The factor that turns algorithm bandwidth into bus bandwidth, per generator, as a function of P.
# The collective each generator runs (its bus factor is Result.busbw_gbs's).
_BUS_FACTOR: dict[str, str] = {
    "gemv_allreduce": "all_reduce", "ring_allreduce": "all_reduce", "direct_allreduce": "all_reduce",
    "all_gather": "all_gather", "reduce_scatter": "reduce_scatter", "all_to_all": "all_to_all",
}


def register(name: str, doc: str, fn: Callable[[Any, MetricContext], float], needs_trace: bool = False) -> None:
    """Adds metric `name` (documented by `doc`, computed by `fn(result, context)`) to the registry."""
    METRICS[name] = Metric(name, doc, fn, needs_trace)


def register_prefix(prefix: str, doc: str, fn: Callable[[Any, MetricContext, str], float]) -> None:
    """Adds the family of metrics `prefix<key>` (documented by `doc`), computed by `fn(result, context, name)`."""
    _PREFIXES[prefix] = (doc, fn)


def check_metrics(names: list[str], where: str) -> bool:
    """Checks every name is a known metric (ConfigError naming `where` otherwise); True if any needs a trace."""
    for name in names:
        if name not in METRICS and not any(name.startswith(p) and len(name) > len(p) for p in _PREFIXES):
            raise ConfigError(f"{where}: unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}, "
                              f"or {', '.join(p + '<name>' for p in _PREFIXES)}")
    for name in names:
        if name.startswith("nccl_plan.") and name.removeprefix("nccl_plan.") not in _PLAN_CHOICES:
            raise ConfigError(f"{where}: {name}: expected nccl_plan. and one of {', '.join(_PLAN_CHOICES)}")
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: a metric is listed twice")
    return any(METRICS[n].needs_trace for n in names if n in METRICS)


def compute(names: tuple[str, ...], result: Any, context: MetricContext) -> dict[str, float]:
    """Every metric in `names` for one Result; ConfigError when a metric does not apply to this workload."""
    out: dict[str, float] = {}
    for name in names:
        if name in METRICS:
            out[name] = float(METRICS[name].fn(result, context))
            continue
        prefix = next(p for p in _PREFIXES if name.startswith(p))
        out[name] = float(_PREFIXES[prefix][1](result, context, name))
    return out


def describe() -> str:
    """The metrics as a list of lines (`eidola sweep --metrics`)."""
    rows = [f"{m.name:22s} {m.doc}" for m in sorted(METRICS.values(), key=lambda m: m.name)]
    rows += [f"{prefix + '<name>':22s} {doc}" for prefix, (doc, _) in _PREFIXES.items()]
    return "\n".join(rows)


def _collective_size(ctx: MetricContext) -> tuple[float, int]:
    """(busbw / algbw, S) of the point's collective."""
    gen = ctx.generator
    if gen is not None and gen.get("name") == NCCL:
        return nccl_tests.bus_factor(str(gen["op"]), int(gen["gpus"])), int(gen["nbytes"])
    if gen is None or gen.get("name") not in _BUS_FACTOR:
        raise ConfigError("algbw_GBps and busbw_GBps need a collective generator "
                          f"({', '.join((*_BUS_FACTOR, NCCL))}); this point's workload is "
                          + (repr(gen.get("name")) if gen else "a profile file"))
    size = gen.get("vector_bytes", 65536) if gen["name"] == "gemv_allreduce" else gen["nbytes"]
    return BUS_FACTOR[_BUS_FACTOR[gen["name"]]](int(gen.get("gpus", 4))), int(size)


def _algbw(res: Any, ctx: MetricContext) -> float:
    _, size = _collective_size(ctx)
    return float(res.algbw_gbs(size))


def _busbw(res: Any, ctx: MetricContext) -> float:
    factor, size = _collective_size(ctx)
    return float(res.algbw_gbs(size)) * factor


def _plan(ctx: MetricContext) -> Mapping[str, Any]:
    gen = ctx.generator
    if gen is None or gen.get("name") != NCCL:
        raise ConfigError("nccl_channels and nccl_plan.<name> need the nccl generator; this point's workload is "
                          + (repr(gen.get("name")) if gen else "a profile file"))
    return gen["plan"]  # type: ignore[no-any-return]


def _plan_channels(res: Any, ctx: MetricContext) -> float:
    return float(_plan(ctx)["channels"])


def _plan_uses(res: Any, ctx: MetricContext, name: str) -> float:
    choice = name.removeprefix("nccl_plan.")  # a known one: check_metrics refuses the others with the spec
    plan = _plan(ctx)
    return float(choice in (plan["algo"], plan["proto"]))


def _link_stat(field_name: str, how: Callable[[np.ndarray], Any]) -> Callable[[Any, MetricContext], float]:
    # A fabric without links (the ideal one) has no utilisation or queueing: 0, not an error,
    # so a sweep over fabric.model keeps one column.
    return lambda res, ctx: float(how(res.links[field_name])) if len(res.links) else 0.0


def _gpu_sum(field_name: str) -> Callable[[Any, MetricContext], float]:
    return lambda res, ctx: float(res.gpus[field_name].sum())


def _compute_per_gpu(res: Any, ctx: MetricContext) -> np.ndarray:
    """Compute time per GPU summed over its workgroups, from the traced ops."""
    per_gpu = np.zeros(len(res.gpus))
    for row in res.ops:
        if ctx.profile.program(int(row["gpu"]), int(row["wg"]))[int(row["op"])].kind == "compute":
            per_gpu[int(row["gpu"])] += row["end_ns"] - row["begin_ns"]
    return per_gpu


def _slowest_share(res: Any, ctx: MetricContext) -> float:
    # The slowest GPU's compute sits on the critical path: every peer waits on its flags. Its
    # share is its compute time per workgroup over the kernel time.
    per_gpu = _compute_per_gpu(res, ctx)
    return float(per_gpu.max() / ctx.profile.workgroups / res.kernel_time_ns)


def _traffic(res: Any, ctx: MetricContext, name: str) -> float:
    key = name.removeprefix("traffic.")
    traffic = getattr(res, "traffic", None)
    if traffic is None:
        raise ConfigError(f"metric {name!r}: this version's Result has no traffic figures")
    try:
        return float(traffic[key])
    except (KeyError, IndexError, TypeError):
        raise ConfigError(f"metric {name!r}: res.traffic has no figure {key!r}") from None


register("kernel_time_ns", "when the last workgroup finished (ns)", lambda res, ctx: float(res.kernel_time_ns))
register("kernel_time_us", "when the last workgroup finished (µs)", lambda res, ctx: res.kernel_time_ns / 1000)
register("algbw_GBps", "algorithm bandwidth S / t of a collective (GB/s)", _algbw)
register("busbw_GBps", "bus bandwidth: algbw x 2(P-1)/P (all-reduce) or (P-1)/P (GB/s)", _busbw)
register("link_util_max", "highest link utilisation (0-1; 0 on the ideal fabric)", _link_stat("utilization", np.max))
register("link_util_mean", "mean link utilisation (0-1; 0 on the ideal fabric)", _link_stat("utilization", np.mean))
register("queue_p99_ns", "highest per-link p99 queueing delay (ns)", _link_stat("queue_p99_ns", np.max))
register("queue_mean_ns", "mean of the links' mean queueing delay (ns)", _link_stat("queue_mean_ns", np.mean))
register("queue_max_ns", "longest queueing delay on any link (ns)", _link_stat("queue_max_ns", np.max))
for _field, _doc in (("flag_reads", "flag reads (polling), all GPUs"), ("reads", "data reads, all GPUs"),
                     ("writes", "writes, all GPUs"), ("atomics", "atomics (signals), all GPUs"),
                     ("bytes_sent", "payload bytes sent, all GPUs"), ("packets_sent", "packets sent, all GPUs"),
                     ("syncmon_wakeups", "SyncMon wake-ups, all GPUs"),
                     ("syncmon_fallbacks", "SyncMon waits that fell back to polling (log full)")):
    register(_field, _doc, _gpu_sum(_field))
register("events", "actions the models processed", lambda res, ctx: float(res.events))
register("critical_gpu", "the GPU whose last workgroup finished last", lambda res, ctx: float(res.critical_gpu))
register("slowest_gpu", "the GPU with the most compute time (traced)",
         lambda res, ctx: float(np.argmax(_compute_per_gpu(res, ctx))), needs_trace=True)
register("slowest_share", "the slowest GPU's compute share of the kernel time (traced)", _slowest_share,
         needs_trace=True)
register("wall_s", "wall-clock time of the simulation (s; varies from run to run)", lambda res, ctx: res.wall_s)
register_prefix("traffic.", "a figure of res.traffic, by name", _traffic)
register("fabric_notes", "notes of the fabric's own checks: what limited it, or a link busy past the run "
         "(their texts: the point's log.txt; docs/sweeps.md)", lambda res, ctx: float(len(res.notes)))
register("fabric_overrun", "1 where a link was busy longer than the run (a fault of the fabric model: the point's "
         "time is not a result), else 0", lambda res, ctx: float(link_overrun(res) is not None))
register("flow_fabric", "1 where the point ran on the flow fabric (the nccl generator's fabric: auto may choose it), "
         "else 0", lambda res, ctx: float(res.meta.get("fabric") == "FlowFabric"))
register("nccl_channels", "the channels the library's tuner gave the collective (nccl generator)", _plan_channels)
register_prefix("nccl_plan.", "1 where the tuner's plan uses that algorithm or protocol (ring, tree, nvls, "
                "hierarchical, p2p; LL, LL128, Simple), else 0 (nccl generator)", _plan_uses)
