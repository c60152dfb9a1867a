#!/usr/bin/env bash
# Long fuzz campaigns: N cases of each campaign (platforms, flow platforms, profiles, timestamps CSVs, CLI
# arguments, sweep specs and folders), every case a forked `eidola` command with a wall limit. Exits 1 on any finding
# (exit status 1, a signal or a hang); findings are kept in build/fuzz-findings/.
#   bash scripts/fuzz.sh 2500            # 10,000 cases in all
#   bash scripts/fuzz.sh 500 --seed 7    # other cases
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
shift || true
PYTHON=${PYTHON:-.venv/bin/python}
exec "$PYTHON" scripts/fuzz.py --cases "$N" "$@"
