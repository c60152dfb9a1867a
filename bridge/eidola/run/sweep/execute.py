"""Running points: each in a child forked from a process that has the models loaded, with a timeout.

The parent builds a point's platform (the base with the point's overrides) and workload; its
child simulates it in-process (a fresh SystemC kernel: the child was just forked), saves the Result
into the point's folder and sends the row back through a pipe. The parent only waits, so a
crash, a deadlock or a runaway model costs that one point: its row records the status, the
exit status and the error, and the sweep goes on.

Statuses: ok; error (bad input, exit status 2); deadlock and failed (the simulation failed, 3);
crashed (the child died, 3); timeout (killed past the spec's timeout, 3); internal (a bug, 1).
"""

from __future__ import annotations

import copy
import gc
import json
import os
import pickle
import select
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DeadlockError, EidolaError, SimulationError
from ..simulate import _die_with_parent as die_with_parent  # the one place that knows prctl
from .metrics import MetricContext, compute
from .points import Point, canonical_json
from .spec import SweepSpec

__all__ = ["ROW_FILE", "STATUSES", "Task", "build_point", "point_inputs", "row_template", "run_point", "run_tasks"]

ROW_FILE = "row.json"  #: a finished point's row, in its folder; its presence is what --resume looks for
STATUSES = ("ok", "error", "deadlock", "failed", "crashed", "timeout", "internal")  #: a row's possible statuses


@dataclass(frozen=True)
class Task:
    """A point to run, with everything its child needs (picklable: Dask sends it to a worker)."""

    spec: SweepSpec     #: the sweep
    point: Point        #: the point
    folder: str         #: where its Result and row.json go


def _set_path(node: Any, path: list[str], value: Any, where: str) -> None:
    """Sets a dotted path in nested dicts and lists; a numeric part indexes a list."""
    for i, part in enumerate(path):
        last = i == len(path) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"{where}: {part!r} is not an index of a list of {len(node)}")
            if last:
                node[int(part)] = value
            node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"{where}: {'.'.join(path[:i])} is not a mapping or a list")


def _generator_value(key: str, value: Any) -> Any:
    # Sizes may carry units in a spec (1MiB); the generators take whole bytes.
    if key in ("nbytes", "vector_bytes") and isinstance(value, str):
        from ...platform import units

        try:
            return int(units.parse(value, "size"))
        except units.UnitError as e:
            raise ConfigError(f"generator.{key}: {e}") from None
        except (OverflowError, ValueError):  # 1e400B parses to infinity
            raise ConfigError(f"generator.{key}: {value!r} is not a finite size") from None
    return value


def point_inputs(spec: SweepSpec, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None, int | None]:
    """(platform overrides, generator name and parameters, seed) of the point with axis `values`.

    Plain dict work, no file read: `check.check_points` calls it for every point before any runs.
    """
    overrides = dict(spec.fixed)
    generator = copy.deepcopy(spec.generator)
    seed = None
    for key, value in values.items():
        if key == "seed":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"{spec.source}: axis seed: expected integers, got {value!r}")
            seed = value
        elif key.startswith("generator.") and generator is not None:
            _set_path(generator, key.split(".")[1:], value, f"{spec.source}: axis {key}")
        else:
            overrides[key] = value
    if generator is not None:
        name = generator.get("name")
        generator = {"name": name, **{str(k): _generator_value(str(k), v) for k, v in generator.items() if k != "name"}}
    return overrides, generator, seed


