"""The windows of a run's rows, for the per-window breakdowns (beats, quality bands, the failure atlas).

Why: those breakdowns must not move a committed number, so they read what a cell already stored, its per-window
errors (``harness.records.window_store``: each window's sse, n, recording and start, so windows pair up across
models), and recompute a forecast only for the windows they show, from the model and the same window
(``protocols.forecasting.windows_at``).  A recomputed forecast is checked against the stored errors: a model
that does not give the same forecast again is named, never passed off as the row's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from harness.records.window_store import read_window_errors

KEYS = ["dataset", "setting", "condition", "seed", "fold"]  # with recording and start: one window
# relative tolerance of a recomputed window's RMSE against the stored one: float32 models (SOTER) give the same
# forecast again up to their last digits (1e-4 % on MIT-BIH 100), far below what a figure or a breakdown shows
SAME_ERRORS = 1e-3


def window_frame(frame: pd.DataFrame, task: str, out: Path) -> tuple[pd.DataFrame, list[str]]:
    """One line per (ok row, window): the row's key fields, the window's recording, start, sse, n and RMSE
    (sqrt(sse / n)); and notes naming rows without per-window errors (left out)."""
    rows = frame[(frame["task"] == task) & (frame["status"] == "ok")]
    parts, missing = [], []
    for _, r in rows.iterrows():
        arrays = read_window_errors(out, r["key"])
        if arrays is None:
            missing.append(r["model"])
            continue
        n = arrays["n"].astype(np.float64)
        part = pd.DataFrame({"recording": arrays["recording"].astype(np.int64),
                             "start": arrays["start"].astype(np.int64), "sse": arrays["sse"].astype(np.float64),
                             "sae": arrays["sae"].astype(np.float64), "n": n, "index": np.arange(n.size)})
        part["rmse"] = np.sqrt(part["sse"] / part["n"].where(part["n"] > 0))
        for k in ["key", "model", *KEYS]:
            part[k] = r[k]
        parts.append(part)
    notes = []
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        notes.append(f"{len(missing)} ok row(s) have no per-window errors ({names}): left out; recompute them with "
                     "the folder's own command and --models NAME --rerun (baselines take seconds)")
    return (pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()), notes


def load_datasets(names, data_root: Path | None) -> tuple[dict[str, object], list[str]]:
    """The datasets of the rows by their name in the records, and a note for each that cannot be loaded."""
    from protocols.datasets import load_dataset, resolve_data_root

    root = resolve_data_root(data_root)
    found, notes = {}, []
    for name in dict.fromkeys(names):
        folder = Path(root) / name if root is not None else None
        try:  # a registered dataset, else a user folder of that name under the data root
            found[name] = load_dataset(name, data_root=root)
        except Exception as exc:  # one line per dataset: the breakdown goes on with the others
            if folder is not None and folder.is_dir():
                found[name] = load_dataset(str(folder))
            else:
                notes.append(f"dataset {name} not loaded ({exc}); its windows need --data-root (for a user "
                              "folder: the folder that holds it)")
    return found, notes


def model_options(row: pd.Series) -> dict:
    """The options the row's model was loaded with: its identity's options and the runner's fixed model seed."""
    try:
        info = json.loads(row.get("model_info") or "{}")
    except (TypeError, ValueError):
        info = {}
    options = dict((info.get("identity") or {}).get("options") or {})
    return {"seed": 0, **options}


def recompute(dataset, row: pd.Series, recording: np.ndarray, start: np.ndarray,
              model=None) -> tuple[object, np.ndarray]:
    """(windows, forecast [B, C, H]) of the row's windows at ``recording``/``start``: the same windows,
    normalised by the same fold, forecast by the row's model (loaded unless given; :func:`check_errors` compares
    the forecast with the stored errors)."""
    from models.registry import get_spec
    from protocols.forecasting import fit_for_fold, predict_windows, windows_at
    from protocols.specs import ForecastingSpec, SamplingSpec, Setting
    from protocols.splits import get_fold
    from protocols.windows import WindowRef

    setting = Setting.parse(row["setting"])
    fold = get_fold(dataset, row["fold"])
    refs = tuple(WindowRef(int(r), int(s)) for r, s in zip(recording, start))
    arrays = windows_at(dataset, fold, setting, refs)
    if model is None:
        model = get_spec(row["model"]).load(**model_options(row))
        fit_for_fold(model, dataset, fold, setting,
                     ForecastingSpec(settings=(setting,), sampling=SamplingSpec(seed=int(row["seed"]))))
    forecast = predict_windows(model, arrays, 64)
    return arrays, forecast


def recompute_row(dataset, row: pd.Series, out: Path, model=None) -> tuple[object, np.ndarray, str | None]:
    """(windows, forecast, note) of every window of the row, in its stored order and batches: a model that solves
    a batch together (an adaptive ODE step) forecasts a window the same only beside the same windows."""
    arrays = read_window_errors(out, row.name)
    windows, forecast = recompute(dataset, row, arrays["recording"], arrays["start"], model)
    return windows, forecast, check_errors(forecast, windows.target, arrays["sse"],
                                           f"{row['model']} on {row['dataset']} {row['setting']} {row['fold']}")


def check_errors(forecast: np.ndarray, target: np.ndarray, stored_sse: np.ndarray, what: str) -> str | None:
    """A note when the recomputed forecasts' per-window sse differ from the stored ones."""
    err = np.where(np.isfinite(target), forecast - target, 0.0)
    stored_rmse, rmse = np.sqrt(np.asarray(stored_sse, dtype=np.float64)), np.sqrt(np.sum(err ** 2, axis=(1, 2)))
    moved = float(np.max(np.abs(rmse - stored_rmse) / np.where(stored_rmse > 0, stored_rmse, 1.0), initial=0.0))
    if moved <= SAME_ERRORS:
        return None
    return (f"{what}: the recomputed forecasts' window RMSEs differ from the stored ones by up to {100 * moved:.2g} % "
            "(the model's code changed since, it is not deterministic, or the folder was run with other flags or "
            "weights); shown as recomputed")
