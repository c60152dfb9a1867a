#!/bin/bash
# Flow against packet for every case of test_flow_validation.py and test_flow_nccl.py, one line a case, in
# $SWEEP_DIR/LABEL.log (default /tmp/gate26). Needs sweep_hooks.patch applied
# (its FLOWLOG and PACKETCACHE hooks in those two test files), and the package's environment (the
# README's set-up, or PYTHONPATH and EIDOLA_NATIVE_DIR pointing at a build). The packet fabric's kernel times
# are cached in $SWEEP_DIR/packet.json*, so a sweep after a change to the flow fabric alone takes about ten
# seconds (a minute the first time). --runxfail: the cases marked xfail run and count as failures.
# PERTURB=GPU:NS holds that GPU's first communication back by NS in every case (the packet cache keeps
# perturbed runs apart): experiments/skew/README.md.
# Then: python experiments/gate26/compare.py LABEL [LABEL ...]
set -u
label=${1:?usage: sweep.sh LABEL}
dir=${SWEEP_DIR:-/tmp/gate26}
mkdir -p "$dir"
rm -f "$dir/$label.log"
cd "$(dirname "$0")/../.."
FLOWLOG="$dir/$label.log" PACKETCACHE="$dir/packet.json" ${PYTHON:-python3} -m pytest -q -p no:cacheprovider --runxfail \
  tests/python/test_flow_validation.py tests/python/test_flow_nccl.py | tail -1
