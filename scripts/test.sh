#!/usr/bin/env bash
# Runs every test: the C++ examples and model tests (CMake + ctest), then pytest against the
# installed package. Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build/cpp -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ctest --test-dir build/cpp --output-on-failure
.venv/bin/python -m pytest -q "$@"
