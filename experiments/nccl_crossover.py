"""The flow fabric against the packet fabric on the collectives `eidola perf` runs, where its auto fabric changes model.

`eidola perf --fabric auto` simulates a size on the packet fabric while the collective writes at most 64 MiB
in all GPUs together and on the flow fabric above (docs/perf.md), so on 8 GPUs an all-reduce of about
4.6 MiB and up runs on the flow fabric. A curve is continuous across that point only where the two
models agree on these collectives (NCCL's channels, FIFOs and protocols as the tuner chooses them, not
the generic generators of tests/python/test_flow_validation.py). For each shipped single-fabric
platform and each collective, at 1, 8 and 32 MiB (the last above the switch on every platform, where
channels move several units each), this runs the size on both fabrics with everything else as shipped and
records flow / packet - 1 (the packet fabric is the reference).

Writes nccl_crossover.csv beside this file and prints the table of docs/fabrics.md, "NCCL collectives
across the auto fabric's switch". About 10 minutes.
Run: .venv/bin/python experiments/nccl_crossover.py
"""

from __future__ import annotations

from pathlib import Path

from rows_csv import write_rows  # experiments/ is on sys.path when this file runs as a script

from eidola.run.perf import Fabrics, run_sizes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CSV = HERE / "nccl_crossover.csv"
PLATFORMS = ["mi300x-8gpu", "dgx-h100", "dgx-a100", "switch-8gpu", "rail-16gpu", "hierarchical-16gpu", "mi300x-rail",
             "dgx-h100-rail"]
OPS = ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv", "gather",
       "scatter"]
SIZES = [1 << 20, 8 << 20, 32 << 20]


def measure() -> list[dict[str, object]]:
    """Both fabrics for every platform, collective and size; one row each."""
    rows: list[dict[str, object]] = []
    for platform in PLATFORMS:
        path = str(ROOT / "platforms" / f"{platform}.yaml")
        fabrics = {f: Fabrics(path, {}, f) for f in ("packet", "flow")}
        gpus = len(fabrics["packet"].base.gpus())
        for op in OPS:
            points = [(s, s // 4) for s in SIZES]
            packet = run_sizes(fabrics["packet"], op, points, gpus)
            flow = run_sizes(fabrics["flow"], op, points, gpus)
            for p, f in zip(packet, flow):
                rows.append({"platform": platform, "op": op, "bytes": p.size, "algo": p.plan.algo,
                             "proto": p.plan.proto, "channels": p.plan.channels, "packet_us": round(p.time_us, 3),
                             "flow_us": round(f.time_us, 3), "error": round(f.time_us / p.time_us - 1, 4)})
                print(rows[-1], flush=True)
    return rows


NAMES = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
         "alltoall": "all-to-all", "broadcast": "broadcast", "reduce": "reduce", "sendrecv": "send/recv",
         "gather": "gather", "scatter": "scatter"}


def _error(r: dict[str, object]) -> str:
    """flow / packet - 1 as the docs give it; beyond 3% in bold with both kernel times (us, packet / flow)."""
    e = float(r["error"])  # type: ignore[arg-type]
    text = f"{e:+.1%}".replace("+0.0%", "0.0%").replace("-0.0%", "0.0%")
    if abs(e) <= 0.03:
        return text
    return f"**{text}** ({float(r['packet_us']):.2f} / {float(r['flow_us']):.2f})"  # type: ignore[arg-type]


def table(rows: list[dict[str, object]]) -> str:
    """The rows of docs/fabrics.md's table: one line per platform and collective, the signed error per size."""
    lines = []
    for platform in PLATFORMS:
        for op in OPS:
            mine = [r for r in rows if r["platform"] == platform and r["op"] == op]
            plans = list(dict.fromkeys(f"{r['algo']} {r['proto']}" for r in mine))
            lines.append(f"| {platform} | {NAMES[op]} | {' / '.join(plans)} | "
                         + " | ".join(_error(r) for r in mine) + " |")
    return "\n".join(lines)


def main() -> None:
    rows = measure()
    write_rows(CSV, rows)
    print(table(rows))


if __name__ == "__main__":
    main()
