"""Side by side, the per-case errors (flow / packet - 1) of several sweeps (sweep.sh LABEL).

Run: python experiments/gate26/compare.py LABEL [LABEL ...]   (logs in $SWEEP_DIR, default /tmp/gate26)
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path


def main() -> None:
    folder = Path(os.environ.get("SWEEP_DIR", "/tmp/gate26"))
    labels = sys.argv[1:]
    rows: dict[str, dict[str, str]] = {}
    for label in labels:
        for line in (folder / f"{label}.log").read_text().splitlines():
            name = line.split()[0].replace("tests/python/test_flow_validation.py::", "").replace("test_", "")
            name = re.sub(r"(-link\d+).*", r"\1", name)[:60]
            rows.setdefault(name, {})[label] = line.split("err=")[1].strip()
    print(f"{'case':60s} " + " ".join(f"{label:>10s}" for label in labels))
    for name, errors in rows.items():
        print(f"{name:60s} " + " ".join(f"{errors.get(label, ''):>10s}" for label in labels))


if __name__ == "__main__":
    main()
