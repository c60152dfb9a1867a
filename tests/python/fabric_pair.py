"""The same profile on one platform file with `fabric.model` packet and then flow, nothing else switched: the
comparison the flow fabric's tests hold to a bound (the packet fabric is the reference)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import eidola


def packet_and_flow_ns(platform: Path, profile: Any, overrides: dict[str, Any] | None = None) -> tuple[float, float]:
    """(packet, flow) kernel times of `profile` on `platform` under `overrides`, ns."""
    times = []
    for model in ("packet", "flow"):
        plat = eidola.load_platform(platform, overrides={**(overrides or {}), "fabric.model": model})
        times.append(eidola.simulate(plat, profile).kernel_time_ns)
    return times[0], times[1]
