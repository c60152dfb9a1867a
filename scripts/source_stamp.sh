#!/usr/bin/env bash
# Prints one hash of the sources `pip install .` builds the eidola package from (the Python
# bridge, the C++ models, the build files). setup.sh records it beside the installed package, and
# test.sh compares: pytest and `.venv/bin/eidola` run that installed copy, not the tree, so after
# an edit they would test the last set-up's code without a word.
set -euo pipefail
cd "$(dirname "$0")/.."
# scripts/source_paths lists them, one a line; the installed eidola reads the same list (cli._stale_install).
# shellcheck disable=SC2046
find $(cat scripts/source_paths) -type f -not -path '*/__pycache__/*' -not -name '*.pyc' \
  | LC_ALL=C sort | xargs sha1sum | sha1sum | cut -d' ' -f1
