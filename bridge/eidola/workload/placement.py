"""Placing a profile's ranks on a platform's GPUs: profile GPU r runs on platform GPU `gpus[r]`.

A profile numbers its GPUs 0..N-1 (an imported trace: its ranks), and a run puts GPU r on the platform's
GPU r, so 8 ranks on a 2-node platform of 8 GPUs a node all sit in node 0 and nothing crosses the network (a
trace-replay trial, 2026-12-07). `place` renumbers a profile; `placement` makes the usual maps:

- ``packed``: rank r on GPU r (what a run does without a placement);
- ``spread``: ranks round robin over the nodes, rank r on node r mod n, in that node's next free slot, as a
  job scheduler spreads a job of one rank per node and more;
- a list ``0,8,1,9``: rank r on the r-th GPU named.

What moves with a rank: its programs, every write, read, put and signal addressed to it, its place in NVLS
multicast groups and its start delays. A profile with synthetic traffic cannot be placed (its pattern is over the
platform's GPUs already), nor can a profile whose skew or jitter is drawn per GPU be placed without its draws
moving too: those refuse (ConfigError).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError
from .profile import Profile
from .table import OpTable, Put, Signal, Transfer

__all__ = ["PLACEMENTS", "place", "placement"]

PLACEMENTS = ("packed", "spread")  #: the named placements (or a list of GPUs)


def placement(spec: str, ranks: int, gpus: int, gpus_per_node: int) -> list[int]:
    """The platform GPU of each of `ranks` ranks under `spec` (packed, spread or a comma-separated list of GPUs),
    on a platform of `gpus` GPUs in nodes of `gpus_per_node` (0: one node). ConfigError naming the option."""
    where = f"--place {spec}"
    if ranks > gpus:
        raise ConfigError(f"{where}: the profile has {ranks} GPUs, the platform {gpus}")
    if spec == "packed":
        return list(range(ranks))
    if spec == "spread":
        per = gpus_per_node or gpus
        nodes = max(1, gpus // per)
        return [(r % nodes) * per + r // nodes for r in range(ranks)]
    try:
        named = [int(x) for x in spec.split(",")] if spec else []
    except ValueError:
        raise ConfigError(f"{where}: expected packed, spread or a comma-separated list of GPUs") from None
    if len(named) != ranks:
        raise ConfigError(f"{where}: names {len(named)} GPUs for the profile's {ranks}")
    bad = [g for g in named if not 0 <= g < gpus]
    if bad:
        raise ConfigError(f"{where}: GPU {bad[0]} is not one of the platform's 0-{gpus - 1}")
    if len(set(named)) != len(named):
        raise ConfigError(f"{where}: a GPU is named twice")
    return named


def place(profile: Profile, gpus: Sequence[int], count: int) -> Profile:
    """`profile` with its GPU r on GPU `gpus[r]` of a platform of `count` GPUs (see the module's note)."""
    where = f"profile {profile.name!r}"
    if len(gpus) != profile.gpus or len(set(gpus)) != len(gpus) or not all(0 <= g < count for g in gpus):
        raise ConfigError(f"{where}: a placement names one distinct GPU of the {count} for each of its "
                          f"{profile.gpus} GPUs, got {list(gpus)}")
    if list(gpus) == list(range(profile.gpus)):  # packed: GPU r stays GPU r, what a run does anyway
        return profile
    if profile.traffic is not None:
        raise ConfigError(f"{where}: its synthetic traffic is over the platform's GPUs already; it cannot be placed")
    var = profile.variability
    if var.skew is not None or var.jitter is not None:
        raise ConfigError(f"{where}: its skew or jitter is drawn per GPU in GPU order; place it before drawing "
                          "(remove variability.skew and variability.jitter) or run it unplaced")
    to = np.asarray(gpus, dtype=np.int64)
    table = profile.table
    # Programs in the new (gpu, wg) order, each one's rows as they were.
    keys = [(int(to[g]), wg) for g, wg in table.keys]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    sizes = np.diff(table.starts)
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes[order])]).astype(np.int64)
    pick = np.concatenate([np.arange(table.starts[i], table.starts[i + 1]) for i in order]) if order else \
        np.zeros(0, dtype=np.int64)
    rows = table.rows[pick]  # a copy: fancy indexing
    # A write, read, put or signal names its peer in the row's dst; other ops carry no GPU there.
    addressed = np.array([isinstance(t, (Transfer, Put, Signal)) for t in table.templates], dtype=bool)
    mask = addressed[rows[:, 0]] if len(rows) else np.zeros(0, dtype=bool)
    rows[mask, 1] = to[rows[mask, 1]]
    placed = OpTable.make([keys[i] for i in order], starts, rows, table.templates)
    delays = tuple(dataclasses.replace(d, gpu=int(to[d.gpu])) for d in var.delays)
    groups = tuple((name, tuple(int(to[g]) for g in members)) for name, members in profile.multicast_groups)
    return dataclasses.replace(profile, gpus=count, table=placed, multicast_groups=groups,
                               variability=dataclasses.replace(var, delays=delays))
