"""``eidola perf``: the sweep (``-b -e -f``) or the comparison with a real log (``--compare LOG``).

Options are checked before anything is simulated, each error naming its option (exit status 2).
Rows print as they finish, so a long sweep shows progress; the CSV and the figure are written at
the end. See docs/perf.md.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ConfigError
from ..run import nccl_tests
from ..run.perf import Fabrics, PerfRow, check_choices, run_sizes
from ..run.perf_source import SOURCE, build_collective
from ..workload.nccl import System
from . import perf_table
from .nccl_log import NcclLog, read_log

if TYPE_CHECKING:
    from ..run.simulate import Progress

__all__ = ["PerfOptions", "perf"]

DEFAULT_SIZES = ("8", "256M", "2")  #: -b, -e and -f when not given (nccl-tests' README example)
_PLOT_SUFFIXES = (".png", ".svg", ".pdf")


@dataclass
class PerfOptions:
    """The command's options, as typed (sizes and numbers still text, so errors can quote them)."""

    platform: str
    op: str
    minbytes: str | None = None
    maxbytes: str | None = None
    stepfactor: str | None = None
    ngpus: str | None = None
    algo: str = "auto"
    proto: str = "auto"
    channels: str = "0"
    fabric: str = "auto"
    overrides: dict[str, Any] | None = None
    csv: str | None = None
    plot: str | None = None
    compare: str | None = None
    column: str = "out-of-place"
    root: str | None = None  #: -r: the root of broadcast, reduce, gather and scatter (default 0, or the LOG's)
    #: Makes the progress reporter of one size's simulation from its label (``"1073741824 B, flow fabric"``),
    #: or None for none: the CLI's stderr line (--progress, or a terminal), so a point of minutes is not silent.
    progress: Callable[[str], Progress | None] | None = None


def _int(text: str, option: str, lo: int) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise ConfigError(f"{option} {text!r}: expected a whole number") from None
    if value < lo:
        raise ConfigError(f"{option} {text!r}: expected a number >= {lo}")
    return value


def _check_outputs(o: PerfOptions) -> None:
    """The output paths can be written, before minutes of simulation are spent."""
    for option, path in (("--csv", o.csv), ("--plot", o.plot)):
        if path is not None and not Path(path).parent.is_dir():
            raise ConfigError(f"{option} {path}: no folder {Path(path).parent}")
    if o.plot is not None and Path(o.plot).suffix.lower() not in _PLOT_SUFFIXES:
        raise ConfigError(f"--plot {o.plot}: expected a file ending in {', '.join(_PLOT_SUFFIXES)}")


def perf(o: PerfOptions, out: TextIO | None = None) -> list[PerfRow]:
    """Runs the command: prints the table (or the comparison) on `out` (default: stdout); returns the simulated rows."""
    out = sys.stdout if out is None else out
    channels = _int(o.channels, "--channels", 0)
    check_choices(o.op, o.algo, o.proto, o.fabric, channels)
    _check_outputs(o)
    log = None
    if o.compare is not None:
        given = [opt for opt, v in (("-b", o.minbytes), ("-e", o.maxbytes), ("-f", o.stepfactor)) if v is not None]
        if given:
            raise ConfigError(f"{given[0]}: with --compare the sizes are the LOG's; leave out -b, -e and -f")
        log = read_log(o.compare, o.column)
    elif o.column != "out-of-place":
        raise ConfigError("--column: chooses the LOG's column of --compare; give --compare LOG")
    b, e, f = (v if v is not None else d for v, d in zip((o.minbytes, o.maxbytes, o.stepfactor), DEFAULT_SIZES))
    lo, hi = (0, 0) if log else (nccl_tests.parse_size(b, "-b"), nccl_tests.parse_size(e, "-e"))
    sizes = [] if log else nccl_tests.sizes(lo, hi, _int(f, "-f", -2**62))
    fabrics = Fabrics(o.platform, o.overrides or {}, o.fabric)
    available = len(fabrics.base.eidolons())
    gpus = _gpus(o, log, available)
    root = _root(o, log, gpus)
    _check_plan(fabrics, o, gpus, channels, root)
    config = f"algo {o.algo}, proto {o.proto}, channels {channels or 'auto'}"
    head = [f"# eidola perf: {o.op} simulated on {fabrics.base.name} ({o.platform}), {gpus} of {available} GPUs",
            f"# nThread 1 nGpus {gpus} minBytes {lo} maxBytes {hi} "
            f"step: {f}(factor)" if log is None else
            f"# nThread 1 nGpus {gpus}, sizes of {o.compare} ({log.tool}, {log.column} column)",
            f"# collectives: {SOURCE}.build_collective; {config}{_library_note(fabrics.base)}",
            f"# fabric: {fabrics.rule()}",
            *_p2p_line(o.op, fabrics.base),
            *_network_line(fabrics.base, gpus),
            "# time: one simulation per size of a call in nccl-tests' back-to-back loop: max(host cost, "
            "launch gap + kernel); "
            f"algbw = size / time (GB/s = 1e9 B/s), busbw = algbw x {_factor_text(o.op, gpus)}",
            "#"]
    print("\n".join(head), file=out, flush=True)
    if log is None:
        rows = _sweep(fabrics, o, sizes, gpus, channels, root, out)
        measured: list[tuple[int, float]] = []
    else:
        rows, measured = _compare(fabrics, o, log, gpus, channels, root, out)
    if o.csv is not None:
        perf_table.write_csv(o.csv, rows)
    if o.plot is not None:
        from .perf_plot import plot_perf

        plot_perf(o.plot, rows, f"{o.op}, {fabrics.base.name}, {gpus} GPUs", measured,
                  f"measured ({Path(o.compare).name})" if o.compare else "measured")
    return rows


