"""Random mixes of transfers on the shipped packet platforms, run on the packet and the flow fabric, worst first.

Each case takes a shipped packet platform of at most 16 GPUs, sets up to three knobs to other values (payloads,
headers, acknowledgements, windows, lanes, spreading, memory latency, the flow fabric's responses rule), and runs
1 to 24 writes, reads and puts (a write and a signal) of 1 B to 1 MiB between random GPUs, in up to 8 workgroups
each, on both fabrics. The packet fabric is the reference: a case whose flow kernel time is far from it is either
a known limit of the fluid (short flows, the GPU's issue order: docs/fabrics.md, "When to trust which model") or a
fault. Its first, ad-hoc version (2026-12-06, 700 cases) found four: a read's data taking an incast queue's link
from the writes queued there (+4,600%), one credit channel per link where the packet fabric's routers have one per
output (+67% to +99%), a small write issued beside a larger one queued behind all of it (+26.6%), each fixed with a
test; and a queued write ending before its bytes crossed a slower link further on (-24%, open: docs/fabrics.md).

    python scripts/compare_fabrics.py --cases 200 --seed 2    # prints the cases past --report, then the median

The real-system files set `fabric.flow.issue: queue` for their calibration, which parts from the packet fabric by
design where one workgroup's writes follow each other (docs/fabrics.md, "When to trust which model").
`--counterpart` runs the flow fabric as the packet fabric's counterpart instead (FLOW_COUNTERPART under the case's
own knobs), so that what it reports is the fluid's, not that choice.

Cases are made from (seed, index) only: `--case N` reruns one and prints its transfers. `--case N --reduce 0.1`
then removes transfers one at a time while the case stays off by more than 10%, until removing any one of those
left would bring it within, and prints what is left: the few transfers that carry the difference.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

import eidola
from eidola.platform import FLOW_COUNTERPART
from eidola.profile import ProfileBuilder

REPO = Path(__file__).resolve().parent.parent
MAX_GPUS = 16
#: The knobs a case may set, and the values it picks from.
KNOBS: dict[str, list[Any]] = {
    "fabric.link.ack": ["0B", "16B", "64B", "300B"], "fabric.link.header": ["0B", "16B", "85B"],
    "gpus.max_payload": ["8B", "64B", "256B", "4KiB"], "gpus.max_outstanding": [1, 4, 64, 2048],
    "fabric.routing.spread": [True, False], "fabric.link.count": [1, 2, 4],
    "fabric.flow.responses": ["first", "fair"], "gpus.memory.latency": ["0ns", "300ns", "5us"]}
SIZES = [1, 8, 256, 4096, 65536, 1 << 20]
WORKGROUPS = 8


def platforms() -> list[tuple[Path, int]]:
    """The shipped packet platforms of at most MAX_GPUS GPUs, each with its GPU count."""
    out = []
    for path in sorted((REPO / "platforms").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        fabric = doc.get("fabric") if isinstance(doc, dict) else None
        if isinstance(fabric, dict) and fabric.get("model") == "packet" and doc["gpus"]["count"] <= MAX_GPUS:
            out.append((path, int(doc["gpus"]["count"])))
    return out


def make_case(seed: int, index: int, paths: list[tuple[Path, int]]
              ) -> tuple[tuple[Path, int], dict[str, Any], list[tuple[str, int, int, int]]]:
    """((platform, GPUs), overrides, transfers as (kind, src, dst, bytes))."""
    r = random.Random(f"compare-{seed}-{index}")
    platform = r.choice(paths)
    overrides = {k: r.choice(v) for k, v in r.sample(sorted(KNOBS.items()), r.randrange(0, 4))}
    gpus = platform[1]
    transfers = []
    for _ in range(r.randrange(1, 25)):
        src = r.randrange(gpus)
        transfers.append((r.choice(["write", "write", "read", "put"]), src, (src + r.randrange(1, gpus)) % gpus,
                          r.choice(SIZES)))
    return platform, overrides, transfers


Transfer = tuple[str, int, int, int]  #: (kind, source GPU, destination GPU, bytes)


def profile(gpus: int, transfers: list[Transfer | None]) -> eidola.Profile:
    """Transfer t in workgroup t % WORKGROUPS of its source, each workgroup's in order (None: a transfer removed,
    which keeps the others in their workgroups)."""
    b = ProfileBuilder(gpus=gpus, workgroups=WORKGROUPS, name="compare")
    b.flag("done")
    b.buffer("data", nbytes=max(SIZES))
    for t, transfer in enumerate(transfers):
        if transfer is None:
            continue
        kind, src, dst, nbytes = transfer
        program = b.program(gpu=src, wg=t % WORKGROUPS)
        if kind == "read":
            program.read(dst=dst, buffer="data", offset=0, nbytes=nbytes)
        else:
            program.write(dst=dst, buffer="data", offset=0, nbytes=nbytes)
            if kind == "put":
                program.signal(dst=dst, flag="done")
    return b.build()


def run_case(platform: tuple[Path, int], overrides: dict[str, Any], transfers: list[Transfer | None],
             counterpart: bool = False) -> dict[str, float]:
    """The kernel time (ns) on each fabric; `counterpart`: the flow fabric with FLOW_COUNTERPART under `overrides`."""
    path, gpus = platform
    prof = profile(gpus, transfers)
    defaults: dict[str, dict[str, Any]] = {"packet": {}, "flow": dict(FLOW_COUNTERPART) if counterpart else {}}
    times = {}
    for model, under in defaults.items():
        plat = eidola.load_platform(path, overrides={**under, **overrides, "fabric.model": model})
        times[model] = eidola.simulate(plat, prof, timeout=120).kernel_time_ns
    return times


def error_of(times: dict[str, float]) -> float:
    """The flow fabric's signed error against the packet fabric (flow / packet - 1; 0 if the packet run took no time)."""
    return times["flow"] / times["packet"] - 1 if times["packet"] > 0 else 0.0


