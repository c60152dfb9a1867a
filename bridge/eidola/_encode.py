"""Encodes a Profile into the flat arrays the C++ models replay (`eidola/program.h`).

The numpy dtypes below mirror `eidola::Op` and `eidola::ProgramEntry` field for field; the C++
side asserts the struct sizes, and a test checks the offsets. Window layout: flag words first
(8 bytes each), then each data buffer at the next 4 KiB boundary, the same on every GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ConfigError, ProfileError

__all__ = ["OP_DTYPE", "PROGRAM_DTYPE", "EncodedProfile", "encode_profile", "BUFFER_ALIGN"]

OP_DTYPE = np.dtype([
    ("kind", "u1"), ("sub", "u1"), ("mode", "u1"), ("wake_all", "u1"), ("peer", "<i4"),
    ("offset", "<u8"), ("nbytes", "<u8"), ("value", "<i8"), ("compare", "<i8"),
    ("time_ps", "<i8"), ("time2_ps", "<i8"),
])
PROGRAM_DTYPE = np.dtype([("gpu", "<i4"), ("wg", "<i4"), ("first", "<i8"), ("count", "<i8")])
assert OP_DTYPE.itemsize == 56 and PROGRAM_DTYPE.itemsize == 24

BUFFER_ALIGN = 4096
_KINDS = {"compute": 0, "write": 1, "read": 2, "signal": 3, "wait": 4, "local": 5}
CONDS = ("==", "!=", ">=", ">", "<=", "<")
MODES = ("poll", "spin_yield", "syncmon")
_ATOMICS = {"add": 0, "set": 1, "cas": 2}
_SUPPORTED_MODES = {"poll", "spin_yield"}


@dataclass(frozen=True)
class EncodedProfile:
    """A profile as the models take it."""

    ops: np.ndarray            #: OP_DTYPE records, all programs back to back
    programs: np.ndarray       #: PROGRAM_DTYPE records
    flags: tuple               #: flag names, in window order
    buffer_offsets: dict       #: buffer name -> byte offset in every window
    window_bytes: int          #: bytes of each window the profile uses


def _ps(ns) -> int:
    return int(round(ns * 1000))


def encode_profile(profile, gpu_workgroups: int, gpu_count: int, stride: int) -> EncodedProfile:
    """Encodes `profile` for a platform of `gpu_count` GPUs with `gpu_workgroups` each; ConfigError if it does not fit."""
    if profile.gpus > gpu_count:
        raise ConfigError(f"profile {profile.name!r} needs {profile.gpus} GPUs; the platform has {gpu_count}")
    if profile.workgroups > gpu_workgroups:
        raise ConfigError(f"profile {profile.name!r} needs {profile.workgroups} workgroups per GPU; the platform's "
                          f"GPUs have {gpu_workgroups} (gpus.workgroups)")
    flag_index = {name: i for i, name in enumerate(profile.flags)}
    offset = -(-8 * len(profile.flags) // BUFFER_ALIGN) * BUFFER_ALIGN
    buffers = {}
    for name, nbytes in profile.buffers:
        buffers[name] = offset
        offset += -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
    if offset > stride:
        raise ConfigError(f"profile {profile.name!r} needs {offset} bytes per GPU window; address_map.stride is {stride}")

    n_ops = sum(len(ops) for _, ops in profile.programs)
    ops_arr = np.zeros(n_ops, dtype=OP_DTYPE)
    progs = np.zeros(len(profile.programs), dtype=PROGRAM_DTYPE)
    rows = []
    first = 0
    for p_index, ((gpu, wg), ops) in enumerate(profile.programs):
        progs[p_index] = (gpu, wg, first, len(ops))
        for i, op in enumerate(ops):
            rows.append(_encode_op(op, flag_index, buffers, profile.name, gpu, wg, i))
        first += len(ops)
    if rows:
        ops_arr[:] = np.array(rows, dtype=OP_DTYPE)
    return EncodedProfile(ops_arr, progs, tuple(profile.flags), buffers, offset)


def _encode_op(op, flag_index, buffers, name, gpu, wg, i):
    k = op.kind
    # (kind, sub, mode, wake_all, peer, offset, nbytes, value, compare, time_ps, time2_ps)
    if k == "compute":
        if op["cycles"] is not None:
            return (0, 0, 1, 0, 0, 0, 0, int(op["cycles"]), 0, 0, 0)
        return (0, 0, 0, 0, 0, 0, 0, 0, 0, _ps(op["ns"]), 0)
    if k in ("write", "read"):
        return (_KINDS[k], 0, 0, 0, op["dst"], buffers[op["buffer"]] + op["offset"], op["nbytes"], 0, 0, 0, 0)
    if k == "signal":
        compare = op["compare"] if op["compare"] is not None else 0
        return (3, _ATOMICS[op["op"]], 0, 0, op["dst"], 8 * flag_index[op["flag"]], 8, op["value"], compare, 0, 0)
    if k == "wait":
        if op["mode"] not in _SUPPORTED_MODES:
            raise ProfileError(f"profile {name!r}: gpu {gpu} wg {wg} op {i} (wait): mode {op['mode']!r} is not "
                               f"supported by this build (supported: {', '.join(sorted(_SUPPORTED_MODES))})")
        interval = _ps(op["interval_ns"])
        max_interval = _ps(op["max_interval_ns"]) if op["max_interval_ns"] is not None else 16 * interval
        return (4, CONDS.index(op["cond"]), MODES.index(op["mode"]), 1 if op["wake"] == "all" else 0, 0,
                8 * flag_index[op["flag"]], 8, op["value"], 0, interval, max_interval)
    if k == "local":
        return (5, 0, 0, 0, 0, op["reads"], op["nbytes"], op["writes"], 0, 0, 0)
    raise ProfileError(f"profile {name!r}: gpu {gpu} wg {wg} op {i}: unknown op kind {k!r}")
