"""Re-runs tests/python/test_flow_validation.py's cases on the flow fabric against cached packet-fabric times.

A prototype of the flow fabric changes only the flow fabric's times; the packet fabric's, the slow half of every
case, stay the same. This harness calls each test function of the file with its `_both` replaced by one that
takes the packet fabric's kernel time from a cache (computed on first use) and simulates only the flow fabric,
then prints each case's signed error summed over its runs, whether its assertion held, and its wall time. Strict
expected failures (marked X) run as plain cases.

    python experiments/queues25/compare.py [NAME_PART ...]   # all cases, or those whose name contains a part

The cache (experiments/queues25/.packet_times.json, not in git) holds the packet fabric's times by case and call;
delete it after any change to the packet fabric or the test file. Used for the third attempt (NOTES.md): the
whole file in about a minute, where pytest takes several.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

import eidola

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import test_flow_validation as cases  # noqa: E402

CACHE = pathlib.Path(__file__).with_name(".packet_times.json")


def main(parts: list[str]) -> int:
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    now = {"case": "", "call": 0, "packet": 0.0, "flow": 0.0}

    def both(repo, platform, profile, overrides=None, shipped=False):
        key = f"{now['case']}:{now['call']}"
        now["call"] += 1

        def plat(model: str):  # as the test file's _kernel_ns: `shipped` keeps the file's own flow settings
            counterpart = {} if shipped else cases.FLOW_COUNTERPART
            return eidola.load_platform(repo / "platforms" / platform, overrides={
                "gpus.launch": "0ns", **counterpart, **(overrides or {}), "fabric.model": model})
        if key not in cache:
            cache[key] = eidola.simulate(plat("packet"), profile).kernel_time_ns
            CACHE.write_text(json.dumps(cache))
        flow = eidola.simulate(plat("flow"), profile).kernel_time_ns
        now["packet"] += cache[key]
        now["flow"] += flow
        return cache[key], flow

    cases._both = both
    failing = 0
    for label, fn, kwargs, expected_failure in _collect(parts):
        now.update(case=label, call=0, packet=0.0, flow=0.0)
        start = time.time()
        try:
            fn(ROOT, **kwargs) if "repo" in fn.__code__.co_varnames[:fn.__code__.co_argcount] else fn(**kwargs)
            verdict = "pass"
        except AssertionError as e:
            verdict = "FAIL " + str(e).splitlines()[0][:80]
            failing += 1
        error = f"{now['flow'] / now['packet'] - 1:+8.3%}" if now["packet"] else "       -"
        print(f"{'X' if expected_failure else ' '} {error} {verdict:55s} {label[:90]} ({time.time() - start:.0f} s)",
              flush=True)
    print("failing:", failing)
    return 0


def _collect(parts: list[str]):
    """(label, function, keyword arguments, strict xfail) of every case whose name contains one of `parts`."""
    for name in sorted(dir(cases)):
        fn = getattr(cases, name)
        if not name.startswith("test_") or (parts and not any(p in name for p in parts)):
            continue
        marks = getattr(fn, "pytestmark", [])
        xfail = any(m.name == "xfail" for m in marks)
        grids = [m for m in marks if m.name == "parametrize"]
        if not grids:
            yield name, fn, {}, xfail
            continue
        names = [a.strip() for a in grids[0].args[0].split(",")]
        for i, value in enumerate(grids[0].args[1]):  # the index keeps the cache's keys apart
            values = value.values if hasattr(value, "values") else (value if len(names) > 1 else (value,))
            marked = xfail or any(m.name == "xfail" for m in getattr(value, "marks", ()))
            shown = values[0] if len(names) == 1 else ", ".join(str(v)[:20] for v in values[:2])
            yield f"{name}[{i}: {shown}]", fn, dict(zip(names, values)), marked


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
