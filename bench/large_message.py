"""Large messages: a direct all-reduce on the MI300X node, per packet and with packet trains.

The baseline is per-packet simulation (gpus.train 1) of the same all-reduce, measured in the same
run: its wall time grows linearly with the message (one transaction per 256-byte packet), and its
kernel time is the reference the trains' kernel time is compared with (the issue's bound: 1%).
Each run is a fresh `eidola.simulate` of an already loaded simulator (elaboration included).

Run: .venv/bin/python bench/large_message.py [--quick]; bench/run.py includes the section.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import eidola
from eidola.generators import direct_allreduce

ROOT = Path(__file__).resolve().parent.parent
PLATFORM = ROOT / "platforms" / "mi300x-8gpu.yaml"
WORKGROUPS = 32
TRAIN = 64
MIB = 1 << 20


def _run(mib: int, train: int) -> tuple[float, float, int]:
    """(wall s, kernel ns, events) of one all-reduce of `mib` MiB per GPU."""
    platform = eidola.load_platform(PLATFORM, {"gpus.workgroups": WORKGROUPS, "gpus.train": train})
    profile = direct_allreduce(gpus=8, nbytes=mib * MIB, workgroups=WORKGROUPS)
    start = time.perf_counter()
    result = eidola.simulate(platform, profile)
    return time.perf_counter() - start, result.kernel_time_ns, result.events


def large_message_section(quick: bool = False) -> list[str]:
    """Measures and returns the section's Markdown lines."""
    _run(1, 1)  # first-call costs (cppyy wrappers) out of the figures
    compared = [4, 16] if quick else [16, 64]
    rows = ["## Large messages: packet trains", "",
            f"Direct all-reduce on `mi300x-8gpu.yaml` with {WORKGROUPS} workgroups per GPU (each GPU sends "
            "2 x 7/8 of the message over its 7 links). Baseline: per-packet simulation of the same message in the "
            f"same run. Trains: `gpus.train: {TRAIN}` (the GPU caps a train at 1/16 of its transfer and 1/128 of "
            "max_outstanding, here 16 packets).", "",
            "| message | per packet: wall s | trains: wall s | faster | kernel time, per packet | with trains | "
            "difference | events, per packet | with trains |",
            "|---|---|---|---|---|---|---|---|---|"]
    per_packet_rate = 0.0
    for mib in compared:
        w1, k1, e1 = _run(mib, 1)
        wt, kt, et = _run(mib, TRAIN)
        per_packet_rate = w1 / mib
        rows.append(f"| {mib} MiB | {w1:.2f} | {wt:.2f} | **{w1 / wt:.1f}x** | {k1 / 1e3:.1f} us | {kt / 1e3:.1f} us | "
                    f"{kt / k1 - 1:+.2%} | {e1:,} | {et:,} |")
    big = 64 if quick else 256
    wt, kt, et = _run(big, TRAIN)
    rows += [f"| {big} MiB | ({per_packet_rate * big:.0f}, extrapolated) | {wt:.2f} | "
             f"**{per_packet_rate * big / wt:.0f}x** | - | {kt / 1e3:.1f} us | - | - | {et:,} |", "",
             f"The {big} MiB all-reduce with trains: **{wt:.1f} s** (target <= 10 s). Per-packet wall time is "
             f"linear in the message ({per_packet_rate:.2f} s per MiB in this run), so its {big} MiB figure is "
             "extrapolated from the largest size measured.", ""]
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller messages, for a smoke test")
    args = parser.parse_args()
    print("\n".join(large_message_section(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
