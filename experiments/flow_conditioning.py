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
Run: .venv/bin/python experiments/flow_conditioning.py [--jobs 2]
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
from rows_csv import write_rows

HERE = Path(__file__).resolve().parent
CSV = HERE / "flow_conditioning.csv"
EPSILON = 1e-8
FIELDS = ("pattern", "platform", "nbytes", "flow_ns", "flow_ns_up", "flow_ns_down", "spread", "error")


def scaled(bandwidth: str, factor: float) -> str:
    """A bandwidth string of the platform files ("100GB/s") times `factor`, in the same unit."""
    match = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(\S+)\s*", bandwidth)
    if not match:
        raise ValueError(f"cannot scale the bandwidth {bandwidth!r}")
    return f"{float(match.group(1)) * factor:.15g}{match.group(2)}"


def point(row: dict[str, str]) -> dict[str, object]:
    """One point of flow_error.csv run again at the two perturbed bandwidths."""
    import yaml

    import eidola
    from eidola.platform import FLOW_COUNTERPART
    file, overrides, gpus = flow_error._config(row["platform"])
    nbytes = int(row["nbytes"])
    profile = flow_error._profile(row["pattern"], gpus, nbytes)
    settings = {**FLOW_COUNTERPART, **overrides, "fabric.model": "flow"}
    platform_file = flow_error.ROOT / "platforms" / file
    base = yaml.safe_load(eidola.load_platform(platform_file, overrides=settings).effective_yaml())
    bandwidth = str(base["fabric"]["link"]["bandwidth"])
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="points run at once (one process each)")
    args = parser.parse_args()
    with flow_error.CSV.open(newline="") as f:
        points = list(csv.DictReader(f))
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn")) as pool:
        rows = list(pool.map(point, points))
    write_rows(CSV, rows, FIELDS)
    print("\n".join(flow_error.table([{k: str(v) for k, v in r.items()} for r in rows], "spread", sign="")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
