"""The platform's ``collectives:`` section: whose library runs the collectives, and on what.

Python-only (no C++ model reads it): `eidola.workload.nccl` builds the collectives from it. Every key
is optional; what is left out is derived from the rest of the platform there (docs/collectives.md).

```yaml
collectives:
  library: nccl        # nccl | rccl: whose constants and tuning model
  channels: 24         # the library's channel count on this system (its maximum)
  link_type: nvlink    # nvlink | pcie | network | xgmi: the tuner's per-hop latencies (default from topology)
  protocols: [LL, LL128, Simple]   # the protocols enabled
  arch: hopper         # ampere | hopper | blackwell | cdna3: the tuner's per-generation bandwidth caps
  host_call: 29us      # host-side cost of one call as nccl-tests issues them (no CUDA graph); 0 by default
  proxy_step: 1us      # across nodes: the proxy's cost per network step at the sender and at the receiver
  proxy_launch: 0us    # across nodes: the proxy's start per collective, before the first network step
```
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError, shown
from . import units

__all__ = ["COLLECTIVES_KEYS", "LIBRARIES", "LINK_TYPES", "ARCHS", "parse_collectives", "MAX_CHANNELS"]

#: The keys of the section, each with its doc line (shown by errors and docs).
COLLECTIVES_KEYS = {
    "library": "nccl | rccl: whose constants and tuning model",
    "channels": "the library's channel count on this system (its maximum), 1 to 128",
    "link_type": "nvlink | pcie | network | xgmi: the tuner's per-hop latencies (default from the topology)",
    "protocols": "the protocols enabled, a list of LL, LL128, Simple",
    "arch": "ampere | hopper | blackwell | cdna3: the GPU generation for the tuner's bandwidth caps",
    "host_call": "a time (e.g. 29us): the host's cost per collective call as nccl-tests issues them back to back "
                 "(library enqueue and kernel launch, no CUDA graph), at least gpus.launch; 0 by default",
    "proxy_step": "a time (e.g. 1us): the proxy's cost per network step at each end (multi-node fabrics)",
    "proxy_launch": "a time (e.g. 0us): the proxy's start per collective, before its first network step",
}
LIBRARIES = ("nccl", "rccl")  #: the libraries modelled
LINK_TYPES = ("nvlink", "pcie", "network", "xgmi")  #: the link types of the tuning tables
ARCHS = ("ampere", "hopper", "blackwell", "cdna3")  #: GPU generations with tuning caps
MAX_CHANNELS = 128  #: RCCL's MAXCHANNELS (NCCL's is 32 or 64): no library runs more
_PROTOCOLS = ("LL", "LL128", "Simple")


def parse_collectives(raw: object, where: str) -> dict[str, Any]:
    """The checked section as given (no defaults filled in); ConfigError names the key and what was expected."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(COLLECTIVES_KEYS)}, got {shown(raw)}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in COLLECTIVES_KEYS:
            raise ConfigError(f"{where}: unknown key {shown(key)}; expected one of: {', '.join(COLLECTIVES_KEYS)}")
        choices = {"library": LIBRARIES, "link_type": LINK_TYPES, "arch": ARCHS}.get(key)
        if choices is not None and value not in choices:
            raise ConfigError(f"{where}.{key}: expected one of {', '.join(choices)}, got {shown(value)}")
        if key == "channels" and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 1 <= value <= MAX_CHANNELS):
            raise ConfigError(f"{where}.channels: expected an integer from 1 to {MAX_CHANNELS}, got {shown(value)}")
        if key == "protocols":
            if (not isinstance(value, list) or not value or any(p not in _PROTOCOLS for p in value)
                    or len(set(value)) != len(value)):
                raise ConfigError(f"{where}.protocols: expected a non-empty list of distinct protocols from "
                                  f"{', '.join(_PROTOCOLS)}, got {shown(value)}")
            value = list(value)
        if key in ("host_call", "proxy_step", "proxy_launch"):
            try:
                ok = units.parse(value, "time") >= 0
            except units.UnitError as e:
                raise ConfigError(f"{where}.{key}: {e}") from None
            if not ok:
                raise ConfigError(f"{where}.{key}: expected a time >= 0, got {shown(value)}")
        out[key] = value
    return out
