"""Timing profiles: per-(gpu, workgroup) op programs, as an immutable, validated value.

A profile declares per-GPU flags (one 8-byte word each) and data buffers, then lists, for each
workgroup of each GPU, the ops it issues in order: compute phases, peer writes/reads, atomic
signals on peer flags, waits on local flags and local memory traffic. An optional `variability`
section (skew, jitter, wake-up delays; see `variability`) says how a real run strays from it.
Profiles are made by the builder (`builder.ProfileBuilder`) or read from files (`profile_yaml`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ProfileError
from .checks import Invalid, Scope, check_header, check_int
from .ops import MULTIMEM_KINDS, OP_KINDS, Op, explicit_args
from .pages import small_pages
from .table import OpTable
from .variability import NO_VARIABILITY, Variability, parse_variability

if TYPE_CHECKING:
    from .traffic import TrafficSpec

__all__ = ["Profile", "FORMAT_VERSION"]

#: The eidola_profile version this writer speaks. Version 2 made writes posted and signals releases;
#: version 1 files are read with their writes blocking, as they were then (see `_upgrade_v1`).
FORMAT_VERSION = 2
_TOP_KEYS = ("eidola_profile", "name", "gpus", "workgroups", "flags", "buffers", "multicast_groups", "variability",
             "traffic", "programs")
_PROGRAM_KEYS = ("gpu", "wg", "ops")


@dataclass(frozen=True)
class Profile:
    """An immutable, validated timing profile; compare with ==, save() to YAML, load_profile() back."""

    name: str
    gpus: int
    workgroups: int
    flags: tuple[str, ...]
    buffers: tuple[tuple[str, int], ...]
    table: OpTable            #: the programs, columnar (see `table`); `programs` gives them as Ops
    variability: Variability = NO_VARIABILITY  # see eidola.variability; falsy when the profile has none
    traffic: TrafficSpec | None = None  # synthetic traffic run beside the programs (see eidola.workload.traffic)
    #: NVLS multicast groups, (name, member GPUs) in declaration order (multicast and reduce_load name one)
    multicast_groups: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @cached_property
    def _index(self) -> dict[tuple[int, int], int]:
        return {key: i for i, key in enumerate(self.table.keys)}

    @cached_property
    def programs(self) -> tuple[tuple[tuple[int, int], tuple[Op, ...]], ...]:
        """Every program with ops, ((gpu, wg), ops) in (gpu, wg) order (made from the table on first use)."""
        return tuple((key, self.table.program(i)) for i, key in enumerate(self.table.keys))

    @property
    def program_keys(self) -> list[tuple[int, int]]:
        """The (gpu, wg) of every program with ops, in order, without making its Ops."""
        return self.table.keys

    def program(self, gpu: int, wg: int) -> tuple[Op, ...]:
        """Return the ops of workgroup `wg` on GPU `gpu` (an empty tuple if it has none)."""
        i = self._index.get((gpu, wg))
        return () if i is None else self.table.program(i)

    def buffer_size(self, name: str) -> int:
        """Return the size in bytes of buffer `name` (KeyError if undeclared)."""
        return dict(self.buffers)[name]

    @small_pages
    def used_gpus(self) -> frozenset[int]:
        """The GPUs the profile involves: those that run a program and those its ops address."""
        t = self.table
        used = {g for g, _ in t.keys}
        # Counted rather than np.unique'd: the peers are GPU numbers below self.gpus (checked when added).
        peers = np.bincount(t.rows[t.kind_mask("write", "read", "put", "signal"), 1], minlength=self.gpus)
        used.update(np.flatnonzero(peers).tolist())
        groups = dict(self.multicast_groups)  # a multimem op addresses every member of its group
        for template in t.templates:
            if isinstance(template, Op) and template.kind in MULTIMEM_KINDS:
                used.update(groups[template["group"]])
        return frozenset(used)

    def ops_count(self) -> int:
        """Return the total number of ops over all programs."""
        return len(self.table)

    def to_dict(self) -> dict[str, Any]:
        """Return the plain dict/list form written to files (defaulted op args are left out)."""
        d: dict[str, Any] = {
            "eidola_profile": FORMAT_VERSION, "name": self.name, "gpus": self.gpus,
            "workgroups": self.workgroups, "flags": list(self.flags), "buffers": dict(self.buffers),
        }
        if self.multicast_groups:
            d["multicast_groups"] = {name: list(members) for name, members in self.multicast_groups}
        if self.variability:
            d["variability"] = self.variability.to_dict()
        if self.traffic is not None:
            d["traffic"] = self.traffic.to_dict()
        d["programs"] = [{"gpu": g, "wg": w, "ops": [[op.kind, explicit_args(op)] for op in ops]}
                         for (g, w), ops in self.programs]
        return d

    @classmethod
    def from_dict(cls, d: Any, source: str = "<dict>") -> Profile:
        """Validate the dict form (as read from a file) and return a Profile; errors name `source`."""
        return _from_dict(d, source)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the profile as YAML to `path`."""
        from .profile_yaml import write_profile  # the writer needs this class; imported late to avoid a cycle

        with open(path, "w", encoding="utf-8") as f:
            write_profile(self, f.write)


