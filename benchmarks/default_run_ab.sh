#!/usr/bin/env bash
# The cold default forecasting run of another commit and of this tree, interleaved, CPU seconds (user + sys) each:
#   bash benchmarks/default_run_ab.sh d9c1940 [ROUNDS]
# Each command runs from its own `git worktree` (beside this clone, so `../shared` resolves) with PYTHONPATH set to
# it, an empty results folder and an empty $SOTER_BENCH_CACHE (the cohort is generated too). Ratios only mean
# something between commands of one run: the machine's load is printed after each.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${1:?usage: default_run_ab.sh COMMIT [ROUNDS]}"
rounds="${2:-2}"
parent="$(dirname "$root")"
trees=("$parent/ab-base-$$" "$parent/ab-head-$$")
git -C "$root" worktree add -q --detach "${trees[0]}" "$base"
git -C "$root" worktree add -q --detach "${trees[1]}" HEAD
trap 'for t in "${trees[@]}"; do git -C "$root" worktree remove --force "$t"; done' EXIT
for round in $(seq "$rounds"); do
  for tree in "${trees[@]}"; do
    out="$(mktemp -d)"
    (cd "$tree" && SOTER_BENCH_CACHE="$out/cache" PYTHONPATH="$tree" HF_HUB_OFFLINE=1 \
      /usr/bin/time -f "$(basename "$tree") round $round: cpu %U + %S s, wall %e s" \
      python -m harness run forecasting --out "$out/run" --no-progress > "$out/log" 2>&1) || { cat "$out/log"; exit 1; }
    tail -n 1 "$out/log"
    echo "  load $(cut -d' ' -f1-3 /proc/loadavg)"
    rm -rf "$out"
  done
done
