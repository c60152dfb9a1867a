"""``eidola compare RUN_DIR TRACES...``: per collective, the traced duration against the simulated one.

The traces are imported again (as ``eidola import kineto`` did, with the same ``--ranks``; host
compute for CPU-only traces) to know each collective call and its traced duration per rank. The
run directory must come from ``eidola run --trace`` (its ops.csv). A call's simulated duration on
a workgroup runs from when the workgroup was free to start it (the end of its last compute op or
op of another call or kernel boundary) to the end of its last op of the call (ops whose flag
carries the call's ``c<n>.`` prefix, with the writes between them); on a GPU, from the latest
such start (when the last workgroup is free: the stream's kernel boundary) to the latest end.

A trace records, per rank, the collective kernel's duration on that rank's stream, waits for its
peers included. So a call is compared on the traced ranks only: each traced rank's time against
its own GPU's simulated time (means over the traced ranks). With ``--ranks`` one rank was traced
and stands for all replicas; it is compared with the one replica in its place (its position in
the traced group: the same role towards the root and the ring), not with the mean over replicas,
whose spans include waiting on the chain and differ with their position.

The traces must match the run: the same calls (prefixes) on the same GPUs. Traces that match
nothing, or whose collectives were none of them simulated (one rank imported without
``--ranks``: every collective replays its traced time), are refused (exit 2) with the reason.
Prints a table, and a warning on stderr where a traced communicator had another number of ranks
than the simulated call. Writes ``--csv FILE`` (one row per call: call,kind,bytes,traced_us,
simulated_us) and, with ``plots``, compare.png / .svg in RUN_DIR (log axes); both are overwritten,
as ``eidola run`` overwrites its outputs.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..inputs import decode_text, read_input

__all__ = ["CSV_COLUMNS", "Call", "compare", "compare_calls", "group_warning", "read_ops", "read_summary",
           "simulated_calls"]

CSV_COLUMNS = ("call", "kind", "bytes", "traced_us", "simulated_us")  #: the header of --csv
_PREFIX = re.compile(r"^(c[0-9]+\.)")  # the flags of one collective call (ProfileBuilder.next_prefix)
_OPS_COLUMNS = ("gpu", "wg", "op", "begin_ns", "end_ns", "kind", "flag")  # what compare reads from ops.csv
_MAX_ID = 2**31


@dataclass
class Call:
    """One collective call: its prefix (``c<n>``), kind, bytes, traced and simulated durations (us, means over
    the traced ranks and the GPUs in their places), and the ranks of its traced and simulated groups."""

    call: str
    kind: str
    nbytes: int
    traced_us: float
    simulated_us: float
    traced_ranks: int = 0  #: ranks in the communicator the trace recorded (0: not known)
    simulated_ranks: int = 0  #: GPUs the simulated call ran on
    gpus: tuple[int, ...] = ()  #: the GPUs compared: those in the traced ranks' places


@dataclass
class _Op:
    gpu: int
    wg: int
    op: int
    begin: float
    end: float
    kind: str
    flag: str


def read_summary(run_dir: Path, written_by: str = "eidola run --trace") -> dict[str, Any]:
    """summary.json of a run directory, read through the safe reader; a ConfigError naming it if it is not one
    (saying the folder is written by the command `written_by`)."""
    path = run_dir / "summary.json"
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{run_dir}: not a run directory (no summary.json); write one with {written_by} "
                          f"--out {run_dir}")
    text = decode_text(read_input(path, "run summary (summary.json)"), str(path))
    try:
        data = json.loads(text, parse_constant=lambda c: None)
    except (ValueError, RecursionError) as e:
        raise ConfigError(f"{path}: not a run summary: invalid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a run summary: expected a JSON object")
    return data


def read_ops(run_dir: Path) -> list[_Op]:
    """The rows of a traced run's ops.csv, each checked; a ConfigError naming the file, line and column."""
    path = run_dir / "ops.csv"
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"{run_dir}: no ops.csv; expected a run directory written by eidola run --trace")
    text = decode_text(read_input(path, "run's op table (ops.csv)"), str(path))
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            raise ConfigError(f"{path}: empty; expected the op table eidola run --trace writes")
        missing = [c for c in _OPS_COLUMNS if c not in header]
        if missing:
            raise ConfigError(f"{path}:1: no column {', '.join(map(repr, missing))}; expected the op table eidola "
                              "run --trace writes")
        at = {c: header.index(c) for c in _OPS_COLUMNS}
        out = []
        for line, row in enumerate(reader, start=2):
            if len(row) != len(header):
                raise ConfigError(f"{path}:{line}: {len(row)} cells; expected {len(header)} as in the header")
            out.append(_op(path, line, {c: row[i] for c, i in at.items()}))
    except csv.Error as e:
        raise ConfigError(f"{path}: not a CSV op table ({e})") from None
    return out


