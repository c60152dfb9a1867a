"""A latency-load sweep of synthetic traffic (`eidola netsweep`): one simulation per offered rate.

Each point is an ordinary `simulate()` of `synthetic(...)` on the same platform, run in turn; a
child process per point costs milliseconds once cppyy is loaded, so a direct loop is as fast as the
sweep machinery here and keeps the points in rate order.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError, shown
from ..platform.model import Platform
from ..workload.traffic import synthetic
from .simulate import simulate

__all__ = ["parse_rates", "netsweep", "format_table", "COLUMNS", "MAX_POINTS"]

#: The columns of a sweep's rows, in table order.
COLUMNS = ("rate", "offered", "accepted", "latency_mean_ns", "latency_p50_ns", "latency_p99_ns", "round_trip_mean_ns",
           "wall_s")
MAX_POINTS = 1000  #: the most rates one sweep runs


def parse_rates(text: str) -> list[float]:
    """Rates from ``START:STOP:STEP`` (STOP included) or a comma list; ConfigError naming --rates.

    The number of points is worked out (and refused past MAX_POINTS) before any list is built, so
    ``0.1:inf:1`` or ``1e-9:1:1e-9`` cost nothing.
    """
    bad = ConfigError(f"--rates {shown(text)}: expected START:STOP:STEP (0 < START <= STOP, STEP > 0, all finite) "
                      "or a comma list of packets per GPU per ns")
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if not all(math.isfinite(x) for x in (start, stop, step)) or not (step > 0 and 0 < start <= stop):
                raise bad
            count = math.floor((stop - start) / step + 1e-9) + 1
            if count > MAX_POINTS:
                raise ConfigError(f"--rates {shown(text)}: {count:.3g} points; at most {MAX_POINTS} (use a larger STEP)")
            rates = [round(start + i * step, 12) for i in range(count)]
        else:
            if text.count(",") >= MAX_POINTS:
                raise ConfigError(f"--rates: {text.count(',') + 1} rates; at most {MAX_POINTS}")
            rates = [float(x) for x in text.split(",")]
    except ValueError:
        raise bad from None
    if not rates or any(not (math.isfinite(r) and r > 0) for r in rates):
        raise ConfigError(f"--rates {shown(text)}: expected 1 to {MAX_POINTS} positive, finite rates")
    return rates


def netsweep(platform: Platform, rates: list[float], timeout: float | None = None,
             **traffic: Any) -> list[dict[str, float]]:
    """Simulates `synthetic(gpus=<the platform's>, rate=r, **traffic)` for each rate; one row per rate (COLUMNS).

    Every rate's traffic is checked before the first point runs, so a bad option fails at once.
    `timeout` (seconds; default: the platform's limits.wall) bounds each point's simulation.
    """
    gpus = len(platform.elaborate().gpus)
    profiles = [synthetic(gpus=gpus, rate=rate, **traffic) for rate in rates]
    rows = []
    for rate, profile in zip(rates, profiles):
        res = simulate(platform, profile, timeout=timeout)
        t = res.traffic or {}
        rows.append({"rate": rate, **{c: t.get(c, math.nan) for c in COLUMNS[1:-1]}, "wall_s": res.wall_s})
    return rows


def format_table(rows: list[dict[str, float]]) -> str:
    """The rows as an aligned text table (NaN, where nothing was measured, shows as -)."""
    header = ("rate", "offered", "accepted", "mean ns", "p50 ns", "p99 ns", "round trip ns", "wall s")
    lines = ["".join(f"{h:>14}" for h in header)]
    for r in rows:
        cells = [f"{r['rate']:.4g}", f"{r['offered']:.4f}", f"{r['accepted']:.4f}"]
        cells += ["-" if math.isnan(r[c]) else f"{r[c]:.1f}" for c in COLUMNS[3:7]]
        cells.append(f"{r['wall_s']:.2f}")
        lines.append("".join(f"{c:>14}" for c in cells))
    return "\n".join(lines)
