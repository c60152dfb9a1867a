"""Re-predicts the published points whose source forced NCCL's algorithm, with that algorithm (docs/validation.md,
"Against published curves").

Azure's AI-benchmarking-guide ran `NCCL_ALGO=<Tree|Ring|NVLS|NVLSTree> all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40`
(Benchmarks/NCCLBandwidth.py, commit 1923741, 2024-09-24) and published one column, which its H100 and H200 result
files call "NVLS algorithm". Until 2026-12-07 published.csv predicted those rows with the tuner's own choice, ring LL
below 1 MiB, against a measurement of NVLS. This script predicts them as the source ran them, with `--algo nvls`
(the default fabric choice, as the curves), and rewrites those rows of experiments/validation/published.csv.

    .venv/bin/python experiments/published_forced.py
"""

from __future__ import annotations

import csv
from pathlib import Path

from eidola.run.perf import Fabrics, run_sizes

ROOT = Path(__file__).resolve().parent.parent
CSV = ROOT / "experiments" / "validation" / "published.csv"
#: (source file, platform) -> the algorithm it forced
FORCED = {("Azure_Results/ND_H100_v5_results.md", "dgx-h100"): "nvls",
          ("Azure_Results/ND_H200_v5_results.md", "dgx-h200"): "nvls"}
NOTE = "NCCL_ALGO={algo} forced (the guide's script; its table says NVLS algorithm)"


def forced_algo(row: dict[str, str]) -> str | None:
    """The algorithm `row`'s source forced, if any."""
    return next((algo for (source, platform), algo in FORCED.items()
                 if row["source"].endswith(source) and row["platform"] == platform), None)


def main() -> None:
    with CSV.open(newline="") as f:
        reader = csv.DictReader(f)
        fields = list(reader.fieldnames or [])
        rows = list(reader)
    for row in rows:
        algo = forced_algo(row)
        if algo is None:
            continue
        row["note"] = f"{row['note'].split(',')[0]}, {NOTE.format(algo=algo.upper())}"
        if row["predicted_plan"].startswith(algo):
            continue
        size, gpus = int(row["size_bytes"]), int(row["gpus"])
        (r,) = run_sizes(Fabrics(str(ROOT / "platforms" / f"{row['platform']}.yaml"), {}), "all_reduce",
                         [(size, size // 4)], gpus, algo=algo)
        measured = float(row["measured_us"])
        row.update(predicted_us=f"{r.time_us:.2f}", predicted_busbw_GBps=f"{r.busbw:.2f}",
                   error=f"{r.time_us / measured - 1:+.4f}",
                   predicted_plan=f"{r.plan.algo} {r.plan.proto} {r.plan.channels}")
        print(row["platform"], size, row["measured_us"], row["predicted_us"], row["error"])
    with CSV.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
