"""Expanding a spec's axes into points, and each point's stable identity (its hash).

Groups combine as a product, in the spec's order (the last group varies fastest); inside a
grid group the last key varies fastest, as in nested loops written in that order; a zip group
advances its keys together.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ...inputs import MAX_YAML_DEPTH
from .spec import AxisGroup, SweepSpec

__all__ = ["Point", "canonical_json", "expand", "point_hash"]


@dataclass(frozen=True)
class Point:
    """One configuration of a sweep: its position, its axis values and its hash."""

    index: int                    #: position in the sweep's order (the table's row order)
    values: dict[str, Any]        #: axis key -> value at this point
    hash: str                     #: sha256 hex of the point's inputs (see point_hash)

    @property
    def key(self) -> str:
        """The point's folder name under DIR/points/ (a prefix of the hash, long enough to be unique)."""
        return self.hash[:16]


def _group_rows(group: AxisGroup) -> list[dict[str, Any]]:
    keys = [k for k, _ in group.axes]
    columns: Iterable[tuple[Any, ...]]
    if group.kind == "zip":
        columns = zip(*(values for _, values in group.axes))
    else:
        columns = itertools.product(*(values for _, values in group.axes))
    return [dict(zip(keys, row)) for row in columns]


def expand(spec: SweepSpec) -> list[Point]:
    """Every point of `spec`, in order; a spec with no axes has one point."""
    points = []
    for i, combo in enumerate(itertools.product(*(_group_rows(g) for g in spec.groups))):
        values: dict[str, Any] = {}
        for part in combo:
            values.update(part)
        points.append(Point(i, values, point_hash(spec, values)))
    return points


def _plain(value: Any, depth: int) -> Any:
    """`value` with every mapping key made text, so JSON can sort it (YAML allows `{0: x}` beside `{a: y}`)."""
    if depth > MAX_YAML_DEPTH:
        raise ConfigError(f"a value nested more than {MAX_YAML_DEPTH} levels deep (or containing itself)")
    if isinstance(value, dict):
        # A text key stays as written (so hashes of ordinary specs do not change); another key is
        # tagged with its type, so the key 1 and the key "1" stay apart.
        return {k if isinstance(k, str) else f"\0{type(k).__name__}:{k!r}": _plain(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, depth + 1) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a spec value: sorted keys, no spaces, other types by repr()."""
    return json.dumps(_plain(value, 0), sort_keys=True, separators=(",", ":"), default=repr)


def point_hash(spec: SweepSpec, values: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of everything that decides a point's row.

    Why not Python's hash(): it is salted per process, and `--resume` compares hashes written by
    another process (or another machine). The inputs are the axis values, the fixed overrides,
    the generator, the metrics, the trace flag and the base files' contents (spec.base_digest);
    not the spec's path or the point's position, so a reordered or moved spec reuses its results.
    The timeout is not hashed: it decides whether a point finishes, not what it computes, so
    `--resume` compares it with the one a timed-out row was killed at instead (table.finished_rows).
    """
    doc = {"values": values, "set": spec.fixed, "generator": spec.generator, "metrics": list(spec.metrics),
           "trace": spec.trace, "base": spec.base_digest}
    return hashlib.sha256(canonical_json(doc).encode()).hexdigest()