# ---------------------------------------------------------------- reading

def _where(source: str, text: str) -> str:
    return f"{source}: {text}"


def _from_dict(d: Any, source: str) -> Profile:
    if not isinstance(d, dict):
        raise ProfileError(_where(source, f"expected a mapping with keys {', '.join(_TOP_KEYS)}, got {type(d).__name__}"))
    if "eidola" in d and "eidola_profile" not in d:  # a platform given where a profile goes (--profile)
        raise ProfileError(_where(source, "this is a platform file (it has the key 'eidola'), not a profile; "
                                          "pass it as the PLATFORM argument, and a profile (eidola_profile: "
                                          f"{FORMAT_VERSION}) with --profile"))
    for key in d:
        if key not in _TOP_KEYS:
            raise ProfileError(_where(source, f"unknown key {key!r} (allowed: {', '.join(_TOP_KEYS)})"))
    for key in ("eidola_profile", "name", "gpus", "workgroups"):
        if key not in d:
            raise ProfileError(_where(source, f"missing key {key!r}"))
    version = d["eidola_profile"]
    if type(version) is not int or version not in (1, FORMAT_VERSION):
        raise ProfileError(_where(source, f"unsupported eidola_profile version {version!r} (expected {FORMAT_VERSION}, "
                                          "or 1, which is upgraded on reading)"))
    if version == 1:
        _upgrade_v1(d.get("programs"))
    name, gpus, workgroups = d["name"], d["gpus"], d["workgroups"]
    flags, buffers = d.get("flags") or [], d.get("buffers") or {}
    try:
        check_header(name, gpus, workgroups)
        if not isinstance(flags, list):
            raise Invalid(f"flags must be a list of names, got {type(flags).__name__}")
        if not isinstance(buffers, dict):
            raise Invalid(f"buffers must be a mapping of name to nbytes, got {type(buffers).__name__}")
        scope = Scope(gpus)
        for f in flags:
            scope.declare_flag(f)
        for b, nbytes in buffers.items():
            scope.declare_buffer(b, nbytes)
        groups = d.get("multicast_groups") or {}
        if not isinstance(groups, dict):
            raise Invalid(f"multicast_groups must be a mapping of name to a list of GPUs, got {type(groups).__name__}")
        for g, members in groups.items():
            scope.declare_group(g, members)
    except Invalid as e:
        raise ProfileError(_where(source, str(e))) from None
    variability = parse_variability(d.get("variability"), gpus, workgroups, _where(source, "variability"))
    programs = _read_programs(d.get("programs") or [], scope, gpus, workgroups, source)
    traffic = None
    if d.get("traffic") is not None:
        from .traffic import TrafficSpec  # traffic builds Profiles: imported late to avoid a cycle

        traffic = TrafficSpec.from_dict(d["traffic"], _where(source, "traffic"))
        if traffic.gpus > gpus:
            raise ProfileError(_where(source, f"traffic: gpus = {traffic.gpus} but the profile has {gpus}"))
    return Profile(name, gpus, workgroups, tuple(scope.flags), tuple(scope.buffers.items()), OpTable.from_ops(programs),
                   variability, traffic, tuple(scope.groups.items()))


