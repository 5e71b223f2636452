#!/usr/bin/env bash
# CPU seconds of test files, before and after a change, side by side: each file runs once on a base commit (a
# `git archive` of it in a temporary folder) and once on this checkout, one file at a time, in CI's environment (no
# OMP_NUM_THREADS or NUMBA_NUM_THREADS set; .ci/run sets neither). `uptime` before and after each run.
#
#   bash benchmarks/test_files.sh BASE_COMMIT FILE...
set -euo pipefail
BASE=${1:?usage: bash benchmarks/test_files.sh BASE_COMMIT FILE...}
shift
HERE=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
git -C "$HERE" archive "$BASE" | tar -x -C "$W"
unset OMP_NUM_THREADS NUMBA_NUM_THREADS
export HF_HUB_OFFLINE=1
for f in "$@"; do
  for side in before after; do
    dir=$HERE
    [ "$side" = before ] && dir=$W
    echo "== $side $f | $(uptime)"
    (cd "$dir" && PYTHONPATH=$dir /usr/bin/time -f "TIME %e s wall %U s user %S s sys" \
      python -m pytest -q -p no:cacheprovider "$f" 2>&1 | grep -E "passed|failed|error|TIME")
    echo "   $(uptime)"
  done
done
