"""Many nodes (docs/validation.md, "Many nodes"): the mi300x-rail curve beside its two calibration points, the
node-count sweep of a forced ring, and dgx-h100-rail as a prediction.

- `curves`: `eidola perf` all_reduce from 1 KiB to 16 GiB by factors of 4 on 2 nodes (16 GPUs) of
  mi300x-rail and dgx-h100-rail (CSV in experiments/validation/<platform>.csv, figure
  docs/figures/validation-<platform>.png with the calibration points and the alpha-beta line, as
  experiments/validation.py draws them), and the table of 64 KiB - 1 GiB against that line;
- `sweep`: a 16 GiB all-reduce forced to ring Simple on 2, 4 and 8 nodes of mi300x-rail (flow fabric),
  its bus bandwidth per node count and its spread (max / min - 1), into experiments/validation/
  mi300x-rail-nodes.csv. The CSV keeps one row per (nodes, size): a run replaces the rows of the
  node counts and size it ran and keeps the others, so the 1 GiB and 16 GiB sweeps sit side by side
  and a long sweep can be run one node count at a time (`--nodes 8`).

Run: .venv/bin/python experiments/validation_multinode.py [curves] [sweep] [--size BYTES] [--largest BYTES]
[--nodes N[,N...]] (the sweep's size and the curves' last size, both 16 GiB by default; the sweep's node
counts, 2,4,8 by default)
"""

from __future__ import annotations

import csv
import io
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from validation import OUT, ROOT, System, _size, alpha_beta, calibration_points, figure, table

from eidola.report.perf_command import PerfOptions, perf
from eidola.run.perf import Fabrics, run_sizes

GiB = 1 << 30
CURVES = (System("mi300x-rail", 16, "auto", 16 * GiB), System("dgx-h100-rail", 16, "auto", 16 * GiB))
NODES = (2, 4, 8)  #: the node counts of the sweep
SWEEP_SIZE = 16 * GiB


def curves(largest: int = 16 * GiB) -> None:
    """Both platforms' curves up to `largest`, figures and tables; the calibration points' errors."""
    for s in (System(c.platform, c.gpus, c.algo, largest) for c in CURVES):
        start = time.perf_counter()
        rows = perf(PerfOptions(str(ROOT / "platforms" / f"{s.platform}.yaml"), "all_reduce", "1K", str(s.largest),
                                "4", str(s.gpus), algo=s.algo, csv=str(OUT / f"{s.platform}.csv")), out=io.StringIO())
        wall = time.perf_counter() - start
        points = calibration_points(s.platform)
        by_size = {r.size: r for r in rows}
        print(f"\n## {s.platform} ({s.gpus} GPUs): {len(rows)} sizes in {wall:.1f} s")
        for size, measured in [p for p in points if p[0] in by_size]:
            sim = by_size[size].time_us
            print(f"calibration {_size(size)}: measured {measured:.2f} us, simulated {sim:.2f} us "
                  f"({sim / measured - 1:+.2%})")
        for size, measured in points:
            if size not in by_size:
                print(f"calibration {_size(size)}: measured {measured:.2f} us, beyond this run's largest size")
        if points:
            a, b = alpha_beta(points)
            print(f"alpha-beta: a = {a:.2f} us, B = {b / 1e3:.1f} GB/s")
        figure(s, rows, points, None)
        print("\n".join(table(rows, points)))


def sweep(size: int = SWEEP_SIZE, nodes: tuple[int, ...] = NODES) -> None:
    """The forced-ring all-reduce of `size` bytes on each node count of `nodes`: busbw per node count, and the
    spread over every node count the CSV holds at that size (this run's and earlier runs')."""
    out = []
    for n in nodes:
        gpus = 8 * n
        fabrics = Fabrics(str(ROOT / "platforms" / "mi300x-rail.yaml"), {"gpus.count": gpus}, "flow")
        start = time.perf_counter()
        (row,) = run_sizes(fabrics, "all_reduce", [(size, size // 4)], gpus, "ring", "Simple")
        wall = time.perf_counter() - start
        out.append((n, gpus, row.time_us, row.busbw, wall))
        print(f"{n} nodes ({gpus} GPUs), {_size(size)}: {row.time_us:.0f} us, busbw {row.busbw:.1f} GB/s "
              f"({row.plan.channels} channels; {wall:.0f} s wall)", flush=True)
    path = OUT / "mi300x-rail-nodes.csv"
    header = ["nodes", "gpus", "size_bytes", "time_us", "busbw_GBps", "wall_s"]
    rows: dict[tuple[int, int], list[str]] = {}
    if path.exists():
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                rows[int(r["nodes"]), int(r["size_bytes"])] = [r[k] for k in header]
    for n, g, t, bw, wall in out:
        rows[n, size] = [str(n), str(g), str(size), f"{t:.2f}", f"{bw:.2f}", f"{wall:.1f}"]
    bws = [float(r[4]) for (n, s), r in rows.items() if s == size]
    print(f"spread at {_size(size)} over {len(bws)} node counts: max / min - 1 = {max(bws) / min(bws) - 1:+.2%}")
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows[k] for k in sorted(rows, key=lambda k: (k[1], k[0])))


if __name__ == "__main__":
    args = sys.argv[1:]
    size, largest, nodes = SWEEP_SIZE, 16 * GiB, NODES
    for flag in ("--size", "--largest", "--nodes"):
        if flag in args:
            i = args.index(flag)
            if flag == "--size":
                size = int(args[i + 1])
            elif flag == "--largest":
                largest = int(args[i + 1])
            else:
                nodes = tuple(int(n) for n in args[i + 1].split(","))
            del args[i:i + 2]
    parts = args or ["curves", "sweep"]
    if "curves" in parts:
        curves(largest)
    if "sweep" in parts:
        sweep(size, nodes)
