"""Timing profiles: per-(gpu, workgroup) op programs, their builder, validation and YAML file format.

A profile declares per-GPU flags (one 8-byte word each) and data buffers, then lists, for each
workgroup of each GPU, the ops it issues in order: compute phases, peer writes/reads, atomic
signals on peer flags, waits on local flags and local memory traffic. An optional `variability`
section (skew, jitter, wake-up delays; see eidola.variability) says how a real run strays from it.
"""

import math
import numbers
import os
import re
from dataclasses import dataclass
from functools import cached_property

import yaml

from .errors import ProfileError
from .variability import NO_VARIABILITY, Variability, check_new_delay, make_delay, make_distribution, parse_variability

__all__ = ["Op", "Profile", "ProfileBuilder", "ProgramBuilder", "load_profile", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_CONDS = ("==", "!=", ">=", ">", "<=", "<")
_MODES = ("poll", "spin_yield", "syncmon")
_SIGNAL_OPS = ("add", "set", "cas")
_WAKES = ("all", "one")
_REQUIRED = object()  # default marker for args with no default

# Per kind: (arg name, default) in method-signature order; the order of Op.args.
_KINDS = {
    "compute": (("ns", None), ("cycles", None)),
    "write": (("dst", _REQUIRED), ("buffer", _REQUIRED), ("offset", _REQUIRED), ("nbytes", _REQUIRED)),
    "read": (("dst", _REQUIRED), ("buffer", _REQUIRED), ("offset", _REQUIRED), ("nbytes", _REQUIRED)),
    "signal": (("dst", _REQUIRED), ("flag", _REQUIRED), ("op", "add"), ("value", 1), ("compare", None)),
    "wait": (("flag", _REQUIRED), ("cond", _REQUIRED), ("value", _REQUIRED), ("mode", "poll"),
             ("interval_ns", 100), ("max_interval_ns", None), ("wake", "all")),
    "local": (("reads", 0), ("writes", 0), ("nbytes", 64)),
}
_ARG_NAMES = {k: frozenset(n for n, _ in spec) for k, spec in _KINDS.items()}
_REQUIRED_NAMES = {k: frozenset(n for n, d in spec if d is _REQUIRED) for k, spec in _KINDS.items()}
_TOP_KEYS = ("eidola_profile", "name", "gpus", "workgroups", "flags", "buffers", "variability", "programs")
_PROGRAM_KEYS = ("gpu", "wg", "ops")


class _Invalid(Exception):
    """A problem found by a checker; the caller prefixes it with where it happened."""


@dataclass(frozen=True, slots=True)
class Op:
    """One op of a workgroup program: its kind and every argument, defaults filled in."""

    kind: str
    args: tuple

    def __getitem__(self, key):
        """Return the value of argument `key` (KeyError if the kind has no such argument)."""
        for name, value in self.args:
            if name == key:
                return value
        raise KeyError(key)

    def get(self, key, default=None):
        """Return the value of argument `key`, or `default` if the kind has no such argument."""
        for name, value in self.args:
            if name == key:
                return value
        return default

    def as_dict(self):
        """Return the arguments as a dict in signature order."""
        return dict(self.args)


# ---------------------------------------------------------------- value checks

def _int(name, v, lo=0, hi=_I64_MAX):
    if type(v) is not int:
        # bool is an int subclass but a True offset is always a mistake; numpy ints are fine.
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise _Invalid(f"{name} must be an int, got {type(v).__name__} {v!r}")
        v = int(v)
    if v < lo or v > hi:
        raise _Invalid(f"{name} {v} is out of range (expected {lo} <= {name} <= {hi})")
    return v


def _num(name, v, positive=False):
    if type(v) is not int and type(v) is not float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise _Invalid(f"{name} must be a number, got {type(v).__name__} {v!r}")
        v = int(v) if isinstance(v, numbers.Integral) else float(v)
    if type(v) is float and not math.isfinite(v):
        raise _Invalid(f"{name} must be finite, got {v!r}")
    if v < 0 or (positive and v == 0):
        raise _Invalid(f"{name} must be {'> 0' if positive else '>= 0'}, got {v!r}")
    return v


def _choice(name, v, allowed):
    if type(v) is not str or v not in allowed:
        raise _Invalid(f"{name} {v!r} is not one of {', '.join(allowed)}")
    return v


def _check_name(what, v):
    if type(v) is not str or not _NAME.fullmatch(v):
        raise _Invalid(f"{what} name {v!r} is invalid (expected [A-Za-z_][A-Za-z0-9_.]*)")
    return v


class _Scope:
    """What ops are checked against: GPU count, declared flags and buffers, and an op intern table."""

    def __init__(self, gpus):
        self.gpus = gpus
        self.flags = {}
        self.buffers = {}
        self.interned = {}
        self.pairs = {}  # (name, value) -> the one shared tuple
        self.memo = {}  # builder: (kind, args, arg types) -> Op; loader: id(raw op) -> Op

    def declare_flag(self, name):
        _check_name("flag", name)
        if name in self.flags or name in self.buffers:
            raise _Invalid(f"flag {name!r} is already declared as a {'flag' if name in self.flags else 'buffer'}")
        self.flags[name] = len(self.flags)

    def declare_buffer(self, name, nbytes):
        _check_name("buffer", name)
        if name in self.flags or name in self.buffers:
            raise _Invalid(f"buffer {name!r} is already declared as a {'flag' if name in self.flags else 'buffer'}")
        self.buffers[name] = _int(f"buffer {name!r} nbytes", nbytes, lo=1)

    def dst(self, v):
        v = _int("dst", v, lo=_I64_MIN)
        if not 0 <= v < self.gpus:
            raise _Invalid(f"dst {v} is out of range (expected 0 <= dst < {self.gpus})")
        return v

    def flag(self, v):
        if type(v) is not str or v not in self.flags:
            raise _Invalid(f"flag {v!r} is not declared (declared: {', '.join(self.flags) or 'none'})")
        return v

    def buffer(self, v):
        if type(v) is not str or v not in self.buffers:
            raise _Invalid(f"buffer {v!r} is not declared (declared: {', '.join(self.buffers) or 'none'})")
        return self.buffers[v]

    def pair(self, name, value):
        """One shared (name, value) tuple per distinct argument."""
        key = (name, value)
        return self.pairs.setdefault(key, key)

    def intern(self, op):
        # Many ops repeat across workgroups; sharing one object saves memory and speeds up saving.
        return self.interned.setdefault(op, op)


# ---------------------------------------------------------------- op checkers (one per kind)

def _compute(s, ns=None, cycles=None):
    if (ns is None) == (cycles is None):
        raise _Invalid(f"exactly one of ns or cycles is required (got {'both' if ns is not None else 'neither'})")
    if ns is not None:
        ns = _num("ns", ns)
    else:
        cycles = _int("cycles", cycles)
    return s.intern(Op("compute", (("ns", ns), ("cycles", cycles))))


def _transfer(kind, s, dst, buffer, offset, nbytes):
    dst = s.dst(dst)
    size = s.buffer(buffer)
    offset = _int("offset", offset)
    nbytes = _int("nbytes", nbytes, lo=1)
    if offset + nbytes > size:
        raise _Invalid(f"offset {offset} + nbytes {nbytes} = {offset + nbytes} exceeds buffer {buffer!r} size {size}")
    # Interned: large profiles repeat the same transfer (and the same argument pairs) across GPUs
    # and workgroups, so sharing the objects keeps a 1,024-GPU profile's memory down.
    return s.intern(Op(kind, tuple(s.pair(n, v) for n, v in
                                   (("dst", dst), ("buffer", buffer), ("offset", offset), ("nbytes", nbytes)))))


def _write(s, dst, buffer, offset, nbytes):
    return _transfer("write", s, dst, buffer, offset, nbytes)


def _read(s, dst, buffer, offset, nbytes):
    return _transfer("read", s, dst, buffer, offset, nbytes)


def _signal(s, dst, flag, op="add", value=1, compare=None):
    dst = s.dst(dst)
    flag = s.flag(flag)
    op = _choice("op", op, _SIGNAL_OPS)
    value = _int("value", value, lo=_I64_MIN)
    if op == "cas":
        if compare is None:
            raise _Invalid("op 'cas' requires compare (an int)")
        compare = _int("compare", compare, lo=_I64_MIN)
    elif compare is not None:
        raise _Invalid(f"compare is only allowed with op 'cas' (got op {op!r})")
    return s.intern(Op("signal", (("dst", dst), ("flag", flag), ("op", op), ("value", value), ("compare", compare))))


def _wait(s, flag, cond, value, mode="poll", interval_ns=100, max_interval_ns=None, wake="all"):
    flag = s.flag(flag)
    cond = _choice("cond", cond, _CONDS)
    value = _int("value", value, lo=_I64_MIN)
    mode = _choice("mode", mode, _MODES)
    interval_ns = _num("interval_ns", interval_ns, positive=True)
    if max_interval_ns is None:
        max_interval_ns = 16 * interval_ns
    else:
        max_interval_ns = _num("max_interval_ns", max_interval_ns, positive=True)
        if max_interval_ns < interval_ns:
            raise _Invalid(f"max_interval_ns {max_interval_ns!r} must be >= interval_ns {interval_ns!r}")
    wake = _choice("wake", wake, _WAKES)
    return s.intern(Op("wait", (("flag", flag), ("cond", cond), ("value", value), ("mode", mode),
                                ("interval_ns", interval_ns), ("max_interval_ns", max_interval_ns), ("wake", wake))))


def _local(s, reads=0, writes=0, nbytes=64):
    reads = _int("reads", reads)
    writes = _int("writes", writes)
    nbytes = _int("nbytes", nbytes, lo=1)
    if reads + writes < 1:
        raise _Invalid("reads + writes must be >= 1 (got 0)")
    return s.intern(Op("local", (("reads", reads), ("writes", writes), ("nbytes", nbytes))))


_CHECKERS = {"compute": _compute, "write": _write, "read": _read, "signal": _signal, "wait": _wait, "local": _local}


def _check_header(name, gpus, workgroups):
    if type(name) is not str or not name:
        raise _Invalid(f"name must be a non-empty string, got {name!r}")
    _int("gpus", gpus, lo=1)
    _int("workgroups", workgroups, lo=1)


# ---------------------------------------------------------------- builders

class ProgramBuilder:
    """Appends ops to one workgroup's program; each method checks its op at once and returns the builder."""

    def __init__(self, scope, gpu, wg):
        self._scope = scope
        self.gpu = gpu
        self.wg = wg
        self._ops = []

    def _add(self, kind, *args):
        # Most non-transfer ops repeat verbatim across workgroups: check each distinct one once.
        # Types are part of the key so that True (rejected) never hits the entry made for 1.
        key = None
        if kind not in ("write", "read"):
            try:
                key = (kind, args, tuple(map(type, args)))
                op = self._scope.memo.get(key)
            except TypeError:  # an unhashable argument; the checker will reject it
                key = op = None
            if op is not None:
                self._ops.append(op)
                return self
        try:
            op = _CHECKERS[kind](self._scope, *args)
        except _Invalid as e:
            raise ProfileError(f"gpu {self.gpu} wg {self.wg} op {len(self._ops)} ({kind}): {e}") from None
        if key is not None:
            self._scope.memo[key] = op
        self._ops.append(op)
        return self

    def compute(self, ns=None, cycles=None):
        """Busy the workgroup for `ns` nanoseconds or `cycles` GPU cycles (exactly one)."""
        return self._add("compute", ns, cycles)

    def write(self, dst, buffer, offset, nbytes):
        """Write `nbytes` at `offset` into GPU `dst`'s copy of `buffer`."""
        return self._add("write", dst, buffer, offset, nbytes)

    def read(self, dst, buffer, offset, nbytes):
        """Read `nbytes` at `offset` from GPU `dst`'s copy of `buffer`."""
        return self._add("read", dst, buffer, offset, nbytes)

    def signal(self, dst, flag, op="add", value=1, compare=None):
        """Atomically add/set/compare-and-swap GPU `dst`'s copy of `flag`."""
        return self._add("signal", dst, flag, op, value, compare)

    def wait(self, flag, cond, value, mode="poll", interval_ns=100, max_interval_ns=None, wake="all"):
        """Block until the local copy of `flag` satisfies `flag <cond> value`."""
        return self._add("wait", flag, cond, value, mode, interval_ns, max_interval_ns, wake)

    def local(self, reads=0, writes=0, nbytes=64):
        """Issue `reads` and `writes` local memory accesses of `nbytes` each."""
        return self._add("local", reads, writes, nbytes)


class ProfileBuilder:
    """Declares flags and buffers and hands out one ProgramBuilder per (gpu, wg); build() returns a Profile."""

    def __init__(self, gpus, workgroups, name="profile"):
        try:
            _check_header(name, gpus, workgroups)
        except _Invalid as e:
            raise ProfileError(f"profile: {e}") from None
        self.name, self.gpus, self.workgroups = name, int(gpus), int(workgroups)
        self._scope = _Scope(self.gpus)
        self._programs = {}
        self._dists = {}  # "skew"/"jitter" -> Distribution
        self._delays = []

    def _set_dist(self, key, dist, params):
        where = f"profile {self.name!r}: variability.{key}"
        if key in self._dists:
            raise ProfileError(f"{where}: already set (call {key}() once)")
        self._dists[key] = make_distribution(where, dist, params)
        return self

    def skew(self, dist, **params):
        """Draw one factor per GPU from `dist`; it multiplies every compute phase of that GPU."""
        return self._set_dist("skew", dist, params)

    def jitter(self, dist, **params):
        """Draw one factor per compute phase of every workgroup from `dist`; it multiplies that phase."""
        return self._set_dist("jitter", dist, params)

    def delay(self, gpu, ns, wg=None):
        """Hold back the first write/read/signal of GPU `gpu`'s workgroups (or only `wg`'s) by `ns`."""
        where = f"profile {self.name!r}: variability.delays[{len(self._delays)}]"
        d = make_delay(where, gpu, ns, wg, self.gpus, self.workgroups)
        check_new_delay(where, d, self._delays)
        self._delays.append(d)
        return self

    def flag(self, name):
        """Declare a flag: one 8-byte word on every GPU, initially 0."""
        try:
            self._scope.declare_flag(name)
        except _Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        return self

    def buffer(self, name, nbytes):
        """Declare a data buffer of `nbytes` bytes on every GPU."""
        try:
            self._scope.declare_buffer(name, nbytes)
        except _Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        return self

    def program(self, gpu, wg):
        """Start the program of workgroup `wg` on GPU `gpu`; each (gpu, wg) may be started once."""
        try:
            gpu = _int("gpu", gpu, hi=self.gpus - 1)
            wg = _int("wg", wg, hi=self.workgroups - 1)
        except _Invalid as e:
            raise ProfileError(f"profile {self.name!r}: {e}") from None
        if (gpu, wg) in self._programs:
            raise ProfileError(f"profile {self.name!r}: gpu {gpu} wg {wg}: program already defined")
        p = self._programs[gpu, wg] = ProgramBuilder(self._scope, gpu, wg)
        return p

    def build(self):
        """Return the immutable Profile (ops were checked as they were added; names only ever get added)."""
        programs = tuple((key, tuple(p._ops)) for key, p in sorted(self._programs.items()) if p._ops)
        variability = Variability(self._dists.get("skew"), self._dists.get("jitter"), tuple(self._delays))
        return Profile(self.name, self.gpus, self.workgroups, tuple(self._scope.flags),
                       tuple(self._scope.buffers.items()), programs, variability)


# ---------------------------------------------------------------- profile

@dataclass(frozen=True)
class Profile:
    """An immutable, validated timing profile; compare with ==, save() to YAML, load_profile() back."""

    name: str
    gpus: int
    workgroups: int
    flags: tuple
    buffers: tuple
    programs: tuple
    variability: Variability = NO_VARIABILITY  # see eidola.variability; falsy when the profile has none

    @cached_property
    def _index(self):
        return dict(self.programs)

    def program(self, gpu, wg):
        """Return the ops of workgroup `wg` on GPU `gpu` (an empty tuple if it has none)."""
        return self._index.get((gpu, wg), ())

    def buffer_size(self, name):
        """Return the size in bytes of buffer `name` (KeyError if undeclared)."""
        return dict(self.buffers)[name]

    def ops_count(self):
        """Return the total number of ops over all programs."""
        return sum(len(ops) for _, ops in self.programs)

    def to_dict(self):
        """Return the plain dict/list form written to files (defaulted op args are left out)."""
        d = {
            "eidola_profile": FORMAT_VERSION, "name": self.name, "gpus": self.gpus,
            "workgroups": self.workgroups, "flags": list(self.flags), "buffers": dict(self.buffers),
        }
        if self.variability:
            d["variability"] = self.variability.to_dict()
        d["programs"] = [{"gpu": g, "wg": w, "ops": [[op.kind, _explicit_args(op)] for op in ops]}
                         for (g, w), ops in self.programs]
        return d

    @classmethod
    def from_dict(cls, d, source="<dict>"):
        """Validate the dict form (as read from a file) and return a Profile; errors name `source`."""
        return _from_dict(d, source)

    def save(self, path):
        """Write the profile as YAML to `path`."""
        with open(path, "w", encoding="utf-8") as f:
            _emit(self, f.write)


def _explicit_args(op):
    # max_interval_ns defaults to a multiple of interval_ns, so it is "default" relative to that.
    out = {}
    for (name, value), (_, default) in zip(op.args, _KINDS[op.kind]):
        if value is None or value == default and type(value) is type(default):
            continue
        if name == "max_interval_ns":
            implied = 16 * op["interval_ns"]
            if value == implied and type(value) is type(implied):
                continue
        out[name] = value
    return out


# ---------------------------------------------------------------- reading

def _where(source, text):
    return f"{source}: {text}"


def _from_dict(d, source):
    if not isinstance(d, dict):
        raise ProfileError(_where(source, f"expected a mapping with keys {', '.join(_TOP_KEYS)}, got {type(d).__name__}"))
    for key in d:
        if key not in _TOP_KEYS:
            raise ProfileError(_where(source, f"unknown key {key!r} (allowed: {', '.join(_TOP_KEYS)})"))
    for key in ("eidola_profile", "name", "gpus", "workgroups"):
        if key not in d:
            raise ProfileError(_where(source, f"missing key {key!r}"))
    version = d["eidola_profile"]
    if type(version) is not int or version != FORMAT_VERSION:
        raise ProfileError(_where(source, f"unsupported eidola_profile version {version!r} (expected {FORMAT_VERSION})"))
    name, gpus, workgroups = d["name"], d["gpus"], d["workgroups"]
    flags, buffers = d.get("flags") or [], d.get("buffers") or {}
    try:
        _check_header(name, gpus, workgroups)
        if not isinstance(flags, list):
            raise _Invalid(f"flags must be a list of names, got {type(flags).__name__}")
        if not isinstance(buffers, dict):
            raise _Invalid(f"buffers must be a mapping of name to nbytes, got {type(buffers).__name__}")
        scope = _Scope(gpus)
        for f in flags:
            scope.declare_flag(f)
        for b, nbytes in buffers.items():
            scope.declare_buffer(b, nbytes)
    except _Invalid as e:
        raise ProfileError(_where(source, str(e))) from None
    variability = parse_variability(d.get("variability"), gpus, workgroups, _where(source, "variability"))
    programs = _read_programs(d.get("programs") or [], scope, gpus, workgroups, source)
    return Profile(name, gpus, workgroups, tuple(scope.flags), tuple(scope.buffers.items()), programs, variability)


def _read_programs(raw_programs, scope, gpus, workgroups, source):
    if not isinstance(raw_programs, list):
        raise ProfileError(_where(source, f"programs must be a list, got {type(raw_programs).__name__}"))
    seen = {}
    for j, rp in enumerate(raw_programs):
        here = f"programs[{j}]"
        try:
            if not isinstance(rp, dict):
                raise _Invalid(f"expected a mapping with keys {', '.join(_PROGRAM_KEYS)}, got {type(rp).__name__}")
            for key in rp:
                if key not in _PROGRAM_KEYS:
                    raise _Invalid(f"unknown key {key!r} (allowed: {', '.join(_PROGRAM_KEYS)})")
            for key in _PROGRAM_KEYS:
                if key not in rp:
                    raise _Invalid(f"missing key {key!r}")
            gpu = _int("gpu", rp["gpu"], hi=gpus - 1)
            wg = _int("wg", rp["wg"], hi=workgroups - 1)
            if (gpu, wg) in seen:
                raise _Invalid(f"duplicate program for gpu {gpu} wg {wg} (first at programs[{seen[gpu, wg][0]}])")
            if not isinstance(rp["ops"], list):
                raise _Invalid(f"ops must be a list, got {type(rp['ops']).__name__}")
        except _Invalid as e:
            raise ProfileError(_where(source, f"{here}: {e}")) from None
        seen[gpu, wg] = (j, _read_ops(rp["ops"], scope, f"gpu {gpu} wg {wg}", source))
    return tuple((key, ops) for key, (_, ops) in sorted(seen.items()) if ops)


def _read_ops(raw_ops, scope, here, source):
    ops = []
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
                raise _Invalid(f"expected [kind, {{args}}], got {raw!r}")
            checker = _CHECKERS.get(kind) if type(kind) is str else None
            if checker is None:
                raise _Invalid(f"unknown op kind {kind!r} (allowed: {', '.join(_KINDS)})")
            args = raw[1]
            if not _ARG_NAMES[kind].issuperset(args):
                bad = next(k for k in args if k not in _ARG_NAMES[kind])
                raise _Invalid(f"unknown argument {bad!r} (allowed: {', '.join(n for n, _ in _KINDS[kind])})")
            if not args.keys() >= _REQUIRED_NAMES[kind]:
                missing = [n for n, d in _KINDS[kind] if d is _REQUIRED and n not in args]
                raise _Invalid(f"missing argument {missing[0]!r} (required: {', '.join(sorted(_REQUIRED_NAMES[kind]))})")
            op = memo[id(raw)] = checker(scope, **args)
            append(op)
        except _Invalid as e:
            label = f" ({kind})" if type(kind) is str and kind in _KINDS else ""
            raise ProfileError(_where(source, f"{here} op {i}{label}: {e}")) from None
    return tuple(ops)


class _StrictLoader(_Loader):
    """The safe YAML loader, but a repeated mapping key is an error instead of silently winning."""

    def construct_mapping(self, node, deep=False):
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) != len(node.value):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
        return mapping


