#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12/13 machine (as root), idempotently:
# SystemC from the distribution, a virtual environment in .venv, the eidola package with its
# C++ models built by CMake. Safe to run again: packages and .venv are added only where missing;
# the models are built and their profile trained again each time (about two minutes).
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
# The C++ models are built profile-guided (CMakeLists.txt, EIDOLA_PGO): once instrumented, trained
# on a few simulations (scripts/pgo_train.py, about 15 s), then again from the profile. Both builds
# use scikit-build's one build directory (build/wheel), whose object paths name the profile's files.
echo "setup: building and installing eidola (C++ models via CMake), instrumented for its profile"
.venv/bin/python -m pip install -q ".[test]" --config-settings=cmake.define.EIDOLA_PGO=generate
rm -rf build/wheel/pgo
echo "setup: training the profile (scripts/pgo_train.py)"
if .venv/bin/python scripts/pgo_train.py >/dev/null; then
  echo "setup: building eidola again from the profile"
  .venv/bin/python -m pip install -q --no-deps . --config-settings=cmake.define.EIDOLA_PGO=use
else
  echo "setup: the profile's training run failed (above); building eidola without a profile"
  .venv/bin/python -m pip install -q --no-deps . --config-settings=cmake.define.EIDOLA_PGO=
fi
# What the installed copy was built from: test.sh warns when the tree has changed since.
bash scripts/source_stamp.sh > .venv/eidola-sources.sha1
# Where it was built from: the installed `eidola` warns when files there are newer than this stamp (a pull or an
# edit without setup again), as test.sh does for the tests.
pwd > .venv/eidola-source-dir
echo "setup: done"
