"""The parent's Python of issue 28's perf point, phase by phase, without the simulation.

Does what ``eidola perf platforms/mi300x-rail.yaml --set gpus.count=512 --op all_reduce -b 1G -e 1G``
does in its own process before it forks the simulation (and the two profile reads after it), each
phase timed: loading the platform, perf's plan check (the collective at 2 MiB), the 1 GiB profile,
its bytes written, the harnessed platform, elaboration, the encoding, the GPUs used. Prints seconds
per phase and the sha256 of the encoded op and program arrays, so two revisions can be compared for
speed and for bytes (bench/RESULTS.md, "Issue 28: the parent's Python at 512 GPUs x 1 GiB").

    python bench/parent_phases.py [GPUS]     (default 512; run from the repository root)
"""

from __future__ import annotations

import hashlib
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from eidola.run.encode import encode_profile
from eidola.run.perf import Fabrics, written_bytes
from eidola.run.perf_source import build_collective


def main(gpus: int) -> None:
    """Times each phase at `gpus` GPUs and prints the phases and the hashes."""
    times: dict[str, float] = {}

    def phase(name: str, f: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        out = f()
        times[name] = time.perf_counter() - start
        return out

    fabrics = phase("load platform (perf's Fabrics)", lambda: Fabrics("platforms/mi300x-rail.yaml",
                                                                       {"gpus.count": gpus}, "auto"))
    phase("plan check (2 MiB build)", lambda: build_collective(fabrics.base, "all_reduce", 4096 * gpus, gpus))
    profile, plan = phase("1 GiB profile", lambda: build_collective(fabrics.base, "all_reduce", 1 << 30, gpus,
                                                                    steady=True))
    written = phase("written_bytes", lambda: written_bytes(profile))
    platform = phase("harnessed platform", lambda: fabrics.harnessed(fabrics.choose(written)))
    elaborated = phase("elaborate", platform.elaborate)
    encoded = phase("encode_profile", lambda: encode_profile(profile, elaborated, seed=platform.seed))
    used = phase("used_gpus", profile.used_gpus)
    print(f"{plan}, {len(encoded.ops)} ops, {len(encoded.programs)} programs, {written} B written, {len(used)} GPUs")
    print("ops sha256     ", hashlib.sha256(encoded.ops.tobytes()).hexdigest())
    print("programs sha256", hashlib.sha256(encoded.programs.tobytes()).hexdigest())
    for name, seconds in times.items():
        print(f"{name:32s} {seconds:6.2f} s")
    print(f"{'total':32s} {sum(times.values()):6.2f} s")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 512)
