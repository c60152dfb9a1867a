"""The three NCCL/RCCL protocols as what they put on the wire, and their FIFO step sizes.

Figures from NVIDIA/nccl (``src/include/device.h``, ``collectives.h``, ``prims_*.h``) and ROCm/rccl, as
``docs/collectives.md`` lists them with their sources. Each is a default: the platform's ``collectives:``
section may not change them today, but every builder reads them from here, never from a literal.

- LL: 16-byte lines of 8 B data and two 4 B copies of the step flag, written by one 16 B store. The
  receiver polls the flags in the lines: the data carries its own flag, so a step is one `put` whose
  landing bumps the step counter. Buffer (``DEFAULT_LL_BUFFSIZE``: lines per thread 8 x threads x 8
  steps x 16 B) 512 KiB per connection in NCCL (512 threads) = 8 steps of 64 KiB of lines = 32 KiB of
  data per step; 256 KiB in RCCL (256 threads, its ``device.h``) = 16 KiB of data per step.
- LL128: 128-byte lines of 120 B data and an 8 B flag, also a `put`. Buffer 4,915,200 B (120 elements
  x 640 threads x 8 steps x 8 B) = 8 steps of 614,400 B of lines: 576,000 B of data per step. RCCL:
  64-byte lines of 56 B, 28 elements x 256 threads x 8 steps x 8 B = 458,752 B: 50,176 B of data a step.
- Simple: bulk data straight into the peer's FIFO slot, then a system fence and a store of the step
  counter: a `write` of the slice and a release `signal`. Buffer 4 MiB = 8 steps of 512 KiB. A slice
  of SLICESTEPS steps is one FIFO transfer; slices shrink for small chunks, to a floor of a 32nd of
  the full slice (``prims_simple.h``: ``max(divUp(nelem, 16 x SlicePerChunk) x 16, sliceSize / 32)``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Protocol", "PROTOCOL_NAMES", "NCCL_STEPS", "protocol", "passes", "wire_bytes", "SIMPLE_SLICE_FLOOR_DIV",
           "CHUNK_STEPS", "SLICE_STEPS"]

#: Slots of every connection FIFO (``NCCL_STEPS``): the sender runs at most this many steps ahead.
NCCL_STEPS = 8
#: The protocol names, in NCCL's order (``NCCL_PROTO_LL``, ``LL128``, ``SIMPLE``).
PROTOCOL_NAMES = ("LL", "LL128", "Simple")
#: The Simple slice floor is the full slice divided by this (``sliceSize / 32``).
SIMPLE_SLICE_FLOOR_DIV = 32
#: Simple steps per chunk, per collective (``*_CHUNKSTEPS``): ring collectives 4 (2 MiB), broadcast and reduce 1.
#: The point-to-point collectives have none: they move whole p2p chunks (`p2p.P2P_CHUNK`).
CHUNK_STEPS = {"all_reduce": 4, "all_gather": 4, "reduce_scatter": 4, "broadcast": 1, "reduce": 1}
#: Simple steps per slice (``*_SLICESTEPS``): ring collectives 2, broadcast and reduce 1.
SLICE_STEPS = {"all_reduce": 2, "all_gather": 2, "reduce_scatter": 2, "broadcast": 1, "reduce": 1}


@dataclass(frozen=True)
class Protocol:
    """One protocol of one library: its line format and FIFO geometry."""

    name: str        #: "LL", "LL128" or "Simple"
    line: int        #: wire bytes per line (0: Simple has no lines)
    payload: int     #: data bytes per line (0 for Simple)
    buffer: int      #: FIFO bytes per connection (wire bytes, all NCCL_STEPS slots)
    #: LL/LL128: wire bytes the receiving threads take per pass of their loop (0 for Simple). The primitive
    #: loops over a step in passes (``GenericOp`` in ``prims_ll.h``, ``prims_ll128.h``): each thread loads
    #: its lines of the pass once their flags show, reduces or copies them and stores them on to the next
    #: peer, so a step moves on pass by pass as it lands, not once all of it has. LL: one 16-byte line per
    #: thread a pass; LL128: each warp a slice of NCCL_LL128_SHMEM_ELEMS_PER_THREAD (8) x 8 B per thread.
    pass_wire: int = 0

    @property
    def flag_in_data(self) -> bool:
        """Whether the data carries its own flag (LL, LL128): a step is one `put`, no release."""
        return self.line > 0

    @property
    def step_wire(self) -> int:
        """Wire bytes of one FIFO slot."""
        return self.buffer // NCCL_STEPS

    @property
    def step_data(self) -> int:
        """Data bytes one FIFO slot carries: the slot's lines' payload (Simple: the whole slot)."""
        return self.step_wire if not self.line else self.step_wire // self.line * self.payload

    @property
    def efficiency(self) -> float:
        """Payload share of the wire bytes: LL 0.5, LL128 0.9375 (RCCL 0.875), Simple 1."""
        return 1.0 if not self.line else self.payload / self.line


def protocol(name: str, library: str = "nccl") -> Protocol:
    """The protocol `name` ("LL", "LL128", "Simple") as `library` ("nccl" or "rccl") runs it."""
    if name == "LL":  # 8 lines per thread x 8 steps x 16 B: NCCL 512 threads, RCCL 256
        threads = 512 if library == "nccl" else 256
        return Protocol("LL", 16, 8, threads * 1024, pass_wire=threads * 16)
    if name == "LL128":  # elements per thread x threads x 8 steps x 8 B: NCCL 120 x 640, RCCL 28 x 256
        # passes a step: NCCL 614,400 / (640 x 64) = 15, RCCL 57,344 / (256 x 64) = 3.5
        return (Protocol("LL128", 128, 120, 4_915_200, pass_wire=640 * 64) if library == "nccl"
                else Protocol("LL128", 64, 56, 458_752, pass_wire=256 * 64))
    if name == "Simple":
        return Protocol("Simple", 0, 0, 4 * 1024 * 1024)
    raise ValueError(f"protocol {name!r} is not one of {', '.join(PROTOCOL_NAMES)}")


def passes(proto: Protocol, data: int) -> int:
    """LL/LL128: the passes of the receiving loop over a unit of `data` bytes (at least 1); Simple: 1 (a
    slice is used only once all of it is in, after its release)."""
    if not proto.line:
        return 1
    return max(1, -(-wire_bytes(proto, data) // proto.pass_wire))


def wire_bytes(proto: Protocol, data: int) -> int:
    """Wire bytes that carry `data` bytes: whole lines for LL/LL128 (at least one line: a step with no data
    still writes its flag), the data itself for Simple (at least 1 B: a profile write is never empty)."""
    if not proto.line:
        return max(data, 1)
    return max(-(-data // proto.payload), 1) * proto.line
