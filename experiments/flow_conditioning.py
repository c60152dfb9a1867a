"""How much the flow fabric's kernel time moves when its link bandwidth moves by one part in 10^8.

For every point of flow_error.csv (the error figure's: pattern, platform or reported-only series, size), runs the
flow fabric again with `fabric.link.bandwidth` times 1 + 1e-8 and 1 - 1e-8, and records the largest relative
move of the kernel time as the point's spread. No datasheet tells such bandwidths apart, so a point whose spread
is large is ill-conditioned: last-bit changes of the rates move finishes by picoseconds, which reorders events
due in one instant (many short flows in step), and the run takes another path. An error against the packet
fabric smaller than the spread says nothing either way about the fluid there. (The packet fabric's times are
whole picoseconds of serialisation, which such a change leaves alone; its own sensitivity is to start skews,
experiments/skew.)

Writes flow_conditioning.csv beside this file and prints the spreads as flow_error.py prints the errors.
With --predictions it does the same for the real-node platforms' predicted all-reduce curves instead
(experiments/validation.py's systems and settings, sizes by factors of 4, each size `eidola perf --fabric auto` runs
on the flow fabric), and writes flow_conditioning_predictions.csv.
Run: .venv/bin/python experiments/flow_conditioning.py [--jobs 2] [--predictions]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import flow_error  # experiments/ is on sys.path when this file runs as a script
import validation
from rows_csv import write_rows

HERE = Path(__file__).resolve().parent
CSV = HERE / "flow_conditioning.csv"
PREDICTIONS_CSV = HERE / "flow_conditioning_predictions.csv"
PREDICTION_FIELDS = ("platform", "nbytes", "plan", "time_us", "time_us_up", "time_us_down", "spread")
EPSILON = 1e-8
FIELDS = ("pattern", "platform", "nbytes", "flow_ns", "flow_ns_up", "flow_ns_down", "spread", "error")


def scaled(bandwidth: str, factor: float) -> str:
    """A bandwidth string of the platform files ("100GB/s") times `factor`, in the same unit."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(\S+)\s*", bandwidth)
    if not match:
        raise ValueError(f"cannot scale the bandwidth {bandwidth!r}")
    return f"{float(match.group(1)) * factor:.15g}{match.group(2)}"


def link_bandwidth(platform_file: Path, overrides: dict[str, object]) -> str:
    """The platform's `fabric.link.bandwidth` as its files write it ("300GB/s"), with `overrides` applied."""
    import yaml

    import eidola
    effective = yaml.safe_load(eidola.load_platform(platform_file, overrides=overrides).effective_yaml())
    return str(effective["fabric"]["link"]["bandwidth"])


def point(row: dict[str, str]) -> dict[str, object]:
    """One point of flow_error.csv run again at the two perturbed bandwidths."""
    import eidola
    from eidola.platform import FLOW_COUNTERPART
    file, overrides, gpus = flow_error._config(row["platform"])
    nbytes = int(row["nbytes"])
    profile = flow_error._profile(row["pattern"], gpus, nbytes)
    settings: dict[str, object] = {**FLOW_COUNTERPART, **overrides, "fabric.model": "flow"}
    platform_file = flow_error.ROOT / "platforms" / file
    bandwidth = link_bandwidth(platform_file, settings)
    times = {}
    for name, factor in (("up", 1 + EPSILON), ("down", 1 - EPSILON)):
        plat = eidola.load_platform(platform_file, overrides={**settings, "fabric.link.bandwidth": scaled(bandwidth, factor)})
        times[name] = eidola.simulate(plat, profile).kernel_time_ns
    flow = float(row["flow_ns"])
    spread = max(abs(times["up"] / flow - 1), abs(times["down"] / flow - 1))
    out = {"pattern": row["pattern"], "platform": row["platform"], "nbytes": nbytes, "flow_ns": flow,
           "flow_ns_up": times["up"], "flow_ns_down": times["down"], "spread": spread, "error": float(row["error"])}
    print(f"{row['pattern']:18} {row['platform']:30} {nbytes >> 10:>8} KiB  spread {spread:.2%}  "
          f"error {float(row['error']):+.2%}", flush=True)
    return out


def prediction(system: validation.System) -> list[dict[str, object]]:
    """One system's predicted curve (by factors of 4) and its spread at every size run on the flow fabric."""
    import io

    from eidola.report.perf_command import PerfOptions, perf
    from eidola.run.perf import PerfRow

    platform_file = validation.ROOT / "platforms" / f"{system.platform}.yaml"

    def sweep(overrides: dict[str, object], first: str) -> list[PerfRow]:
        return perf(PerfOptions(str(platform_file), "all_reduce", first, str(system.largest), "4", str(system.gpus),
                                algo=system.algo, overrides=overrides), out=io.StringIO())
    base = sweep(dict(validation.NVLS_OFF), "1K")
    flows = [r for r in base if r.fabric == "flow"]
    if not flows:
        return []
    bandwidth = link_bandwidth(platform_file, dict(validation.NVLS_OFF))
    moved = {name: {r.size: r.time_us for r in sweep({**validation.NVLS_OFF, "fabric.link.bandwidth":
                                                       scaled(bandwidth, factor)}, str(flows[0].size))}
             for name, factor in (("up", 1 + EPSILON), ("down", 1 - EPSILON))}
    rows: list[dict[str, object]] = []
    for r in flows:
        up, down = moved["up"][r.size], moved["down"][r.size]
        rows.append({"platform": system.platform, "nbytes": r.size,
                     "plan": f"{r.plan.algo} {r.plan.proto} x{r.plan.channels}", "time_us": r.time_us,
                     "time_us_up": up, "time_us_down": down,
                     "spread": max(abs(up / r.time_us - 1), abs(down / r.time_us - 1))})
    print(f"{system.platform}: " + ", ".join(f"{flow_error._size(r.size)} {row['spread']:.3%}"
                                             for r, row in zip(flows, rows)), flush=True)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="points run at once (one process each)")
    parser.add_argument("--predictions", action="store_true",
                        help="the real-node platforms' predicted all-reduce curves instead of the error figure's points")
    args = parser.parse_args()
    if args.predictions:
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
            found = [row for rows in pool.map(prediction, validation.SYSTEMS) for row in rows]
        write_rows(PREDICTIONS_CSV, found, PREDICTION_FIELDS)
        return 0
    with flow_error.CSV.open(newline="") as f:
        points = list(csv.DictReader(f))
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
        rows = list(pool.map(point, points))
    write_rows(CSV, rows, FIELDS)
    print("\n".join(flow_error.table([{k: str(v) for k, v in r.items()} for r in rows], "spread", sign="")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