def _upgrade_v1(programs: object) -> None:
    """Version 1 writes completed on their last acknowledgement: keep that meaning (blocking=True).

    Its signals become releases, which they already were in effect (every earlier write had been
    acknowledged), but the workgroup no longer waits for the signal's own acknowledgement.
    """
    if not isinstance(programs, list):
        return  # the reader reports what is wrong with it
    for program in programs:
        for raw in program.get("ops", ()) if isinstance(program, dict) and isinstance(program.get("ops"), list) else ():
            if isinstance(raw, list) and len(raw) == 2 and raw[0] == "write" and isinstance(raw[1], dict):
                raw[1].setdefault("blocking", True)


def _read_programs(raw_programs: Any, scope: Scope, gpus: int, workgroups: int,
                   source: str) -> tuple[tuple[tuple[int, int], tuple[Op, ...]], ...]:
    if not isinstance(raw_programs, list):
        raise ProfileError(_where(source, f"programs must be a list, got {type(raw_programs).__name__}"))
    seen: dict[tuple[int, int], tuple[int, tuple[Op, ...]]] = {}
    for j, rp in enumerate(raw_programs):
        here = f"programs[{j}]"
        try:
            if not isinstance(rp, dict):
                raise Invalid(f"expected a mapping with keys {', '.join(_PROGRAM_KEYS)}, got {type(rp).__name__}")
            for key in rp:
                if key not in _PROGRAM_KEYS:
                    raise Invalid(f"unknown key {key!r} (allowed: {', '.join(_PROGRAM_KEYS)})")
            for key in _PROGRAM_KEYS:
                if key not in rp:
                    raise Invalid(f"missing key {key!r}")
            gpu = check_int("gpu", rp["gpu"], hi=gpus - 1)
            wg = check_int("wg", rp["wg"], hi=workgroups - 1)
            if (gpu, wg) in seen:
                raise Invalid(f"duplicate program for gpu {gpu} wg {wg} (first at programs[{seen[gpu, wg][0]}])")
            if not isinstance(rp["ops"], list):
                raise Invalid(f"ops must be a list, got {type(rp['ops']).__name__}")
        except Invalid as e:
            raise ProfileError(_where(source, f"{here}: {e}")) from None
        seen[gpu, wg] = (j, _read_ops(rp["ops"], scope, f"gpu {gpu} wg {wg}", source))
    return tuple((key, ops) for key, (_, ops) in sorted(seen.items()) if ops)


def _read_ops(raw_ops: list[Any], scope: Scope, here: str, source: str) -> tuple[Op, ...]:
    ops: list[Op] = []
    append = ops.append
    memo = scope.memo
    for i, raw in enumerate(raw_ops):
        # The fast reader (and YAML aliases) share one raw object among identical ops.
        op = memo.get(id(raw))
        if op is not None:
            append(op)
            continue
        kind = raw[0] if type(raw) is list and raw else None
        try:
            if type(raw) is not list or len(raw) != 2 or type(raw[1]) is not dict:
                raise Invalid(f"expected [kind, {{args}}], got {raw!r}")
            spec = OP_KINDS.get(kind) if type(kind) is str else None
            if spec is None:
                raise Invalid(f"unknown op kind {kind!r} (allowed: {', '.join(OP_KINDS)})")
            args = raw[1]
            if not spec.names.issuperset(args):
                bad = next(k for k in args if k not in spec.names)
                raise Invalid(f"unknown argument {bad!r} (allowed: {', '.join(n for n, _ in spec.args)})")
            missing = [n for n in spec.required if n not in args]
            if missing:
                raise Invalid(f"missing argument {missing[0]!r} (required: {', '.join(sorted(spec.required))})")
            op = memo[id(raw)] = spec.build(scope, args)
            append(op)
        except Invalid as e:
            label = f" ({kind})" if type(kind) is str and kind in OP_KINDS else ""
            raise ProfileError(_where(source, f"{here} op {i}{label}: {e}")) from None
    return tuple(ops)