def _library_note(platform: Any) -> str:
    """Where the platform names no `collectives:` section: that the library's defaults run (NCCL's, on an NVLink
    switch of the platform's own channels), which a user would otherwise not know."""
    if platform.collectives:
        return ""
    return "; the platform has no collectives: section, so NCCL's defaults (docs/collectives.md)"


def _p2p_line(op: str, platform: Any) -> list[str]:
    """For an all-to-all or send/recv: that each channel's sends and receives run on workgroups of their own
    (`nccl.Plan.split`), and when they cannot, since the workgroups a GPU runs are then the channels."""
    if op not in ("alltoall", "sendrecv"):
        return []
    return [f"# p2p: each channel's sends and receives on workgroups of their own, as NCCL's warps, where the "
            f"GPUs hold twice the channels (gpus.workgroups {System.of(platform).workgroups}), "
            "else one workgroup each"]


def _network_line(platform: Any, gpus: int) -> list[str]:
    """For a rail network the collective crosses: how its cross-rail traffic goes (`fabric.rail.pxn`), since NCCL
    and RCCL differ there and the spines matter only without PXN. Empty for one node or another topology."""
    fabric = platform.components.get("fabric")
    v = fabric.resolved() if fabric is not None else {}
    if v.get("topology") != "rail" or gpus <= int(v["rail.gpus_per_node"]):
        return []
    if v["rail.pxn"] or not int(v["rail.spines"]):
        why = "by PXN (fabric.rail.pxn: NCCL's default)" if v["rail.pxn"] else "with no spines"
        return [f"# network: cross-rail traffic {why}: to the GPU on the peer's rail, out through its NIC"]
    return [f"# network: cross-rail traffic over the {v['rail.spines']} spine(s) from the sender's own NIC "
            "(fabric.rail.pxn false: RCCL's default; NCCL's default is PXN)"]


#: The collective's parameter names in its errors, and the options that give them.
#: (A root is checked by `_root` before the collective is built, so build_collective's "root:" never comes here.)
_OPTION_OF = (("algo:", "--algo"), ("proto:", "--proto"), ("channels:", "--channels"), ("gpus:", "-g"))


def _check_plan(fabrics: Fabrics, o: PerfOptions, gpus: int, channels: int, root: int) -> None:
    """Builds the collective once at a small size before anything is printed, so a choice the platform cannot run
    (NVLS without an NVLS switch, a protocol it does not enable, too many channels) is refused naming the option,
    with no table header before it. The choices do not depend on the size, so one small size tells."""
    try:
        build_collective(fabrics.base, o.op, 4096 * gpus, gpus, o.algo, o.proto, channels, root=root)
    except ConfigError as e:
        text = str(e)
        for key, option in _OPTION_OF:
            if text.startswith(key):
                raise ConfigError(option + text[len(key) - 1:]) from None
        raise


def _factor_text(op: str, n: int) -> str:
    if op in nccl_tests.FACTOR_ONE:
        return "1"
    return f"{'2(n-1)/n' if op == 'all_reduce' else '(n-1)/n'} = {nccl_tests.bus_factor(op, n):.4g}"


def _gpus(o: PerfOptions, log: NcclLog | None, available: int) -> int:
    """-g, else the log's ranks, else the platform's GPUs; a log whose ranks differ from -g is refused."""
    g = _int(o.ngpus, "-g", 2) if o.ngpus is not None else None
    if log is not None and log.nranks is not None:
        if g is not None and g != log.nranks:
            raise ConfigError(f"-g {g}: {o.compare} was measured on {log.nranks} ranks; leave out -g or give "
                              f"-g {log.nranks}")
        g = log.nranks
        if g > available:
            raise ConfigError(f"--compare {o.compare}: measured on {g} ranks, but {o.platform} has {available} GPUs")
    g = available if g is None else g
    if not 2 <= g <= available:
        raise ConfigError(f"-g {g}: expected 2 to {available} GPUs ({o.platform} has {available})")
    return g


