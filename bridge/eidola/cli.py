"""The ``eidola`` command: run, validate, describe, plot, import, compare, sweep, netsweep and perf.

Exit status: 0 ok; 2 bad input (one message naming the file and key or profile op); 3 the
simulation failed (deadlock, protocol violation, model error), with a report; 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .errors import ConfigError, EidolaError, ProfileError, SimulationError, shown
from .inputs import load_yaml
from .platform import catalog, load_platform
from .platform.credits import FABRICS as CREDIT_FABRICS
from .platform.figures import figures_lines, platform_figures
from .platform.topology_text import topology_text
from .platform.yaml_io import MAX_PLATFORM_NODES
from .workload.flag_check import StuckWaitWarning, stuck_warning_text
from .workload.profile_yaml import load_profile

if TYPE_CHECKING:
    from .platform.model import Platform
    from .run.result import Result
    from .workload.profile import Profile

__all__ = ["main", "safe_dir_name", "progress_line", "time_left_s"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _overrides(pairs: list[str]) -> dict[str, Any]:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set {pair!r}: expected key=value, e.g. --set fabric.latency=700ns")
        try:  # so 8 is an int and true a bool, as in the file; through the safe reader (no alias bombs)
            out[key] = load_yaml(value, f"--set {key}", max_nodes=MAX_PLATFORM_NODES)
        except ConfigError as e:
            if "recursive" in str(e) or "expands" in str(e) or "nested" in str(e):
                raise
            out[key] = value
    return out


def _load(args: argparse.Namespace) -> tuple[Platform, Profile, list[int] | None]:
    """The platform, its profile placed as --place says, and that placement (None without --place)."""
    platform = load_platform(args.platform, _overrides(args.set))
    profile_path = args.profile or platform.profile
    if not profile_path:
        raise ConfigError(f"{args.platform}: the platform names no profile; pass --profile")
    return (platform, *_placed(args, platform, load_profile(profile_path)))


def _placed(args: argparse.Namespace, platform: Platform, profile: Profile) -> tuple[Profile, list[int] | None]:
    """`profile` with its ranks on the platform's GPUs as --place says, and the GPU of each rank (as it is, and None,
    without --place)."""
    if args.place is None:
        return profile, None
    from .platform.topology_text import platform_gpus_per_node
    from .workload.placement import place, placement

    count = len(platform.gpus())
    gpus = placement(args.place, profile.gpus, count, platform_gpus_per_node(platform))
    return place(profile, gpus, count), gpus


def _cmd_run(args: argparse.Namespace) -> int:
    from .run.simulate import simulate  # loads cppyy only when a simulation is asked for

    timeout = _duration(args.timeout, "--timeout") if args.timeout is not None else None
    if args.trace_limit < 0:
        raise ConfigError(f"--trace-limit {args.trace_limit}: expected a number of slices >= 0")
    platform, profile, placement = _load(args)
    out = Path(args.out) if args.out else Path("out") / safe_dir_name(platform.name)
    source = args.profile or platform.profile or ""
    try:  # simulate() warns of a wait nothing can satisfy (run.simulate.check_waits) before it runs: said on stderr
        with _on_stuck_waits(lambda w: print(f"eidola run: warning: {stuck_warning_text(source, w.found)}",
                                             file=sys.stderr)):
            result = simulate(platform, profile, trace=args.trace or args.plots, timeout=timeout,
                              progress=_progress(platform.name, args.progress, _on_packets(platform)))
    except SimulationError as e:
        # Why write anything: a deadlock or stall is debugged from what ran up to it (ops.csv, the trace), and a run
        # that left nothing behind had to be repeated with prints (a user trial, 2026-12-07).
        if e.result is not None:
            if placement is not None:
                e.result.meta["placement"] = placement
            try:
                _write_outputs(e.result, out, args, plots=False)
                e.args = (f"{e}\n  wrote {out}/ with the tables up to the failure (summary.json's failure and "
                          f"partial say so{'; trace.json' if args.trace else ''})",)
            except Exception:  # writing what ran is a courtesy: the run's own error is what to report
                pass
        raise
    if placement is not None:  # summary.json's "placement": rank r ran on GPU placement[r] (eidola compare reads it)
        result.meta["placement"] = placement
    _write_outputs(result, out, args, plots=args.plots)
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        print(_summary_text(result, out))
    return 0


def _write_outputs(result: Any, out: Path, args: argparse.Namespace, plots: bool) -> None:
    """The run's tables, effective.yaml and summary into `out`, with its trace and figures where asked for."""
    try:
        result.save(out)
        if args.trace:
            from .report.trace import write_trace

            write_trace(result, out / "trace.json", args.trace_limit)
        if plots:
            from .report.plots import plot_run

            plot_run(result, out)
    except OSError as e:
        raise ConfigError(f"--out {out}: cannot write the results ({e.strerror or e})") from None


