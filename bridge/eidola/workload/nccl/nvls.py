"""NVLS (NVLink SHARP) collectives inside one node, as NCCL's ``src/device/all_reduce.h``,
``all_gather.h`` and ``reduce_scatter.h`` run them (``RunWorkColl<..., NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>``).

The GPUs form one multicast group. Channel c is workgroup c of every GPU: NCCL runs `NVLS_CHANNELS`
(``nvlsChannels``) on one node whatever the size (``enqueue.cc``), and splits the buffer evenly over them.
Each channel walks its part in loops of k chunks, one per GPU ("head"): in every loop GPU g works on
chunk g. The chunk is `nvls_chunk` of the channel's part (``calcCollChunking``: 128 KiB, halved down to
16 KiB for small parts, so that a channel has several loops); the last loop's chunks are its remainder
over k, rounded up to 16 KiB (``all_reduce.h``), so a GPU may get less or none.

Inside a chunk (``prims_simple.h`` ``genericOp`` with one slice per chunk, ``common_kernel.h``
``reduceCopyPacks``): the channel's reduce warps, less the one extra warp that only posts the step flag
(`nvls_workers`), take the chunk's hunks of `NVLS_HUNK` bytes in turn; a warp loads a hunk (every
thread issues its ``COLL_UNROLL`` multimem.ld_reduce.v4 before it uses one), then stores the sums by
multimem.st, which are posted, so its next load overlaps them. The workgroup stands for the worker warps
together, in rounds of `nvls_workers` hunks: per round a ``reduce_load`` of the round's bytes (every
worker's loads in flight at once), then its ``multicast``. (The warps meet at the chunk's end anyway,
at the group barrier before the step flag is posted.)

- all_reduce: ``reduce_load`` (multimem.ld_reduce: the switch reads the k members' copies and sums
  them), then ``multicast`` of the sum to the same offset of every member's output (multimem.st).
- reduce_scatter: ``reduce_load`` only (the buffer is the input of k x the output; GPU g owns block g
  and reduces it, in its own chunks).
- all_gather: ``multicast`` of the GPU's own block (the buffer is the gathered output).

All-reduce and all-gather end with a barrier per channel: a fence (every multicast of the workgroup
acknowledged, which the switch sends once every member has its copy), then a signal to every peer's flag
of that channel and a wait until the k - 1 peers' signals are in: a GPU's output is complete when its
peers' multicasts are. Reduce-scatter needs none: each GPU's result is what its own loads returned.

Coarsening: once a GPU has `NVLS_COARSE` or more chunks in a channel, each chunk is one round (one load,
one store). The pipeline of chunks then already overlaps a chunk's store with the next chunk's load, so
the rounds only shorten the last chunk's tail; tests/python/test_nccl_nvls.py bounds the difference
(under 1% at 512 MiB on dgx-h200), and the 16 GiB run stays a few hundred thousand operations.

Left out: the scatter and gather warps, which copy the user buffers into and out of the NVLS buffers
when they are not registered (local memory traffic only; nothing crosses the fabric), the step flags
between them and the reduce warps, and the per-chunk fence of the posting warp (it overlaps the next
chunk's loads: NCCL gives it a warp of its own for that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ConfigError

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["NVLS_CHANNELS", "NVLS_CHUNK", "NVLS_ALIGN", "NVLS_HUNK", "NVLS_COARSE", "NVLS_OPS", "nvls_channels",
           "nvls_chunk", "nvls_workers", "chunks", "rounds", "nvls"]

NVLS_CHANNELS = 16  #: NCCL's NVLS channels on Hopper (``NVLS_NCHANNELS_SM90``, src/transport/nvls.cc)
NVLS_CHUNK = 128 * 1024  #: NCCL's largest NVLS chunk (``NCCL_NVLS_CHUNKSIZE`` default, src/transport/nvls.cc)
NVLS_ALIGN = 16384  #: the last loop's chunks are rounded up to this many bytes, also the smallest chunk
#: A warp's hunk: ``COLL_UNROLL`` (8 on sm_80 and later but sm_120, ``ncclCollUnroll``, src/include/device.h)
#: x 32 threads x a 16-byte pack (multimem.ld_reduce.v4 of float sums, ``LoadMultimem_BigPackSize``).
NVLS_HUNK = 8 * 32 * 16
NVLS_COARSE = 64  #: chunks of one GPU in one channel from which a chunk is one round (module docstring)
NVLS_OPS = ("all_reduce", "all_gather", "reduce_scatter")  #: the collectives NCCL runs by NVLS


def nvls_channels(S: int, k: int, limit: int) -> int:
    """Channels for S bytes on k GPUs: NCCL's ``nvlsChannels`` whatever the size (``enqueue.cc``, one node),
    within `limit` (S and k kept for the tuner's call)."""
    return max(1, limit)


def nvls_chunk(part: int, k: int) -> int:
    """NCCL's NVLS chunk for a channel part of `part` bytes on k GPUs (``calcCollChunking`` in ``enqueue.cc``,
    called per channel): 128 KiB, then 64 KiB below 64 k chunks, 32 KiB below 8 k, 16 KiB below 2 k."""
    chunk = NVLS_CHUNK
    for loops, smaller in ((64, 65536), (8, 32768), (2, 16384)):
        if part < loops * k * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def nvls_workers(k: int) -> int:
    """Worker warps of a channel on k GPUs: NCCL's reduce warps (``all_reduce.h``, unregistered buffers: 7 on
    at most 6 ranks, else 5) less the extra warp that posts (``prims_simple.h``: ``nworkers`` is one warp
    short when the group has ``NCCL_SIMPLE_EXTRA_GROUP_IF_NTHREADS_GE`` = 96 threads or more)."""
    return (7 if k <= 6 else 5) - 1


def rounds(n: int, k: int) -> list[tuple[int, int]]:
    """(offset, bytes) of the rounds of a chunk of n bytes on k GPUs: `nvls_workers` hunks each, the last shorter."""
    step = nvls_workers(k) * NVLS_HUNK
    return [(o, min(step, n - o)) for o in range(0, n, step)]


def chunks(part: int, k: int, g: int, chunk: int = NVLS_CHUNK) -> list[tuple[int, int]]:
    """(offset within the channel's part, bytes) of GPU g's chunks in a channel part of `part` bytes on k GPUs,
    whose full chunks are `chunk` bytes."""
    out = []
    loop = k * chunk
    for start in range(0, part, loop):
        size = chunk
        if part - start < loop:  # the last loop: its remainder over k, rounded up to the alignment
            share = -(-(part - start) // k)
            size = -(-share // NVLS_ALIGN) * NVLS_ALIGN
        first = start + g * size
        n = min(size, part - first)
        if n > 0:
            out.append((first, n))
    return out


def nvls(b: ProfileBuilder, op: str, S: int, k: int, channels: int, prefix: str, coarse: int = NVLS_COARSE) -> None:
    """Append the NVLS `op` of S bytes (the nccl-tests size) on GPUs 0..k-1 with `channels` channels (workgroups
    0..channels-1); `coarse`: chunks per GPU and channel from which a chunk is one round (module docstring)."""
    if op not in NVLS_OPS:
        raise ConfigError(f"algo: nvls runs {', '.join(NVLS_OPS)}; {op} does not run by NVLS")
    group = f"{prefix}nvls"
    b.multicast_group(group, gpus=list(range(k)))
    b.buffer(f"{prefix}nvls_in", nbytes=S)
    b.buffer(f"{prefix}nvls_out", nbytes=S)
    load = op in ("all_reduce", "reduce_scatter")
    store = op in ("all_reduce", "all_gather")
    for c in range(channels):
        flag = f"{prefix}nvls_done{c}"
        if store:
            b.flag(flag)
        for g in range(k):
            if op == "all_reduce":
                base, part = _split(S, channels, c)
                mine = [(base + off, n) for off, n in chunks(part, k, g, nvls_chunk(part, k))]
            else:  # GPU g's block of S / k, split over the channels, in chunks of the size a part of k blocks gets
                block_base, block = _split(S, k, g)
                base, part = _split(block, channels, c)
                size = nvls_chunk(part * k, k)
                mine = [(block_base + base + o, min(size, part - o)) for o in range(0, part, size)]
            p = b.program(g, c)
            for offset, n in mine:
                for off, m in ([(0, n)] if len(mine) >= coarse else rounds(n, k)):
                    if load:
                        p.reduce_load(group=group, buffer=f"{prefix}nvls_in", offset=offset + off, nbytes=m)
                    if store:
                        p.multicast(group=group, buffer=f"{prefix}nvls_out", offset=offset + off, nbytes=m)
            if store:
                p.fence()
                for peer in range(k):
                    if peer != g:
                        p.signal(dst=peer, flag=flag, op="add", value=1)
                p.wait(flag=flag, cond=">=", value=k - 1, mode="poll", interval_ns=100)


def _split(total: int, parts: int, i: int) -> tuple[int, int]:
    """(offset, size) of part i of `total` bytes in `parts` contiguous parts, the first (total mod parts) a byte longer."""
    q, r = divmod(total, parts)
    return i * q + min(i, r), q + (1 if i < r else 0)
