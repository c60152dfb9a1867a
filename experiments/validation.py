"""Predicted all-reduce curves of the real-node platforms beside their calibration points (docs/validation.md).

Per system: `eidola perf` from 1 KiB to the largest calibration size by factors of 2 (the CSV in
experiments/validation/<platform>.csv, nccl-tests' columns), a figure docs/figures/validation-<platform>.png
(predicted bus bandwidth against size, the two calibration points, the two-point alpha-beta line
T = a + S / B through them), and a table of predicted time at 64 KiB .. 1 GiB beside that line with the
signed difference predicted / alpha-beta - 1. At the first size --fabric auto runs on the flow fabric,
the same size is also run on the packet fabric, to show what the switch of fabric does to the curve.

Calibration points: experiments/validation/calibration.csv (a copy of ../shared/data/validation/).
Run: .venv/bin/python experiments/validation.py [platform ...]
"""

from __future__ import annotations

import csv
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from eidola.report.perf_command import PerfOptions, perf
from eidola.run.perf import Fabrics, PerfRow, run_sizes

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "experiments" / "validation"
FIGURES = ROOT / "docs" / "figures"
KiB, GiB = 1 << 10, 1 << 30


@dataclass(frozen=True)
class System:
    """One system: its platform, GPU count, the algorithm its calibration rows name, its sweep's end."""

    platform: str
    gpus: int
    algo: str  # "ring" where the calibration rows force it, else "auto"
    largest: int  # bytes: the sweep's last size


SYSTEMS = (System("dgx-a100", 8, "auto", 8 * GiB), System("dgx-h100", 8, "auto", 16 * GiB),
           System("dgx-h200", 8, "auto", 16 * GiB), System("gb200-nvl4", 4, "ring", 8 * GiB),
           System("mi300x-8gpu", 8, "auto", 16 * GiB))


#: The curves are NCCL_NVLS_ENABLE=0's, as the ring calibration points are: a platform without an NVLS
#: switch ignores nothing here, since reduce_bandwidth 0 is "no NVLS" (docs/fabrics.md).
NVLS_OFF = {"fabric.switch.nvls.reduce_bandwidth": "0GB/s"}


def calibration_points(platform: str) -> list[tuple[int, float]]:
    """(size bytes, time us) of the platform's calibration rows (the NVLS row is issue 27's: left out)."""
    with (OUT / "calibration.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["platform"] == platform and r["algorithm"] != "NVLS"]
    return sorted((int(r["size_bytes"]), float(r["time_us"])) for r in rows)


def alpha_beta(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(a us, B bytes per us) of T = a + S / B through the two points."""
    (s1, t1), (s2, t2) = points
    b = (s2 - s1) / (t2 - t1)
    return t1 - s1 / b, b


def sweep(s: System) -> tuple[list[PerfRow], float]:
    """The perf rows from 1 KiB to the system's largest size, and the wall time it took."""
    start = time.perf_counter()
    rows = perf(PerfOptions(str(ROOT / "platforms" / f"{s.platform}.yaml"), "all_reduce", "1K", str(s.largest), "2",
                            str(s.gpus), algo=s.algo, overrides=NVLS_OFF, csv=str(OUT / f"{s.platform}.csv")),
                out=io.StringIO())
    return rows, time.perf_counter() - start


def packet_at_switch(s: System, rows: list[PerfRow]) -> tuple[int, float, float] | None:
    """(size, flow us, packet us) at the first size --fabric auto ran on the flow fabric."""
    first = next((r for r in rows if r.fabric == "flow"), None)
    if first is None:
        return None
    fabrics = Fabrics(str(ROOT / "platforms" / f"{s.platform}.yaml"), NVLS_OFF, "packet")
    (packet,) = run_sizes(fabrics, "all_reduce", [(first.size, first.count)], s.gpus, s.algo)
    return first.size, first.time_us, packet.time_us


def figure(s: System, rows: list[PerfRow], points: list[tuple[int, float]],
           switch: tuple[int, float, float] | None) -> None:
    """Left: predicted busbw against size, the calibration points and the alpha-beta line through them.
    Right: predicted time / alpha-beta time - 1 (or, with no points, the predicted time)."""
    factor = rows[0].busbw_factor
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.8))
    sizes = [r.size for r in rows]
    ax.plot(sizes, [r.busbw for r in rows], "o-", ms=3, label="predicted (eidola perf, --fabric auto)")
    for a, r in zip(rows, rows[1:]):
        if a.plan.proto != r.plan.proto:
            ax.annotate(f"{a.plan.proto}→{r.plan.proto}", (r.size, r.busbw), textcoords="offset points",
                        xytext=(-62, 6), fontsize=8)
    flow = next((r for r in rows if r.fabric == "flow"), None)
    if flow is not None:
        for axis in (ax, ax2):
            axis.axvline(flow.size, color="grey", ls=":", lw=1)
        ax.text(flow.size, 0, " flow fabric →", fontsize=8, color="grey", va="bottom")
    if switch is not None:
        size, _, packet_us = switch
        ax.plot([size], [size / packet_us / 1e3 * factor], "x", color="k", ms=8,
                label=f"the packet fabric at {_size(size)}")
    if points:
        a, b = alpha_beta(points)
        ax.plot(sizes, [sz / (a + sz / b) / 1e3 * factor for sz in sizes], "--", color="C2",
                label=f"alpha-beta through the points (a = {a:.1f} us, B = {b / 1e3:.0f} GB/s)")
        ax.plot([p[0] for p in points], [p[0] / p[1] / 1e3 * factor for p in points], "s", color="C3", ms=8,
                label="calibration points (measured)")
        ax2.plot(sizes, [100 * (r.time_us / (a + r.size / b) - 1) for r in rows], "o-", ms=3)
        if switch is not None:
            ax2.plot([switch[0]], [100 * (switch[2] / (a + switch[0] / b) - 1)], "x", color="k", ms=8)
        ax2.axhline(0, color="C2", ls="--", lw=1)
        ax2.set_ylabel("predicted / alpha-beta - 1 (%)")
    else:
        ax2.plot(sizes, [r.time_us for r in rows], "o-", ms=3)
        ax2.set_yscale("log")
        ax2.set_ylabel("predicted time (us)")
    for axis in (ax, ax2):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("message size (bytes)")
        axis.grid(True, which="both", alpha=0.3)
    ax.set_ylabel("bus bandwidth (GB/s)")
    title = f"all_reduce, {s.platform}, {s.gpus} GPUs"
    fig.suptitle(title + ("" if points else ": no calibration point, everything predicted"), fontsize=11)
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(FIGURES / f"validation-{s.platform}.png", dpi=100)
    plt.close(fig)


