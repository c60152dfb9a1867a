"""A latency-load sweep of synthetic traffic (`eidola netsweep`): one simulation per offered rate.

Each point is an ordinary `simulate()` of `synthetic(...)` on the same platform, run in turn; a
child process per point costs milliseconds once cppyy is loaded, so a direct loop is as fast as the
sweep machinery here and keeps the points in rate order.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import ConfigError
from ..platform.model import Platform
from ..workload.traffic import synthetic
from .simulate import simulate

__all__ = ["parse_rates", "netsweep", "format_table", "COLUMNS"]

#: The columns of a sweep's rows, in table order.
COLUMNS = ("rate", "offered", "accepted", "latency_mean_ns", "latency_p50_ns", "latency_p99_ns", "round_trip_mean_ns",
           "wall_s")
_MAX_POINTS = 1000


def parse_rates(text: str) -> list[float]:
    """Rates from ``START:STOP:STEP`` (STOP included) or a comma list; ConfigError naming --rates."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            if not (step > 0 and 0 < start <= stop):
                raise ValueError
            count = math.floor((stop - start) / step + 1e-9) + 1
            rates = [round(start + i * step, 12) for i in range(count)]
        else:
            rates = [float(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"--rates {text!r}: expected START:STOP:STEP (0 < START <= STOP, STEP > 0) or a comma "
                          "list of packets per GPU per ns") from None
    if not rates or len(rates) > _MAX_POINTS or any(not (math.isfinite(r) and r > 0) for r in rates):
        raise ConfigError(f"--rates {text!r}: expected 1 to {_MAX_POINTS} positive rates")
    return rates


def netsweep(platform: Platform, rates: list[float], **traffic: Any) -> list[dict[str, float]]:
    """Simulates `synthetic(gpus=<the platform's>, rate=r, **traffic)` for each rate; one row per rate (COLUMNS)."""
    gpus = len(platform.elaborate().gpus)
    rows = []
    for rate in rates:
        res = simulate(platform, synthetic(gpus=gpus, rate=rate, **traffic))
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