def _op(path: Path, line: int, cells: dict[str, str]) -> _Op:
    """One checked row of ops.csv."""
    ints = {}
    for c in ("gpu", "wg", "op"):
        v = cells[c]
        if not v.isdigit() or int(v) >= _MAX_ID:
            raise ConfigError(f"{path}:{line}: column {c!r} is {v!r}; expected an integer in 0..{_MAX_ID - 1}")
        ints[c] = int(v)
    times = {}
    for c in ("begin_ns", "end_ns"):
        try:
            t = float(cells[c])
        except ValueError:
            t = -1.0
        if not math.isfinite(t) or t < 0:
            raise ConfigError(f"{path}:{line}: column {c!r} is {cells[c]!r}; expected a time in ns >= 0")
        times[c] = t
    if times["end_ns"] < times["begin_ns"]:
        raise ConfigError(f"{path}:{line}: end_ns {times['end_ns']} is before begin_ns {times['begin_ns']}")
    return _Op(ints["gpu"], ints["wg"], ints["op"], times["begin_ns"], times["end_ns"], cells["kind"], cells["flag"])


def simulated_calls(run_dir: Path) -> dict[str, dict[int, float]]:
    """{call prefix: {gpu: simulated ns}} from a traced run's ops.csv."""
    ops = sorted(read_ops(run_dir), key=lambda o: (o.gpu, o.wg, o.op))
    spans: dict[str, dict[int, list[float]]] = defaultdict(dict)
    free: dict[tuple[int, int], float] = {}  # (gpu, wg) -> when it was last free to start a call
    begun: set[tuple[str, tuple[int, int]]] = set()  # (call, (gpu, wg)) whose first op was seen
    for o in ops:
        key = (o.gpu, o.wg)
        m = _PREFIX.match(o.flag)
        if m:
            start = free.get(key, 0.0) if (m.group(1), key) not in begun else None
            span = spans[m.group(1)].setdefault(o.gpu, [0.0, o.end])
            if start is not None:  # the workgroup's first op of this call
                begun.add((m.group(1), key))
                # On a GPU the call starts when the last of its workgroups is free to start it, as a
                # stream's kernel starts once the previous one has ended on every workgroup.
                span[0] = max(span[0], start)
            span[1] = max(span[1], o.end)
        # Writes, reads and fences (no flag) belong to the call whose flag follows them; anything
        # else ends what came before (a compute, a kernel boundary, another call's op).
        if o.kind == "compute" or o.flag:
            free[key] = o.end
    return {p: {g: e - b for g, (b, e) in per.items()} for p, per in spans.items()}


def _import(traces: list[str], ranks: int | None) -> Any:
    from ..workload.importers.kineto import import_kineto

    chakra = [t for t in traces if str(t).endswith((".et", ".et.gz"))]
    if chakra:  # the Kineto reader would call it invalid JSON, which hides why it cannot be compared
        raise ConfigError(f"{chakra[0]}: a Chakra ET; eidola compare takes Kineto traces (the JSON torch.profiler "
                          "writes), whose collectives carry their measured times: an ET's times come from its "
                          "dependencies, so there is nothing measured to compare against")
    try:
        return import_kineto(traces, ranks=ranks)[1]
    except ConfigError as e:
        if "--compute host" not in str(e):
            raise
        return import_kineto(traces, compute="host", ranks=ranks)[1]


