#!/usr/bin/env bash
# One call on a lent accelerator: CUDA tests, GPU benchmarks and one SOTER training slice, each stage under
# its own time limit so that a slow stage cannot cost the others' results. What comes back through $OUT (the device
# tool returns at most 8 files of 16 MiB): summary.txt (each stage's exit status), logs.tar (each stage's output),
# ship.tar.part-NN (the trained slice, parts of 15 MiB).
#
# Here, first (docs/soter-training.md, "A GPU session, step by step"):
#   bash benchmarks/gpu_bundle.sh CORPUS VALCORPUS   (the checkout itself is small enough to travel)
# There, one `run` call (carry [".gpu"], timeout_s about 420):
#   bash benchmarks/gpu_session.sh
# Here, after it: tar -xf FILES_AT/logs.tar -C DIR;
#   cat FILES_AT/ship.tar.part-* | tar -x -C DIR
#
# Settings (environment): RECIPE (default models/soter/recipes/soter-anchored-v14a.toml: the slice's training recipe),
# GPU_DIR (default .gpu: what gpu_bundle.sh packed), STAGES (default "environment
# cuda-tests bench train": which to run), TRAIN_SECONDS (default 150: the slice's training time, calibrated from a
# short run), MIN_STEPS (default 100: the slice's fewest steps; its time limit follows the measured rate),
# MODEL (soter-small), BATCH (32), SEED (42), DEVICE (cuda; cpu for a dry run here: the slice trains on
# CUDA whenever torch sees it), WORK (/tmp/gpu_session), PYTHON (python3), EXTRA_FIT_FLAGS (appended to the
# slice's `fit` flags, e.g. --init-weights DIR for a later session's slice), STAGE_LIMITS (on; off runs every stage
# without its time limit: tests/soter/test_gpu_session.py, whose machine's speed is unknown, issue #51).
# tests/soter/test_gpu_session.py runs the training slice on the CPU, so its flags keep up with the trainer.
set -uo pipefail
OUT=${OUT:?set OUT: the folder whose files come back}
ROOT=$(pwd)
W=${WORK:-/tmp/gpu_session}
TRAIN_SECONDS=${TRAIN_SECONDS:-150}
MIN_STEPS=${MIN_STEPS:-100}
RECIPE=${RECIPE:-models/soter/recipes/soter-anchored-v14a.toml}
MODEL=${MODEL:-soter-small}
BATCH=${BATCH:-32}
SEED=${SEED:-42}
DEVICE=${DEVICE:-cuda}
EXTRA_FIT_FLAGS=${EXTRA_FIT_FLAGS:-}
STAGES=${STAGES:-environment cuda-tests bench train}
STAGE_LIMITS=${STAGE_LIMITS:-on}
GPU_DIR=$(cd "${GPU_DIR:-.gpu}" 2>/dev/null && pwd || echo "$ROOT/.gpu")  # what gpu_bundle.sh packed
PY=${PYTHON:-python3}
rm -rf "$W" && mkdir -p "$W/logs"
# the code is imported from this tree; .gpu/site holds the project's installed metadata (its entry points
# register the built-in models), written by gpu_bundle.sh
export PYTHONPATH=$ROOT:$GPU_DIR/site${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
want() { [[ " $STAGES " == *" $1 "* ]]; }

# $OUT is refreshed after every stage: if the call's own timeout kills this script, what ran still comes back
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$W/logs/summary.txt"; cp "$W/logs/summary.txt" "$OUT/summary.txt"; }
stage() {  # stage NAME SECONDS COMMAND...: its output in logs/NAME.txt, its exit status in the summary
    local name=$1 limit=$2; shift 2
    if [ "$STAGE_LIMITS" = off ]; then
        log "start $name (no limit: STAGE_LIMITS=off)"
        "$@" > "$W/logs/$name.txt" 2>&1
    else
        log "start $name (limit ${limit} s)"
        timeout "$limit" "$@" > "$W/logs/$name.txt" 2>&1
    fi
    log "end $name: exit $?"
    tar -C "$W" -cf "$OUT/logs.tar" logs
}

# 0. what the machine is
want environment && stage environment 60 bash -c "nvidia-smi || true; $PY -c 'import sys, torch; print(sys.version); print(torch.__version__, \
torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else \"no CUDA\")'; \
$PY -m pip list 2>/dev/null | grep -i -E '^(torch|torchdiffeq|numpy|pandas|scipy|safetensors|pytest|matplotlib) '"

# 1. the CUDA tests (issue #14 part 6): CPU and GPU forecasts agree, the harness's device choice
want cuda-tests && stage cuda-tests 150 $PY -m pytest -q -p no:cacheprovider tests/test_device.py tests/soter/test_soter_model.py \
    -k "cuda or gpu or device"

# 2. benchmarks for BENCHMARKS.md (rows naming the GPU): a training step at two sizes, forecasting per rollout,
#    and the paper's System Overhead measure for SOTER at its published size (one sample, issue #29)
want bench && stage bench-train-step 120 bash -c "for c in soter-small soter-paper; do $PY benchmarks/soter_train_step.py \
    --config \$c --device $DEVICE --channels 4 --batch 8 --length 512; done"
want bench && stage bench-forecast 120 bash -c "$PY benchmarks/soter_forecast.py --device $DEVICE --rollouts direct autoregressive \
    --steps 8 && $PY benchmarks/soter_forecast.py --config soter-paper --batch 1 --device $DEVICE \
    --rollouts direct autoregressive --steps 8"

# 3. one training slice of the anchored recipe at MODEL's size (issue #26 part 4), from the carried corpora
if ! want train; then
    log "training slice not asked for (STAGES=$STAGES)"
elif [ -f "$GPU_DIR/corpus.tar.xz" ]; then
    mkdir -p "$W/data" && tar -C "$W/data" -xJf "$GPU_DIR/corpus.tar.xz"
    # the recipe file (models/soter/recipes/), at MODEL's size and from scratch: its fine-tuning rate, seed and
    # logging replaced by a from-scratch run's
    FIT=(-m models.soter.training.train fit --recipe "$RECIPE" --model "$MODEL" --corpus "$W/data/corpus"
         --batch-size "$BATCH" --lr 3e-4 --warmup-steps 200 --aux-absolute-weight 0.5 --seed "$SEED" --log-every 25)
    [ -d "$W/data/valcorpus" ] && FIT+=(--val-corpus "$W/data/valcorpus" --val-batches 8)
    # calibrate: 50 steps give the step rate of this machine and recipe; the slice's cosine then ends on time
    stage train-calibrate 120 $PY "${FIT[@]}" --steps 50 --out "$W/calibrate" --checkpoint-every 1000 --val-every 1000 \
        $EXTRA_FIT_FLAGS
    RATE=$($PY -c "import csv, sys; rows = list(csv.DictReader(open('$W/calibrate/train_log.csv'))); \
print(float(rows[-1]['steps_per_s']))" 2>/dev/null || echo 0)
    STEPS=$($PY -c "print(max($MIN_STEPS, int($RATE * $TRAIN_SECONDS * 0.9) // 50 * 50))")
    # the slice's limit follows the measured rate (twice the time its steps need, at least twice TRAIN_SECONDS), so
    # a slow machine with MIN_STEPS above what TRAIN_SECONDS holds is not cut off (issue #51)
    LIMIT=$($PY -c "print(int(max($TRAIN_SECONDS, $STEPS / max($RATE, 1e-3)) * 2 + 60))")
    log "calibrated: $RATE steps/s -> a slice of $STEPS steps (limit $LIMIT s)"
    stage train-slice "$LIMIT" $PY "${FIT[@]}" --steps "$STEPS" --out "$W/run" \
        --checkpoint-every $((STEPS / 2)) --val-every $((STEPS / 4)) $EXTRA_FIT_FLAGS
    stage ship 120 $PY -m models.soter.training.ship --run "$W/run" --name "$MODEL-slice" --dest "$W/ship"
    # the weights (soter-small: 42 MiB in three shards) as one tar in parts under the 16 MiB a returned file may hold
    [ -d "$W/ship" ] && tar -C "$W" -cf - ship | split -b 15M -d - "$OUT/ship.tar.part-"
else
    log "no $GPU_DIR/corpus.tar.xz carried: no training slice (bash benchmarks/gpu_bundle.sh here)"
fi
