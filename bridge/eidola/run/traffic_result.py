"""The figures of a run's synthetic traffic (`Result.traffic`), from the "traffic" tables C++ fills.

Loads are packets per GPU per ns, averaged over the GPUs that inject (a pattern may map some to
themselves); offered counts packets created in the measurement window, accepted those that reached
their destination in it. Latencies are one-way, from creation (so source queueing counts) to
arrival at the destination's target, over the packets created in the window.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .tables import structured

__all__ = ["traffic_figures"]


def traffic_figures(tables: dict[str, Any], reply: bool) -> tuple[dict[str, float], np.ndarray]:
    """(the figures, the per-GPU "traffic" table) of a run whose profile had a traffic section."""
    per_gpu = structured("traffic", tables["traffic"])
    summary = structured("traffic_summary", tables["traffic_summary"])
    sources = int(per_gpu["injecting"].sum())
    window_ns = float(summary["window_ns"][0]) if len(summary) else 0.0
    per_ns = sources * window_ns
    measured = int(per_gpu["measured"].sum())
    figures = {
        "offered": float(per_gpu["offered"].sum()) / per_ns if per_ns else 0.0,
        "accepted": float(per_gpu["accepted"].sum()) / per_ns if per_ns else 0.0,
        "latency_mean_ns": float(per_gpu["latency_sum_ns"].sum()) / measured if measured else float("nan"),
        "latency_p50_ns": float(summary["latency_p50_ns"][0]) if measured else float("nan"),
        "latency_p99_ns": float(summary["latency_p99_ns"][0]) if measured else float("nan"),
        "latency_max_ns": float(summary["latency_max_ns"][0]) if measured else float("nan"),
        "measured_packets": float(measured),
        "sources": float(sources),
        "window_ns": window_ns,
    }
    if reply:
        figures["round_trip_mean_ns"] = (float(per_gpu["round_trip_sum_ns"].sum()) / measured if measured
                                         else float("nan"))
    return figures, per_gpu