def compare_calls(run_dir: str | Path, traces: list[str], ranks: int | None = None) -> list[Call]:
    """The calls of `traces` (imported with `ranks`) with their simulated times in `run_dir`.

    Raises ConfigError when the traces do not match the run, or give nothing to compare."""
    d = Path(run_dir)
    summary = read_summary(d)
    sim = simulated_calls(d)
    if placement := summary.get("placement"):  # run with --place: rank r ran on GPU placement[r]
        rank_of = {int(g): r for r, g in enumerate(placement)}
        sim = {p: {rank_of[g]: ns for g, ns in per.items() if g in rank_of} for p, per in sim.items()}
    report = _import(traces, ranks)
    files = ", ".join(map(str, traces))
    if not report.calls:
        hint = ("; import one rank of a larger job with --ranks N (the ranks are symmetric) and compare with the "
                "same --ranks" if ranks is None else "")
        raise ConfigError(f"{files}: nothing to compare: none of the traces' collectives was simulated (each has no "
                          f"traced peer, so it replays as its traced time){hint}")
    if not sim:
        raise ConfigError(f"{d}: the run holds no collective calls (no c<n>. flags in its ops.csv); expected the "
                          f"run of a profile imported from {files}")
    calls = {prefix: (kind, nbytes, traced) for prefix, kind, nbytes, traced in report.calls}
    wanted = {p: set(traced) for p, (_, _, traced) in calls.items()}
    got = {p: set(per) for p, per in sim.items()}
    if wanted != got:
        lost = sorted(set(wanted) - set(got), key=_order)
        extra = sorted(set(got) - set(wanted), key=_order)
        moved = [p for p in sorted(set(wanted) & set(got), key=_order) if wanted[p] != got[p]]
        why = []
        if lost:
            why.append(f"calls {_few(lost)} of the traces are not in the run")
        if extra:
            why.append(f"calls {_few(extra)} of the run are not in the traces")
        if moved:
            p = moved[0]
            why.append(f"call {p.rstrip('.')} runs on GPUs {sorted(got[p])} in the run but ranks {sorted(wanted[p])} "
                       "in the traces")
        profile = summary.get("profile")
        raise ConfigError(f"{files}: the traces do not match the run {d} (profile {profile!r}): {'; '.join(why)}; "
                          "expected the traces the run's profile was imported from, with the same --ranks")
    out = []
    for prefix, (kind, nbytes, traced) in sorted(calls.items(), key=lambda x: _order(x[0])):
        size, own = report.groups.get(prefix, (len(traced), sorted(traced)))
        gpus = tuple(sorted(own)) or tuple(sorted(traced))
        per = sim[prefix]
        out.append(Call(prefix.rstrip("."), kind, nbytes, sum(traced[g] for g in gpus) / len(gpus) / 1000,
                        sum(per[g] for g in gpus) / len(gpus) / 1000, size, len(per), gpus))
    return out


def group_warning(calls: list[Call], files: str = "the traces") -> str:
    """One warning line where calls' traced communicators had another number of ranks than their simulated
    groups (their times are then not comparable); "" where every call matches."""
    off = [c for c in calls if c.traced_ranks and c.simulated_ranks and c.traced_ranks != c.simulated_ranks]
    if not off:
        return ""
    pairs = Counter((c.traced_ranks, c.simulated_ranks) for c in off)
    which = "" if len(off) == len(calls) else f" in {len(off)} of {len(calls)} calls ({_few([c.call for c in off])})"
    if len(pairs) == 1:
        (traced, simulated), = pairs
        sizes = f"the trace's communicator had {traced} ranks and the simulation {simulated}"
    else:
        sizes = "the trace's communicators had " + ", ".join(
            f"{t} ranks where the simulation had {s} ({n} calls)" for (t, s), n in sorted(pairs.items()))
    # A collective's time depends on its group: a ring over P ranks takes 2(P-1) steps and moves
    # 2(P-1)/P of the data per rank, so a 128-rank all_gather's time says little of an 8-GPU one.
    biggest = max(t for t, _ in pairs)
    return (f"warning: {files}: {sizes}{which}, so the traced and simulated times are not comparable; to compare "
            f"them, import with --ranks {biggest} and run on a platform of {biggest} GPUs or more\n")


