"""Flag reads against the peer's wake-up delay, by wait mode (the Eidola paper's Fig. 9 form).

On the 4-GPU fused GEMV + AllReduce (default platform), GPU 0's first communication is held back
by 0-40 us in steps of 2 us, while the other GPUs' workgroups wait for its flags. Busy polling
issues one flag read per (memory latency + poll interval) per waiting workgroup, so its reads grow
linearly: slope = waiting workgroups / (M + I). Spin-yield grows too, but by far less (its
interval doubles up to a cap). SyncMon issues no flag reads at all while asleep: flat.

The points are the sweep spec experiments/wakeup_sweep.yaml (also runnable as
`eidola sweep experiments/wakeup_sweep.yaml`); this script runs it with the workgroup count and
poll interval asked for, fits the slopes and draws the figure. It writes wakeup_sweep.csv and
wakeup_sweep.png to --out (default out/experiments/wakeup_sweep, outside the source tree).
Run: .venv/bin/python experiments/wakeup_sweep.py [--workgroups 4] [--interval-ns 100] [--out DIR]
"""

import argparse
import csv
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

import eidola

HERE = Path(__file__).resolve().parent
SPEC = HERE / "wakeup_sweep.yaml"
PLATFORM = HERE.parent / "platforms" / "gemv-allreduce-4gpu.yaml"
MODES = ("poll", "spin_yield", "syncmon")
GPUS = 4


def run(workgroups=4, interval_ns=100, out=None):
    """Runs the spec's points with `workgroups` per GPU and poll interval `interval_ns`.

    Returns rows of (mode, delay_us, flag_reads, kernel_us) and the platform.
    """
    doc = yaml.safe_load(SPEC.read_text())
    doc["platform"] = str(PLATFORM)
    doc["generator"].update(workgroups=workgroups, interval_ns=interval_ns)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "wakeup_sweep.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        table = eidola.sweep(spec, out=out or Path(tmp) / "points")
    if (table["status"] != "ok").any():
        raise SystemExit(f"wakeup sweep: points failed:\n{table[table['status'] != 'ok'][['point', 'error']]}")
    rows = [(r["generator.mode"], int(r["generator.delays.0.ns"]) // 1000, int(r["flag_reads"]), r["kernel_time_us"])
            for _, r in table.iterrows()]
    return rows, eidola.load_platform(PLATFORM)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workgroups", type=int, default=4, help="workgroups per GPU (each waits on its flags)")
    parser.add_argument("--interval-ns", type=float, default=100, help="poll interval of the waits")
    parser.add_argument("--out", type=Path, default=Path("out/experiments/wakeup_sweep"), help="where to write")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows, plat = run(args.workgroups, args.interval_ns)
    with open(args.out / "wakeup_sweep.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "delay_us", "flag_reads", "kernel_us"])
        w.writerows(rows)
    mem_latency_ns = plat.components["gpu0"].resolved()["memory.latency"] * 1e9
    waiting = (GPUS - 1) * args.workgroups
    predicted = waiting / ((mem_latency_ns + args.interval_ns) / 1000)  # reads per us of delay
    by_mode = {m: np.array([(d, r) for mm, d, r, _ in rows if mm == m], dtype=float) for m in MODES}
    print(f"{'mode':10s} {'reads @0us':>10s} {'reads @40us':>11s} {'slope (reads/us)':>17s}")
    for m in MODES:
        slope = np.polyfit(by_mode[m][:, 0], by_mode[m][:, 1], 1)[0]
        print(f"{m:10s} {by_mode[m][0, 1]:10.0f} {by_mode[m][-1, 1]:11.0f} {slope:17.2f}")
    print(f"predicted polling slope: {waiting} waiting workgroups / (M + I = {mem_latency_ns + args.interval_ns:g} ns)"
          f" = {predicted:.2f} reads/us")
    at40 = {m: by_mode[m][-1, 1] for m in MODES}
    print(f"at 40 us: syncmon issues {at40['poll'] - at40['syncmon']:.0f} fewer flag reads than polling "
          f"({100 * (1 - at40['syncmon'] / at40['poll']):.1f}% fewer)")
    _plot(by_mode, args.out / "wakeup_sweep.png")


def _plot(by_mode, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    styles = {"poll": ("o-", "black"), "spin_yield": ("s--", "dimgray"), "syncmon": ("^:", "darkgray")}
    for m, data in by_mode.items():
        fmt, color = styles[m]
        ax.plot(data[:, 0], data[:, 1], fmt, color=color, label=m, markersize=4)
    ax.set_xlabel("GPU 0 wake-up delay (µs)")
    ax.set_ylabel("flag reads, all GPUs")
    ax.set_title("Flag reads vs wake-up delay, 4-GPU fused GEMV+AllReduce")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


if __name__ == "__main__":
    sys.exit(main())