@contextlib.contextmanager
def _on_stuck_waits(show: Callable[[StuckWaitWarning], None]) -> Iterator[None]:
    """Within: each StuckWaitWarning of the API (run.simulate.check_waits, the one check behind simulate() and
    check()) goes to `show`, to be worded as the command words it, once it is issued; other warnings as before."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", StuckWaitWarning)
        before = warnings.showwarning

        def handler(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    file: TextIO | None = None, line: str | None = None) -> None:
            if isinstance(message, StuckWaitWarning):
                show(message)
            else:
                before(message, category, filename, lineno, file, line)

        warnings.showwarning = handler
        yield


def _on_packets(platform: Platform) -> bool:
    """Whether `platform` runs on the packet fabric, given in the shorthand form (so that
    `--set fabric.model=flow` would run it as flows)."""
    from .run.perf import fabric_name

    return platform.shorthand is not None and fabric_name(platform) == "packet"


#: Past this many seconds left, a packet-fabric run's progress says once that flows would be quicker.
FLOW_HINT_S = 120.0


def _progress(name: str, asked: bool, on_packets: bool = False) -> Any:
    """A progress line on stderr for a long run: when stderr is a terminal (after 3 s, redrawn in
    place), or with --progress (after 1 s, a line a second, for logs); else None. `on_packets`: the
    run is on the packet fabric, and a run with FLOW_HINT_S or more left says once how to run it as
    flows."""
    from .run.simulate import Progress

    terminal = sys.stderr.isatty()
    if not (terminal or asked):
        return None
    hinted = False

    def report(sim_ns: float, events: int, wall_s: float) -> None:
        nonlocal hinted
        line = progress_line(name, sim_ns, events, wall_s, progress.ops)
        if on_packets and not hinted and (left := time_left_s(wall_s, progress.ops)) is not None and left >= FLOW_HINT_S:
            hinted = True
            hint = (f"{name}: the packet fabric times every packet, so this run has about {_wall_text(left)} left; "
                    "--set fabric.model=flow runs it as flows, usually in seconds (where the two differ: docs/fabrics.md, "
                    "\"When to trust which model\")")
            sys.stderr.write(f"\r\x1b[K{hint}\n" if terminal else hint + "\n")
        sys.stderr.write(f"\r\x1b[K{line}" if terminal else line + "\n")
        sys.stderr.flush()

    def done() -> None:
        if terminal:  # the summary follows on a clean line
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()

    progress = Progress(report, after_s=3.0 if terminal and not asked else 1.0, every_s=1.0, done=done)
    return progress


def progress_line(name: str, sim_ns: float, events: int, wall_s: float, ops: tuple[int, int] | None = None) -> str:
    """``NAME: simulated 12.5 us, 3.41 Mevents, 7 s wall (487 kevents/s), 25% of the ops done, about 21 s left``.

    `ops`: the ops completed and the ops in all programs. The time left assumes the ops still to
    come take the wall time per op of those done, which holds for a collective's even steps; no
    estimate before the first op is done.
    """
    rate = f" ({_si(events / wall_s)}events/s)" if wall_s > 0 else ""
    line = f"{name}: simulated {sim_ns / 1000:.6g} us, {_si(events)}events, {wall_s:.0f} s wall{rate}"
    if ops is None or ops[1] <= 0:
        return line
    share = 100 * min(ops[0], ops[1]) / ops[1]  # rounded down: 100% only once every op is done
    line += f", {share:.1f}% of the ops done" if share < 10 else f", {int(share)}% of the ops done"
    left = time_left_s(wall_s, ops)
    if left is not None:
        line += f", about {_wall_text(left)} left"
    return line


def time_left_s(wall_s: float, ops: tuple[int, int] | None) -> float | None:
    """Wall seconds a run that took `wall_s` for `ops` (done, in all) has left at that pace; None
    when that cannot be said (no op done yet) or nothing is left."""
    if ops is None or not 0 < ops[0] < ops[1]:
        return None
    return wall_s * (ops[1] - ops[0]) / ops[0]


def _wall_text(seconds: float) -> str:
    """``45 s``, ``3 min 20 s``, ``2 h 5 min``: a wall duration as far as a person needs it."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def safe_dir_name(name: str) -> str:
    """A platform name made safe as one directory name: no separators, no leading dots, nothing else odd.

    Why: the default output directory is out/NAME, and a name such as ``../../x`` or ``/etc``
    must not write outside out/.
    """
    cleaned = _UNSAFE.sub("_", name).lstrip(".")[:200]
    return cleaned or "platform"


def _duration(text: str, option: str) -> float:
    """A wall duration given on the command line, in seconds: ``90s``, ``500ms``, or a plain number of
    seconds (``60``), as every other command-line tool reads one."""
    from .platform import units
    from .run.simulate import MAX_TIMEOUT_S

    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = units.parse(text, "time")
        except units.UnitError as e:
            raise ConfigError(f"{option} {text!r}: {e} (or a plain number of seconds)") from None
    if seconds != seconds:  # nan
        raise ConfigError(f"{option} {text!r}: expected a duration such as 60 or 90s")
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise ConfigError(f"{option} {text!r}: expected a duration in (0s, {MAX_TIMEOUT_S:g}s]")
    return seconds


def _si(x: float) -> str:
    for factor, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}"
    return f"{x:.3g} "


#: The built-in fabrics, which fill the per-link tables; a third-party fabric (a plugin) fills none.
_LINK_TABLE_FABRICS = ("IdealFabric", *CREDIT_FABRICS)


def _busiest(link: dict[str, Any] | None, fabric: str = "") -> str:
    if not link and fabric and not any(name in fabric for name in _LINK_TABLE_FABRICS):
        # Why not "no link traffic": the run moved bytes, but a third-party fabric's links are its own.
        return "not reported (a third-party fabric keeps its own link statistics; links.csv is empty)"
    if not link or (not link["bytes"] and not link["utilization"]):
        return "none (no link traffic)"
    src, dst = link.get("src_name", link["src"]), link.get("dst_name", link["dst"])
    text = f"{src} -> {dst}, {_si(link['bytes'])}B"
    if link["utilization"] > 0:
        return text + f" at {100 * link['utilization']:.1f}% utilisation (mean over its lanes)"
    return text + (" (the ideal fabric has no link timing)" if "Ideal" in fabric else "")


