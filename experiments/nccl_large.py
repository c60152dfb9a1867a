"""The calibrated single-node platforms' NCCL/RCCL all-reduce above the auto fabric's switch: packet against flow.

`eidola perf --fabric auto` runs an 8-GPU all-reduce on the flow fabric from about 4.6 MiB up, so the
validation curves (docs/validation.md) are the flow fabric's there, with the platform files' own
`fabric.flow` settings (`issue: queue`, and `responses: fair` but on mi300x-8gpu, on the calibrated platforms). The crossover table
(experiments/nccl_crossover.py) checks the two fabrics at 1 and 8 MiB only. This runs each platform's
all-reduce, as the tuner plans it, at 64 and 256 MiB on:

- packet: the packet fabric as shipped (the reference);
- packet, window lifted: the same with `gpus.max_outstanding` 1,000,000, so that the GPU's window never binds;
- flow, as shipped: the flow fabric with the file's `fabric.flow` (what `--fabric auto` reports there);
- flow, defaults: with `fabric.flow.issue: gates` and `responses: first`, the settings the validation tests
  hold against the packet fabric (tests/python/test_flow_validation.py).

Prints the table of docs/fabrics.md, "The calibrated platforms above the switch", and writes nccl_large.csv
beside this file. About 10 minutes (the packet fabric's 256 MiB runs take about a minute each).
Run: .venv/bin/python experiments/nccl_large.py
"""

from __future__ import annotations

from pathlib import Path

from rows_csv import write_rows  # experiments/ is on sys.path when this file runs as a script

from eidola.run.perf import Fabrics, run_sizes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CSV = HERE / "nccl_large.csv"
# (platform, algorithm): dgx-h200's auto choice is NVLS, whose flow fabric has no gates to differ by, so its ring
PLATFORMS = [("dgx-a100", "auto"), ("dgx-h200", "ring"), ("mi300x-8gpu", "auto")]
SIZES = [64 << 20, 256 << 20]
RUNS = {
    "packet": ("packet", {}),
    "packet, window lifted": ("packet", {"gpus.max_outstanding": 1_000_000}),
    "flow, as shipped": ("flow", {}),
    "flow, defaults": ("flow", {"fabric.flow.issue": "gates", "fabric.flow.responses": "first"}),
}


def measure() -> list[dict[str, object]]:
    """Every run of every platform and size; one row each."""
    rows: list[dict[str, object]] = []
    for platform, algo in PLATFORMS:
        path = str(ROOT / "platforms" / f"{platform}.yaml")
        for run, (fabric, overrides) in RUNS.items():
            fabrics = Fabrics(path, dict(overrides), fabric)
            gpus = len(fabrics.base.gpus())
            for row in run_sizes(fabrics, "all_reduce", [(s, s // 4) for s in SIZES], gpus, algo):
                rows.append({"platform": platform, "run": run, "size": row.size, "plan": f"{row.plan.algo} "
                             f"{row.plan.proto} {row.plan.channels}", "time_us": round(row.time_us, 2),
                             "busbw": round(row.busbw, 1)})
                print(rows[-1], flush=True)
    return rows


def table(rows: list[dict[str, object]]) -> str:
    """The docs' table: per platform and size, each run's time and bus bandwidth, signed against the packet fabric."""
    out = ["| platform | size | plan | " + " | ".join(RUNS) + " |", "|---|---|---|" + "---|" * len(RUNS)]
    for platform, algo in PLATFORMS:
        label = platform if algo == "auto" else f"{platform} ({algo})"
        for size in SIZES:
            mine = {str(r["run"]): r for r in rows if r["platform"] == platform and int(r["size"]) == size}
            ref = float(mine["packet"]["time_us"])  # type: ignore[arg-type]
            cells = []
            for run in RUNS:
                t = float(mine[run]["time_us"])  # type: ignore[arg-type]
                diff = "" if run == "packet" else f", {(t / ref - 1) * 100:+.1f}%"
                cells.append(f"{t:,.1f} us ({mine[run]['busbw']} GB/s{diff})")
            out.append(f"| {label} | {size >> 20} MiB | {mine['packet']['plan']} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    rows = measure()
    write_rows(CSV, rows)
    print(table(rows))


if __name__ == "__main__":
    main()
