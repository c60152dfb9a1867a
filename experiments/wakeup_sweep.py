"""Flag reads against the peer's wake-up delay, by wait mode (the Eidola paper's Fig. 9 form).

On the 4-GPU fused GEMV + AllReduce (default platform), GPU 0's first communication is held back
by 0-40 us in steps of 2 us, while the other GPUs' workgroups wait for its flags. Busy polling
issues one flag read per (memory latency + poll interval) per waiting workgroup, so its reads grow
linearly: slope = waiting workgroups / (M + I). Spin-yield grows too, but by far less (its
interval doubles up to a cap). SyncMon issues no flag reads at all while asleep: flat.

The points are the sweep spec experiments/wakeup_sweep.yaml (also runnable as
`eidola sweep experiments/wakeup_sweep.yaml`); this script runs it, fits the slopes and draws the figure.
Writes experiments/wakeup_sweep.csv and experiments/wakeup_sweep.png and prints the fit.
Run: .venv/bin/python experiments/wakeup_sweep.py
"""

import csv
import sys
import tempfile
from pathlib import Path

import numpy as np

import eidola

HERE = Path(__file__).resolve().parent
SPEC = HERE / "wakeup_sweep.yaml"
PLATFORM = HERE.parent / "platforms" / "gemv-allreduce-4gpu.yaml"
MODES = ("poll", "spin_yield", "syncmon")
GPUS, WORKGROUPS, INTERVAL_NS = 4, 4, 100  # as in the spec, for the predicted slope


def run(out=None):
    """Runs the spec's points; returns rows of (mode, delay_us, flag_reads, kernel_us) and the platform."""
    with tempfile.TemporaryDirectory() as tmp:
        table = eidola.sweep(SPEC, out=out or tmp)
    if (table["status"] != "ok").any():
        raise SystemExit(f"wakeup sweep: points failed:\n{table[table['status'] != 'ok'][['point', 'error']]}")
    rows = [(r["generator.mode"], int(r["generator.delays.0.ns"]) // 1000, int(r["flag_reads"]), r["kernel_time_us"])
            for _, r in table.iterrows()]
    return rows, eidola.load_platform(PLATFORM)


def main():
    rows, plat = run()
    with open(HERE / "wakeup_sweep.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mode", "delay_us", "flag_reads", "kernel_us"])
        w.writerows(rows)
    mem_latency_ns = plat.components["gpu0"].resolved()["memory.latency"] * 1e9
    waiting = (GPUS - 1) * WORKGROUPS
    predicted = waiting / ((mem_latency_ns + INTERVAL_NS) / 1000)  # reads per us of delay
    by_mode = {m: np.array([(d, r) for mm, d, r, _ in rows if mm == m], dtype=float) for m in MODES}
    print(f"{'mode':10s} {'reads @0us':>10s} {'reads @40us':>11s} {'slope (reads/us)':>17s}")
    for m in MODES:
        slope = np.polyfit(by_mode[m][:, 0], by_mode[m][:, 1], 1)[0]
        print(f"{m:10s} {by_mode[m][0, 1]:10.0f} {by_mode[m][-1, 1]:11.0f} {slope:17.2f}")
    print(f"predicted polling slope: {waiting} waiting workgroups / (M + I = {mem_latency_ns + INTERVAL_NS:g} ns)"
          f" = {predicted:.2f} reads/us")
    at40 = {m: by_mode[m][-1, 1] for m in MODES}
    print(f"at 40 us: syncmon issues {at40['poll'] - at40['syncmon']:.0f} fewer flag reads than polling "
          f"({100 * (1 - at40['syncmon'] / at40['poll']):.1f}% fewer)")
    _plot(by_mode)


def _plot(by_mode):
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
    fig.savefig(HERE / "wakeup_sweep.png")


if __name__ == "__main__":
    sys.exit(main())