def table(rows: list[PerfRow], points: list[tuple[int, float]]) -> list[str]:
    """Markdown lines: predicted time, alpha-beta time and their signed difference, 64 KiB to 1 GiB."""
    a, b = alpha_beta(points) if points else (None, None)
    out = ["| size | plan | fabric | predicted (us) | busbw (GB/s) | alpha-beta (us) | predicted / alpha-beta - 1 |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        if 64 * KiB <= r.size <= GiB:
            ab = "" if a is None or b is None else f"{a + r.size / b:.2f}"
            diff = "" if a is None or b is None else f"{r.time_us / (a + r.size / b) - 1:+.1%}"
            plan = f"{r.plan.algo} {r.plan.proto} {r.plan.channels}"
            out.append(f"| {_size(r.size)} | {plan} | {r.fabric} | {r.time_us:.2f} | {r.busbw:.1f} | {ab} | {diff} |")
    return out


def _size(n: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", 1 << 20), ("KiB", KiB)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def main(names: list[str]) -> None:
    """Sweeps each system (all, or those named) and prints its points, key figures and table."""
    for s in SYSTEMS:
        if names and s.platform not in names:
            continue
        points = calibration_points(s.platform)
        rows, wall = sweep(s)
        by_size = {r.size: r for r in rows}
        print(f"\n## {s.platform} ({s.gpus} GPUs, algo {s.algo}): {len(rows)} sizes in {wall:.1f} s")
        for size, measured in points:
            sim = by_size[size].time_us
            print(f"calibration {_size(size)}: measured {measured:.2f} us, simulated {sim:.2f} us ({sim / measured - 1:+.2%})")
        if points:
            a, b = alpha_beta(points)
            key = " | ".join(f"{_size(sz)} {by_size[sz].busbw:.1f} (alpha-beta "
                             f"{sz / (a + sz / b) / 1e3 * by_size[sz].busbw_factor:.1f})"
                             for sz in (64 * KiB, 1 << 20, 16 << 20, GiB))
            print(f"busbw GB/s: {key}")
        switch = packet_at_switch(s, rows)
        if switch is not None:
            size, flow_us, packet_us = switch
            print(f"fabric switch at {_size(size)}: flow {flow_us:.2f} us, packet {packet_us:.2f} us "
                  f"(flow / packet - 1 = {flow_us / packet_us - 1:+.2%})")
        figure(s, rows, points, switch)
        print("\n".join(table(rows, points)))


if __name__ == "__main__":
    main(sys.argv[1:])