def _usage_note(used: int, gpus: int, summary: dict[str, Any] | None = None) -> str:
    """A warning line when the profile leaves GPUs of the platform idle (often a forgotten override), saying so when
    the GPUs it uses are all in one node of a multi-node platform (`summary`'s node span): nothing crosses the
    network then."""
    if used >= gpus:
        return ""
    note = f"note: profile uses {used} of {gpus} GPUs; the others only serve their memory"
    nodes, span = (summary or {}).get("nodes", 0), (summary or {}).get("profile_nodes", [])
    if nodes > 1 and len(span) == 1:
        per = summary["gpus_per_node"] if summary else 0
        note += (f"; they are all in node {span[0]} of {nodes} (GPUs {span[0] * per}-{span[0] * per + per - 1}), so no "
                 "traffic crosses the network: a profile's GPU g is the platform's GPU g (--place spread puts its "
                 "ranks round robin over the nodes)")
    return note


def _counted(inserted: list[str]) -> str:
    """ "adapter0 (AtToLtAdapter)", ... as "2 AtToLtAdapter, 8 ProtocolChecker"."""
    counts = Counter(item.rsplit("(", 1)[-1].rstrip(")") for item in inserted)
    return ", ".join(f"{n} {model}" for model, n in counts.items())


def _placement_line(gpus: list[int]) -> str:
    """--place's map, rank -> GPU, in a line (the first 16 ranks, then how many more)."""
    pairs = ", ".join(f"{r}->{g}" for r, g in enumerate(gpus[:16]))
    return f"placement     rank -> GPU: {pairs}" + (f", ... ({len(gpus) - 16} more)" if len(gpus) > 16 else "")


def _summary_text(r: Result, out: Path) -> str:
    s = r.summary
    lines = [
        f"{r.name}: {s['gpus']} GPUs on {s['fabric']}, profile {r.profile_name} ({s['profile_ops']} ops)",
        *([note] if (note := _usage_note(s.get("profile_gpus_used", s["gpus"]), s["gpus"], s)) else []),
        *([_placement_line(s["placement"])] if s.get("placement") else []),
        (f"PARTIAL       stopped at limits.sim_time = {r.kernel_time_ns / 1000:.3f} us with workgroups unfinished"
         if r.partial else f"kernel time   {r.kernel_time_ns / 1000:.3f} us  (critical GPU {r.critical_gpu})"),
        "",
        "  GPU  finish (us)   bytes sent   bytes recv   reads  flag reads   writes  atomics",
    ]
    for g in r.gpus:
        lines.append(f"  {g['gpu']:3d}  {g['finish_ns'] / 1000:11.3f}  {g['bytes_sent']:11d}  {g['bytes_received']:11d}"
                     f"  {g['reads']:6d}  {g['flag_reads']:10d}  {g['writes']:7d}  {g['atomics']:7d}")
    lines += [
        "",
        f"moved         {_si(s['bytes_moved'])}B in {s['packets']} packets",
        ("busiest link  " + _busiest(s["busiest_link"], s.get("fabric", ""))),
        *s.get("notes", []),
        f"reads         {s['reads']} data, {s['flag_reads']} flag (polling)",
        f"simulation    {r.wall_s:.3f} s wall, {s['events']} events ({_si(s['events_per_s'] or 0)}events/s)",
        f"time          compile {s.get('compile_s', 0):.2f} s, elaborate {s.get('elaborate_s', 0):.3f} s, "
        f"simulate {s.get('simulate_s', 0):.3f} s",
        *([f"inserted      {_counted(s['inserted'])} (on the bindings; see effective.yaml)"] if s.get("inserted") else []),
        f"wrote         {out}/ (summary.json, CSV tables, effective.yaml"
        + (", trace.json" if (out / "trace.json").exists() else "")
        + (", figures" if (out / "timeline.png").exists() or (out / "reads.png").exists() else "") + ")",
    ]
    return "\n".join(lines)


def _cmd_validate(args: argparse.Namespace) -> int:
    platform = load_platform(args.platform, _overrides(args.set))
    from .run.simulate import check

    profile_path = args.profile or platform.profile
    if not profile_path:  # a platform alone is worth checking before any profile exists
        check(platform, None)
        print(f"{args.platform}: ok ({len(platform.gpus())} GPUs; the platform alone: it names no profile, "
              "pass --profile to check one on it)")
        _print_buffer_warnings(platform)
        return 0
    profile, _ = _placed(args, platform, load_profile(profile_path))
    notes: list[str] = []  # stuck waits only plugin GPUs can end; stuck waits otherwise are refused (exit 2)
    with _on_stuck_waits(lambda w: notes.append(f"note: {w}")):
        check(platform, profile, source=profile_path)
    print(f"{args.platform}: ok ({len(platform.gpus())} GPUs, profile {profile.name}: {profile.ops_count()} ops)")
    for note in notes:
        print(note)
    line = _fabric_topology(platform)
    if line:
        print(line)
    _print_buffer_warnings(platform)
    note = _usage_note(len(profile.used_gpus()), len(platform.gpus()))
    if note:
        print(note)
    return 0


def _print_buffer_warnings(platform: Platform) -> None:
    """A warning line for each fabric whose switch buffer is short of a link's credit round trip: a platform that
    runs, but whose links cannot reach their rate (docs/router.md, "Buffers and credits"); the exit status stays 0."""
    from .platform.credits import buffer_warnings, credit_checks

    for line in buffer_warnings(credit_checks(platform)):
        print(line)


