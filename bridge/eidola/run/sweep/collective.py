"""The sweep's `nccl` generator: one collective as the platform's library runs it, timed as `eidola perf` times it.

```yaml
generator: {name: nccl, op: all_reduce, nbytes: 64MiB}   # algo, proto, channels, gpus, root, fabric optional
grid: {generator.nbytes: [1MiB, 16MiB, 256MiB], fabric.nic.bandwidth: [25GB/s, 50GB/s]}
metrics: [kernel_time_us, busbw_GBps, nccl_channels, nccl_plan.ring, nccl_plan.tree, flow_fabric]
```

Unlike the textbook generators, it needs the point's platform: the tuner picks the algorithm, protocol and
channels from the platform's links and library (`build_collective`), so a sweep over `fabric.nic.bandwidth` or
`gpus.count` re-tunes at every point, as NCCL would. The point runs the steady state of nccl-tests' loop with the
host's issue beside it (`steady=True`, one workgroup more per GPU), on the fabric perf's `--fabric` would choose
(`fabric`: auto, the default, runs a packet platform's collectives that write more than perf's AUTO_PACKET_BYTES
on the flow fabric; packet or flow force one), so its `kernel_time_us` is the time `eidola perf` prints for the same
platform, size and `--fabric`.
"""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError
from ...platform import memory
from .. import nccl_tests
from ..build_memory import building_within
from ..perf import FABRICS, Fabrics, written_bytes
from ..perf_source import ALGOS, OPS, PROTOS, build_collective

__all__ = ["NAME", "PARAMETERS", "REQUIRED", "check", "build"]

NAME = "nccl"  #: the generator's name in a spec
#: Its parameters: build_collective's, less the platform and the harness's own.
PARAMETERS = ("op", "nbytes", "gpus", "algo", "proto", "channels", "root", "fabric")
REQUIRED = ("op", "nbytes")


def check(params: dict[str, Any]) -> None:
    """Refuses an unknown or missing parameter, and a name the library does not know (ConfigError naming the key)."""
    for key in params:
        if key not in PARAMETERS:
            raise ConfigError(f"generator.{key}: {NAME} has no parameter {key!r}; it takes: {', '.join(PARAMETERS)}")
    missing = [k for k in REQUIRED if k not in params]
    if missing:
        raise ConfigError(f"generator: {NAME} needs {', '.join(missing)}")
    for key, allowed in (("op", OPS), ("algo", ALGOS), ("proto", PROTOS), ("fabric", FABRICS)):
        if key in params and params[key] not in allowed:
            raise ConfigError(f"generator.{key}: expected one of {', '.join(allowed)}, got {params[key]!r}")
    nbytes = params["nbytes"]
    if type(nbytes) is not int or nbytes < 1:
        raise ConfigError(f"generator.nbytes: expected a size of at least 1 byte (e.g. 4096 or 1MiB), got {nbytes!r}")
    for key, least, what in (("gpus", 2, "GPUs"), ("channels", 0, "channels (0: the tuner's count)"),
                             ("root", 0, "the root GPU")):
        if key in params and (type(params[key]) is not int or params[key] < least):
            raise ConfigError(f"generator.{key}: expected an integer >= {least}, {what}, got {params[key]!r}")


def build(path: str, overrides: dict[str, Any], params: dict[str, Any], what: str) -> tuple[Any, Any, dict[str, Any]]:
    """(the platform file `path` under the point's `overrides`, on the fabric chosen and with the host's workgroup; the
    profile; the generator's parameters with what was chosen).

    The returned parameters add `gpus` (the ranks taking part), `fabric` (the one it runs on) and `plan` (algo,
    proto, channels), which the metrics read; `nbytes` is the size nccl-tests runs for the one asked (perf's size
    column: 7 bytes of all_reduce run as 4). Bad values raise ConfigError naming the parameter; a profile past the
    platform's limits.memory raises MemoryLimitExceeded naming `what` (build_memory.py).
    """
    check(params)
    params = dict(params)
    fabrics = Fabrics(path, overrides, params.pop("fabric", "auto"))
    # The size nccl-tests runs for it, as perf's rows have it (4-byte elements, a rank's share a multiple of 16 B).
    ranks = params.get("gpus") or len(fabrics.base.eidolons())
    size, _ = nccl_tests.columns(str(params["op"]), int(params["nbytes"]), int(ranks))
    if size < 1:
        raise ConfigError(f"generator.nbytes: {params['nbytes']} B is no element of {params['op']} on {ranks} GPUs as "
                          "nccl-tests counts it (4-byte elements; a rank's share a multiple of 16 B): give more")
    params["nbytes"] = size
    try:
        with building_within(memory.limit_of(fabrics.base.limits), what):
            profile, plan = build_collective(fabrics.base, steady=True, **params)
    except ConfigError as e:  # build_collective names its option first ("nbytes: ..."); the platform's own say theirs
        raise ConfigError(f"generator.{e}" if str(e).split(":")[0] in PARAMETERS else str(e)) from None
    fabric = fabrics.choose(written_bytes(profile))
    chosen = {**params, "gpus": profile.gpus, "fabric": fabric,
              "plan": {"algo": plan.algo, "proto": plan.proto, "channels": plan.channels,
                       "workgroups": plan.workgroups}}  # twice the channels where p2p sends and receives are apart
    return fabrics.harnessed(fabric), profile, chosen
