"""The textbook collectives as ``eidola perf`` runs them until the NCCL/RCCL ones are merged.

``build_collective`` has the signature of ``eidola.workload.nccl.build_collective`` and returns
the same ``(Profile, Plan)``; `perf_source` imports it from here, and at the merge of issue 26
from there instead (one line).

Each collective is one of the textbook schedules of `eidola.workload.collectives`: ring
all-reduce, all-gather and reduce-scatter, ring broadcast (root 0) and direct all-to-all, all
with the Simple protocol's semantics (posted writes, a flag released after their
acknowledgements) and SyncMon waits. ``channels`` is the number of workgroups per GPU that run
the collective, each moving its own slice of every block.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError, ProfileError
from ..platform.model import Platform
from ..workload.builder import ProfileBuilder
from ..workload.collectives import collective
from ..workload.profile import Profile

__all__ = ["OPS", "Plan", "build_collective"]

#: The collectives, by their nccl-tests names.
OPS = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast")

_KIND = {"all_reduce": "all_reduce", "all_gather": "all_gather", "reduce_scatter": "reduce_scatter",
         "alltoall": "all_to_all", "broadcast": "broadcast"}
_TEXTBOOK_ALGO = {"alltoall": "direct"}  # the others are rings
#: Auto channels: one per 64 KiB of each rank's block, at most 16, so a small message is not split
#: into pieces smaller than a few packets and a large one keeps 16 workgroups streaming.
_AUTO_CHANNEL_BYTES = 64 * 1024
_AUTO_MAX_CHANNELS = 16


@dataclass(frozen=True)
class Plan:
    """How one collective runs: its algorithm, protocol and number of channels (workgroups per GPU)."""

    algo: str      #: "ring" | "tree" | "nvls" (the textbook source also says "direct")
    proto: str     #: "LL" | "LL128" | "Simple"
    channels: int  #: workgroups per GPU that run it


def build_collective(platform: Platform, op: str, nbytes: int, gpus: int | None = None,
                     algo: str = "auto", proto: str = "auto", channels: int = 0) -> tuple[Profile, Plan]:
    """One collective as the library runs it, on the first `gpus` GPUs of `platform` (default all).

    `nbytes` is nccl-tests' size column: all_reduce the buffer per rank, all_gather the gathered
    output per rank, reduce_scatter the input per rank, alltoall each rank's send total, broadcast
    the buffer. `algo`, `proto` and `channels` (0: choose) override the choice; the textbook
    source knows only ring (direct for alltoall) and Simple, and refuses the rest with a
    ConfigError naming the option.
    """
    if op not in OPS:
        raise ConfigError(f"--op {op!r}: expected one of {', '.join(OPS)}")
    eidolons = platform.eidolons()
    n = len(eidolons) if gpus is None else gpus
    if not 2 <= n <= len(eidolons):
        raise ConfigError(f"-g {n}: expected 2 to {len(eidolons)} GPUs (platform {platform.name!r} has "
                          f"{len(eidolons)})")
    own = _TEXTBOOK_ALGO.get(op, "ring")
    if algo not in ("auto", own):
        raise ConfigError(f"--algo {algo}: the textbook collectives run {op} as {own} only "
                          "(tree and NVLS come with the NCCL collectives)")
    if proto not in ("auto", "Simple"):
        raise ConfigError(f"--proto {proto}: the textbook collectives have the Simple protocol only "
                          "(LL and LL128 come with the NCCL collectives)")
    workgroups = int(eidolons[0].resolved()["workgroups"])
    blocks = 1 if op == "broadcast" else n
    if channels:
        if not 1 <= channels <= workgroups:
            raise ConfigError(f"--channels {channels}: expected 1 to {workgroups} (the platform's workgroups per GPU)")
        w = channels
    else:
        w = max(1, min(_AUTO_MAX_CHANNELS, workgroups, nbytes // (blocks * _AUTO_CHANNEL_BYTES)))
    if nbytes < blocks * w:
        what = f"{w} channels x {blocks} ranks" if blocks > 1 else f"{w} channels"
        raise ConfigError(f"size {nbytes} B: the textbook {op} splits its buffer into {what} = {blocks * w} "
                          "pieces of at least a byte; use a larger -b (or fewer --channels)")
    b = ProfileBuilder(gpus=n, workgroups=w, name=f"perf-{op}-{n}gpu-{nbytes}B")
    try:
        collective(b, _KIND[op], nbytes, algorithm=own, workgroups=w, prefix="", mode="syncmon")
    except ProfileError as e:  # every argument was checked above; this names what is left in the user's terms
        raise ConfigError(f"size {nbytes} B, {op}: {e}") from None
    return b.build(), Plan(algo=own, proto="Simple", channels=w)