def _import_library(args: argparse.Namespace) -> Any:
    """`import --algorithm nccl`'s collectives library: the --platform's (`nccl.System`); None for the textbook
    algorithms, which take no platform."""
    if args.algorithm != "nccl":
        if args.platform is not None or args.set:
            raise ConfigError(f"--platform and --set are for --algorithm nccl; --algorithm {args.algorithm} builds "
                              "the textbook schedule on no platform")
        return None
    if args.platform is None:
        raise ConfigError("--algorithm nccl: give --platform PLATFORM.yaml, whose library, channels and nodes build "
                          "the collectives")
    from .workload.nccl import System

    return System.of(load_platform(args.platform, _overrides(args.set)))


def _cmd_import(args: argparse.Namespace) -> int:
    report_text = ""
    if args.source == "timestamps":
        from .workload.importers.timestamps import import_timestamps

        profile = import_timestamps(args.file, name=args.name)
    else:
        library = _import_library(args)
        workgroups = args.workgroups if args.workgroups is not None or library else 1  # None: the importer's choice
        if args.source == "kineto":
            from .workload.importers.kineto import import_kineto

            profile, report = import_kineto(args.files, args.name, args.algorithm, workgroups, args.compute,
                                            args.wait, ranks=args.ranks, library=library)
        else:
            from .workload.importers.chakra import import_chakra, warnings_of

            profile, report = import_chakra(args.files, args.name, args.algorithm, workgroups, args.wait,
                                            ranks=args.ranks, comm_groups=args.comm_groups, library=library)
            for line in warnings_of(report):  # also in the report, under "assumed"
                print(f"eidola import: warning: {line}", file=sys.stderr)
        report_text = report.text()
    try:
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)  # as `run --out` does: out/ may not exist yet
        profile.save(args.output)
        if report_text:  # beside the profile, so what was assumed travels with it
            Path(args.output).with_suffix(".import.txt").write_text(report_text)
    except OSError as e:
        raise ConfigError(f"{args.output}: cannot write profile ({e.strerror})") from None
    print(report_text, end="")
    gpus = f"{profile.gpus} GPUs, " if report_text else ""
    print(f"wrote {args.output}: profile {profile.name}, {gpus}{len(profile.programs)} programs, "
          f"{profile.ops_count()} ops" + (f"; report in {Path(args.output).with_suffix('.import.txt')}"
                                          if report_text else ""))
    _warn_if_unreadable(Path(args.output))
    return 0


def _warn_if_unreadable(path: Path) -> None:
    """A warning where the profile just written is larger than `eidola run` reads by default (a library-faithful
    import of a long trace can be), with what lets it be read, so the next step does not fail unexplained."""
    from .inputs import max_input_bytes

    size, limit = path.stat().st_size, max_input_bytes()
    if size > limit:
        print(f"eidola import: warning: {path} is {size / 2**20:.0f} MiB, more than the {limit / 2**20:.0f} MiB "
              f"eidola run and validate read (EIDOLA_MAX_INPUT_BYTES); run it with "
              f"EIDOLA_MAX_INPUT_BYTES={-(-size // 2**20) * 2**20} or more set", file=sys.stderr)


def _cmd_compare(args: argparse.Namespace) -> int:
    from .report.compare import compare

    print(compare(args.run_dir, args.traces, ranks=args.ranks, csv_path=args.csv, plots=args.plots), end="")
    return 0


def _index_list(text: str | None, option: str) -> tuple[int, ...] | None:
    """``0,3`` or ``0-7`` or ``0-3,8`` as indices; None for no option or ``all``; ConfigError naming `option`."""
    if text is None or text.strip() == "all":
        return None
    out: list[int] = []
    try:
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            lo, hi = int(first), int(last) if dash else int(first)
            if lo < 0 or hi < lo:
                raise ValueError(part)
            out += range(lo, hi + 1)
    except ValueError:
        raise ConfigError(f"{option} {text!r}: expected indices and ranges such as 0,3 or 0-7 or 0-3,8 "
                          "(or all)") from None
    return tuple(out)


def _window(text: str | None) -> tuple[float, float] | None:
    """``10us:50us`` (either end may be left out) as (start, end) in ns of simulated time."""
    if text is None:
        return None
    from .platform import units

    first, colon, last = text.partition(":")
    if not colon:
        raise ConfigError(f"--window {text!r}: expected START:END with units, e.g. 10us:50us or :2us")
    try:
        lo = units.parse(first, "time") * 1e9 if first.strip() else 0.0
        hi = units.parse(last, "time") * 1e9 if last.strip() else float("inf")
    except units.UnitError as e:
        raise ConfigError(f"--window {text!r}: {e}") from None
    if not 0 <= lo < hi:
        raise ConfigError(f"--window {text!r}: expected 0 <= START < END")
    return lo, hi


def _cmd_plot(args: argparse.Namespace) -> int:
    from .report.plots import TimelineView, load_run, plot_run

    d = Path(args.directory)
    run = load_run(d)  # through the safe reader: a damaged folder is a ConfigError naming the file
    window = _window(args.window)
    if window is not None and window[1] == float("inf"):
        kernel_ns = float(run.kernel_time_ns)
        if window[0] >= kernel_ns:
            raise ConfigError(f"--window {args.window!r}: starts after the run ended ({kernel_ns / 1000:g} us)")
        window = (window[0], kernel_ns)
    view = TimelineView(_index_list(args.gpus, "--gpus"), _index_list(args.workgroups, "--workgroups"), window)
    gpus = 0 if run.gpus is None else len(run.gpus)
    if view.gpus is not None and max(view.gpus) >= gpus:
        raise ConfigError(f"--gpus {args.gpus!r}: the run has GPUs 0-{gpus - 1}")
    try:
        written = plot_run(run, d, view)
    except (ValueError, KeyError, TypeError, IndexError) as e:  # tables edited by hand into nonsense
        raise ConfigError(f"{d}: the run's tables cannot be drawn ({type(e).__name__}: {shown(str(e), 120)}); "
                          "write the folder again with eidola run") from None
    print(f"wrote {len(written)} figure files into {d}/" + ("" if (d / "ops.csv").exists() else
          " (no timeline: the run was not traced; use eidola run --trace or --plots)"))
    return 0


