"""The flow fabric's signed kernel-time error against the packet fabric, by size, per pattern.

On the shipped platforms as they are (switch-8gpu with its 4 lanes, mi300x-8gpu,
hierarchical-16gpu), and on the reported-only set (REPORTED: tori and meshes with one virtual
channel, credit-starved buffers, spreading off; dashed in the figure), each point runs one
collective twice with `fabric.model` switched and nothing else, and records flow / packet - 1 (the
packet fabric is the reference). Patterns: ring and direct all-reduce, ring all-gather, all-to-all;
32 workgroups per GPU, SyncMon waits (as bench/flow_fabric.py). Sizes go up by 4x from 64 KiB while
4x the packet fabric's wall time for the last size is at most --limit-s (32 s: its time grows by
less than 4x per 4x of size, so the largest points took 8-29 s with two series running at once).
These are reported measurements (docs/fabrics.md, "When to trust which model"), not tests.

Writes flow_error.csv beside this file and docs/figures/flow-error.{png,svg}.
Run: .venv/bin/python experiments/flow_error.py [--jobs 2] [--limit-s 32] [--plot-only] [--reuse-packet]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from rows_csv import write_rows  # experiments/ is on sys.path when this file runs as a script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CSV = HERE / "flow_error.csv"
FIGURE = ROOT / "docs" / "figures" / "flow-error"
PLATFORMS = {"switch-8gpu.yaml": 8, "mi300x-8gpu.yaml": 8, "hierarchical-16gpu.yaml": 16}
# The reported-only set (issue 25): platforms changed where the flow fabric is known to part from
# the packet fabric. label -> (platform file, overrides); sizes up to --reported-limit-s.
REPORTED: dict[str, tuple[str, dict[str, object]]] = {
    "torus2d-16gpu vcs 1": ("torus2d-16gpu.yaml", {"fabric.switch.vcs": 1}),
    "mesh2d-16gpu vcs 1": ("mesh2d-16gpu.yaml", {"fabric.switch.vcs": 1}),
    "switch-8gpu buffer 16": ("switch-8gpu.yaml", {"fabric.switch.buffer": 16}),
    "hierarchical-16gpu spread off": ("hierarchical-16gpu.yaml", {"fabric.routing.spread": False}),
}


def _config(label: str) -> tuple[str, dict[str, object], int]:
    """(platform file, overrides, GPUs) of a series label: a shipped platform or a REPORTED one."""
    if label in PLATFORMS:
        return label, {}, PLATFORMS[label]
    file, overrides = REPORTED[label]
    return file, overrides, 16 if "16gpu" in file else 8


def _labels(rows: list[dict[str, str]]) -> list[str]:
    """The series labels present in `rows`: the shipped platforms first, then the reported-only ones."""
    present = {r["platform"] for r in rows}
    return [label for label in (*PLATFORMS, *REPORTED) if label in present]
PATTERNS = ("ring all-reduce", "direct all-reduce", "all-gather", "all-to-all")
WORKGROUPS = 32
KIB = 1 << 10
FIELDS = ("pattern", "platform", "nbytes", "packet_ns", "flow_ns", "error", "packet_wall_s", "flow_wall_s")


def _profile(pattern: str, gpus: int, nbytes: int):  # type: ignore[no-untyped-def]
    from eidola.generators import all_gather, all_to_all, direct_allreduce, ring_allreduce
    make = {"ring all-reduce": ring_allreduce, "direct all-reduce": direct_allreduce,
            "all-gather": all_gather, "all-to-all": all_to_all}[pattern]
    return make(gpus, nbytes, workgroups=WORKGROUPS, mode="syncmon")


def series(pattern: str, platform: str, limit_s: float,
           known: dict[tuple[str, str, int], tuple[float, float]], largest: int = 1 << 40) -> list[dict[str, object]]:
    """One pattern on one platform, 64 KiB up by 4x while 4x the last packet run fits `limit_s` (and
    the size is below `largest`).

    `known`: packet-fabric (wall s, kernel ns) by (pattern, platform, nbytes), taken instead of
    running the packet fabric again (--reuse-packet). The series' first size is run on the packet
    fabric anyway, as a check: if its time differs from the stored one (a model or a platform file
    changed since), the stored column is stale and the whole series is measured again. Why: paired
    with a stale packet column, new flow times gave errors 55 points off (commit 96ced3b's message).
    """
    import eidola
    from eidola.platform import FLOW_COUNTERPART
    rows: list[dict[str, object]] = []
    file, overrides, gpus = _config(platform)
    nbytes = 64 * KIB
    stale = False
    while True:
        profile = _profile(pattern, gpus, nbytes)
        times = {}
        for model in ("packet", "flow"):
            stored = known.get((pattern, platform, nbytes))
            if model == "packet" and stored is not None and rows and not stale:
                times[model] = stored
                continue
            # The packet fabric's counterpart, also where the platform sets queue and fair for its calibration
            # (mi300x-8gpu), as the validation tests run it
            plat = eidola.load_platform(ROOT / "platforms" / file,
                                        overrides={**FLOW_COUNTERPART, **overrides, "fabric.model": model})
            start = time.perf_counter()
            result = eidola.simulate(plat, profile)
            times[model] = (time.perf_counter() - start, result.kernel_time_ns)
            if model == "packet" and stored is not None and not rows and stored[1] != result.kernel_time_ns:
                stale = True
                print(f"{pattern:18} {platform:24} stored packet time {stored[1]} ns, now {result.kernel_time_ns} "
                      "ns: the stored column is stale; measuring this series again", flush=True)
        rows.append({"pattern": pattern, "platform": platform, "nbytes": nbytes,
                     "packet_ns": times["packet"][1], "flow_ns": times["flow"][1],
                     "error": times["flow"][1] / times["packet"][1] - 1,
                     "packet_wall_s": round(times["packet"][0], 3), "flow_wall_s": round(times["flow"][0], 3)})
        print(f"{pattern:18} {platform:24} {nbytes >> 10:>8} KiB  {rows[-1]['error']:+.2%}  "
              f"packet {times['packet'][0]:.1f} s", flush=True)
        if 4 * times["packet"][0] > limit_s or nbytes >= largest:
            return rows
        nbytes *= 4


def measure(jobs: int, limit_s: float, reported_limit_s: float, reuse_packet: bool) -> list[dict[str, object]]:
    """Runs every (pattern, platform) series, `jobs` at a time, each in its own process."""
    work = [(pattern, label, limit_s) for label in PLATFORMS for pattern in PATTERNS]
    work += [(pattern, label, reported_limit_s) for label in REPORTED for pattern in PATTERNS]
    known: dict[tuple[str, str, int], tuple[float, float]] = {}
    if reuse_packet and CSV.exists():
        with CSV.open(newline="") as f:
            for r in csv.DictReader(f):
                known[(r["pattern"], r["platform"], int(r["nbytes"]))] = (float(r["packet_wall_s"]), float(r["packet_ns"]))
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(series, pattern, label, limit, known) for pattern, label, limit in work]
        return [row for future in futures for row in future.result()]


def _size(nbytes: int) -> str:
    return f"{nbytes >> 10} KiB" if nbytes < (1 << 20) else f"{nbytes >> 20} MiB"


def plot(rows: list[dict[str, str]]) -> None:
    """Error against size, one panel per pattern, a line per platform; PNG and SVG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.fonttype"] = "none"  # text as text: a small SVG
    plt.rcParams["svg.hashsalt"] = "flow-error"  # fixed ids: reruns give the same file
    sizes = sorted({int(r["nbytes"]) for r in rows})
    fig, axes = plt.subplots(1, len(PATTERNS), figsize=(13, 3.0), dpi=90, sharey=True)
    for ax, pattern in zip(axes, PATTERNS, strict=True):
        for platform in _labels(rows):
            points = sorted((int(r["nbytes"]), 100 * float(r["error"])) for r in rows
                            if r["pattern"] == pattern and r["platform"] == platform)
            if points:  # the reported-only set dashed
                ax.plot([p[0] / KIB for p in points], [p[1] for p in points], marker="o", ms=3,
                        ls="--" if platform in REPORTED else "-", label=platform.removesuffix(".yaml"))
        ax.axhline(0, color="black", lw=0.6)
        ax.axhspan(-3, 3, color="0.9", zorder=0)  # the 3% band for collectives
        ax.set_xscale("log", base=2)
        ax.set_xticks([s / KIB for s in sizes], [_size(s).replace("iB", "").replace(" ", "") for s in sizes])
        ax.minorticks_off()
        ax.set_title(pattern, fontsize=9)
        ax.set_xlabel("bytes per GPU", fontsize=8)
        ax.tick_params(labelsize=6)
    axes[0].set_ylabel("flow / packet kernel time - 1, %", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center right")  # beside the panels, covering none
    fig.tight_layout(rect=(0, 0, 0.82, 1))
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE.with_suffix(".png"))
    fig.savefig(FIGURE.with_suffix(".svg"), metadata={"Date": None})  # no date: reruns give the same file
    plt.close(fig)


def table(rows: list[dict[str, str]], column: str = "error", sign: str = "+") -> list[str]:
    """Markdown: a row per (pattern, platform), a column per size; the cells are `column` as percentages
    (`sign` "+": signed)."""
    sizes = sorted({int(r["nbytes"]) for r in rows})
    label = [_size(s) for s in sizes]
    lines = ["| pattern | platform | " + " | ".join(label) + " |", "|---|---|" + "---|" * len(sizes)]
    for pattern in PATTERNS:
        for platform in _labels(rows):
            got = {int(r["nbytes"]): float(r[column]) for r in rows
                   if r["pattern"] == pattern and r["platform"] == platform}
            cells = [f"{got[s]:{sign}.2%}" if s in got else "" for s in sizes]
            lines.append(f"| {pattern} | {platform.removesuffix('.yaml')} | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="series run at once (one process each)")
    parser.add_argument("--limit-s", type=float, default=32.0,
                        help="run the next size while 4x the last packet-fabric wall time is at most this")
    parser.add_argument("--reported-limit-s", type=float, default=8.0,
                        help="as --limit-s, for the reported-only set")
    parser.add_argument("--plot-only", action="store_true", help="redraw from flow_error.csv")
    parser.add_argument("--reuse-packet", action="store_true",
                        help="take the packet fabric's times from flow_error.csv where it has the point "
                             "(after a change to the flow fabric only); each series' first size is run again "
                             "as a check, and a series whose stored time differs is measured again whole")
    args = parser.parse_args()
    if not args.plot_only:
        measured = measure(args.jobs, args.limit_s, args.reported_limit_s, args.reuse_packet)
        write_rows(CSV, measured, FIELDS)
    with CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))
    plot(rows)
    print("\n".join(table(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
