"""Printing ``eidola perf`` results: the nccl-tests table, its CSV, and the comparison with a real log.

The table is laid out as nccl-tests prints it (src/util.cu: ``%12li  %12li  %8s  %6s  %6s`` then
``  %7s  %6s  %6s`` for time, algbw and busbw, each number in its width with two decimals if they
fit), with one group of columns (the simulation; a real run's out-of-place and in-place runs are
one simulation here), the algorithm, protocol, channels and fabric of each row at the right, and
the trailer ``# Avg bus bandwidth    : X`` (the mean busbw of the rows, as nccl-tests averages its
rows). The comparison gives per size the measured and predicted time and the signed error
``predicted / measured - 1``, and the geometric mean of |error| over every size and over 64 KiB to
1 GiB (the calibration data's range, ../shared/data/validation/README.md).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..run import nccl_tests
from ..run.perf import PerfRow

__all__ = ["CSV_COLUMNS", "CAL_RANGE", "Compared", "head_lines", "row_line", "trailer", "write_csv",
           "geomean_abs", "compare_head", "compare_line", "compare_trailer", "alpha_beta", "faster_larger"]

#: The --csv header.
CSV_COLUMNS = ("size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algo", "proto", "channels", "fabric",
               "workgroups")
CAL_RANGE = (64 * 2**10, 2**30)  #: sizes over which the calibration README takes its geometric mean, both ends included


def _extra(algo: object, proto: object, channels: object, fabric: object) -> str:
    """algo, proto, channels and fabric, after nccl-tests' columns."""
    return f"  {algo!s:>6}  {proto!s:>6}  {channels!s:>8}  {fabric!s:>6}"


def _lead(size: object, count: object, type_: str, redop: str, root: object, mark: str = "  ") -> str:
    """nccl-tests' first five columns (``%12li  %12li  %8s  %6s  %6s``; a head line starts ``# %10s``)."""
    first = f"# {size!s:>10}" if mark == "# " else f"{size!s:>12}"
    return f"{first}  {count!s:>12}  {type_:>8}  {redop:>6}  {root!s:>6}"


def head_lines() -> list[str]:
    """The column heads, as nccl-tests prints them (one group), with the extra columns."""
    return [
        _lead("size", "count", "type", "redop", "root", "# ") + f"  {'time':>7}  {'algbw':>6}  {'busbw':>6}"
        + _extra("algo", "proto", "channels", "fabric"),
        _lead("(B)", "(elements)", "", "", "", "# ") + f"  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}",
    ]


def row_line(op: str, row: PerfRow) -> str:
    """One data line: nccl-tests' columns, then algo, proto, channels and fabric."""
    f = nccl_tests.float_str
    return (_lead(row.size, row.count, "float", nccl_tests.redop(op), row.root)
            + f"  {f(row.time_us, 7)}  {f(row.algbw, 6)}  {f(row.busbw, 6)}"
            + _extra(row.plan.algo, row.plan.proto, row.plan.channels, row.fabric))


def trailer(rows: Sequence[PerfRow]) -> list[str]:
    """``# Avg bus bandwidth    : X`` (``%g`` of the mean busbw) and the closing ``#``."""
    avg = sum(r.busbw for r in rows) / len(rows) if rows else 0.0
    return [f"# {'Avg bus bandwidth':<20} : {avg:g}", "#"]


def faster_larger(rows: Sequence[PerfRow]) -> list[str]:
    """A note for each size that took less time than the size before it under another plan: the tuner prices plans
    with NCCL's (or RCCL's) tuning model and the simulation runs them, so where the two disagree the curve can run
    backwards (a modeller found 2 MiB faster than 1 MiB on two dgx-h100-rail nodes and took it for a fault)."""
    out = []
    for before, after in zip(rows, rows[1:]):
        if after.size > before.size and after.time_us < before.time_us and after.plan != before.plan:
            out.append(f"# note: {after.size} B took {after.time_us:.2f} us, less than {before.size} B's "
                       f"{before.time_us:.2f} us: the tuner's plan at {before.size} B ({_plan(before)}) simulates "
                       f"slower than its plan at {after.size} B ({_plan(after)}); the tuner prices plans with the "
                       "library's tuning model, the simulation runs them (--algo, --proto and --channels force one)")
    return out


def _plan(row: PerfRow) -> str:
    return f"{row.plan.algo} {row.plan.proto}, {row.plan.channels} channels, {row.fabric} fabric"