def _fabric_topology(platform: Platform) -> str:
    """The topology line of `platform`'s packet or flow fabric ("" for single-node topologies)."""
    for c in platform.components.values():
        if c.spec.name in ("PacketFabric", "FlowFabric"):
            return topology_text(c.resolved(), len(platform.gpus()))
    return ""


def _cmd_describe(args: argparse.Namespace) -> int:
    models = catalog.models()
    if args.model and args.model.endswith((".yaml", ".yml")):  # a platform: what it is made of
        platform = load_platform(args.model, _overrides(args.set))
        fabrics = [c.spec.name for c in platform.components.values() if c.role == "fabric"]
        figures = platform_figures(platform)
        if args.json:
            print(json.dumps({"platform": platform.name, "gpus": len(platform.gpus()), "fabrics": fabrics,
                              "topology_text": _fabric_topology(platform), **figures}, indent=2))
            return 0
        print(f"{platform.name}: {len(platform.gpus())} GPUs on {', '.join(fabrics)}")
        line = _fabric_topology(platform)
        if line:
            print(line)
        for row in figures_lines(figures):
            print(row)
        return 0
    if args.json:
        raise ConfigError("--json: give a platform file (.yaml); a model's parameters print as a table")
    if not args.model:
        for m in models.values():
            print(f"{m.name:14s} {m.doc}")
        return 0
    name = args.model.removeprefix("eidola.")
    if name not in models:
        raise ConfigError(f"describe: no model named {args.model!r}; registered: {', '.join(models)}")
    m = models[name]
    print(f"{m.name}: {m.doc}\n\nParameters:")
    print(f"  {'name':18s} {'type':10s} {'default':>10s}  {'unit':5s} doc")
    for p in m.params:
        print(f"  {p.name:18s} {p.type:10s} {p.default_text():>10s}  {p.unit:5s} {p.doc}")
        if p.choices:
            print(f"  {'':18s} {'':10s} {'':>10s}  {'':5s} choices: {', '.join(p.choices)}")
    print("\nSockets:")
    for s in m.sockets:
        count = "one per port" if s.multiplicity == "ports" else "one"
        print(f"  {s.name:18s} {s.direction:10s} {s.protocol:6s} {count:13s} {s.doc}")
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .run.sweep import default_out, load_spec, sweep
    from .run.sweep.options import check_dask, check_workers

    check_workers(args.workers)  # the options first: they cost nothing to check, the spec may
    check_dask(args.dask)
    spec = load_spec(args.spec)
    out = Path(args.out) if args.out else default_out(spec)
    table = sweep(spec, out=out, workers=args.workers, dask=args.dask, resume=args.resume, overwrite=args.overwrite,
                  progress=True)
    a = table.attrs
    print(f"{spec.name}: {len(table)} points ({a['reused']} reused, {a['ran']} run, {a['failed']} failed); "
          f"wrote {out}/sweep.parquet, sweep.csv and points/")
    for _, row in table[table["status"] != "ok"].iterrows():
        first = str(row["error"]).strip().splitlines()[0] if str(row["error"]).strip() else ""
        print(f"  point {row['point']} ({row['status']}, exit status {row['exit_status']}): {first}", file=sys.stderr)
    # A finished sweep with failed points is a failed run of those simulations, not bad input.
    return 3 if a["failed"] else 0


def _cmd_netsweep(args: argparse.Namespace) -> int:
    from .report.netsweep_plot import plot_netsweep
    from .run.netsweep import format_table, netsweep, parse_rates
    from .workload.traffic import PATTERNS

    if args.pattern not in PATTERNS:
        raise ConfigError(f"--pattern {args.pattern!r}: expected one of {', '.join(PATTERNS)}")
    rates = parse_rates(args.rates)
    timeout = _duration(args.timeout, "--timeout") if args.timeout is not None else None
    platform = load_platform(args.platform, _overrides(args.set))
    hotspots = _int_list(args.hotspots, "--hotspots")
    out = Path(args.out) if args.out else Path("out") / f"netsweep-{safe_dir_name(platform.name)}-{args.pattern}"
    try:
        rows = netsweep(platform, rates, timeout=timeout, pattern=args.pattern, packet=args.packet,
                        duration=args.duration, warmup=args.warmup, cycle=args.cycle, seed=args.seed,
                        hotspots=hotspots, reply=True)
    except ProfileError as e:  # the traffic's settings are the command's options: name them
        raise ConfigError(f"{_netsweep_option(str(e))}{e}") from None
    print(f"{platform.name}: {args.pattern} traffic, {args.packet} packets, {args.duration} measured after "
          f"{args.warmup}; loads in packets per GPU per ns, one-way latencies from creation")
    print(format_table(rows))
    out.mkdir(parents=True, exist_ok=True)
    (out / "netsweep.json").write_text(json.dumps(rows, indent=2) + "\n")
    written = plot_netsweep(rows, out, f"{platform.name}, {args.pattern}")
    print("wrote " + ", ".join(str(p) for p in [out / "netsweep.json", *written]))
    return 0