def build_point(spec: SweepSpec, values: dict[str, Any]) -> tuple[Any, Any, int, dict[str, Any] | None]:
    """(Platform, Profile, seed, generator parameters) of the point with axis `values`."""
    from ...platform import memory
    from ...platform.yaml_io import apply_overrides, platform_from_dict
    from ...workload import generators
    from ...workload.profile_yaml import load_profile
    from ..build_memory import building_within
    from . import collective

    _load_profile: Callable[[str], Any] = load_profile  # typed here: the loader itself is not annotated

    overrides, generator, seed = point_inputs(spec, values)
    # Built in the sweep's own process (see _start), so under the point's limits.memory here too.
    what = f"{spec.source}: the point's {generator.get('name') if generator else ''} workload"
    if generator is not None and generator.get("name") == collective.NAME:
        params = {k: v for k, v in generator.items() if k != "name"}
        # From the file, as perf loads it (its fabric may be switched: perf's --fabric); built under the cap there.
        platform, profile, chosen = collective.build(str(spec.platform_path), overrides, params, what)
        return platform, profile, platform.seed if seed is None else seed, {"name": collective.NAME, **chosen}
    doc = apply_overrides(spec.platform_doc, overrides, spec.platform_path)
    platform = platform_from_dict(doc, source=spec.platform_path)
    within = building_within(memory.limit_of(platform.limits), what)
    if generator is not None:
        params = {k: v for k, v in generator.items() if k != "name"}
        fn = getattr(generators, str(generator["name"]))
        try:
            with within:
                profile = fn(**params)
        except TypeError as e:  # an unknown or missing parameter (check_points refuses both first)
            raise ConfigError(f"{spec.source}: generator {generator['name']}: {e}") from None
    else:
        path = spec.profile_path or platform.profile
        if not path:
            raise ConfigError(f"{spec.platform_path}: the platform names no profile; give the spec a profile")
        profile = _load_profile(path)
    return platform, profile, platform.seed if seed is None else seed, generator


def row_template(point: Point) -> dict[str, Any]:
    """A point's row before it runs: its index, hash and axis values (non-scalars as JSON text)."""
    values = {k: v if isinstance(v, (int, float, str, bool)) else canonical_json(v)
              for k, v in point.values.items()}
    return {"point": point.index, "hash": point.hash, **values}


def _simulate_point(task: Task, built: tuple[Any, Any, int, dict[str, Any] | None]) -> dict[str, Any]:
    """The child's work: simulate in-process, save, compute the metrics."""
    from ..simulate import simulate

    platform, profile, seed, generator = built
    result = simulate(platform, profile, seed=seed, trace=task.spec.trace, in_process=True)
    result.save(task.folder)
    for note in result.notes:  # the fabric_notes metric counts them; the texts go to the point's log.txt (fd 1)
        os.write(1, (note + "\n").encode())
    return compute(task.spec.metrics, result, MetricContext(generator, profile))


