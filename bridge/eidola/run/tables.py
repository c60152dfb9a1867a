"""Result tables as numpy structured arrays, typed from the columns C++ declares for each table.

The C++ `Simulation` declares each table's columns beside the statistics that fill them, and
the catalog publishes them; nothing here lists them again. A column's dtype follows its name:
times in picoseconds (``*_ps``) become nanoseconds (``*_ns``, float), indices are 32-bit ints,
and every other column (counts, flag values) is a 64-bit int. A column the declaration names but the run did not
return is an error, never a silent zero.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..errors import EidolaError
from ..platform import catalog

__all__ = ["table_dtype", "structured", "SMALL_INT_COLUMNS"]

#: Columns that index something (a GPU, workgroup, link, enum value) or count little: 32-bit ints.
SMALL_INT_COLUMNS = frozenset({"gpu", "wg", "src", "dst", "lanes", "link", "bin", "flag", "cond", "mode", "occupancy"})
#: Columns Python adds to a table after reading it (name, dtype, the column it follows).
_DERIVED = {"links": (("utilization", "<f8", "busy_ns"), ("lane_utilization_max", "<f8", "lane_busy_max_ns"))}


def _field(column: str) -> tuple[str, str]:
    if column.endswith("_ps"):
        return column[:-3] + "_ns", "<f8"
    if column in SMALL_INT_COLUMNS:
        return column, "<i4"
    return column, "<i8"


@functools.cache
def table_dtype(table: str) -> np.dtype[Any]:
    """The structured dtype of result table `table` ("gpus", "workgroups", "links", "pairs", ...)."""
    fields = []
    derived = {after: (name, dtype) for name, dtype, after in _DERIVED.get(table, ())}
    for column in catalog.table_columns(table):
        name, dtype = _field(column)
        fields.append((name, dtype))
        if name in derived:
            fields.append(derived[name])
    return np.dtype(fields)


def structured(table: str, raw: dict[str, Any]) -> np.ndarray[Any, np.dtype[Any]]:
    """The raw columns of `table` (as the child sent them, in C++ units) as a structured array.

    An empty table (no rows) may arrive without columns; otherwise every declared column must be there.
    """
    dtype = table_dtype(table)
    n = len(next(iter(raw.values()))) if raw else 0
    out = np.zeros(n, dtype=dtype)
    if n == 0:
        return out
    for column in catalog.table_columns(table):
        name, _ = _field(column)
        if column not in raw:
            raise EidolaError(f"result table {table!r}: the simulation returned no column {column!r} "
                              f"(it returned: {', '.join(raw)})")
        out[name] = raw[column] / 1000.0 if column.endswith("_ps") else raw[column]
    return out