def reduce_case(platform: tuple[Path, int], overrides: dict[str, Any], transfers: list[Transfer | None],
                threshold: float, counterpart: bool = False, error: float | None = None) -> list[Transfer | None]:
    """`transfers` with transfers removed (None) one at a time, first to last and again, while the case stays off by
    more than `threshold` on the side the whole case is off: what is left is off by more, that way, and removing any
    one of it would not be. Why the side: a case 11% slow reduced to three transfers 30% fast (scripts/compare_fabrics.py
    --seed 10 --case 27, 2026-12-06), another error than the one asked about. `error`: the whole case's, where the
    caller has run it already."""
    if error is None:
        error = error_of(run_case(platform, overrides, transfers, counterpart))
    sign = 1.0 if error >= 0 else -1.0
    kept = list(transfers)
    changed = True
    while changed:
        changed = False
        for t, transfer in enumerate(kept):
            if transfer is None:
                continue
            trial = kept[:t] + [None] + kept[t + 1:]
            if any(trial) and sign * error_of(run_case(platform, overrides, trial, counterpart)) > threshold:
                kept, changed = trial, True
    return kept


def print_transfers(transfers: Sequence[Transfer | None]) -> None:
    """One line per transfer left (None: removed), with its index and workgroup."""
    for t, transfer in enumerate(transfers):
        if transfer is not None:
            print(f"  {t}: {transfer[0]} gpu {transfer[1]} -> {transfer[2]}, {transfer[3]} B, wg {t % WORKGROUPS}")


def main() -> int:
    """Runs the cases; prints those whose flow kernel time is off by more than --report, and the median."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--report", type=float, default=0.25, help="print cases off by more than this (relative)")
    ap.add_argument("--case", type=int, help="rerun one case and print its transfers")
    ap.add_argument("--counterpart", action="store_true",
                    help="the flow fabric with flow.issue gates and responses first, whatever the file sets")
    ap.add_argument("--reduce", type=float, metavar="ERROR",
                    help="with --case: remove transfers while the case stays off by more than ERROR (relative)")
    args = ap.parse_args()
    if args.reduce is not None and args.case is None:
        ap.error("--reduce needs --case")
    paths = platforms()
    indices = [args.case] if args.case is not None else list(range(args.cases))
    errors = []
    for i in indices:
        platform, overrides, transfers = make_case(args.seed, i, paths)
        if args.case is not None:
            print_transfers(transfers)
        times = run_case(platform, overrides, transfers, args.counterpart)
        error = error_of(times)
        errors.append(abs(error))
        if abs(error) > args.report or args.case is not None:
            print(f"case {i}: {platform[0].name} {overrides}: packet {times['packet']:.1f} ns, flow {times['flow']:.1f} ns, "
                  f"{error:+.1%}", flush=True)
    print(f"{len(errors)} cases, median |error| {statistics.median(errors):.3%}, worst {max(errors):.1%}")
    if args.reduce is not None:  # the loop ran the one case, --case: platform, overrides and transfers are its
        kept = reduce_case(platform, overrides, list(transfers), args.reduce, args.counterpart, error)
        times = run_case(platform, overrides, kept, args.counterpart)
        print(f"reduced to {sum(t is not None for t in kept)} of {len(transfers)} transfers: packet "
              f"{times['packet']:.1f} ns, flow {times['flow']:.1f} ns, {error_of(times):+.1%}")
        print_transfers(kept)
    return 0


if __name__ == "__main__":
    sys.exit(main())
