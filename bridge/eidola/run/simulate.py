"""Running a simulation: checks, encoding, a fresh child process per run, and the Result.

A SystemC kernel elaborates once per process, and a model may crash; so each simulation runs
in a child forked from this process after cppyy and the models are loaded (`sysc.load`). The
child sends its raw tables back through a pipe. A child that dies becomes SimulationCrashed,
and the caller lives on. ``in_process=True`` runs in this process instead, for debuggers; it
can only be done once per process.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import os
import pickle
import resource
import select
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import (
    ConfigError,
    DeadlockError,
    EidolaError,
    MemoryLimitExceeded,
    ProfileError,
    SimulationCrashed,
    SimulationError,
    WallLimitExceeded,
)
from ..platform import catalog, memory
from ..platform.credits import credit_checks
from ..platform.elaborate import Plan, topology_error
from ..platform.model import Platform
from ..platform.topology_text import platform_gpus_per_node
from ..workload.flag_check import FlagCheck, StuckWaitWarning, check_flags, outside_note, stuck_error_text, stuck_warning_text
from ..workload.profile import Profile
from ..workload.profile_yaml import load_profile
from . import sysc
from .build_memory import address_space, building_within
from .encode import EncodedProfile, encode_profile
from .plugin_build import PluginBuild, Window, build_plugin
from .result import Result

__all__ = ["simulate", "check", "check_waits", "prepare", "NativeRun", "Progress", "StuckWaitWarning"]

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
MAX_TIMEOUT_S = 86400.0  #: the longest wall limit simulate() takes (a day)
_in_process_used: list[bool] = []  # a SystemC kernel runs once per process; remembers the in-process run


@dataclass
class Progress:
    """How a long simulation tells its caller how far it has got.

    The parent process asks the child (a signal; the child's handler writes the simulated time
    and the event count into memory they share) every `every_s` seconds, starting `after_s`
    seconds into the run, and calls `report(simulated_ns, events, wall_s)`, with `ops` set to the
    workgroups' ops completed and the ops in all their programs. Nothing runs per transaction: a
    question costs the child one signal handler. `done()` is called once the run ended, if `report`
    was called at all (a terminal line can then be cleared).
    """

    report: Callable[[float, int, float], None]  #: called with (simulated ns, events so far, wall seconds)
    after_s: float = 3.0  #: no report before the run has taken this long (short runs stay silent)
    every_s: float = 1.0  #: seconds between reports
    done: Callable[[], None] | None = None  #: called at the end, when `report` was called
    reported: int = field(default=0, init=False)  #: reports made so far
    #: (ops completed, ops in all programs) as of the report being made: the share of the profile done
    ops: tuple[int, int] | None = field(default=None, init=False)


@dataclass(frozen=True)
class NativeRun:
    """What the child builds and runs: the plan, the encoded profile and what to record."""

    plan: Plan                #: the elaborated platform
    encoded: EncodedProfile   #: the profile as the models replay it
    trace: bool               #: record every op's begin and end
    plugins: dict[str, PluginBuild] = field(default_factory=dict)  #: component -> its compiled plugin
    sim_time_s: float = 0.0   #: stop at this simulated time, with partial results (0: run to the end)
    memory_b: int = 0         #: the child may allocate at most this many bytes more than it was forked with (0: no limit)

    @property
    def compile_s(self) -> float:
        """Seconds spent compiling plugins for this run (0 when all came from the cache)."""
        return sum(b.compile_s for b in self.plugins.values())


def prepare(platform: Platform, profile: Profile, seed: int, trace: bool = False,
            wall_s: float | None = None) -> NativeRun:
    """Elaborates `platform` and encodes `profile` for it: every check simulate() makes before building.

    Plugins are compiled here, each compile under the wall limit `wall_s` (default: the
    platform's limits.wall) and under limits.memory.
    """
    plan = platform.elaborate()
    _check_topologies(platform, plan)
    memory_b = memory.limit_of(platform.limits)
    # In this process, before the child exists: as large as the profile, so under the same cap (build_memory.py).
    with building_within(memory_b, f"profile {profile.name!r} encoded for {platform.name!r}"):
        encoded = encode_profile(profile, plan, seed=seed)
    wall = platform.limits.get("wall") if wall_s is None else wall_s
    plugins = _build_plugins(plan, wall, memory_b)
    return NativeRun(plan, encoded, trace, plugins, float(platform.limits.get("sim_time", 0.0)), memory_b)


def check(platform: Platform, profile: Profile | None, *, source: str = "") -> None:
    """Every check simulate() makes before it builds anything (what `eidola validate` runs), and stricter on one.

    With no profile, the platform alone: elaboration (bindings, address map, inserted parts) and
    its plugins' builds. With a profile, also its waits (check_waits): where simulate() warns of a
    wait no op can ever satisfy and runs into the deadlock, this refuses the profile (ProfileError,
    naming `source`, default the profile's name); as `eidola run` warns and `eidola validate` refuses.
    """
    if profile is not None:  # the waits first: a stuck profile is refused before any plugin is compiled
        check_waits(platform, profile, source, refuse=True, stacklevel=2)
        prepare(platform, profile, platform.seed)
        return
    plan = platform.elaborate()
    _check_topologies(platform, plan)
    _build_plugins(plan, platform.limits.get("wall"), memory.limit_of(platform.limits))


def check_waits(platform: Platform, profile: Profile, source: str = "", *, refuse: bool = False,
                stacklevel: int = 1) -> FlagCheck:
    """The stuck-wait check of simulate() and check(): waits no op of `profile` can ever satisfy (a certain deadlock;
    workload/flag_check.py). Returns what it found.

    refuse=False (simulate(), `eidola run`): a StuckWaitWarning naming the first such wait (gpu, wg, op index and
    flag) and how many more; the run goes on, and its deadlock report shows where every workgroup stopped.
    refuse=True (check(), `eidola validate`): a ProfileError listing them (exit status 2).
    Where GPUs of `platform` run a model of their own (plugins), they may write any flag from outside the profile,
    so the profile alone does not decide: simulate() says nothing, and check() warns with a note naming them.
    `source` names the profile in the messages (default: its name). `stacklevel`: the warning names the line that
    called check_waits (1), or its caller (2: simulate() and check() name their caller's line).
    Cost: vectorised over the op table; about 30 ms on a 750,000-op NCCL profile (128 GPUs).
    """
    found = check_flags(profile)
    if not found.stuck_count:
        return found
    plugins = sorted(int(g.resolved()["id"]) for g in platform.gpus() if not g.spec.replays_profile)
    where = source or f"profile {profile.name!r}"
    if plugins:
        if refuse:
            warnings.warn(StuckWaitWarning(outside_note(found, plugins), found), stacklevel=stacklevel + 1)
        return found
    if refuse:
        raise ProfileError(stuck_error_text(where, found))
    warnings.warn(StuckWaitWarning(stuck_warning_text(where, found), found), stacklevel=stacklevel + 1)
    return found


def _check_topologies(platform: Platform, plan: Plan) -> None:
    """Builds every custom topology of `plan` as its fabric will (C++ eidola::Topology) and refuses one it cannot
    build as bad input naming the file and the edge. Why here: the fabric found it only once built in the child,
    and its message named neither; and `eidola validate` said ok to a platform `eidola run` refused."""
    for c in plan.components:
        if c.spec.name in ("PacketFabric", "FlowFabric") and c.value("topology") == "custom":
            problem = sysc.topology_problem(dict(c.values))
            if problem is not None:
                raise topology_error(platform, c.name, problem)


def _build_plugins(plan: Plan, wall_s: float | None, memory_b: int) -> dict[str, PluginBuild]:
    """Each plugin component of `plan` compiled (or found in the cache), by component name, each
    compile under the wall limit `wall_s` and under `memory_b` bytes."""
    windows = tuple(Window(g.window, plan.base + g.window * plan.stride, plan.stride) for g in plan.gpus)
    return {c.name: build_plugin(c.spec.plugin, windows, f"plugin {c.name!r}", wall_s=wall_s, memory_b=memory_b)
            for c in plan.components if c.spec.plugin is not None}


def simulate(platform: Platform, profile: Profile | str | os.PathLike[str] | None = None, *,
             seed: int | None = None, trace: bool = False, in_process: bool = False,
             timeout: float | None = None, progress: Progress | None = None) -> Result:
    """Simulates `profile` (default: the platform's own) on `platform` and returns its Result.

    `seed` (default: the platform's) drives the profile's variability; `trace` records every op's
    begin and end in `Result.ops`. `timeout` (seconds; default: the platform's ``limits.wall``, else
    none) kills the simulation's process once it has run that long. `progress` is told, from this
    process, how far a long run has got (see Progress); the simulation itself is not slowed.

    Warns with StuckWaitWarning (before anything is built) when a wait of the profile can never be satisfied by
    its ops, naming the gpu, wg, op index and flag (check_waits; check() refuses such a profile instead).
    Raises ConfigError for bad input, DeadlockError when workgroups can never finish,
    WallLimitExceeded past the wall limit, SimulationCrashed when the child dies, SimulationError
    for other failures.
    """
    wall_limit = _wall_limit(platform, timeout)
    if profile is None:
        if not platform.profile:
            raise ConfigError(f"platform {platform.name!r} names no profile; pass one")
        profile = platform.profile
    # The file the run used, for effective.yaml ("": built in Python, no file to name).
    profile_file = "" if isinstance(profile, Profile) else os.path.abspath(os.fspath(profile))
    if not isinstance(profile, Profile):
        profile = load_profile(profile)
    check_waits(platform, profile, profile_file, stacklevel=2)  # warns before the plugins compile and the run starts
    run = prepare(platform, profile, platform.seed if seed is None else seed, trace, wall_limit)
    sysc.load()
    start = time.perf_counter()
    raw = _run_in_process(run) if in_process else _run_in_child(run, wall_limit, progress)
    wall = time.perf_counter() - start
    failed = raw["status"] != 0
    if failed:  # the tables up to the failure, kept on the error for `eidola run` to write (a partial run's form)
        raw = {**raw, "partial": True}
    meta = {"partial": bool(raw.get("partial")), "gpus": len(run.plan.gpus), "fabric": run.plan.fabric_description(),
            "profile_ops": profile.ops_count(),
            "profile_gpus_used": len(profile.used_gpus()),
            **_node_span(platform, profile),
            "compile_s": run.compile_s,
            "inserted": [f"{c.name} ({c.spec.name})" for c in run.plan.components if c.inserted],
            **raw.get("timings", {}),
            **{k: raw[k] for k in ("child_max_rss_kb", "child_private_kb") if k in raw}}
    if failed:
        meta["failure"] = {"kind": raw["failure_kind"], "text": raw["failure"]}
    effective = platform.effective_yaml(profile_file) + _profile_note(profile_file, profile) + _inserted_note(run.plan)
    try:
        result = Result.from_raw(platform.name, raw, wall, effective_config=effective,
                                 profile_name=profile.name, meta=meta, flag_names=tuple(profile.flags), profile=profile,
                                 link_credits=tuple(credit_checks(platform)))
    except Exception:
        if not failed:
            raise
        result = None  # tables a failure left unreadable: the error alone
    if failed:
        _raise_failure(platform.name, raw, profile, result)
    assert result is not None
    return result


def _node_span(platform: Platform, profile: Profile) -> dict[str, Any]:
    """On a multi-node fabric: its nodes, their size and the nodes the profile's GPUs are in (for the summary's note
    on a profile that never leaves one node: a trial imported 8 ranks onto GPUs 0-7 of a 2-node platform, and only
    "profile uses 8 of 16 GPUs" hinted that no byte crossed the network)."""
    if per := platform_gpus_per_node(platform):
        used = sorted({g // per for g in profile.used_gpus()})
        return {"nodes": len(platform.gpus()) // per, "gpus_per_node": per, "profile_nodes": used}
    return {}


def _profile_note(profile_file: str, profile: Profile) -> str:
    """Where the profile came from, as a YAML comment, when it was built in Python (not a file)."""
    if profile_file:
        return ""
    return (f"# profile: {profile.name!r} was built in Python, not read from a file; save it (Profile.save) "
            "and name it here to repeat the run\n")


def _inserted_note(plan: Plan) -> str:
    """The parts elaboration inserted, as YAML comments (they are not part of the input)."""
    inserted = {c.name: c.spec.name for c in plan.components if c.inserted}
    if not inserted:
        return ""
    lines = ["# Inserted by elaboration (adapters, protocol checkers), as bound in this run:"]
    for b in plan.bindings:
        if b.initiator.component in inserted or b.target.component in inserted:
            lines.append(f"#   {b.initiator} -> {b.target}")
    lines += [f"#   {name}: {model}" for name, model in inserted.items()]
    return "\n".join(lines) + "\n"


def _run_in_process(run: NativeRun) -> dict[str, Any]:
    if _in_process_used:
        raise EidolaError("a SystemC kernel elaborates once per process: only one in-process simulation can run "
                          "(use the default child-process mode for more)")
    _in_process_used.append(True)
    return sysc.elaborate_and_run(run)


def _wall_limit(platform: Platform, timeout: float | None) -> float | None:
    """The wall limit of a run in seconds: `timeout` if given, else the platform's limits.wall, else None."""
    if timeout is None:
        return platform.limits.get("wall")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise ConfigError(f"timeout: expected a number of seconds in (0, {MAX_TIMEOUT_S:g}], got {timeout!r}")
    return float(timeout)


def _die_with_parent(parent: int) -> None:
    """Asks the kernel to SIGKILL this (child) process when its parent dies, so no simulation outlives it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's own clean-up still kills the child
        pass
    # The parent may have died between fork() and prctl(): then nobody would send the signal.
    if os.getppid() != parent:
        os._exit(1)


def _read_all(fd: int, deadline: float | None, name: str, limit: float | None,
              reached: Callable[[], Reached | None], progress: Progress | None = None) -> bytes:
    """Everything the child writes to `fd` until it closes it; WallLimitExceeded past `deadline` (monotonic).

    `reached` asks the child how far it has got (Reached), or None if it cannot say; `progress` is
    told it now and then.
    """
    chunks: list[bytes] = []
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    start = time.monotonic()
    next_report = None if progress is None else start + progress.after_s
    while True:
        wakes = [t for t in (deadline, next_report) if t is not None]
        wait_ms = None if not wakes else max(0, int((min(wakes) - time.monotonic()) * 1000) + 1)
        if not poller.poll(wait_ms):
            now = time.monotonic()
            if progress is not None and next_report is not None and now >= next_report:
                answer = reached()
                if answer is not None:
                    progress.ops = (answer.ops_done, answer.ops_total) if answer.ops_total else None  # 0: not loaded yet
                    progress.report(answer.sim_ns, answer.events, now - start)
                    progress.reported += 1
                next_report = now + progress.every_s
            if deadline is not None and now >= deadline:
                answer = reached()
                at_ns = None if answer is None else answer.sim_ns
                how_far = (f"; it had reached {at_ns / 1000:g} us of simulated time" if at_ns is not None
                           else " (before its simulation started)")
                raise WallLimitExceeded(  # the caller kills the child
                    f"simulation {name!r} exceeded the wall limit of {limit:g} s and was killed{how_far}",
                    report={"limit": "wall", "wall_s": limit, "sim_time_ns": at_ns})
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _run_in_child(run: NativeRun, wall_limit: float | None = None, progress: Progress | None = None) -> dict[str, Any]:
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    # Four words shared with the child: on SIGUSR1 it writes the simulated time it reached (ps) in
    # the first, its events so far in the second, its ops completed and its programs' ops in the others.
    time_word = mmap.mmap(-1, 32)
    time_word[:8] = _UNKNOWN_TIME
    with tempfile.TemporaryFile() as errors:
        sys.stdout.flush()
        sys.stderr.flush()
        # Move every live object out of the collector's reach: a collection in the child would
        # touch (and so copy) every page of the parent's heap, a large profile's included.
        gc.freeze()
        # Ctrl-C or SIGTERM between fork() and the try below would leave the child running:
        # hold them until the parent is ready to kill it (and the child has set its own handlers).
        # SIGUSR1 too: until the simulation installs its handler, the child ignores the question.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1})
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _die_with_parent(parent)
            gc.disable()
            os.close(read_fd)
            # cppyy's crash handlers run gdb and exit with a made-up status; the default action
            # lets the parent see which signal killed the model.
            for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            # Ctrl-C reaches the whole process group: the parent decides, and kills this process.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # asked before it can answer: no answer, no death
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            os.dup2(errors.fileno(), 2)
            os.dup2(errors.fileno(), 1)
            _limit_memory(run.memory_b)
            code = 0
            payload: dict[str, Any]
            try:
                payload = {"ok": sysc.elaborate_and_run(run, ctypes.addressof(ctypes.c_char.from_buffer(time_word)))}
                payload["ok"]["child_private_kb"] = _private_kb()
            except EidolaError as e:
                payload = {"error": e}
            except BaseException as e:
                if run.memory_b and _out_of_memory(e):  # MemoryError, or C++'s std::bad_alloc through cppyy
                    payload = {"error": _memory_exceeded(run)}
                else:
                    payload = {"internal": traceback.format_exc()}
                    code = 1
            try:
                with os.fdopen(write_fd, "wb") as pipe:
                    pickle.dump(payload, pipe, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                os._exit(code)
        try:
            gc.unfreeze()
            os.close(write_fd)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)  # a held Ctrl-C is raised here, inside the try
            deadline = None if wall_limit is None else time.monotonic() + wall_limit
            try:
                data = _read_all(read_fd, deadline, run.plan.name, wall_limit, lambda: _time_reached(pid, time_word),
                                 progress)
            finally:
                if progress is not None and progress.reported and progress.done is not None:
                    progress.done()
            _, status, usage = os.wait4(pid, 0)
        except BaseException:
            # Ctrl-C, SIGTERM turned into an exception, or a wall limit: never leave the child running.
            _kill(pid)
            raise
        finally:
            os.close(read_fd)
        errors.seek(0)
        output = errors.read().decode(errors="replace")
    if data:
        payload = pickle.loads(data)
        if output.strip():
            sys.stderr.write(output)
        if "ok" in payload:
            result: dict[str, Any] = payload["ok"]
            result["child_max_rss_kb"] = usage.ru_maxrss
            return result
        if "error" in payload:
            raise payload["error"]
        raise EidolaError(f"simulation {run.plan.name!r}: internal error in the child process:\n{payload['internal']}")
    if run.memory_b and any(mark in output for mark in _OUT_OF_MEMORY):
        raise _memory_exceeded(run)
    if os.WIFSIGNALED(status):
        how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exited with status {os.WEXITSTATUS(status)} without a result"
    tail = "\n".join(output.strip().splitlines()[-20:])
    raise SimulationCrashed(f"simulation {run.plan.name!r} crashed: its process {how}"
                            + (f"; its last output:\n{tail}" if tail else ""),
                            report={"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                                    "output": output})


_UNKNOWN_TIME = b"\xff" * 8
#: What a child that ran out of its address space prints before it aborts (C++, LLVM, glibc).
_OUT_OF_MEMORY = ("std::bad_alloc", "out of memory", "Allocation failed", "Cannot allocate memory")


def _limit_memory(extra: int) -> None:
    """Caps this (child) process's address space at its size now plus `extra` bytes (RLIMIT_AS).

    Why on top of the current size: the child is forked from a parent that has mapped cppyy, LLVM
    and the models (gigabytes of address space, mostly shared and untouched); what the simulation
    itself may take is what comes after. A run past the cap gets a failed allocation (bad_alloc,
    MemoryError or an abort), which the parent reports as MemoryLimitExceeded instead of the
    kernel's out-of-memory killer picking a victim.
    """
    size = address_space()
    if extra <= 0 or size is None:
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (size + extra, size + extra))
    except (OSError, ValueError):  # a hard limit already lower: run without this cap
        pass


def _out_of_memory(e: BaseException) -> bool:
    """Whether `e` is a failed allocation: Python's MemoryError or a C++ std::bad_alloc cppyy raised."""
    return isinstance(e, MemoryError) or "bad_alloc" in type(e).__name__


def _memory_exceeded(run: NativeRun) -> MemoryLimitExceeded:
    return MemoryLimitExceeded(
        f"simulation {run.plan.name!r} ran out of memory: it needed more than limits.memory = "
        f"{memory.format_bytes(run.memory_b)} (raise limits.memory, or make the platform or profile smaller)",
        report={"limit": "memory", "memory_b": run.memory_b})


class Reached(NamedTuple):
    """How far a running child has got, as it answered a question."""

    sim_ns: float    #: simulated time reached
    events: int      #: events processed so far
    ops_done: int    #: ops its workgroups completed
    ops_total: int   #: ops in all their programs (0 before the child has loaded them)


def _time_reached(pid: int, word: mmap.mmap) -> Reached | None:
    """Asks the child how far it has got (SIGUSR1), waits briefly for the answer, or None."""
    word[:8] = _UNKNOWN_TIME  # so that an answer is this question's, not the last one's
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    for _ in range(50):  # the handler is a few instructions: it answers at once unless the child is starting
        if word[:8] != _UNKNOWN_TIME:
            done, total = (int.from_bytes(word[i:i + 8], sys.byteorder) for i in (16, 24))
            return Reached(int.from_bytes(word[:8], sys.byteorder) / 1000.0, int.from_bytes(word[8:16], sys.byteorder),
                           done, total)
        time.sleep(0.002)
    return None


def _kill(pid: int) -> None:
    """SIGKILLs and reaps the child `pid`, if it is still there."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _private_kb() -> int:
    """Memory this process owns (not shared with the parent it was forked from), in KiB.

    Why not RSS: a forked child maps every page of its parent, so its RSS counts the parent's
    heap (a large profile's Python objects included) although the simulation never touches it.
    """
    try:
        text = open("/proc/self/smaps_rollup").read()
    except OSError:
        return -1
    return sum(int(line.split()[1]) for line in text.splitlines()
               if line.startswith(("Private_Clean:", "Private_Dirty:")))


def _raise_failure(name: str, raw: dict[str, Any], profile: Profile, result: Result | None = None) -> None:
    """Raises the failure of `raw`, with `result` (its tables up to the failure) on the error."""
    kind, text = raw["failure_kind"], raw["failure"]
    if kind != "deadlock":
        raise SimulationError(f"simulation {name!r} failed ({kind}): {text}", report={"kind": kind, "text": text},
                              result=result)
    stuck = raw["tables"]["stuck"]
    rows = []
    for i in range(len(stuck.get("gpu", []))):
        rows.append({
            "gpu": int(stuck["gpu"][i]), "wg": int(stuck["wg"][i]), "op": int(stuck["op"][i]),
            "flag": profile.flags[int(stuck["flag"][i])], "cond": catalog.enum("cond")[int(stuck["cond"][i])],
            "value": int(stuck["value"][i]), "flag_value": int(stuck["flag_value"][i]),
            "mode": catalog.enum("wait_mode")[int(stuck["mode"][i])], "since_ns": stuck["since_ps"][i] / 1000.0,
        })
    lines = [f"simulation {name!r}: {text}"]
    for r in rows:
        lines.append(f"  gpu {r['gpu']} wg {r['wg']} op {r['op']}: waits for {r['flag']} {r['cond']} {r['value']} "
                     f"({r['mode']}) since {r['since_ns']:g} ns; {r['flag']} is {r['flag_value']}")
    raise DeadlockError("\n".join(lines), report={"detected_ns": raw["end_ps"] / 1000.0, "stuck": rows}, result=result)