_FAST_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FAST_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+(?:e[-+][0-9]+)?")
_FAST_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _fast_key(v):
    if not _FAST_KEY.fullmatch(v) or v.lower() in _YAML_WORDS:
        raise ValueError(v)
    return v


def _fast_scalar(v):
    if _FAST_INT.fullmatch(v):
        return int(v)
    if len(v) >= 2 and v[0] == v[-1] == "'" and "'" not in v[1:-1]:
        return v[1:-1]
    if _PLAIN.fullmatch(v) and v.lower() not in _YAML_WORDS:
        return v
    if _FAST_FLOAT.fullmatch(v):
        return float(v)
    raise ValueError(v)


_N = r"(0|[1-9][0-9]*)"
_FAST_TRANSFER = re.compile(
    rf"  - \[(write|read), \{{dst: {_N}, buffer: ([A-Za-z_][A-Za-z0-9_./-]*), offset: {_N}, nbytes: {_N}\}}\]")


def _fast_op(line):
    m = _FAST_TRANSFER.fullmatch(line)
    # Transfers are the bulk of big profiles and mostly unique, so they get a single regex.
    if m and m[3].lower() not in _YAML_WORDS:
        return [m[1], {"dst": int(m[2]), "buffer": m[3], "offset": int(m[4]), "nbytes": int(m[5])}]
    if not (line.startswith("  - [") and line.endswith("}]")):
        raise ValueError(line)
    kind, sep, body = line[5:-2].partition(", {")
    if not sep:
        raise ValueError(line)
    _fast_key(kind)
    args = {}
    for item in body.split(", ") if body else ():
        key, sep, value = item.partition(": ")
        if not sep or key in args:
            raise ValueError(line)
        args[_fast_key(key)] = _fast_scalar(value)
    return [kind, args]