def write_csv(path: str | Path, rows: Sequence[PerfRow]) -> None:
    """One line per row: size_bytes,time_us,algbw_GBps,busbw_GBps,algo,proto,channels,fabric,workgroups (a GPU's
    workgroups that run the plan: twice the channels where NCCL's all-to-all and send/recv run a channel's sends and
    receives apart)."""
    try:
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(CSV_COLUMNS)
            for r in rows:
                w.writerow([r.size, repr(r.time_us), repr(r.algbw), repr(r.busbw), r.plan.algo, r.plan.proto,
                            r.plan.channels, r.fabric, r.plan.workgroups])
    except OSError as e:
        raise ConfigError(f"--csv {path}: cannot write ({e.strerror or e})") from None


@dataclass(frozen=True)
class Compared:
    """One size of a comparison: the measured time and the prediction."""

    measured_us: float  #: the log's time at this size (the mean where the log repeats the size)
    predicted: PerfRow  #: the simulation

    @property
    def error(self) -> float:
        """predicted / measured - 1: positive when the simulation is slower than the real run."""
        return self.predicted.time_us / self.measured_us - 1


def geomean_abs(errors: Sequence[float]) -> float | None:
    """exp(mean(log |e|)) of `errors`; 0 if one is exactly 0; None for no errors."""
    if not errors:
        return None
    if any(e == 0 for e in errors):
        return 0.0
    return math.exp(sum(math.log(abs(e)) for e in errors) / len(errors))


def compare_head() -> list[str]:
    """The column heads of the comparison."""
    return [f"# {'size':>10}  {'count':>12}  {'measured':>10}  {'predicted':>10}  {'error':>9}"
            + _extra("algo", "proto", "channels", "fabric"),
            f"# {'(B)':>10}  {'(elements)':>12}  {'(us)':>10}  {'(us)':>10}"]


def compare_line(c: Compared) -> str:
    """One size: measured and predicted time, the signed error in per cent, and how it was run."""
    p = c.predicted
    f = nccl_tests.float_str
    return (f"{p.size:>12}  {p.count:>12}  {f(c.measured_us, 10)}  {f(p.time_us, 10)}  {100 * c.error:+8.2f}%"
            + _extra(p.plan.algo, p.plan.proto, p.plan.channels, p.fabric))


def compare_trailer(compared: Sequence[Compared]) -> list[str]:
    """The geometric means of |error|: over every size, and over 64 KiB to 1 GiB."""
    every = geomean_abs([c.error for c in compared])
    lo, hi = CAL_RANGE
    inside = [c.error for c in compared if lo <= c.predicted.size <= hi]
    cal = geomean_abs(inside)
    return [f"# geometric mean of |error|, all {_sizes(len(compared))}: " + _percent(every),
            f"# geometric mean of |error|, 64 KiB to 1 GiB ({_sizes(len(inside))}): " + _percent(cal),
            *_line_trailer(compared), "#"]


def alpha_beta(compared: Sequence[Compared]) -> tuple[float, float] | None:
    """The line T = a + S / B through the measured times of the smallest and the largest size: (a in us, B in
    bytes per us), or None without two sizes or a positive B. Why: the calibration data's README names this
    two-point line the baseline a simulator must beat between its points."""
    if len(compared) < 2:
        return None
    first = min(compared, key=lambda c: c.predicted.size)
    last = max(compared, key=lambda c: c.predicted.size)
    span_us = last.measured_us - first.measured_us
    if not span_us > 0:
        return None
    per_us = (last.predicted.size - first.predicted.size) / span_us
    return first.measured_us - first.predicted.size / per_us, per_us


def _line_trailer(compared: Sequence[Compared]) -> list[str]:
    """The alpha-beta line's geometric mean of |error| over the sizes between its two ends (where it is not exact by
    construction), beside the simulation's over the same sizes."""
    line = alpha_beta(compared)
    if line is None:
        return []
    a, per_us = line
    ends = (min(c.predicted.size for c in compared), max(c.predicted.size for c in compared))
    between = [c for c in compared if ends[0] < c.predicted.size < ends[1]]
    if not between:
        return []
    theirs = geomean_abs([(a + c.predicted.size / per_us) / c.measured_us - 1 for c in between])
    ours = geomean_abs([c.error for c in between])
    return [f"# alpha-beta line through the smallest and largest sizes (a = {a:.2f} us, B = {per_us / 1e3:.2f} GB/s), "
            f"the baseline to beat, over the {_sizes(len(between))} between: geometric mean of |error| "
            f"{_percent(theirs)}, the simulation's {_percent(ours)}"]


def _sizes(n: int) -> str:
    return f"{n} size" if n == 1 else f"{n} sizes"


def _percent(value: float | None) -> str:
    return "none (no sizes)" if value is None else f"{100 * value:.2f}%"
