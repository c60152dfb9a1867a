"""Writes an experiment's rows (one dict each) as the CSV beside it: the experiments' one way to save what they measured."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path


def write_rows(path: Path, rows: Sequence[Mapping[str, object]], fields: Sequence[str] | None = None) -> None:
    """`rows` to `path` with a header: `fields` in that order, or the first row's keys."""
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(fields if fields is not None else rows[0]))
        writer.writeheader()
        writer.writerows(rows)
