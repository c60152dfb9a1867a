"""nccl-tests' conventions, as its sources (NVIDIA/nccl-tests 2.19, src/common.cu, util.cu and
the per-collective src/*.cu) define them: size parsing, the size sweep, the size and count
columns of each collective, bus bandwidth, and how numbers are printed.

- ``-b``/``-e`` sizes: a number with an optional K, M or G (either case), powers of 2
  (``parsesize``: 8G = 8 x 2^30); a fraction is allowed (``1.5K`` = 1536) and truncated to bytes.
- the sweep: ``size = minBytes; size <= maxBytes; size *= factor``.
- per size, elements ``count = size / 4`` (float); each collective's ``GetCollByteCount`` gives
  send and receive counts and the count it passes to NCCL (the printed count); the printed size
  is ``max(send, receive) x 4``. Collectives that split a buffer among ranks round each rank's
  share down to a multiple of 16 bytes (``(count/nranks) & ~3`` for 4-byte elements).
- ``algbw = size / time`` in GB/s (10^9 B/s); ``busbw = algbw x factor``: all_reduce 2(n-1)/n,
  all_gather, reduce_scatter, alltoall, gather and scatter (n-1)/n, broadcast, reduce and sendrecv 1
  (``*GetBw``).
- the redop column: ``sum`` for all_reduce, reduce_scatter and reduce, and for sendrecv, which passes the test's
  operator through unused; ``none`` for the others. The root column: the ``-r`` rank (default 0) for broadcast,
  reduce, gather and scatter, -1 for the others.
"""

from __future__ import annotations

import re

from ..errors import ConfigError
from ..workload.nccl import ROOTED  # the collectives with a root (nccl-tests' -r, default 0)

__all__ = ["ELEMENT", "REDUCTIONS", "ROOTED", "WHOLE", "FACTOR_ONE", "parse_size", "sizes", "columns", "bus_factor",
           "redop", "redop_fits", "root", "float_str", "algbw"]

ELEMENT = 4  #: bytes per element: nccl-tests' default type, float
REDUCTIONS = ("all_reduce", "reduce_scatter", "reduce")  #: the collectives with a reduction operator (redop sum)
#: The collectives whose every rank passes the whole buffer (count = size / 4, not split among ranks).
WHOLE = ("all_reduce", "broadcast", "reduce", "sendrecv")
#: The collectives whose bus bandwidth is their algorithm bandwidth (``*GetBw``: factor 1).
FACTOR_ONE = ("broadcast", "reduce", "sendrecv")
_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*$")
_UNIT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
MAX_SIZE = 2**50  #: a size past this is a typing mistake, not a message


def parse_size(text: str, option: str) -> int:
    """A size as nccl-tests reads ``-b``/``-e``: ``8``, ``64K``, ``1.5M``, ``8G`` (K, M, G are 2^10, 2^20, 2^30)."""
    m = _SIZE.match(text)
    if not m:
        raise ConfigError(f"{option} {text!r}: expected a size in bytes with an optional K, M or G "
                          "(powers of 2, as nccl-tests reads them), e.g. 8, 64K, 8G")
    size = int(float(m.group(1)) * _UNIT[m.group(2).lower()])
    if not 1 <= size <= MAX_SIZE:
        raise ConfigError(f"{option} {text!r}: expected a size from 1 B to {MAX_SIZE // 2**30} GiB")
    return size


def sizes(minbytes: int, maxbytes: int, factor: int) -> list[int]:
    """The sizes nccl-tests runs for ``-b minbytes -e maxbytes -f factor``."""
    if minbytes > maxbytes:
        raise ConfigError(f"-b {minbytes} is larger than -e {maxbytes}: expected minBytes <= maxBytes")
    if factor < 2:
        raise ConfigError(f"-f {factor}: expected a multiplication factor of at least 2")
    out, size = [], minbytes
    while size <= maxbytes:
        out.append(size)
        size *= factor
    return out


def columns(op: str, size: int, nranks: int) -> tuple[int, int]:
    """(size, count) as nccl-tests prints them for a swept `size` of collective `op` on `nranks` ranks."""
    count = size // ELEMENT
    align = ~(16 // ELEMENT - 1)
    if op in WHOLE:
        send = recv = param = count
    elif op in ("all_gather", "gather"):
        param = send = (count // nranks) & align
        recv = send * nranks
    elif op in ("reduce_scatter", "scatter"):
        param = recv = (count // nranks) & align
        send = recv * nranks
    elif op == "alltoall":
        param = (count // nranks) & align
        send = recv = param * nranks
    else:
        raise ConfigError(f"--op {op!r}: not a collective nccl-tests knows")
    return max(send, recv) * ELEMENT, param


def bus_factor(op: str, nranks: int) -> float:
    """busbw / algbw: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall, gather and scatter (n-1)/n;
    broadcast, reduce and sendrecv 1."""
    if op == "all_reduce":
        return 2 * (nranks - 1) / nranks
    if op in FACTOR_ONE:
        return 1.0
    return (nranks - 1) / nranks


def algbw(size: int, time_us: float) -> float:
    """Algorithm bandwidth in GB/s (10^9 B/s) of `size` bytes in `time_us` microseconds."""
    return size / (time_us * 1e-6) / 1e9


def redop(op: str) -> str:
    """The redop column: ``sum`` for reductions and for sendrecv (nccl-tests prints its -o there), ``none`` otherwise."""
    return "sum" if op in REDUCTIONS or op == "sendrecv" else "none"


def redop_fits(op: str, printed: str) -> bool:
    """Whether a log's redop column can be a run of `op`: an operator for a reduction, ``none`` for the others,
    anything for sendrecv (it prints the test's ``-o``, ``sum`` unless told otherwise, and reduces nothing)."""
    if op == "sendrecv":
        return True
    return (printed != "none") == (op in REDUCTIONS)


def root(op: str, rank: int = 0) -> int:
    """The root column: the root `rank` (``-r``, default 0) for broadcast, reduce, gather and scatter, -1 for
    collectives without a root."""
    return rank if op in ROOTED else -1


def float_str(value: float, width: int) -> str:
    """A number in `width` characters as nccl-tests prints times and bandwidths (``getFloatStr``):
    two decimals if they fit, else one, else none, else an exponent."""
    for spec in (".2f", ".1f", ".0f"):
        text = f"{value:{width}{spec}}"
        if len(text) <= width:
            return text
    return f"{value:{width}{'.1e' if width >= 7 else '.0e'}}"
