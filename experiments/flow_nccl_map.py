"""Where to trust the flow fabric on NCCL's collectives: every shipped packet platform, every collective, flow against packet.

Each point is what `eidola perf PLATFORM --op OP -b SIZE -e SIZE` simulates with `--fabric packet` and with
`--fabric flow` (the platform file as shipped, its own flow settings included: the calibrated files set
`flow.issue: queue` and `flow.responses: fair`), and records the flow fabric's signed error, flow / packet - 1.
The packet fabric is the reference. Sizes 1, 4 and 16 MiB: the packet fabric's range, where a user would check one
against the other before running the flow fabric alone at gigabytes. These are reported measurements
(docs/fabrics.md, "When to trust which model"), not tests: the tests hold the issue's table on the platforms it
names (tests/python/test_flow_validation.py, test_flow_nccl.py).

Writes flow_nccl_map.csv beside this file and prints the table docs/fabrics.md quotes.
Run: .venv/bin/python experiments/flow_nccl_map.py [--jobs 2] [--table-only] [--platform NAME ...]
(--platform re-measures those platforms only and replaces their rows, keeping the others.)
"""

from __future__ import annotations

import argparse
import csv
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from rows_csv import write_rows  # experiments/ is on sys.path when this file runs as a script

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CSV = HERE / "flow_nccl_map.csv"
PLATFORMS = ["switch-8gpu", "ring-8gpu", "custom-4gpu", "mesh2d-16gpu", "torus2d-16gpu", "hierarchical-16gpu",
             "rail-16gpu", "dgx-a100", "dgx-h100", "dgx-h200", "gb200-nvl4", "mi300x-8gpu", "dgx-h100-rail",
             "mi300x-rail"]
SIZES = [1 << 20, 4 << 20, 16 << 20]
FIELDS = ("platform", "op", "nbytes", "plan", "packet_ns", "flow_ns", "error", "packet_wall_s", "flow_wall_s")


def series(platform: str, op: str) -> list[dict[str, object]]:
    """`op` on `platform` at every size of SIZES, on both fabrics, through `eidola perf`'s own loop (run_sizes)."""
    from eidola.run.perf import Fabrics, run_sizes
    path = str(ROOT / "platforms" / f"{platform}.yaml")
    runs = {}
    for fabric in ("packet", "flow"):
        fabrics = Fabrics(path, {}, fabric)
        runs[fabric] = run_sizes(fabrics, op, [(n, n // 4) for n in SIZES], len(fabrics.base.gpus()))
    rows: list[dict[str, object]] = []
    for packet, flow in zip(runs["packet"], runs["flow"]):
        plan = f"{packet.plan.algo} {packet.plan.proto} {packet.plan.channels}"
        rows.append({"platform": platform, "op": op, "nbytes": packet.size, "plan": plan,
                     "packet_ns": round(packet.time_us * 1000, 3), "flow_ns": round(flow.time_us * 1000, 3),
                     "error": flow.time_us / packet.time_us - 1,
                     "packet_wall_s": round(packet.wall_s, 3), "flow_wall_s": round(flow.wall_s, 3)})
        print(f"{platform:20} {op:15} {packet.size >> 20:>3} MiB {plan:22} {rows[-1]['error']:+.2%}  "
              f"packet {packet.wall_s:.1f} s", flush=True)
    return rows


def table(rows: list[dict[str, str]]) -> str:
    """Markdown: a row per platform, a column per collective, each cell the errors at 1 / 4 / 16 MiB in per cent."""
    from eidola.workload.nccl import OPS
    cells: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        cells.setdefault((r["platform"], r["op"]), []).append(f"{100 * float(r['error']):+.0f}")
    ops = [op for op in OPS if any(o == op for _, o in cells)]
    lines = ["| platform | " + " | ".join(ops) + " |", "|---|" + "---|" * len(ops)]
    for platform in PLATFORMS:
        if any(p == platform for p, _ in cells):
            lines.append(f"| {platform} | " + " | ".join(" / ".join(cells.get((platform, op), ["-"])) for op in ops)
                         + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--table-only", action="store_true", help="print the table from the CSV without measuring")
    ap.add_argument("--platform", action="append", choices=PLATFORMS,
                    help="re-measure this platform only, keeping the CSV's other rows (repeatable)")
    args = ap.parse_args()
    if args.table_only and args.platform:
        ap.error("--platform re-measures; --table-only measures nothing")
    if not args.table_only:
        from eidola.workload.nccl import OPS
        chosen = args.platform or PLATFORMS
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            futures = {(platform, op): pool.submit(series, platform, op) for platform in chosen for op in OPS}
            fresh = {key: future.result() for key, future in futures.items()}
        kept: dict[tuple[str, str], list[dict[str, object]]] = {}
        if args.platform:
            with CSV.open(newline="") as f:
                for r in csv.DictReader(f):
                    kept.setdefault((r["platform"], r["op"]), []).append(dict(r))
        # Platform by platform, op by op, in the script's order, whichever run measured them.
        write_rows(CSV, [row for platform in PLATFORMS for op in OPS
                         for row in fresh.get((platform, op), kept.get((platform, op), []))], FIELDS)
    with CSV.open(newline="") as f:
        print(table(list(csv.DictReader(f))))


if __name__ == "__main__":
    main()
