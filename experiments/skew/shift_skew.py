"""A shift (every GPU writes to the next) on switch-8gpu, with and without a 1 ns start skew, both fabrics.

How the skew sensitivity was found (README.md): a shift loads every link exactly to its capacity in both
directions (a GPU's writes one way, its acknowledgements of its predecessor's writes the other), and the
packet fabric's kernel time then depends on whether the GPUs start in the same picosecond.

Run: python experiments/skew/shift_skew.py [GPUS] [LANES] [BYTES]   (defaults 8 1 1048576)
Prints, per platform variant, the kernel time (us) with no skew and with GPU 1's first write held back by
1, 3 and 100 ns (the profile's variability delays), on the packet and on the flow fabric.
"""

from __future__ import annotations

import sys
from pathlib import Path

import eidola

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from test_start_skew import shift  # noqa: E402  (the test's workload, so both run the same shift)

SKEWS_NS = (None, 1.0, 3.0, 100.0)
# The platform as shipped, then the knobs that take the sensitivity away (README.md, "What removes it").
VARIANTS = [
    {},
    {"gpus.max_outstanding": 1000000},
    {"fabric.switch.buffer": "52224B"},
    {"fabric.switch.buffer": "52224B", "gpus.max_outstanding": 1000000},
]


def main() -> None:
    gpus = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    lanes = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    nbytes = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
    print(f"switch-8gpu, {gpus} GPUs, {lanes} lane(s), {nbytes} B each; skews (ns): {SKEWS_NS}")
    for variant in VARIANTS:
        for model in ("packet", "flow"):
            times = []
            for skew in SKEWS_NS:
                plat = eidola.load_platform(ROOT / "platforms" / "switch-8gpu.yaml", overrides={
                    "fabric.model": model, "fabric.link.count": lanes, "gpus.count": gpus, **variant})
                times.append(eidola.simulate(plat, shift(gpus, nbytes, skew)).kernel_time_ns / 1e3)
            print(f"{model:6s} {variant or 'as shipped'}: " + " ".join(f"{t:8.2f}" for t in times), flush=True)


if __name__ == "__main__":
    main()