def _cmd_perf(args: argparse.Namespace) -> int:
    from .report.perf_command import PerfOptions, perf

    perf(PerfOptions(args.platform, args.op, args.minbytes, args.maxbytes, args.stepfactor, args.ngpus, args.algo,
                     args.proto, args.channels, args.fabric, _overrides(args.set), args.csv, args.plot, args.compare,
                     args.column, root=args.root, progress=lambda label: _progress(label, args.progress)))
    return 0


def _perf_parser(sub: Any) -> None:
    pf = sub.add_parser("perf", help="a collective at each message size, printed as nccl-tests prints it",
                        description="Simulate one collective at each message size and print the nccl-tests table "
                                    "(docs/perf.md); with --compare LOG, set the simulation beside a real "
                                    "nccl-tests or rccl-tests run.")
    pf.add_argument("platform", help="platform YAML file")
    pf.add_argument("--op", required=True, help="all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, "
                                                "sendrecv, gather or scatter (nccl-tests' names)")
    pf.add_argument("-b", "--minbytes", help="smallest size: bytes with an optional K, M or G (powers of 2), "
                                             "as nccl-tests reads it (default 8)")
    pf.add_argument("-e", "--maxbytes", help="largest size (default 256M)")
    pf.add_argument("-f", "--stepfactor", help="multiplication factor between sizes, >= 2 (default 2)")
    pf.add_argument("-g", "--ngpus", help="GPUs taking part: the first N of the platform (default: all of them, "
                                          "or the LOG's ranks with --compare)")
    pf.add_argument("-r", "--root", help="the root rank of broadcast, reduce, gather and scatter (default 0, or the "
                                         "LOG's root with --compare); the other collectives have none")
    pf.add_argument("--algo", default="auto", help="auto, ring, tree, nvls, hierarchical (all_reduce across "
                    "nodes) or p2p (alltoall, sendrecv, gather, scatter) (default auto: the tuner chooses)")
    pf.add_argument("--proto", default="auto", help="auto, LL, LL128 or Simple (default auto)")
    pf.add_argument("--channels", default="0", help="channels (a workgroup each per GPU, two for alltoall and "
                    "sendrecv where their sends and receives go apart); 0 lets the tuner choose")
    pf.add_argument("--fabric", default="auto",
                    help="auto (packet fabric up to 64 MiB written in all, flow above), packet or flow")
    pf.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a platform key")
    pf.add_argument("--progress", action="store_true",
                    help="report each size's simulated time, events, wall time, share of ops done and time left on "
                         "stderr once a second while it runs longer than a second (on a terminal this is automatic "
                         "after 3 s)")
    pf.add_argument("--csv", metavar="FILE",
                    help="write size_bytes,time_us,algbw_GBps,busbw_GBps,algo,proto,channels,fabric,workgroups")
    pf.add_argument("--plot", metavar="FILE", help="draw busbw and time against size (.png, .svg or .pdf)")
    pf.add_argument("--compare", metavar="LOG", help="a real nccl-tests or rccl-tests output: simulate its sizes and "
                                                    "print measured and predicted time and the error")
    pf.add_argument("--column", default="out-of-place",
                    help="the LOG's column to compare with: out-of-place (default) or in-place")


def _netsweep_option(message: str) -> str:
    """"--cycle: " for a traffic error about the cycle, and so on: the option the user typed."""
    for key in ("packet", "duration", "warmup", "cycle", "rate", "seed", "hotspots", "pattern"):
        if f" {key}" in message or f"{key}:" in message:
            return f"--{'rates' if key == 'rate' else key}: "
    return ""


def _int_list(text: str | None, option: str) -> list[int]:
    """A comma list of GPU indices (empty when not given); ConfigError naming `option`."""
    if not text:
        return []
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ConfigError(f"{option} {shown(text)}: expected a comma list of GPU indices, e.g. 0,5") from None


def _cmd_sweep_plot(args: argparse.Namespace) -> int:
    from .run.sweep.plot import plot_sweep

    written, averaged = plot_sweep(args.directory, args.x, args.y, hue=args.hue, col=args.col, output=args.output)
    print("wrote " + ", ".join(str(p) for p in written))
    if averaged:
        # A user trial read busbw averaged over 1 MiB and 256 MiB as one curve: say what each point stands for.
        print(f"note: each point is the mean over {', '.join(averaged)} (the min-max range shaded); draw "
              f"{'them' if len(averaged) > 1 else 'it'} apart with --hue or --col", file=sys.stderr)
    return 0


