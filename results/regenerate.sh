#!/usr/bin/env bash
# The committed results set (issue #44): one folder per evaluation, every model's rows once, keyed by model.
# Model cards cite these folders; `python -m harness table TASK --out results/FOLDER` renders their tables.
# Finished cells are cached: a new model adds only its own rows (add it to the lists below and rerun).
#
#   bash results/regenerate.sh [FOLDER ...]           # default: every folder; run from the repository root
#   bash results/regenerate.sh --verify [FOLDER ...]  # no regeneration: recompute a sample of each folder's cells
#                                                     # and, where none moved, re-stamp its rows (harness restamp)
#
# Afterwards only SOTER's per-window errors stay (the baselines' are recomputed in seconds when `table --stats`
# needs them: `python -m harness run TASK ... --models BASELINE --rerun` with the folder's own flags).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
FORECAST="soter soter-anchored soter-autoregressive last-value window-mean drift seasonal-naive auto-ets auto-theta fracast"
VERB=run
if [ "${1:-}" = "--verify" ]; then VERB=restamp; shift; fi
WANT=("$@")
[ ${#WANT[@]} -eq 0 ] && WANT=(cohort mitbih-100 mitbih-2records imputation noise classification physiology)
for folder in "${WANT[@]}"; do
    case "$folder" in
        cohort) python -m harness $VERB forecasting --models $FORECAST --out results/cohort --no-progress ;;
        mitbih-100) python -m harness $VERB forecasting --dataset mitbih:blocks=6 --data-root ../shared/data/wfdb \
                        --models $FORECAST --out results/mitbih-100 --no-progress ;;
        mitbih-2records)  # records 100 and 105, two people: leave-one-subject-out (docs/paper-datasets.md)
            two=$(mktemp -d)
            ln -s "$PWD"/../shared/data/wfdb/100.{hea,dat,atr} "$PWD"/../shared/data/paper-samples/mitbih/105.{hea,dat,atr} "$two"/
            python -m harness $VERB forecasting --dataset mitbih --data-root "$two" \
                --models ${FORECAST/soter-autoregressive /} --out results/mitbih-2records --no-progress
            rm -r "$two" ;;
        imputation) python -m harness $VERB imputation --models soter soter-anchored locf linear-extrapolation \
                        --seeds 0 1 2 --out results/imputation --no-progress ;;
        noise) python -m harness $VERB noise --models soter soter-anchored last-value --max-windows-per-subject 4 \
                   --out results/noise --no-progress ;;
        classification) python -m harness $VERB classification --models soter soter-anchored stat-features \
                            --seeds 0 --budgets 1 5 --out results/classification --no-progress ;;
        physiology) python -m harness $VERB physiology --dataset mitbih:blocks=6 --data-root ../shared/data/wfdb \
                        --models soter soter-anchored last-value seasonal-naive --physio-sources forecast \
                        --physio-measures hr-ecg --physio-horizon 10 --out results/physiology --no-progress
            # BIDMC record 01 (respiration, PPG, ECG lead II, 125 Hz) as four blocks: breathing and heart rate
            python -m harness $VERB physiology --dataset heartrate:channels=RESP+PLETH+II:blocks=4 \
                --data-root ../shared/data/paper-samples --models soter soter-anchored last-value seasonal-naive \
                --physio-sources forecast --physio-measures br-resp hr-ppg hr-ecg --out results/physiology --no-progress ;;
        *) echo "unknown results folder: $folder" >&2; exit 2 ;;
    esac
    python - "results/$folder" <<'PY'
import sys
from pathlib import Path

import pandas as pd

from harness.records.store import RecordStore

folder = Path(sys.argv[1])
RecordStore(folder / "records.csv").compact()  # the rows this rerun superseded leave the committed file
rows = pd.read_csv(folder / "records.csv", dtype=str)
keep = set(rows.loc[rows["model"].str.startswith("soter"), "key"])
for f in (folder / "window_errors").glob("*.npz"):
    if f.stem not in keep:
        f.unlink()
PY
done
