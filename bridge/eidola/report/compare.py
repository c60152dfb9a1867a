"""``eidola compare RUN_DIR TRACES...``: per collective, the traced duration against the simulated one.

The traces are imported again (as ``eidola import kineto`` did, host compute for CPU-only traces)
to know each collective call and its traced duration per rank. The run directory must come from
``eidola run --trace`` (its ops.csv); a call's simulated duration on a GPU runs from the end of
the compute before its first op to the end of its last op (ops whose flag carries the call's
``c<n>.`` prefix, with the writes between them). Prints a table and draws compare.png / .svg.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from ..errors import ConfigError

__all__ = ["compare", "simulated_calls"]


def simulated_calls(run_dir: Path) -> dict[str, dict[int, float]]:
    """{call prefix: {gpu: simulated ns}} from a traced run's ops.csv."""
    path = run_dir / "ops.csv"
    if not path.exists():
        raise ConfigError(f"{run_dir}: no ops.csv; expected a run directory written by eidola run --trace")
    spans: dict[str, dict[int, list[float]]] = defaultdict(dict)
    with path.open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: (int(r["gpu"]), int(r["wg"]), int(r["op"])))
    begin: dict[tuple[int, int], float] = {}  # (gpu, wg) -> end of the last compute: where a call starts
    pending: dict[tuple[int, int], list[float]] = {}
    for r in rows:
        key = (int(r["gpu"]), int(r["wg"]))
        if r["kind"] == "compute":
            begin[key] = float(r["end_ns"])
            pending.pop(key, None)
            continue
        if r["flag"].startswith("c") and "." in r["flag"]:
            prefix = r["flag"].split(".", 1)[0] + "."
            span = spans[prefix].setdefault(key[0], [begin.get(key, 0.0), 0.0])
            span[0] = min(span[0], begin.get(key, 0.0))
            span[1] = max(span[1], float(r["end_ns"]))
    return {p: {g: e - b for g, (b, e) in per.items()} for p, per in spans.items()}


def compare(run_dir: str, traces: list[str]) -> str:
    """Return the comparison table; write compare.png and compare.svg into `run_dir`."""
    from ..workload.importers.kineto import import_kineto

    d = Path(run_dir)
    sim = simulated_calls(d)
    try:
        _, report = import_kineto(traces)
    except ConfigError as e:
        if "--compute host" not in str(e):
            raise
        _, report = import_kineto(traces, compute="host")
    lines = [f"{'call':6s} {'collective':15s} {'bytes':>10s} {'traced us':>10s} {'simulated us':>13s} {'ratio':>7s}"]
    points = []
    for prefix, kind, nbytes, traced in report.calls:
        t = sum(traced.values()) / len(traced) / 1000
        got = sim.get(prefix)
        s = sum(got.values()) / len(got) / 1000 if got else float("nan")
        points.append((t, s, kind))
        lines.append(f"{prefix.rstrip('.'):6s} {kind:15s} {nbytes:10d} {t:10.2f} {s:13.2f} {s / t if t else 0:7.3f}")
    _plot(points, d)
    return "\n".join(lines) + f"\nwrote {d / 'compare.png'}\n"


def _plot(points: list[tuple[float, float, str]], d: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    for kind in sorted({k for _, _, k in points}):
        xs = [(t, s) for t, s, k in points if k == kind]
        ax.scatter([x for x, _ in xs], [y for _, y in xs], label=kind, s=18)
    top = max([1.0, *(max(t, s) for t, s, _ in points if s == s)])
    ax.plot([0, top], [0, top], color="grey", lw=0.8, ls="--", label="simulated = traced")
    ax.set_xlabel("traced duration (us)")
    ax.set_ylabel("simulated duration (us)")
    ax.set_title("collectives: trace vs replay")
    ax.legend(fontsize=7)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(d / f"compare.{ext}")
    plt.close(fig)
