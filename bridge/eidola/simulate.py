"""Running a simulation: checks, encoding, a fresh child process per run, and the Result.

A SystemC kernel elaborates once per process, and a model may crash; so each simulation runs
in a child forked from this process after cppyy and the models are loaded (`_sysc.load`). The
child sends its raw tables back through a pipe. A child that dies becomes SimulationCrashed,
and the caller lives on. ``in_process=True`` runs in this process instead, for debuggers; it
can only be done once per process.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback

from . import _sysc
from ._encode import CONDS, MODES, encode_profile
from .errors import ConfigError, DeadlockError, EidolaError, SimulationCrashed, SimulationError
from .platform import Platform, PluginComponent
from .profile import Profile, load_profile
from .result import Result

__all__ = ["simulate", "check"]

_in_process_used = []  # a SystemC kernel runs once per process; remembers the in-process run


def _plan(platform: Platform, profile: Profile, seed: int, trace: bool) -> dict:
    platform.validate()
    gpus = platform.gpus()
    eidolons = platform.eidolons()
    if not eidolons:
        raise ConfigError(f"platform {platform.name!r} has no EidolonGpu")
    workgroups = min(int(g.resolved()["workgroups"]) for g in eidolons)
    clocks = {g.resolved()["clock"] for g in eidolons}
    if len(clocks) > 1 and any(op.kind == "compute" and op["cycles"] is not None
                               for _, ops in profile.programs for op in ops):
        raise ConfigError(f"platform {platform.name!r}: compute(cycles=...) with variability needs one clock for "
                          "all GPUs")
    encoded = encode_profile(profile, workgroups, len(gpus), platform.stride(), seed=seed, clock_hz=min(clocks))
    plugin_gpus = {c.gpu_id for c in gpus if isinstance(c, PluginComponent)}
    for (g, w), ops in profile.programs:
        if g in plugin_gpus and ops:
            raise ConfigError(f"profile {profile.name!r} has a program for gpu {g} wg {w}, but GPU {g} is a plugin "
                              "model, which runs its own behaviour")
    components, plugins = [], []
    for c in platform.components.values():
        if isinstance(c, PluginComponent):
            plugins.append({"name": c.name, "spec": c.spec, "role": c.role})
            continue
        values = c.resolved()
        choices = {k: v for k, v in values.items() if isinstance(v, str)}
        numbers = {k: float(v) for k, v in values.items() if not isinstance(v, str)}
        components.append({"model": c.model, "name": c.name, "numbers": numbers, "choices": choices})
    bindings = _bindings(platform, components)
    return {
        "name": platform.name, "base": platform.base(), "stride": platform.stride(), "windows": len(gpus),
        "components": components, "plugins": plugins, "bindings": bindings,
        "flags": encoded.flags, "ops": encoded.ops, "programs": encoded.programs, "trace": trace,
    }


def check(platform: Platform, profile: Profile) -> None:
    """Every check simulate() makes before it builds anything (what `eidola validate` runs)."""
    _plan(platform, profile, platform.seed, False)


def _ref(socket) -> dict:
    return {"component": socket.component, "socket": socket.socket, "index": socket.index}


def _bindings(platform: Platform, components: list) -> list:
    """The platform's connections as socket bindings, with an AT-to-LT adapter in front of every
    LT-only target driven by an AT initiator, and a protocol checker on every binding when asked."""
    out = []
    for n, (initiator, target) in enumerate(platform.connections):
        i_spec = platform._socket_spec(initiator)
        t_spec = platform._socket_spec(target)
        pairs = [(_ref(initiator), _ref(target))]
        if t_spec.protocol == "lt" and i_spec.protocol != "lt":
            name = f"adapter{n}"
            components.append({"model": "AtToLtAdapter", "name": name, "numbers": {}, "choices": {}})
            pairs = [(_ref(initiator), {"component": name, "socket": "target", "index": None}),
                     ({"component": name, "socket": "initiator", "index": None}, _ref(target))]
        elif i_spec.protocol == "lt" and "lt" not in t_spec.protocol:
            raise ConfigError(f"connection {initiator} -> {target}: an LT initiator cannot drive an AT-only target "
                              "(no adapter exists in that direction)")
        if platform.check_protocol:
            checked = []
            for k, (i_ref, t_ref) in enumerate(pairs):
                name = f"checker{n}_{k}"
                toward = "gpu" if t_ref["component"] in {g.name for g in platform.gpus()} else "fabric"
                components.append({"model": "ProtocolChecker", "name": name, "numbers": {},
                                   "choices": {"toward": toward}})
                checked += [(i_ref, {"component": name, "socket": "target", "index": None}),
                            ({"component": name, "socket": "initiator", "index": None}, t_ref)]
            pairs = checked
        out += pairs
    return out


def simulate(platform: Platform, profile: Profile | str | os.PathLike | None = None, *,
             seed: int | None = None, trace: bool = False, in_process: bool = False) -> Result:
    """Simulates `profile` (default: the platform's own) on `platform` and returns its Result.

    `seed` (default: the platform's) drives the profile's variability; `trace` records every op's
    begin and end in `Result.ops`.

    Raises ConfigError for bad input, DeadlockError when workgroups can never finish,
    SimulationCrashed when the child dies, SimulationError for other failures.
    """
    if profile is None:
        if not platform.profile:
            raise ConfigError(f"platform {platform.name!r} names no profile; pass one")
        profile = platform.profile
    if not isinstance(profile, Profile):
        profile = load_profile(profile)
    plan = _plan(platform, profile, platform.seed if seed is None else seed, trace)
    _sysc.load()
    start = time.perf_counter()
    raw = _run_in_process(plan) if in_process else _run_in_child(plan)
    wall = time.perf_counter() - start
    if raw["status"] != 0:
        _raise_failure(platform.name, raw, profile)
    meta = {"gpus": len(platform.gpus()), "fabric": _fabric_model(platform), "profile_ops": profile.ops_count(),
            **raw.get("timings", {}),
            **{k: raw[k] for k in ("child_max_rss_kb", "child_private_kb") if k in raw}}
    return Result.from_raw(platform.name, raw, wall, effective_config=platform.effective_yaml(),
                           profile_name=profile.name, meta=meta, flag_names=tuple(profile.flags), profile=profile)


def _fabric_model(platform: Platform) -> str:
    models = [c.spec.class_text if isinstance(c, PluginComponent) else c.model
              for c in platform.components.values() if c.model != "EidolonGpu" and not
              (isinstance(c, PluginComponent) and c.role == "gpu")]
    return ", ".join(models)


def _run_in_process(plan: dict) -> dict:
    if _in_process_used:
        raise EidolaError("a SystemC kernel elaborates once per process: only one in-process simulation can run "
                          "(use the default child-process mode for more)")
    _in_process_used.append(True)
    return _sysc.elaborate_and_run(plan)


def _run_in_child(plan: dict) -> dict:
    read_fd, write_fd = os.pipe()
    with tempfile.TemporaryFile() as errors:
        sys.stdout.flush()
        sys.stderr.flush()
        # Move every live object out of the collector's reach: a collection in the child would
        # touch (and so copy) every page of the parent's heap, a large profile's included.
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            gc.disable()
            os.close(read_fd)
            # cppyy's crash handlers run gdb and exit with a made-up status; the default action
            # lets the parent see which signal killed the model.
            for sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL):
                signal.signal(sig, signal.SIG_DFL)
            os.dup2(errors.fileno(), 2)
            os.dup2(errors.fileno(), 1)
            code = 0
            try:
                payload = {"ok": _sysc.elaborate_and_run(plan)}
                payload["ok"]["child_private_kb"] = _private_kb()
            except EidolaError as e:
                payload = {"error": e}
            except BaseException:
                payload = {"internal": traceback.format_exc()}
                code = 1
            try:
                with os.fdopen(write_fd, "wb") as pipe:
                    pickle.dump(payload, pipe, protocol=pickle.HIGHEST_PROTOCOL)
            finally:
                os._exit(code)
        gc.unfreeze()
        os.close(write_fd)
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, status, usage = os.wait4(pid, 0)
        errors.seek(0)
        output = errors.read().decode(errors="replace")
    if data:
        payload = pickle.loads(data)
        if output.strip():
            sys.stderr.write(output)
        if "ok" in payload:
            payload["ok"]["child_max_rss_kb"] = usage.ru_maxrss
            return payload["ok"]
        if "error" in payload:
            raise payload["error"]
        raise EidolaError(f"simulation {plan['name']!r}: internal error in the child process:\n{payload['internal']}")
    if os.WIFSIGNALED(status):
        how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exited with status {os.WEXITSTATUS(status)} without a result"
    tail = "\n".join(output.strip().splitlines()[-20:])
    raise SimulationCrashed(f"simulation {plan['name']!r} crashed: its process {how}"
                            + (f"; its last output:\n{tail}" if tail else ""),
                            report={"signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                                    "output": output})


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


def _raise_failure(name: str, raw: dict, profile: Profile) -> None:
    kind, text = raw["failure_kind"], raw["failure"]
    if kind != "deadlock":
        raise SimulationError(f"simulation {name!r} failed ({kind}): {text}", report={"kind": kind, "text": text})
    stuck = raw["tables"]["stuck"]
    rows = []
    for i in range(len(stuck.get("gpu", []))):
        rows.append({
            "gpu": int(stuck["gpu"][i]), "wg": int(stuck["wg"][i]), "op": int(stuck["op"][i]),
            "flag": profile.flags[int(stuck["flag"][i])], "cond": CONDS[int(stuck["cond"][i])],
            "value": int(stuck["value"][i]), "flag_value": int(stuck["flag_value"][i]),
            "mode": MODES[int(stuck["mode"][i])], "since_ns": stuck["since_ps"][i] / 1000.0,
        })
    lines = [f"simulation {name!r}: {text}"]
    for r in rows:
        lines.append(f"  gpu {r['gpu']} wg {r['wg']} op {r['op']}: waits for {r['flag']} {r['cond']} {r['value']} "
                     f"({r['mode']}) since {r['since_ns']:g} ns; {r['flag']} is {r['flag_value']}")
    raise DeadlockError("\n".join(lines), report={"detected_ns": raw["end_ps"] / 1000.0, "stuck": rows})
