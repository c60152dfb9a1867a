"""NCCL's collectives on chosen GPUs and workgroups of a larger profile, for imported traces.

The collective builders of this package write rank r's channel c into program (r, c) of a profile of their own.
An imported trace runs each collective on its process group's GPUs and on the workgroups of the stream (lane) that
launched it, beside compute and other streams. `PlacedBuilder` is the part of `ProfileBuilder` those builders use,
with rank r put on GPU ``gpus[r]`` and channel c on workgroup ``wgs[r][c]``: every program they ask for, every
peer an op names (``dst``) and every multicast group is mapped, and flags and buffers are declared as named (the
caller gives each call its own prefix). So one builder serves `build_collective` and the importers alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["PlacedBuilder"]

#: The ops whose first argument (``dst``) names a GPU.
_TO_GPU = ("write", "read", "signal", "put")


class PlacedBuilder:
    """Rank r of a collective on GPU ``gpus[r]`` of `b`, its channel c on workgroup ``wgs[r][c]``."""

    def __init__(self, b: ProfileBuilder, gpus: Sequence[int], wgs: Sequence[Sequence[int]]) -> None:
        #: the profile being built
        self.b = b
        #: per rank: its GPU in `b`
        self.gpus: NDArray[np.int64] = np.asarray(gpus, dtype=np.int64)
        #: per rank and channel: the workgroup in `b` (every rank has as many)
        self.wgs: NDArray[np.int64] = np.asarray(wgs, dtype=np.int64)
        if self.wgs.ndim != 2 or len(self.wgs) != len(self.gpus):
            raise ValueError(f"PlacedBuilder: one row of workgroups per rank ({len(self.gpus)}), got {self.wgs.shape}")

    def programs_at(self, ranks: Any, channels: Any) -> _Placed:
        """`ProfileBuilder.programs_at` of (ranks[i], channels[i]), mapped."""
        r, c = np.broadcast_arrays(np.asarray(ranks, dtype=np.int64), np.asarray(channels, dtype=np.int64))
        return _Placed(self.b.programs_at(self.gpus[r], self.wgs[r, c]), self.gpus)

    def program(self, rank: int, channel: int) -> _Placed:
        """`ProfileBuilder.program` of rank `rank`'s channel `channel`, mapped."""
        return _Placed(self.b.program(int(self.gpus[rank]), int(self.wgs[rank, channel])), self.gpus)

    def buffer(self, name: str, nbytes: int) -> None:
        """A buffer of `b`, as named."""
        self.b.buffer(name, nbytes=nbytes)

    def flag(self, name: str) -> None:
        """A flag of `b`, as named."""
        self.b.flag(name)

    def multicast_group(self, name: str, gpus: Sequence[int]) -> None:
        """A multicast group of `b` of the ranks' GPUs."""
        self.b.multicast_group(name, gpus=[int(self.gpus[g]) for g in gpus])


class _Placed:
    """A ProgramSet or ProgramBuilder of `b` whose ops' ``dst`` is a rank, mapped to its GPU."""

    def __init__(self, inner: Any, gpus: NDArray[np.int64]) -> None:
        self._inner, self._gpus = inner, gpus

    def __len__(self) -> int:
        return len(self._inner)

    def subset(self, mask: NDArray[np.bool_]) -> _Placed:
        return _Placed(self._inner.subset(mask), self._gpus)

    def __getattr__(self, kind: str) -> Callable[..., _Placed]:
        method = getattr(self._inner, kind)
        if kind not in _TO_GPU:
            return lambda *args, **kwargs: _Placed(method(*args, **kwargs), self._gpus)

        def mapped(*args: Any, **kwargs: Any) -> _Placed:
            if args:
                args = (self._gpu(args[0]), *args[1:])
            else:
                kwargs["dst"] = self._gpu(kwargs["dst"])
            return _Placed(method(*args, **kwargs), self._gpus)

        return mapped

    def _gpu(self, rank: Any) -> Any:
        mapped = self._gpus[np.asarray(rank, dtype=np.int64)]
        return int(mapped) if mapped.ndim == 0 else mapped
