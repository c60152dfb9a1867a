"""Profile files: the YAML reader (with a fast path for the layout we write) and the writer.

Large profiles are mostly one op per line; the fast reader parses exactly that layout and hands
anything else to PyYAML, so errors still carry PyYAML's line and column.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import yaml

from ..errors import ProfileError
from ..inputs import decode_text, load_yaml, read_input
from .ops import Op, explicit_args
from .profile import FORMAT_VERSION, Profile
from .table import Put, Signal, Transfer

__all__ = ["load_profile", "write_profile"]

_FAST_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FAST_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+(?:e[-+][0-9]+)?")
_FAST_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _fast_key(v: str) -> str:
    if not _FAST_KEY.fullmatch(v) or v.lower() in _YAML_WORDS:
        raise ValueError(v)
    return v


def _fast_scalar(v: str) -> int | str | float | bool:
    if _FAST_INT.fullmatch(v):
        return int(v)
    if v in ("True", "False"):  # what save() writes for a flag (a signal's overlap, a write's blocking): YAML's bools
        return v == "True"
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


def _fast_op(line: str) -> list[Any]:
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
    args: dict[str, int | str | float | bool] = {}
    for item in body.split(", ") if body else ():
        key, sep, value = item.partition(": ")
        if not sep or key in args:
            raise ValueError(line)
        args[_fast_key(key)] = _fast_scalar(value)
    return [kind, args]


def _fast_load(encoded: bytes, source: str = "<profile>") -> dict[str, Any] | None:
    """Parse the layout save() writes, much faster than PyYAML; None if the text strays from it.

    Only a strict subset is accepted (decimal ints, plain names, simple quoted strings, one op per
    line), for which the result is exactly what the YAML loader would return; anything else,
    including every kind of error, falls back to the YAML loader and its messages.
    """
    try:
        text = encoded.decode("utf-8")
        head, sep, body = text.partition("\nprograms:\n")
        # The header may hold anything YAML allows (aliases included), so it gets every limit.
        data = load_yaml(head, source, ProfileError) if sep else None
        if not isinstance(data, dict) or "programs" in data:
            return None
        programs: list[dict[str, Any]] = []
        ops: list[Any] | None = None
        seen: dict[str, list[Any]] = {}
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


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read and validate a YAML profile file; every error is a ProfileError naming `path`."""
    path = os.fspath(path)
    encoded = read_input(path, "profile file", ProfileError)
    data: Any = _fast_load(encoded, path)
    if data is None:
        data = load_yaml(decode_text(encoded, path, ProfileError), path, ProfileError)
    if data is None:
        raise ProfileError(f"{path}: file is empty (expected eidola_profile: {FORMAT_VERSION} and a profile)")
    return Profile.from_dict(data, path)


# ---------------------------------------------------------------- writing

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = frozenset(("yes", "no", "true", "false", "on", "off", "null", "y", "n"))


def _scalar(v: Any) -> str:
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


def _render(op: Op) -> str:
    body = ", ".join(f"{k}: {_scalar(v)}" for k, v in explicit_args(op).items())
    return f"[{op.kind}, {{{body}}}]"


def _flow(v: Any) -> str:
    if type(v) is dict:
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(x)}" for k, x in v.items()) + "}"
    if type(v) is list:
        return "[" + ", ".join(map(_flow, v)) + "]"
    return _scalar(v)


def _render_variability(v: dict[str, Any]) -> str:
    lines = ["variability:\n"]
    for key, value in v.items():
        if key == "delays":
            lines.append("  delays:\n" + "".join(f"  - {_flow(d)}\n" for d in value))
        else:
            lines.append(f"  {key}: {_flow(value)}\n")
    return "".join(lines)


def write_profile(p: Profile, write: Callable[[str], object]) -> None:
    """Writes `p` in the layout the fast reader takes, through `write` (a text sink)."""
    write(f"eidola_profile: {FORMAT_VERSION}\nname: {_scalar(p.name)}\ngpus: {p.gpus}\nworkgroups: {p.workgroups}\n")
    write(f"flags: [{', '.join(map(_scalar, p.flags))}]\n")
    write("buffers: {" + ", ".join(f"{_scalar(n)}: {size}" for n, size in p.buffers) + "}\n")
    if p.multicast_groups:
        write("multicast_groups: {" + ", ".join(f"{_scalar(n)}: [{', '.join(map(str, members))}]"
                                               for n, members in p.multicast_groups) + "}\n")
    if p.variability:
        # Before programs: the fast reader hands everything above "programs:" to the YAML loader.
        write(_render_variability(p.variability.to_dict()))
    if p.traffic is not None:
        write(f"traffic: {_flow(p.traffic.to_dict())}\n")
    table = p.table
    if not table.keys:
        write("programs: []\n")
        return
    write("programs:\n")
    # Each template is rendered once: an Op whole, a transfer as the text around its row's values.
    # Posted writes and reads keep the fast reader's one-regex layout; blocking writes add their flag.
    parts: list[tuple[str, str, str] | str] = []
    for t in table.templates:
        if isinstance(t, Transfer):
            tail = f", blocking: {_scalar(True)}}}]\n" if t.blocking else "}]\n"
            parts.append((f"  - [{t.kind}, {{dst: ", f", buffer: {_scalar(t.buffer)}, offset: ", tail))
        elif isinstance(t, Put):  # dst, offset and nbytes vary: the text after nbytes is rendered once
            rest = _render(t.op(0, 0, 0)).partition("nbytes: 0")[2]
            parts.append(("  - [put, {dst: ", f", buffer: {_scalar(t.buffer)}, offset: ", rest + "\n"))
        elif isinstance(t, Signal):  # only dst varies: the text after it is rendered once
            head, _, rest = _render(t.make(0)).partition("dst: 0")
            parts.append((f"  - {head}dst: ", rest + "\n", ""))
        else:
            parts.append(f"  - {_render(t)}\n")
    rows = table.rows.tolist()
    starts = table.starts.tolist()
    for i, (g, w) in enumerate(table.keys):
        lines = [f"- gpu: {g}\n  wg: {w}\n  ops:\n"]
        for ref, dst, off, n in rows[starts[i]:starts[i + 1]]:
            part = parts[ref]
            if type(part) is str:
                lines.append(part)
            else:
                head, mid, tail = part
                lines.append(f"{head}{dst}{mid}{off}, nbytes: {n}{tail}" if tail else f"{head}{dst}{mid}")
        write("".join(lines))
