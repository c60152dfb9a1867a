"""NVLS on dgx-h200: the all-reduce curve with NVLS on and off, and the GPU-count sweep (docs/validation.md).

Everything here is a prediction of `eidola perf` except the two H200 calibration points it marks (16 GiB:
NVLS 62,634.94 us, ring with NCCL_NVLS_ENABLE=0 81,875.74 us, experiments/validation/calibration.csv),
which set the platform's header and fabric.switch.nvls.reduce_bandwidth (platforms/dgx-h200.yaml).

- curve: `eidola perf platforms/dgx-h200.yaml --op all_reduce -b 2M -e 8G`, once with `--algo nvls`
  and once with `--set fabric.switch.nvls.reduce_bandwidth=0GB/s` (NVLS off: the tuner's choice without
  it, ring); experiments/validation/dgx-h200-nvls.csv, docs/figures/validation-nvls-dgx-h200.png.
- GPU count: the same at 1 GiB and 8 GiB with `-g 5` .. `-g 8` (the first k GPUs of the node);
  experiments/validation/dgx-h200-nvls-gpus.csv, docs/figures/validation-nvls-gpus.png, beside the two
  bounds docs/validation.md derives: the switch's reduction, busbw = 2 (k-1)/k x R / k, and a GPU's link
  from the switch, busbw = 2 (k-1)/k x B / ((1 + 2h/P) + (1 + (h + a)/P) / k), with B = 18 x 25 GB/s,
  packets of P = 256 B, header h = 54 B and acknowledgement a = 3 B.

Run: .venv/bin/python experiments/validation_nvls.py (about six minutes on two busy cores; prints the docs' two tables);
--plot-only redraws the figures from the CSVs.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "experiments" / "validation"
FIGURES = ROOT / "docs" / "figures"
PLATFORM = ROOT / "platforms" / "dgx-h200.yaml"
EIDOLA = str(Path(sys.executable).with_name("eidola"))
OFF = ["--set", "fabric.switch.nvls.reduce_bandwidth=0GB/s"]
MiB, GiB = 1 << 20, 1 << 30
R = 2.2e12  # B/s: fabric.switch.nvls.reduce_bandwidth of dgx-h200.yaml
B, P, H, A = 450e9, 256, 54, 3  # dgx-h200: a port's B/s (18 x 25 GB/s), max_payload, header, ack (bytes)


def perf(args: list[str], scratch: Path) -> list[dict[str, str]]:
    """Run `eidola perf` on dgx-h200 with `args` and return its --csv rows."""
    subprocess.run([EIDOLA, "perf", str(PLATFORM), "--op", "all_reduce", *args, "--csv", str(scratch)],
                   check=True, stdout=subprocess.DEVNULL)
    with scratch.open() as f:
        return list(csv.DictReader(f))


def calibration() -> dict[str, tuple[int, float]]:
    """The two 16 GiB H200 points: {"nvls" | "ring": (size bytes, busbw GB/s)}."""
    with (OUT / "calibration.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["platform"] == "dgx-h200" and int(r["size_bytes"]) > GiB]
    return {("nvls" if r["algorithm"] == "NVLS" else "ring"): (int(r["size_bytes"]), float(r["busbw_GBps"]))
            for r in rows}


def bounds(k: int) -> tuple[float, float]:
    """(reduction bound, link bound) of an NVLS all-reduce's busbw on k GPUs, GB/s (docs/validation.md).

    The switch sums k x S in S / algbw; a GPU's link from the switch carries per S: the copies of every
    store (S, a header a packet), a read request for every packet it answers (S / P headers), its loads'
    sums (S / k, a header a packet) and an acknowledgement per packet it stored (S / (k P) x a)."""
    factor = 2 * (k - 1) / k
    down = (1 + 2 * H / P) + (1 + (H + A) / P) / k  # wire bytes per byte of S
    return factor * R / k / 1e9, factor * B / down / 1e9


def read(name: str) -> list[dict[str, str]]:
    """The rows of experiments/validation/`name`."""
    with (OUT / name).open() as f:
        return list(csv.DictReader(f))


def plot_only() -> None:
    """Redraw the figures from the CSVs a full run wrote, and print the docs' tables."""
    rows = read("dgx-h200-nvls.csv")
    curve = {state: [r for r in rows if r["nvls"] == state] for state in ("on", "off")}
    sweep: dict[tuple[str, int], list[dict[str, str]]] = {}
    for r in read("dgx-h200-nvls-gpus.csv"):
        sweep.setdefault((r["nvls"], int(r["gpus"])), []).append(r)
    figures(curve, sweep)
    print("\n".join(tables(rows, read("dgx-h200-nvls-gpus.csv"))))


def _size(n: int) -> str:
    return f"{n // GiB} GiB" if n >= GiB else f"{n // MiB} MiB"


