"""Encodes a profile's synthetic traffic section for `eidola::Simulation::set_traffic`.

The scalar figures go into an `eidola::TrafficSpec` (built in `run/sysc.py`); the pattern travels as
each GPU's destination list, flattened into two arrays (`first`, int64, one more entry than there
are sources; `destinations`, int32), so C++ never needs to know the pattern's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..platform.elaborate import Plan
from ..workload.traffic import TrafficSpec, destinations

__all__ = ["EncodedTraffic", "encode_traffic"]


@dataclass(frozen=True)
class EncodedTraffic:
    """A traffic section as the models take it (the fields of eidola::TrafficSpec, in ps and bytes)."""

    spec: TrafficSpec          #: what it came from
    probability: float         #: chance of a packet per cycle
    cycle_ps: int              #: the injection cycle
    warmup_ps: int             #: start of the measurement window
    duration_ps: int           #: length of the measurement window
    offset: int                #: where the writes land in each destination's window
    uniform: bool              #: any other GPU alike (no lists)
    first: np.ndarray          #: int64: GPU g's destinations are destinations[first[g]:first[g + 1]]
    destinations: np.ndarray   #: int32


def encode_traffic(spec: TrafficSpec, plan: Plan, window_bytes: int) -> EncodedTraffic:
    """Checks `spec` against the elaborated platform and encodes it; ConfigError names what does not fit.

    The writes land at `window_bytes` (past the profile's flags and buffers), so they never touch a
    flag a workgroup waits on.
    """
    if spec.gpus > len(plan.gpus):
        raise ConfigError(f"traffic: gpus = {spec.gpus} but platform {plan.name!r} has {len(plan.gpus)}")
    values = {c.name: dict(c.values) for c in plan.components}
    for slot in plan.gpus[:spec.gpus]:
        if not slot.replays_profile:
            raise ConfigError(f"traffic: GPU {slot.window} ({slot.component}) is a plugin model; synthetic traffic "
                              "runs in eidolon GPUs")
        max_payload: Any = values[slot.component].get("max_payload")
        if max_payload is not None and spec.packet > max_payload:
            raise ConfigError(f"traffic: packet = {spec.packet} bytes exceeds {slot.component}'s max_payload "
                              f"({int(max_payload)} bytes); a synthetic packet is one transaction")
    if window_bytes + spec.packet > plan.stride:
        raise ConfigError(f"traffic: the profile's data and one packet need {window_bytes + spec.packet} bytes per "
                          f"window; address_map.stride is {plan.stride}")
    lists = destinations(spec)
    flat = [d for ds in lists for d in ds] if lists is not None else []
    first = np.zeros(spec.gpus + 1, dtype=np.int64)
    if lists is not None:
        first[1:] = np.cumsum([len(ds) for ds in lists])
    cycle_ps = round(spec.cycle_ns * 1000)
    return EncodedTraffic(spec, min(1.0, spec.rate * spec.cycle_ns), cycle_ps, round(spec.warmup_ns * 1000),
                          round(spec.duration_ns * 1000), window_bytes, lists is None, first,
                          np.array(flat, dtype=np.int32))
