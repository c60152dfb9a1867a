"""A per-op stand-in for ProgramSet, the reference the bulk builder's tests compare with.

`OneByOne` keeps ProgramSet's contract (one call appends an op to each of its programs, with
list, tuple or array arguments giving one value per program) but builds through ProgramBuilders,
one op per call and program: no grouping of equal op bodies, no rows placed in blocks. Patched in
for `ProfileBuilder.programs_at`, it runs every collective schedule unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

COLUMN = (list, tuple, np.ndarray)  #: argument types that give one value per program


class OneByOne:
    """ProgramSet's contract built from ProgramBuilders: each call appends to each program in turn."""

    def __init__(self, b: Any, gpus: Any, wgs: Any) -> None:
        g, w = np.broadcast_arrays(np.asarray(gpus), np.asarray(wgs))
        self.progs = [b.program_at(int(x), int(y)) for x, y in zip(g.reshape(-1), w.reshape(-1))]

    def __len__(self) -> int:
        return len(self.progs)

    def subset(self, mask: Any) -> OneByOne:
        """The programs where `mask` (one bool per program) holds, in order, as ProgramSet.subset."""
        out = OneByOne.__new__(OneByOne)
        out.progs = [p for p, keep in zip(self.progs, mask) if keep]
        return out

    def __getattr__(self, kind: str) -> Any:
        def append(*args: Any, **kw: Any) -> OneByOne:
            for i, p in enumerate(self.progs):
                getattr(p, kind)(*(v[i] if isinstance(v, COLUMN) else v for v in args),
                                 **{k: v[i] if isinstance(v, COLUMN) else v for k, v in kw.items()})
            return self
        return append