def tables(curve_rows: list[dict[str, str]], gpu_rows: list[dict[str, str]]) -> list[str]:
    """docs/validation.md's two tables, from the rows of dgx-h200-nvls.csv and dgx-h200-nvls-gpus.csv: time and
    busbw with NVLS on and off per size (and on / off as busbw on over busbw off - 1), and busbw per GPU count."""
    on = {int(r["size_bytes"]): r for r in curve_rows if r["nvls"] == "on"}
    off = {int(r["size_bytes"]): r for r in curve_rows if r["nvls"] == "off"}
    lines = ["| size | NVLS on: time (us) | busbw (GB/s) | NVLS off: time (us) | busbw (GB/s) | off runs | on / off |",
             "|---|---|---|---|---|---|---|"]
    for size in sorted(on.keys() & off.keys()):
        a, b = on[size], off[size]
        t_on, t_off = float(a["time_us"]), float(b["time_us"])
        lines.append(f"| {_size(size)} | {t_on:,.1f} | {float(a['busbw_GBps']):.0f} | {t_off:,.1f} | "
                     f"{float(b['busbw_GBps']):.0f} | {b['algo']} {b['proto']} | {t_off / t_on - 1:+.0%} |")
    sweep = {(int(r["gpus"]), r["nvls"], int(r["size_bytes"])): r for r in gpu_rows}
    lines += ["", "| GPUs | NVLS on, 1 GiB | NVLS on, 8 GiB | NVLS off, 1 GiB | NVLS off, 8 GiB | switch bound | link bound |",
              "|---|---|---|---|---|---|---|"]
    for k in sorted({int(r["gpus"]) for r in gpu_rows}):
        runs = [sweep[(k, state, size)] for state in ("on", "off") for size in (GiB, 8 * GiB)]
        cells = [f"{float(r['busbw_GBps']):.0f}" for r in runs]
        cells += [f"{float(runs[0]['reduction_bound_GBps']):.0f}", f"{float(runs[0]['link_bound_GBps']):.0f}"]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    scratch = Path("/tmp") / "validation_nvls.csv"
    curve = {"on": perf(["-b", "2M", "-e", "8G", "--algo", "nvls"], scratch), "off": perf(["-b", "2M", "-e", "8G", *OFF], scratch)}
    with (OUT / "dgx-h200-nvls.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["nvls", "size_bytes", "time_us", "busbw_GBps", "algo", "proto", "channels", "fabric"])
        for state, rows in curve.items():
            for r in rows:
                w.writerow([state, r["size_bytes"], r["time_us"], r["busbw_GBps"], r["algo"], r["proto"], r["channels"],
                            r["fabric"]])
    sweep: dict[tuple[str, int], list[dict[str, str]]] = {}
    for k in (5, 6, 7, 8):
        for state, extra in (("on", ["--algo", "nvls"]), ("off", OFF)):
            if k == 8:  # the curve ran these sizes
                sweep[state, k] = [r for r in curve[state] if int(r["size_bytes"]) in (GiB, 8 * GiB)]
            else:
                sweep[state, k] = perf(["-b", "1G", "-e", "8G", "-f", "8", "-g", str(k), *extra], scratch)
    with (OUT / "dgx-h200-nvls-gpus.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["gpus", "nvls", "size_bytes", "time_us", "busbw_GBps", "algo", "proto", "channels",
                    "reduction_bound_GBps", "link_bound_GBps"])
        for (state, k), rows in sorted(sweep.items(), key=lambda x: (x[0][1], x[0][0])):
            red, link = bounds(k)
            for r in rows:
                w.writerow([k, state, r["size_bytes"], r["time_us"], r["busbw_GBps"], r["algo"], r["proto"], r["channels"],
                            f"{red:.1f}", f"{link:.1f}"])
    figures(curve, sweep)
    print("\n".join(tables(read("dgx-h200-nvls.csv"), read("dgx-h200-nvls-gpus.csv"))))


def figures(curve: dict[str, list[dict[str, str]]], sweep: dict[tuple[str, int], list[dict[str, str]]]) -> None:
    """The curve with the calibration points, and busbw against the GPU count with the two NVLS bounds."""
    points = calibration()
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for state, style, label in (("on", "o-", "NVLS on (--algo nvls)"), ("off", "s--", "NVLS off (reduce_bandwidth=0)")):
        rows = curve[state]
        ax.plot([int(r["size_bytes"]) for r in rows], [float(r["busbw_GBps"]) for r in rows], style, label=label)
    for key, marker, label in (("nvls", "*", "measured NVLS (calibration)"), ("ring", "X", "measured ring (calibration)")):
        size, bw = points[key]
        ax.plot([size], [bw], marker, markersize=14, color="black" if key == "nvls" else "gray", label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("all-reduce size per GPU (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("dgx-h200, 8 GPUs: predicted all-reduce, NVLS on and off")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(FIGURES / "validation-nvls-dgx-h200.png", dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ks = [5, 6, 7, 8]
    for state, size, style in (("on", GiB, "o-"), ("on", 8 * GiB, "o:"), ("off", GiB, "s-"), ("off", 8 * GiB, "s:")):
        ys = [float(next(r["busbw_GBps"] for r in sweep[state, k] if int(r["size_bytes"]) == size)) for k in ks]
        ax.plot(ks, ys, style, label=f"NVLS {state}, {size // GiB} GiB")
    ax.plot(ks, [bounds(k)[0] for k in ks], "k--", label="NVLS bound: switch reduction 2(k-1)/k x R/k")
    ax.plot(ks, [bounds(k)[1] for k in ks], "k-.", label="NVLS bound: a GPU's link from the switch")
    ax.set_xticks(ks)
    ax.set_xlabel("GPUs (-g)")
    ax.set_ylabel("bus bandwidth (GB/s)")
    ax.set_title("dgx-h200: predicted all-reduce busbw against GPU count")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(FIGURES / "validation-nvls-gpus.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    plot_only() if sys.argv[1:] == ["--plot-only"] else main()
