#!/usr/bin/env bash
# SOTER training runs with OMP_NUM_THREADS=1, alone and side by side on a small machine: numba's routing-kernel pool
# sized by OMP_NUM_THREADS (what `fit` does since 2026-11-27: models.soter.training.train.numba_threads_follow_omp)
# against a pool on every core (what it did before; NUMBA_NUM_THREADS=$(nproc) still asks for it), whose idle workers
# keep a core busy. The recipe is the anchored line's (soter-cpu-64 size); steps/s from each run's train_log.csv
# (a mean over the run, start-up included).
#
#   bash benchmarks/soter_parallel_training.sh CORPUS [STEPS=150] [RUNS=2]
set -euo pipefail
CORPUS=${1:?usage: bash benchmarks/soter_parallel_training.sh CORPUS [STEPS] [RUNS]}
STEPS=${2:-150}
RUNS=${3:-2}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fit() {  # fit OUT SEED
    OMP_NUM_THREADS=1 python -m models.soter.training.train fit --recipe models/soter/recipes/soter-anchored-v14a.toml \
        --corpus "$CORPUS" --out "$1" --steps "$STEPS" --log-every "$STEPS" --checkpoint-every 100000 --seed "$2" \
        > "$1.log" 2>&1
}
rate() { python -c "import csv; print(round(float(list(csv.DictReader(open('$1/train_log.csv')))[-1]['steps_per_s']), 2))"; }
echo "# $(nproc) cores; $(uptime)"
for mode in sized-by-omp all-cores; do
    if [ "$mode" = all-cores ]; then export NUMBA_NUM_THREADS=$(nproc); else unset NUMBA_NUM_THREADS; fi
    fit "$W/$mode-alone" 0
    echo "numba $mode: one run alone $(rate "$W/$mode-alone") steps/s"
    for i in $(seq "$RUNS"); do fit "$W/$mode-$i" "$i" & done
    wait
    echo "numba $mode: $RUNS runs side by side $(for i in $(seq "$RUNS"); do rate "$W/$mode-$i"; done | tr '\n' ' ')steps/s"
done
echo "# $(uptime)"