def _sweep_plot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="eidola sweep plot", description="Draw a metric of a finished sweep.")
    p.add_argument("directory", help="the sweep's output folder (holds sweep.parquet)")
    p.add_argument("--x", required=True, help="the axis on the x axis (a column of the table)")
    p.add_argument("--y", required=True, help="the metric on the y axis")
    p.add_argument("--hue", help="an axis drawn as one line per value")
    p.add_argument("--col", help="an axis drawn as one panel per value")
    p.add_argument("-o", "--output", help="file name without extension (default: DIR/Y-vs-X); PNG and SVG")
    return p


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eidola", description="Simulate multi-GPU communication traffic in SystemC.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("run", "simulate a platform and write its results"),
                            ("validate", "check a platform and its profile without simulating")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("platform", help="platform YAML file")
        p.add_argument("--profile", help="timing profile (default: the platform's)")
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a key, e.g. fabric.latency=700ns")
        p.add_argument("--place", metavar="PLACEMENT",
                       help="the platform GPU of each profile GPU (rank): packed (rank r on GPU r, the default), "
                            "spread (round robin over the nodes) or a list, e.g. 0,8,1,9 (docs/import.md)")
        if name == "run":
            p.add_argument("--out", help="output directory (default: out/PLATFORM-NAME, the name made safe)")
            p.add_argument("--timeout", metavar="DURATION",
                           help="kill the simulation past this wall time: 60 (seconds), 90s or 500ms "
                                "(default: the platform's limits.wall)")
            p.add_argument("--json", action="store_true", help="print the summary as JSON")
            p.add_argument("--progress", action="store_true",
                           help="report simulated time, events, wall time, share of ops done and time left on "
                                "stderr once a second in a run longer than a second (on a terminal this is automatic "
                                "after 3 s)")
            p.add_argument("--trace", action="store_true", help="write DIR/trace.json (Perfetto / chrome://tracing)")
            p.add_argument("--trace-limit", type=int, default=500_000, help="most op slices in the trace")
            p.add_argument("--plots", action="store_true", help="write figures (PNG and SVG) into DIR")
    pl = sub.add_parser("plot", help="draw the figures of a finished run (a directory written by run)")
    pl.add_argument("directory")
    pl.add_argument("--gpus", help="the timeline's GPUs, e.g. 0,3 or 0-7 (default: all, up to 16 evenly spaced)")
    pl.add_argument("--workgroups", help="the timeline's workgroups on each GPU, e.g. 0-7 (default: as many as fit "
                                         "32 rows, at most 8 per GPU, evenly spaced)")
    pl.add_argument("--window", help="the timeline's simulated time, START:END with units, e.g. 10us:50us or :2us "
                                     "(default: the whole run)")
    d = sub.add_parser("describe", help="list the models, one model's parameters and sockets, or a platform's topology and figures")
    d.add_argument("model", nargs="?", help="model name, e.g. EidolonGpu, or a platform file (.yaml)")
    d.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a platform key")
    d.add_argument("--json", action="store_true", help="a platform's figures as JSON (seconds, bytes, bytes/s)")
    sw = sub.add_parser("sweep", help="run a sweep spec (eidola sweep plot DIR draws one)",
                        description="Run every point of a sweep spec; 'eidola sweep plot DIR --x A --y M' draws it.")
    sw.add_argument("spec", help="sweep spec YAML file")
    sw.add_argument("--workers", type=int, help="points run at once on this machine (default: one per core)")
    sw.add_argument("--dask", metavar="ADDRESS", help="run on a Dask scheduler (tcp://host:8786) or local:N workers")
    sw.add_argument("--out", help="output folder (default: out/sweeps/NAME)")
    sw.add_argument("--resume", action="store_true", help="run only the points not already finished in the folder")
    sw.add_argument("--overwrite", action="store_true",
                    help="run every point again in a folder that holds an earlier sweep")
    ns = sub.add_parser("netsweep", help="latency-load sweep of synthetic traffic: a table and two figures",
                        description="Simulate synthetic traffic at each offered rate; print latency and accepted "
                                    "load, and draw both against offered load (PNG and SVG).")
    ns.add_argument("platform", help="platform YAML file")
    ns.add_argument("--pattern", default="uniform", help="uniform, transpose, bit_complement, bit_reverse, shuffle, "
                                                        "tornado, neighbor or hotspot")
    ns.add_argument("--rates", default="0.01:0.2:0.01", help="packets per GPU per ns: START:STOP:STEP or a list")
    ns.add_argument("--packet", default="256B", help="payload of each write (default 256B)")
    ns.add_argument("--duration", default="10us", help="measurement window (default 10us)")
    ns.add_argument("--warmup", default="2us", help="time before the window (default 2us)")
    ns.add_argument("--cycle", default="1ns", help="injection cycle (default 1ns)")
    ns.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    ns.add_argument("--hotspots", help="hotspot GPUs, e.g. 0,5 (pattern hotspot)")
    ns.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a platform key")
    ns.add_argument("--out", help="output folder (default: out/netsweep-PLATFORM-PATTERN)")
    ns.add_argument("--timeout", metavar="DURATION",
                    help="kill each point's simulation past this wall time, e.g. 60s (default: limits.wall)")
    imp = sub.add_parser("import", help="turn measurements of a real run into a timing profile")
    kinds = imp.add_subparsers(dest="source", required=True)
    ts = kinds.add_parser("timestamps", help="per-event timestamps CSV (docs/import.md; eidola.workload.importers.timestamps)")
    ts.add_argument("file", help="timestamps CSV file")
    ts.add_argument("-o", "--output", required=True, help="profile YAML file to write")
    ts.add_argument("--name", help="profile name (default: the CSV file's stem)")
    for source, text in (("kineto", "PyTorch-profiler (Kineto) JSON traces, one per rank"),
                         ("chakra", "MLCommons Chakra execution traces (.et), one per rank")):
        k = kinds.add_parser(source, help=text)
        k.add_argument("files", nargs="+", help="one trace per rank (.json or .json.gz)" if source == "kineto"
                       else "one Chakra ET per rank, in rank order")
        k.add_argument("-o", "--output", required=True, help="profile YAML file to write (the report goes beside it)")
        k.add_argument("--name", help="profile name (default: the first file's stem)")
        k.add_argument("--algorithm", default="ring", choices=("ring", "direct", "nccl"),
                       help="collective algorithm: the textbook ring or direct schedule, or nccl: as the --platform's "
                       "library (NCCL or RCCL) runs each collective (docs/import.md)")
        k.add_argument("--platform", metavar="PLATFORM.yaml",
                       help="with --algorithm nccl: the platform whose library, channels and nodes build the collectives")
        k.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="with --platform: override one of its parameters (as eidola run --set)")
        k.add_argument("--workgroups", type=int, default=None,
                       help="workgroups per stream or thread (default 1; with --algorithm nccl, the platform's "
                       "collectives.channels, or the most workgroups a traced collective's plan runs on, as the GPUs allow)")
        k.add_argument("--wait", default="syncmon", choices=("syncmon", "poll", "spin_yield"), help="wait mode")
        k.add_argument("--ranks", type=int, metavar="N",
                       help="replicate the one trace given as N symmetric ranks (SPMD: every rank runs this program)")
        if source == "kineto":
            k.add_argument("--compute", default="device", choices=("device", "host"),
                           help="compute phases from GPU kernels (device) or CPU ops (host, CPU-only traces)")
        else:
            k.add_argument("--comm-groups", metavar="FILE.json",
                           help='communicator groups, as ASTRA-sim\'s --comm-group-configuration: {"<pg_name>": '
                           '[ranks...], ...}; a COMM_COLL runs among its pg_name\'s ranks (default: every rank)')
    _perf_parser(sub)
    cmp = sub.add_parser("compare", help="per collective: traced duration against the simulated one")
    cmp.add_argument("run_dir", help="a run directory written by eidola run --trace")
    cmp.add_argument("traces", nargs="+", help="the Kineto traces the profile was imported from")
    cmp.add_argument("--ranks", type=int, metavar="N", help="as the traces were imported (import kineto --ranks N)")
    cmp.add_argument("--csv", metavar="FILE", help="write one row per collective: call,kind,bytes,traced_us,simulated_us "
                     "(overwritten if it exists)")
    cmp.add_argument("--plots", action="store_true", help="draw compare.png and compare.svg into RUN_DIR (log axes)")
    # Outputs are overwritten now, as run's are; --force is still accepted so that scripts written for the
    # refusing compare keep working.
    cmp.add_argument("--force", action="store_true", help=argparse.SUPPRESS)
    return parser