def _fast_load(text):
    """Parse the layout save() writes, much faster than PyYAML; None if the text strays from it.

    Only a strict subset is accepted (decimal ints, plain names, simple quoted strings, one op per
    line), for which the result is exactly what the YAML loader would return; anything else,
    including every kind of error, falls back to the YAML loader and its messages.
    """
    try:
        text = text.decode("utf-8")
        head, sep, body = text.partition("\nprograms:\n")
        data = yaml.load(head, Loader=_StrictLoader) if sep else None
        if not isinstance(data, dict) or "programs" in data:
            return None
        programs, ops, seen = [], None, {}
        for line in body.split("\n"):
            raw = seen.get(line)
            if raw is not None and ops is not None:
                ops.append(raw)
            elif line.startswith("  - [") and ops is not None:
                raw = seen[line] = _fast_op(line)
                ops.append(raw)
            elif line.startswith("- gpu: ") and _FAST_INT.fullmatch(line[7:]) and (not programs or ops):
                programs.append({"gpu": int(line[7:])})
                ops = None
            elif line.startswith("  wg: ") and _FAST_INT.fullmatch(line[6:]) and len(programs[-1]) == 1:
                programs[-1]["wg"] = int(line[6:])
            elif line == "  ops:" and len(programs[-1]) == 2:
                ops = programs[-1]["ops"] = []
            elif line or ops is None:  # blank lines are harmless in YAML, except before any ops
                return None
        if not programs or not ops:
            return None
        data["programs"] = programs
        return data
    except (ValueError, IndexError, UnicodeDecodeError, yaml.YAMLError):
        return None


