#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12/13 machine (as root), idempotently:
# SystemC from the distribution, a virtual environment in .venv, the eidola package with its
# C++ models built by CMake. Safe to run again; it only does what is missing or changed.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in libsystemc-dev pkg-config g++ cmake ninja-build python3-venv graphviz; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
echo "setup: building and installing eidola (C++ models via CMake)"
.venv/bin/python -m pip install -q ".[test]"
echo "setup: done"