def _reader_gone() -> int:
    """The reader of our output went away (``eidola describe | head``): stop quietly, as Unix tools do.

    Unix tools die of SIGPIPE here, which the shell reports as 128 + 13; so do we, without a
    message. Later writes to stdout (the interpreter's last flush) go to /dev/null, so nothing
    more is printed about it.
    """
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured): nothing to silence
        pass
    return 128 + signal.SIGPIPE


class _Terminated(BaseException):
    """SIGTERM, raised where the program is, so running simulations are killed on the way out."""


def _on_sigterm(signum: int, frame: object) -> None:
    raise _Terminated


def _stale_install() -> str | None:
    """A warning when this is an installed copy (scripts/setup.sh) older than the source tree it was built from.

    Why: `.venv/bin/eidola` runs the copy pip installed, so after a pull or an edit without setup again it ran the
    old code without a word (two user trials, 2026-12-07, read stale tables and missing options). setup.sh records
    the tree in `.venv/eidola-source-dir` beside `.venv/eidola-sources.sha1`, whose time is the install's; a source
    file newer than that means the install is stale. Stat calls only: a few milliseconds."""
    stamp = Path(sys.prefix) / "eidola-sources.sha1"
    where = Path(sys.prefix) / "eidola-source-dir"
    if not stamp.exists() or not where.exists():
        return None  # not set up by setup.sh
    tree, installed = Path(where.read_text().strip()), stamp.stat().st_mtime
    # Running from the tree's own bridge/ (PYTHONPATH=bridge) runs its code. The tree, not bridge/, would take in the
    # installed copy too: setup.sh puts .venv inside the tree.
    if Path(__file__).resolve().is_relative_to((tree / "bridge").resolve()):
        return None
    listed = tree / "scripts" / "source_paths"  # what source_stamp.sh hashes: one list for both
    for top in (listed.read_text().split() if listed.exists() else ()):
        if not (tree / top).exists():
            continue
        for root, _dirs, files in os.walk(tree / top) if (tree / top).is_dir() else [(str(tree), [], [top])]:
            for name in files:
                if not name.endswith(".pyc") and (Path(root) / name).stat().st_mtime > installed:
                    return (f"eidola: warning: the installed eidola is older than {Path(root) / name}; "
                            "run `bash scripts/setup.sh` again to use the source tree's code")
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``eidola`` command; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if stale := _stale_install():
            print(stale, file=sys.stderr)
    except OSError:
        pass  # the tree moved or is unreadable: nothing to say
    if argv[:2] == ["sweep", "plot"]:  # a spec file named plot is ./plot
        args = _sweep_plot_parser().parse_args(argv[2:])
        args.command = "sweep plot"
    else:
        args = _parser().parse_args(argv)
    handler = {"run": _cmd_run, "validate": _cmd_validate, "describe": _cmd_describe, "plot": _cmd_plot,
               "import": _cmd_import, "compare": _cmd_compare, "sweep": _cmd_sweep,
               "sweep plot": _cmd_sweep_plot, "netsweep": _cmd_netsweep, "perf": _cmd_perf}[args.command]
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (main() called from a library): leave signals alone
        previous = None
    try:
        status = handler(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, rather than at interpreter exit
        return status
    except BrokenPipeError:
        return _reader_gone()
    except EidolaError as e:
        print(f"eidola {args.command}: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"eidola {args.command}: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print(f"eidola {args.command}: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except Exception:
        print(f"eidola {args.command}: internal error (please report it):", file=sys.stderr)
        traceback.print_exc()
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