def _child(task: Task, built: tuple[Any, Any, int, dict[str, Any] | None], write_fd: int, parent: int,
           held: set[int | signal.Signals]) -> None:
    """Runs in the forked child; never returns."""
    code = 0
    try:
        # Killed with the sweep, even by SIGKILL, which leaves the sweep no chance to clean up.
        die_with_parent(parent)
        gc.disable()
        for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGINT,
                    signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        log = os.open(os.path.join(task.folder, "log.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        try:
            payload: dict[str, Any] = {"status": "ok", "exit_status": 0, "error": "", **_simulate_point(task, built)}
        except DeadlockError as e:
            payload = {"status": "deadlock", "exit_status": e.exit_status, "error": str(e)}
        except SimulationError as e:
            payload = {"status": "failed", "exit_status": e.exit_status, "error": str(e)}
        except ConfigError as e:
            payload = {"status": "error", "exit_status": e.exit_status, "error": str(e)}
        except EidolaError as e:
            payload = {"status": "failed", "exit_status": e.exit_status, "error": str(e)}
        except BaseException:
            payload = {"status": "internal", "exit_status": 1, "error": traceback.format_exc()}
        with os.fdopen(write_fd, "wb") as pipe:
            pickle.dump(payload, pipe, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


@dataclass
class _Running:
    task: Task
    pid: int
    fd: int
    deadline: float | None
    held: set[int | signal.Signals]  # the signal mask before _start blocked SIGINT and SIGTERM around fork()
    data: bytearray = field(default_factory=bytearray)
    started: float = field(default_factory=time.monotonic)  # when its child was forked (monotonic s)


def _start(task: Task) -> _Running | dict[str, Any]:
    """Builds the point and forks its child; returns the row at once when the point is bad input."""
    _fresh_folder(Path(task.folder))  # a rerun is not finished until it says so, and keeps nothing of before
    # Built here, not in the child: the child would pay a copy-on-write fault for every page of
    # the parent's heap that building touches (measured: 25-40 ms a point, against 1 ms here).
    # Building is plain Python that raises EidolaError on bad input, so nothing is lost.
    try:
        built = build_point(task.spec, task.point.values)
    except EidolaError as e:
        status = "error" if isinstance(e, ConfigError) else "failed"
        return _record(task, {"status": status, "exit_status": e.exit_status, "error": str(e)})
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    # Out of the collector's reach: a collection in the child would copy every page of the parent's heap.
    gc.freeze()
    # Ctrl-C or SIGTERM between fork() and run_tasks' bookkeeping would leave the child unknown to the
    # clean-up that kills running points: held until the caller has it (see run_tasks).
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError as e:  # out of processes or memory: the sweep cannot go on, but signals must come back
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        gc.unfreeze()
        os.close(read_fd)
        os.close(write_fd)
        raise SimulationError(f"cannot start a process for point {task.point.index} ({e.strerror})") from None
    if pid == 0:
        os.close(read_fd)
        _child(task, built, write_fd, parent, held)
    gc.unfreeze()
    os.close(write_fd)
    timeout = task.spec.timeout_s
    return _Running(task, pid, read_fd, None if timeout is None else time.monotonic() + timeout, held)


def _fresh_folder(folder: Path) -> None:
    """Makes `folder` an empty folder, whatever stood there (an earlier run's files, a file, a link)."""
    try:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    except OSError as e:
        raise ConfigError(f"output folder (--out): cannot make the point folder {folder} ({e.strerror or e})") from None


def _record(task: Task, outcome: dict[str, Any], ran_s: float | None = None) -> dict[str, Any]:
    """The point's row (its inputs and `outcome`), also written to row.json in its folder."""
    # timeout_s: the limit in force, and ran_s: how long the point's process ran; --resume compares
    # both with the spec's timeout (neither is a table column).
    row = {**row_template(task.point), **outcome, "timeout_s": task.spec.timeout_s, "ran_s": ran_s}
    tmp = Path(task.folder) / (ROW_FILE + ".tmp")
    tmp.write_text(json.dumps(row, sort_keys=True) + "\n")
    tmp.replace(Path(task.folder) / ROW_FILE)  # atomic: a row.json is always whole
    return row


def _finish(run: _Running, timed_out: bool) -> dict[str, Any]:
    """Reaps the child and records its row."""
    if timed_out:
        os.kill(run.pid, signal.SIGKILL)
    os.close(run.fd)
    _, status = os.waitpid(run.pid, 0)
    if timed_out:
        return _record(run.task, {"status": "timeout", "exit_status": 3,
                                  "error": f"killed after the spec's timeout of {run.task.spec.timeout_s:g} s"})
    if run.data:
        return _record(run.task, pickle.loads(bytes(run.data)), time.monotonic() - run.started)
    how = (f"was killed by {signal.Signals(os.WTERMSIG(status)).name}" if os.WIFSIGNALED(status)
           else f"exited with status {os.WEXITSTATUS(status)} without a result")
    return _record(run.task, {"status": "crashed", "exit_status": 3,
                              "error": f"the point's process {how}; see its log.txt"})


def run_tasks(tasks: Iterable[Task], parallel: int, on_done: Callable[[dict[str, Any]], None]) -> None:
    """Runs `tasks`, at most `parallel` children at once, calling `on_done(row)` as each finishes.

    On an exception (Ctrl-C included) every running child is killed before it propagates.
    """
    pending = iter(tasks)
    running: dict[int, _Running] = {}
    try:
        while True:
            while len(running) < parallel:
                task = next(pending, None)
                if task is None:
                    break
                started = _start(task)
                if isinstance(started, dict):
                    on_done(started)
                else:
                    running[started.fd] = started
                    signal.pthread_sigmask(signal.SIG_SETMASK, started.held)  # now the finally below kills it
            if not running:
                return
            deadlines = [r.deadline for r in running.values() if r.deadline is not None]
            wait = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            readable, _, _ = select.select(list(running), [], [], wait)
            for fd in readable:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd].data += chunk
                else:
                    on_done(_finish(running.pop(fd), timed_out=False))
            now = time.monotonic()
            for fd in [fd for fd, r in running.items() if r.deadline is not None and r.deadline <= now]:
                on_done(_finish(running.pop(fd), timed_out=True))
    finally:
        for run in running.values():
            os.kill(run.pid, signal.SIGKILL)
            os.close(run.fd)
            os.waitpid(run.pid, 0)


def run_point(task: Task) -> dict[str, Any]:
    """Runs one point in a forked child and returns its row (what a Dask worker calls)."""
    rows: list[dict[str, Any]] = []
    run_tasks([task], 1, rows.append)
    return rows[0]