def _order(prefix: str) -> int:
    return int(prefix[1:].rstrip("."))


def _few(prefixes: list[str]) -> str:
    """The first five call names of `prefixes` (``c3.`` or ``c3``), and how many more."""
    names = [p.rstrip(".") for p in prefixes]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _check_outputs(paths: list[Path], inputs: list[Path]) -> None:
    """A ConfigError for an output that is not a regular file, or that is one of the inputs (ops.csv,
    summary.json, a trace): overwriting it would destroy what the comparison is made of."""
    def same(a: Path, b: Path) -> bool:
        try:
            return a.exists() and b.exists() and a.samefile(b)
        except OSError:
            return False

    for p in paths:
        if (p.exists() or p.is_symlink()) and not p.is_file():
            raise ConfigError(f"{p}: exists and is not a regular file; expected a file to write")
        if any(same(p, i) for i in inputs):
            raise ConfigError(f"{p}: is an input of the comparison; expected another file to write")


def compare(run_dir: str, traces: list[str], ranks: int | None = None, csv_path: str | None = None,
            plots: bool = False) -> str:
    """Return the comparison table; write `csv_path` if given and, with `plots`, compare.png and compare.svg
    into `run_dir` (both overwritten if they exist, as ``eidola run`` does with its outputs).

    ranks: as the traces were imported (``--ranks``). A warning goes to stderr where the traced
    communicators had another number of ranks than the simulation (`group_warning`)."""
    d = Path(run_dir)
    figures = [d / "compare.png", d / "compare.svg"] if plots else []
    outputs = figures + ([Path(csv_path)] if csv_path else [])
    # Before any work: a refused run costs nothing.
    _check_outputs(outputs, [d / "ops.csv", d / "summary.json", *map(Path, traces)])
    calls = compare_calls(d, traces, ranks)
    warning = group_warning(calls, ", ".join(map(str, traces)))
    if warning:
        sys.stderr.write(warning)
    lines = [f"{'call':6s} {'collective':15s} {'bytes':>10s} {'traced us':>10s} {'simulated us':>13s} {'ratio':>7s}"]
    for c in calls:
        ratio = c.simulated_us / c.traced_us if c.traced_us else float("nan")
        lines.append(f"{c.call:6s} {c.kind:15s} {c.nbytes:10d} {c.traced_us:10.2f} {c.simulated_us:13.2f} "
                     f"{ratio:7.3f}")
    try:
        if csv_path:
            with open(csv_path, "w", newline="") as f:
                w = csv.writer(f)
                w.writerow(CSV_COLUMNS)
                w.writerows((c.call, c.kind, c.nbytes, f"{c.traced_us:.3f}", f"{c.simulated_us:.3f}") for c in calls)
        if plots:
            _plot(calls, d)
    except OSError as e:
        raise ConfigError(f"{e.filename or d}: cannot write the comparison ({e.strerror or e})") from None
    written = ", ".join(map(str, outputs))
    return "\n".join(lines) + "\n" + (f"wrote {written}\n" if written else "")


def _plot(calls: list[Call], d: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Durations span decades (a 424 B broadcast in microseconds, a 30 MB all-reduce in milliseconds):
    # log axes keep every call readable; a duration of 0 cannot be drawn on them and is left out.
    points = [c for c in calls if c.traced_us > 0 and c.simulated_us > 0]
    fig, ax = plt.subplots(figsize=(5, 5))
    for kind in sorted({c.kind for c in points}):
        xs = [c for c in points if c.kind == kind]
        ax.scatter([c.traced_us for c in xs], [c.simulated_us for c in xs], label=kind, s=18)
    values = [v for c in points for v in (c.traced_us, c.simulated_us)] or [1.0, 10.0]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="grey", lw=0.8, ls="--", label="simulated = traced")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("traced duration (us)")
    ax.set_ylabel("simulated duration (us)")
    ax.set_title("collectives: trace vs replay")
    ax.legend(fontsize=7)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(d / f"compare.{ext}")
    plt.close(fig)
