"""Encodes a Profile into the flat arrays the C++ models replay (`eidola/program.h`).

The numpy dtypes below mirror `eidola::Op` and `eidola::ProgramEntry` field for field; the C++
side asserts the struct sizes, and a test checks the offsets. Window layout: flag words first
(8 bytes each), then each data buffer at the next 4 KiB boundary, the same on every GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ConfigError, ProfileError
from ..platform import catalog
from ..platform.elaborate import Plan
from ..workload import variability
from ..workload.ops import MULTIMEM_KINDS, Op
from ..workload.pages import small_pages
from ..workload.profile import Profile
from ..workload.table import OpTable
from .encode_traffic import EncodedTraffic, encode_traffic

__all__ = ["OP_DTYPE", "PROGRAM_DTYPE", "EncodedProfile", "encode_profile", "BUFFER_ALIGN"]

OP_DTYPE = np.dtype([
    ("kind", "u1"), ("sub", "u1"), ("mode", "u1"), ("option", "u1"), ("peer", "<i4"),
    ("offset", "<u8"), ("nbytes", "<u8"), ("value", "<i8"), ("compare", "<i8"),
    ("time_ps", "<i8"), ("time2_ps", "<i8"),
])
PROGRAM_DTYPE = np.dtype([("gpu", "<i4"), ("wg", "<i4"), ("first", "<i8"), ("count", "<i8")])
assert OP_DTYPE.itemsize == 56 and PROGRAM_DTYPE.itemsize == 24
_RECORD_ITEM = np.dtype((np.void, OP_DTYPE.itemsize))  # one op record as one opaque item, for gathering

BUFFER_ALIGN = 4096
_MAX_PS = 9.2e18  # below 2^63: the longest time a scaled compute phase may take, in ps


def _codes(enum: str) -> dict[str, int]:
    """Name -> code of an enum shared with C++ (declared there, read through the catalog)."""
    return {name: code for code, name in enumerate(catalog.enum(enum))}


@dataclass(frozen=True)
class EncodedProfile:
    """A profile as the models take it."""

    ops: np.ndarray            #: OP_DTYPE records, all programs back to back
    programs: np.ndarray       #: PROGRAM_DTYPE records
    flags: tuple[Any, ...]               #: flag names, in window order
    buffer_offsets: dict[str, Any]       #: buffer name -> byte offset in every window
    window_bytes: int          #: bytes of each window the profile uses
    traffic: EncodedTraffic | None = None  #: the synthetic traffic section, if any
    multicast_groups: tuple[tuple[int, ...], ...] = ()  #: member GPUs of each multicast group, by index


def _ps(ns: float) -> int:
    return round(ns * 1000)


@small_pages
def encode_profile(profile: Profile, plan: Plan, seed: int = 1) -> EncodedProfile:
    """Encodes `profile` for the elaborated platform `plan`; ConfigError if it does not fit.

    The profile's variability is drawn here, from `seed`: compute phases are scaled by their
    skew x jitter factors (cycle counts are first turned into time at the eidolons' clock), and a
    held-back workgroup's first communication op carries its hold in `time2_ps`.
    """
    gpu_count, gpu_workgroups, stride = len(plan.gpus), plan.workgroups, plan.stride
    table = profile.table
    clocks = {g.clock_hz for g in plan.eidolons()}
    if len(clocks) > 1 and any(isinstance(t, Op) and t.kind == "compute" and t["cycles"] is not None
                               for t in table.templates):
        raise ConfigError(f"platform {plan.name!r}: compute(cycles=...) with variability needs one clock for "
                          "all GPUs")
    if profile.gpus > gpu_count:
        raise ConfigError(f"profile {profile.name!r} needs {profile.gpus} GPUs; the platform has {gpu_count}")
    if profile.workgroups > gpu_workgroups:
        raise ConfigError(f"profile {profile.name!r} needs {profile.workgroups} workgroups per GPU; the platform's "
                          f"GPUs have {gpu_workgroups} (gpus.workgroups)")
    replays = [g.replays_profile for g in plan.gpus]
    for g, w in table.keys:
        if not replays[g]:
            raise ConfigError(f"profile {profile.name!r} has a program for gpu {g} wg {w}, but GPU {g} is a plugin "
                              "model, which runs its own behaviour")
    _check_nvls(profile, plan)
    flag_index = {name: i for i, name in enumerate(profile.flags)}
    group_index = {name: i for i, (name, _) in enumerate(profile.multicast_groups)}
    offset = -(-8 * len(profile.flags) // BUFFER_ALIGN) * BUFFER_ALIGN
    buffers = {}
    for name, nbytes in profile.buffers:
        buffers[name] = offset
        offset += -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
    if offset > stride:
        raise ConfigError(f"profile {profile.name!r} needs {offset} bytes per GPU window; address_map.stride is {stride}")

    codes = {name: _codes(name)
             for name in ("op_kind", "atomic", "cond", "wait_mode", "compute_unit", "write_mode", "release_scope")}
    # One record per template, gathered by each row's ref; a transfer's row then supplies its peer,
    # its offset within the buffer and its size (the columnar profile: see workload/table.py).
    # A template is encoded as its op with peer, in-buffer offset and nbytes 0: a row supplies those.
    records = np.array([_encode_op(OpTable.op_of(t, 0, 0, 0), flag_index, buffers, codes, group_index)
                        for t in table.templates], dtype=OP_DTYPE)
    ops_arr = _gather(records, table)
    progs = np.zeros(len(table.keys), dtype=PROGRAM_DTYPE)
    if table.keys:
        keys = np.array(table.keys, dtype=np.int64)
        progs["gpu"], progs["wg"] = keys[:, 0], keys[:, 1]
        progs["first"], progs["count"] = table.starts[:-1], np.diff(table.starts)
    _apply_variability(profile, ops_arr, progs, seed, min(clocks))
    traffic = encode_traffic(profile.traffic, plan, offset) if profile.traffic is not None else None
    return EncodedProfile(ops_arr, progs, tuple(profile.flags), buffers, offset, traffic,
                          tuple(members for _, members in profile.multicast_groups))


#: Ops encoded per block: a block's records (3.7 MB) stay in cache while its rows' values are filled in.
_BLOCK = 1 << 16


def _gather(records: np.ndarray[Any, np.dtype[Any]], table: OpTable) -> np.ndarray[Any, np.dtype[Any]]:
    """Every row's template record, with the row's peer, in-buffer offset and size filled in.

    Gathered as opaque 56-byte items and filled in place under masks: numpy's fancy indexing of a
    structured array, and boolean-mask assignment to its fields, each cost seconds at ten million
    ops. Done a block of rows at a time, so the fill reads records the gather has just written
    rather than going over hundreds of megabytes four times.
    """
    rows = table.rows
    n = len(rows)
    is_transfer, has_peer = table.template_mask("write", "read", "put"), table.template_mask("write", "read", "put", "signal")
    ops_arr = np.empty(n, dtype=OP_DTYPE)
    items, flat = records.view(_RECORD_ITEM), ops_arr.view(_RECORD_ITEM)
    for lo in range(0, n, _BLOCK):
        hi = min(lo + _BLOCK, n)
        block, part = ops_arr[lo:hi], rows[lo:hi]
        refs = part[:, 0]
        np.take(items, refs, out=flat[lo:hi])
        transfer, peer = is_transfer[refs], has_peer[refs]
        np.copyto(block["peer"], part[:, 1], casting="unsafe", where=peer)
        np.add(block["offset"], part[:, 2].astype(np.uint64), out=block["offset"], where=transfer)
        np.copyto(block["nbytes"], part[:, 3], casting="unsafe", where=transfer)
    return ops_arr


def _check_nvls(profile: Profile, plan: Plan) -> None:
    """Refuses multicast / reduce_load ops unless every fabric is a packet or flow fabric with fabric.switch.nvls."""
    used = next((t for t in profile.table.templates if isinstance(t, Op) and t.kind in MULTIMEM_KINDS), None)
    if used is None:
        return
    for c in plan.components:
        if c.role != "fabric":
            continue
        switch = c.spec.name in ("PacketFabric", "FlowFabric")
        if not switch or not float(c.value("switch.nvls.reduce_bandwidth") or 0) > 0:
            kind = "packet" if c.spec.name == "PacketFabric" else "flow"
            what = f"a {kind} fabric without fabric.switch.nvls" if switch else \
                f"the {c.spec.name} fabric, which has no NVLS switch"
            raise ConfigError(f"profile {profile.name!r}: op {used.kind} (group {used['group']!r}) needs an NVLS "
                              f"switch (fabric.model: packet or flow, topology: switch, fabric.switch.nvls: "
                              f"{{reduce_bandwidth: ..., latency: ...}}); platform {plan.name!r} has {what}")


def _apply_variability(profile: Profile, ops_arr: np.ndarray[Any, np.dtype[Any]], progs: np.ndarray[Any, np.dtype[Any]],
                       seed: int, clock_hz: float) -> None:
    if not profile.variability:  # nothing to draw: skip the per-program pass (it dominates large profiles)
        return
    scales = variability.compute_scales(profile, seed)
    holds = variability.hold_ns(profile)
    kinds = _codes("op_kind")
    compute = ops_arr["kind"] == kinds["compute"]
    units = _codes("compute_unit")
    cycles = compute & (ops_arr["mode"] == units["cycles"])
    for p_index, key in enumerate(profile.table.keys):
        first, count = int(progs[p_index]["first"]), int(progs[p_index]["count"])
        view = ops_arr[first:first + count]
        factors = scales.get(key)
        if factors is not None and np.any(factors != 1.0):
            c, cyc = compute[first:first + count], cycles[first:first + count]
            # Cycle counts become time first: a factor on a cycle count would not stay an integer.
            view["time_ps"][cyc] = np.rint(view["value"][cyc] * 1e12 / clock_hz).astype(np.int64)
            view["mode"][cyc] = units["ns"]
            # Clipped: a wide distribution may draw a factor that would overflow 64-bit picoseconds.
            scaled = np.clip(np.rint(view["time_ps"][c] * np.maximum(factors[c], 0.0)), 0, _MAX_PS)
            view["time_ps"][c] = scaled.astype(np.int64)
        hold = holds.get(key)
        if hold:
            comm = np.flatnonzero(np.isin(view["kind"], [kinds[k] for k in ("write", "read", "put", "signal",
                                                                             *MULTIMEM_KINDS)]))
            if comm.size:
                view["time2_ps"][comm[0]] = _ps(hold)


def _encode_op(op: Op, flag_index: dict[str, int], buffers: dict[str, int],
               codes: dict[str, dict[str, int]], group_index: dict[str, int]) -> tuple[int, ...]:
    """One op as an OP_DTYPE record: (kind, sub, mode, option, peer, offset, nbytes, value, compare, time_ps,
    time2_ps); field use per kind is documented at eidola::Op."""
    k = op.kind
    a = op.as_dict()  # one dict per template: Op.__getitem__ walks the arguments on every lookup
    kind = codes["op_kind"][k]
    if k == "compute":
        if a["cycles"] is not None:
            return (kind, 0, codes["compute_unit"]["cycles"], 0, 0, 0, 0, int(a["cycles"]), 0, 0, 0)
        return (kind, 0, codes["compute_unit"]["ns"], 0, 0, 0, 0, 0, 0, _ps(a["ns"]), 0)
    if k == "write":
        mode = codes["write_mode"]["blocking" if a["blocking"] else "posted"]
        return (kind, 0, mode, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, 0, 0, 0)
    if k == "read":
        return (kind, 0, 0, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, 0, 0, 0)
    if k == "put":  # compare holds the landing flag's window offset (see eidola::Op)
        return (kind, codes["atomic"][a["op"]], 0, 0, a["dst"], buffers[a["buffer"]] + a["offset"], a["nbytes"],
                a["value"], 8 * flag_index[a["flag"]], 0, 0)
    if k in MULTIMEM_KINDS:  # compare holds the multicast group's index; no peer (see eidola::Op)
        return (kind, 0, 0, 0, -1, buffers[a["buffer"]] + a["offset"], a["nbytes"], 0, group_index[a["group"]],
                0, 0)
    if k == "fence":
        return (kind, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    if k == "signal":
        compare = a["compare"] if a["compare"] is not None else 0
        return (kind, codes["atomic"][a["op"]], codes["release_scope"][a["scope"]], int(a["overlap"]), a["dst"],
                8 * flag_index[a["flag"]], 8, a["value"], compare, 0, 0)
    if k == "wait":
        return (kind, codes["cond"][a["cond"]], codes["wait_mode"][a["mode"]], 1 if a["wake"] == "all" else 0, 0,
                8 * flag_index[a["flag"]], 8, a["value"], 0, _ps(a["interval_ns"]), _ps(a["max_interval_ns"]))
    if k == "local":
        return (kind, 0, 0, 0, 0, a["reads"], a["nbytes"], a["writes"], 0, 0, 0)
    raise ProfileError(f"unknown op kind {k!r}")