def _root(o: PerfOptions, log: NcclLog | None, gpus: int) -> int:
    """-r, else the LOG's root column (one root: nccl-tests' -r -1 runs every root in turn, a run to compare one at
    a time), else 0; a -r that differs from the LOG's root is refused. Only rooted collectives have one."""
    given = _int(o.root, "-r", 0) if o.root is not None else None
    if given is not None and given >= gpus:
        raise ConfigError(f"-r {o.root}: expected a rank from 0 to {gpus - 1} ({gpus} GPUs)")
    if log is None or o.op not in nccl_tests.ROOTED:
        return 0 if given is None else given
    roots = sorted({r.root for r in log.rows})
    if len(roots) > 1:
        raise ConfigError(f"--compare {o.compare}: rows of roots {', '.join(map(str, roots))} (nccl-tests' -r -1 "
                          "runs every root); compare a run of one root")
    if given is not None and given != roots[0]:
        raise ConfigError(f"-r {given}: {o.compare} was measured with root {roots[0]}; leave out -r or give "
                          f"-r {roots[0]}")
    if not 0 <= roots[0] < gpus:
        raise ConfigError(f"--compare {o.compare}: root {roots[0]} is not a rank of its {gpus} GPUs")
    return roots[0]


def _sweep(fabrics: Fabrics, o: PerfOptions, sizes: Sequence[int], gpus: int, channels: int, root: int,
           out: TextIO) -> list[PerfRow]:
    print("\n".join(perf_table.head_lines()), file=out, flush=True)
    points = [nccl_tests.columns(o.op, s, gpus) for s in sizes]
    for (size, _), swept in zip(points, sizes):
        if size == 0:
            print(f"# {swept} B: 0 B per rank after nccl-tests' rounding (a 16-byte multiple per rank); "
                  "nothing to simulate", file=out)
    def done(row: PerfRow) -> None:
        print(perf_table.row_line(o.op, row), file=out, flush=True)
        _print_notes(row, out)

    rows = run_sizes(fabrics, o.op, points, gpus, o.algo, o.proto, channels, done=done, progress=o.progress,
                     root=root)
    trailer = perf_table.trailer(rows)
    print("\n".join(trailer[:-1] + perf_table.faster_larger(rows) + trailer[-1:]), file=out)
    return rows


def _print_notes(row: PerfRow, out: TextIO) -> None:
    """The size's notes on what limited its fabric, as nccl-tests comment lines under its row."""
    for note in row.notes:
        print(f"#   {row.size} B: {note}", file=out, flush=True)


def _compare(fabrics: Fabrics, o: PerfOptions, log: NcclLog, gpus: int, channels: int, root: int,
             out: TextIO) -> tuple[list[PerfRow], list[tuple[int, float]]]:
    if log.test is not None and log.test.removesuffix("_perf") != o.op:
        raise ConfigError(f"--op {o.op}: {o.compare} is a run of {log.test}")
    reduces = o.op in nccl_tests.REDUCTIONS
    for r in log.rows:
        if not nccl_tests.redop_fits(o.op, r.redop):
            raise ConfigError(f"{o.compare}:{r.line}: redop {r.redop!r} is not a {o.op} "
                              f"({'a reduction' if reduces else 'no reduction, redop none'} expected)")
    times: dict[int, list[float]] = {}
    counts: dict[int, int] = {}
    for r in log.rows:
        if r.size > 0:
            times.setdefault(r.size, []).append(r.time_us)
            counts.setdefault(r.size, r.count)
    if not times:
        raise ConfigError(f"{o.compare}: every data line has size 0; nothing to compare")
    measured = {s: sum(t) / len(t) for s, t in times.items()}  # a size repeated (stress cycles): the mean
    print("\n".join(perf_table.compare_head()), file=out, flush=True)
    compared: list[perf_table.Compared] = []

    def done(row: PerfRow) -> None:
        c = perf_table.Compared(measured[row.size], row)
        compared.append(c)
        print(perf_table.compare_line(c), file=out, flush=True)
        _print_notes(row, out)

    rows = run_sizes(fabrics, o.op, sorted(counts.items()), gpus, o.algo, o.proto, channels, done=done,
                     progress=o.progress, root=root)
    print("\n".join(perf_table.compare_trailer(compared)), file=out)
    return rows, sorted(measured.items())