def load_profile(path):
    """Read and validate a YAML profile file; every error is a ProfileError naming `path`."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile file") from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read profile file ({e.strerror})") from None
    data = _fast_load(text)
    try:
        if data is None:
            data = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        raise ProfileError(f"{path}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {e.problem}") from None
    except yaml.YAMLError as e:
        raise ProfileError(f"{path}: invalid YAML: {e}") from None
    if data is None:
        raise ProfileError(f"{path}: file is empty (expected eidola_profile: {FORMAT_VERSION} and a profile)")
    return _from_dict(data, path)


# ---------------------------------------------------------------- writing

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null", "y", "n"))


def _scalar(v):
    if type(v) is str:
        if _PLAIN.fullmatch(v) and v.lower() not in _YAML_WORDS:
            return v
        if v.isprintable():
            return "'" + v.replace("'", "''") + "'"
        return '"' + v.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
    if type(v) is float:
        r = repr(v)
        # YAML 1.1 reads "1e+20" as a string; it needs a dot in the mantissa.
        return r.replace("e", ".0e", 1) if "e" in r and "." not in r else r
    return str(v)


def _render(op):
    body = ", ".join(f"{k}: {_scalar(v)}" for k, v in _explicit_args(op).items())
    return f"[{op.kind}, {{{body}}}]"


def _flow(v):
    if type(v) is dict:
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(x)}" for k, x in v.items()) + "}"
    if type(v) is list:
        return "[" + ", ".join(map(_flow, v)) + "]"
    return _scalar(v)


def _render_variability(v):
    lines = ["variability:\n"]
    for key, value in v.items():
        if key == "delays":
            lines.append("  delays:\n" + "".join(f"  - {_flow(d)}\n" for d in value))
        else:
            lines.append(f"  {key}: {_flow(value)}\n")
    return "".join(lines)


def _emit(p, write):
    write(f"eidola_profile: {FORMAT_VERSION}\nname: {_scalar(p.name)}\ngpus: {p.gpus}\nworkgroups: {p.workgroups}\n")
    write(f"flags: [{', '.join(map(_scalar, p.flags))}]\n")
    write("buffers: {" + ", ".join(f"{_scalar(n)}: {size}" for n, size in p.buffers) + "}\n")
    if p.variability:
        # Before programs: the fast reader hands everything above "programs:" to the YAML loader.
        write(_render_variability(p.variability.to_dict()))
    if not p.programs:
        write("programs: []\n")
        return
    write("programs:\n")
    rendered = {}  # by id: interned ops are shared objects, so each is rendered once
    for (g, w), ops in p.programs:
        lines = [f"- gpu: {g}\n  wg: {w}\n  ops:\n"]
        for op in ops:
            if op.kind == "write" or op.kind == "read":
                # Transfers are mostly unique (offsets differ), so render them directly.
                (_, dst), (_, buf), (_, off), (_, n) = op.args
                lines.append(f"  - [{op.kind}, {{dst: {dst}, buffer: {_scalar(buf)}, offset: {off}, nbytes: {n}}}]\n")
            else:
                text = rendered.get(id(op))
                if text is None:
                    text = rendered[id(op)] = f"  - {_render(op)}\n"
                lines.append(text)
        write("".join(lines))
