#!/usr/bin/env bash
# Issue #49's study in one command: zero-shot, adapted (NAME@head, NAME@full) and supervised (tuned) rows for SOTER
# (faithful and departing), fracast, last value and the supervised baselines, on the embedded cohort and on MIT-BIH
# records 100 + 105 (two people, leave-one-subject-out), setting 96/48, each table ranked within its groups.
#
#   bash benchmarks/adaptation_study.sh [OUT]        # default OUT: results/runs/adaptation-study; from the repo root
#
# Measured (BENCHMARKS.md, "Adaptation"): 763 s + 169 s with --jobs 2 on the 2-core CPU VM. Finished cells are
# cached: a rerun into the same OUT computes only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/runs/adaptation-study}
DATA=../shared/data
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
MODELS="soter soter-anchored fracast last-value ridge mlp dlinear patchtst deepar"
FLAGS=(--models $MODELS --adapt zero-shot head full --supervised-training tuned --settings 96/48 --jobs "${JOBS:-2}"
       --no-progress)
python -m harness run forecasting "${FLAGS[@]}" --out "$OUT/cohort"
two=$(mktemp -d)
trap 'rm -r "$two"' EXIT
ln -s "$(cd "$DATA" && pwd)"/wfdb/100.{hea,dat,atr} "$(cd "$DATA" && pwd)"/paper-samples/mitbih/105.{hea,dat,atr} "$two"/
python -m harness run forecasting --dataset mitbih --data-root "$two" "${FLAGS[@]}" --out "$OUT/mitbih-100-105"
