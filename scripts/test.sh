#!/usr/bin/env bash
# Runs every test: the C++ examples and model tests (CMake + ctest), then pytest against the
# installed package. Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
# pytest runs the package setup.sh installed, a copy: say so when the tree has changed since.
if [ "$(cat .venv/eidola-sources.sha1 2>/dev/null)" != "$(bash scripts/source_stamp.sh)" ]; then
  echo "test: bridge/, tlm_models/ or the build files changed since scripts/setup.sh installed eidola;" \
       "pytest will run the installed copy (re-run scripts/setup.sh to test these sources)" >&2
fi
# Lint and types first: they take seconds and catch what tests would only hit by chance.
.venv/bin/ruff check bridge tests bench experiments examples
.venv/bin/mypy
# The documentation site, strict: a dead link, a missing page or a docstring griffe cannot read
# fails here. It needs no network (mkdocs.yml: no web fonts); NO_MKDOCS_2_WARNING quiets a banner.
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d build/site
cmake -S . -B build/cpp -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/cpp
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ctest --test-dir build/cpp --output-on-failure
# The third-party example is built by its own CMakeLists, as a vendor's would be.
cmake -S examples/third_party_ip -B build/third_party_ip -G Ninja >/dev/null
cmake --build build/third_party_ip
# pytest-xdist spreads the tests over the cores (one worker each; EIDOLA_TEST_WORKERS=0 runs them in this
# process): the suite is CPU-bound, and on two cores this more than halves it (bench/RESULTS.md, "The test suite").
.venv/bin/python -m pytest -q -n "${EIDOLA_TEST_WORKERS:-auto}" "$@"
