"""NVLS (NVLink SHARP) collectives inside one node, as NCCL's ``src/device/all_reduce.h``,
``all_gather.h`` and ``reduce_scatter.h`` run them (``RunWorkColl<..., NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>``).

The GPUs form one multicast group. Channel c is a thread block of every GPU (at most `NVLS_CHANNELS`),
modelled as W workgroups, its warp groups (`nvls_warps`: NCCL's reduce warps, 5 on more than 6 GPUs, 7
on fewer, as many as the GPU's workgroups allow): workgroups c W .. c W + W - 1.
Each channel takes a contiguous part of the buffer and walks it in loops of k chunks, one per GPU
("head"): in every loop GPU g works on chunk g, at most `NVLS_CHUNK` bytes (the last loop's chunks
are its remainder over k, rounded up to 16 KiB as NCCL rounds them, so a GPU may get less or none).
Per chunk, split into `NVLS_ROUNDS` x W pieces of whole `NVLS_UNIT`s, piece j done by warp j mod W (NCCL's
warps take the chunk's units in turn, each a load-reduce then a store, so a warp's next load overlaps its
store and the W warps' loads are in flight together; a blocking load per warp group keeps W in flight
per channel, where one per channel left the switch idle while the chunk's multicast went out):

- all_reduce: ``reduce_load`` of the chunk from the group (multimem.ld_reduce: the switch reads the
  k members' copies and sums them), then ``multicast`` of the sum to the same offset of every
  member's output (multimem.st). The multicast is posted, so the warp's next load overlaps it.
- reduce_scatter: ``reduce_load`` of the chunk (the buffer is the input of k x the output; GPU g
  owns block g and reduces its part of it).
- all_gather: ``multicast`` of the GPU's own block (the buffer is the gathered output; GPU g's input
  is block g).

All-reduce and all-gather end with a barrier per channel, kept by each of its warp groups (the model
has no barrier between workgroups of one GPU): a fence (every multicast of the warp acknowledged,
which the switch sends only once every member has its copy), then a signal to every peer's flag of
that channel and a wait until the (k-1) x W peer warps' signals are in: a GPU's output is complete
when its peers' multicasts are. Reduce-scatter needs none: each GPU's result is what its own loads returned.

Left out: NCCL's scatter and gather warps, which copy the user buffers into and out of the NVLS
buffers when they are not registered (local memory traffic only; nothing crosses the fabric), and
the step flags between those warps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import ConfigError

if TYPE_CHECKING:
    from ..builder import ProfileBuilder

__all__ = ["NVLS_CHANNELS", "NVLS_CHUNK", "NVLS_ALIGN", "NVLS_UNIT", "NVLS_ROUNDS", "NVLS_OPS", "nvls_channels",
           "nvls_warps", "chunks", "pieces", "nvls"]

NVLS_CHANNELS = 16  #: NCCL's NVLS channels on Hopper (``NVLS_NCHANNELS_SM90``, src/transport/nvls.cc)
NVLS_CHUNK = 128 * 1024  #: NCCL's NVLS chunk (``NCCL_NVLS_CHUNKSIZE`` default)
NVLS_ALIGN = 16384  #: the last loop's chunks are rounded up to this many bytes (all_reduce.h)
NVLS_UNIT = 512  #: a warp's load or store unit: 32 threads x 16 B (one multimem.ld_reduce.v4 each)
#: Pieces per warp per chunk. NCCL's warps walk a chunk in units of 512 x unroll bytes, a dozen turns per
#: chunk; the model coarsens that to NVLS_ROUNDS turns (ops grow with it): enough for a warp's load to
#: overlap its previous store, few enough that a 16 GiB all-reduce stays a few million ops.
NVLS_ROUNDS = 4
NVLS_OPS = ("all_reduce", "all_gather", "reduce_scatter")  #: the collectives NCCL runs by NVLS


def nvls_channels(S: int, k: int, limit: int) -> int:
    """Channels for S bytes on k GPUs: up to `limit`, but no more than give every channel one aligned chunk per GPU
    (NCCL drops channels for small messages; this is our rule for when, not NCCL's)."""
    return max(1, min(limit, S // (k * NVLS_ALIGN)))


def nvls_warps(k: int, channels: int, workgroups: int) -> int:
    """Warp groups per channel on k GPUs: NCCL's reduce warps of the one-node NVLS all-reduce (all_reduce.h,
    unregistered buffers: 7 on at most 6 ranks, else 5), no more than `workgroups` / `channels` allow."""
    return max(1, min(7 if k <= 6 else 5, workgroups // channels))


def pieces(n: int, parts: int) -> list[tuple[int, int]]:
    """(offset, bytes) of `n` bytes in up to `parts` contiguous pieces of whole NVLS_UNITs (the last takes the
    bytes beyond the last whole unit), none empty."""
    units = -(-n // NVLS_UNIT)
    out = []
    for i in range(min(parts, units)):
        first, count = _split(units, min(parts, units), i)
        off = first * NVLS_UNIT
        out.append((off, min(count * NVLS_UNIT, n - off)))
    return out


def _split(total: int, parts: int, i: int) -> tuple[int, int]:
    """(offset, size) of part i of `total` bytes in `parts` contiguous parts, the first (total mod parts) a byte longer."""
    q, r = divmod(total, parts)
    return i * q + min(i, r), q + (1 if i < r else 0)


def chunks(part: int, k: int, g: int) -> list[tuple[int, int]]:
    """(offset within the channel's part, bytes) of GPU g's chunks in a channel part of `part` bytes on k GPUs."""
    out = []
    loop = k * NVLS_CHUNK
    for start in range(0, part, loop):
        chunk = NVLS_CHUNK
        if part - start < loop:  # the last loop: its remainder over k, rounded up to the alignment
            share = -(-(part - start) // k)  # the remainder over k, rounded up
            chunk = -(-share // NVLS_ALIGN) * NVLS_ALIGN
        first = start + g * chunk
        n = min(chunk, part - first)
        if n > 0:
            out.append((first, n))
    return out


def nvls(b: ProfileBuilder, op: str, S: int, k: int, channels: int, prefix: str) -> None:
    """Append the NVLS `op` of S bytes (the nccl-tests size) on GPUs 0..k-1 with `channels` channels."""
    if op not in NVLS_OPS:
        raise ConfigError(f"algo: nvls runs {', '.join(NVLS_OPS)}; {op} does not run by NVLS")
    group = f"{prefix}nvls"
    b.multicast_group(group, gpus=list(range(k)))
    b.buffer(f"{prefix}nvls_in", nbytes=S)
    b.buffer(f"{prefix}nvls_out", nbytes=S)
    load = op in ("all_reduce", "reduce_scatter")
    store = op in ("all_reduce", "all_gather")
    W = nvls_warps(k, channels, b.workgroups)
    for c in range(channels):
        flag = f"{prefix}nvls_done{c}"
        if store:
            b.flag(flag)
        for g in range(k):
            if op == "all_reduce":
                base, part = _split(S, channels, c)
                mine = [(base + off, n) for off, n in chunks(part, k, g)]
            else:  # GPU g's block of S / k, split over the channels (each channel's share chunked alike)
                block_base, block = _split(S, k, g)
                base, part = _split(block, channels, c)
                mine = [(block_base + base + off, n) for off, n in _own_chunks(part)]
            warps = [b.program(g, c * W + w) for w in range(W)]
            for offset, n in mine:
                for j, (off, m) in enumerate(pieces(n, NVLS_ROUNDS * W)):
                    p = warps[j % W]
                    if load:
                        p.reduce_load(group=group, buffer=f"{prefix}nvls_in", offset=offset + off, nbytes=m)
                    if store:
                        p.multicast(group=group, buffer=f"{prefix}nvls_out", offset=offset + off, nbytes=m)
            if store:
                for p in warps:
                    p.fence()
                    for peer in range(k):
                        if peer != g:
                            p.signal(dst=peer, flag=flag, op="add", value=1)
                    p.wait(flag=flag, cond=">=", value=(k - 1) * W, mode="poll", interval_ns=100)


def _own_chunks(part: int) -> list[tuple[int, int]]:
    """(offset, bytes) chunks of a part that one GPU handles alone (its own block), NVLS_CHUNK at most."""
    return [(o, min(NVLS_CHUNK, part - o)) for o in range(0, part, NVLS_CHUNK)]
