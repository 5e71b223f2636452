"""A cell: the unit of work (one task, dataset, fold, window, condition, model, seed).

``run_cell`` is a top-level function of a picklable cell, so any executor can run it.  The
in-process caches below only avoid reloading the same dataset or model twice in one worker;
results never depend on them.  Embeddings for classification are cached on disk (under
``<out>/cache``) so that the budgets of one seed share one embedding pass per model and fold
(each seed draws its own segments).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from models.registry import ModelUnavailableError, get_spec
from protocols.classification import RANDOM_BASELINE, embed_segments, evaluate_classification, labelled_segments
from protocols.data import Dataset, dataset_fingerprint
from protocols.datasets import load_dataset
from protocols.forecasting import evaluate_forecasting
from protocols.imputation import evaluate_imputation
from protocols.interface import Model
from protocols.noise import evaluate_noise
from protocols.specs import ClassificationSpec, ForecastingSpec, ImputationSpec, NoiseSpec, WindowSpec
from protocols.splits import Fold, get_fold

TaskSpec = ForecastingSpec | NoiseSpec | ImputationSpec | ClassificationSpec
WINDOW_ERRORS = "window_errors"  # a result's per-window arrays; not a record column (harness.window_store)


@dataclass(frozen=True)
class Cell:
    task: str
    dataset: str  # registered name or folder path
    fold: str  # test subject ("all" for pooled classification)
    window: str  # "C/H" for forecasting and noise, the segment length otherwise
    model: str
    seed: int
    spec: TaskSpec
    condition: str = "clean"
    level: float | None = None  # noise beta, missing rate or label budget
    data_root: str | None = None  # where downloaded datasets live (--data-root)
    cache_dir: str | None = None  # on-disk embedding cache (classification)
    model_options: tuple[tuple[str, Any], ...] = field(default=())


@lru_cache(maxsize=4)
def cached_dataset(name: str, data_root: str | None = None) -> Dataset:
    return load_dataset(name, data_root=data_root)


@lru_cache(maxsize=2)
def cached_model(name: str, options: tuple[tuple[str, Any], ...]) -> Model:
    return get_spec(name).load(**dict(options))


def _capable(model: Model, cell: Cell) -> str | None:
    caps = model.capabilities
    if cell.task in ("forecasting", "noise"):
        w = WindowSpec.parse(cell.window)
        if not caps.forecast or not caps.supports_window(w.context, w.horizon):
            return f"{cell.model} does not support forecasting window {cell.window}"
    elif cell.task == "imputation" and not (caps.impute or caps.forecast):
        return f"{cell.model} neither imputes nor forecasts"
    elif cell.task == "classification" and not caps.embed:
        return f"{cell.model} has no embed capability"
    return None


def run_cell(cell: Cell) -> dict[str, object]:
    """Evaluate one cell; never raises for a model failure (the row says what happened)."""
    started = time.perf_counter()
    row: dict[str, object]
    try:
        dataset = cached_dataset(cell.dataset, cell.data_root)
        if cell.task == "classification":
            row = _classification(cell, dataset)
        else:
            model = cached_model(cell.model, cell.model_options)
            reason = _capable(model, cell)
            if reason is not None:
                row = {"status": "unavailable", "error": reason}
            else:
                row = _scored(cell, dataset, model, get_fold(dataset, cell.fold))
                row["model_info"] = model_info(model, cell)
    except ModelUnavailableError as exc:
        row = {"status": "unavailable", "error": str(exc)}
    except Exception as exc:  # recorded, so that one failing cell never stops a sweep
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        row = {"status": "error", "error": tail[:2000]}
    row["seconds"] = time.perf_counter() - started
    return row


def _scored(cell: Cell, dataset: Dataset, model: Model, fold: Fold) -> dict[str, object]:
    if cell.task == "forecasting":
        out = evaluate_forecasting(model, dataset, fold, WindowSpec.parse(cell.window), cell.spec)
        extra = {}
    elif cell.task == "noise":
        out = evaluate_noise(model, dataset, fold, WindowSpec.parse(cell.window), cell.spec, cell.level, cell.seed)
        extra = {}
    elif cell.task == "imputation":
        out = evaluate_imputation(model, dataset, fold, cell.spec, cell.level, cell.seed)
        extra = {"details": json.dumps({"queries": out.n_queries})}
    else:
        raise ValueError(f"unknown task {cell.task!r}")
    e = out.errors
    counts = {"n_windows": out.n_windows, "skipped_missing": out.skipped_missing,
              "short_recordings": out.short_recordings}
    problem = _unscored_reason(cell, e, out.short_recordings, out.skipped_missing)
    if problem:
        return {"status": "error", "error": problem, "n_points": e.n, **counts, **extra}
    row = {"status": "ok", "rmse": e.rmse, "mae": e.mae, "sse": e.sse, "sae": e.sae, "n_points": e.n,
           **counts, **extra}
    windows = getattr(out, "windows", None)
    if windows is not None:  # per-window statistics: the runner writes them beside the records
        row[WINDOW_ERRORS] = windows.arrays()
    return row


def _unscored_reason(cell: Cell, errors, short_recordings: int, skipped_missing: int) -> str | None:
    """Why a cell's metrics are no result (None: they are): nothing scored, or not finite numbers."""
    if errors.n == 0:
        return (f"no {'window' if cell.task != 'imputation' else 'segment'} of {cell.window} samples could be "
                f"scored for test subject {cell.fold}: {short_recordings} recording(s) shorter than that, "
                f"{skipped_missing} candidate(s) skipped for missing values or time gaps")
    bad = [name for name, v in (("RMSE", errors.rmse), ("MAE", errors.mae)) if not np.isfinite(v)]
    if bad:
        return (f"{' and '.join(bad)} not finite over {errors.n} points: the forecasts or the data hold values "
                "beyond float range (check the data for extreme values)")
    return None


def model_info(model: Model, cell: Cell) -> str:
    """The model's ``describe()`` and the device it ran on (``--device``; cpu unless a device was passed)."""
    info = {"device": dict(cell.model_options).get("device", "cpu"), **model.describe()}
    return json.dumps(info, sort_keys=True, default=str)


def _classification(cell: Cell, dataset: Dataset) -> dict[str, object]:
    spec: ClassificationSpec = cell.spec
    info = ""
    if cell.model == RANDOM_BASELINE:
        embeddings = None
    else:
        model = cached_model(cell.model, cell.model_options)
        reason = _capable(model, cell)
        if reason is not None:
            return {"status": "unavailable", "error": reason}
        segments = labelled_segments(dataset, spec, cell.seed)  # the seed draws the segments
        key = _embedding_key(cell, dataset)

        def embeddings(fold: Fold) -> np.ndarray:
            return _cached_embeddings(Path(cell.cache_dir or tempfile.gettempdir()), key, fold.test_subject,
                                      lambda: embed_segments(model, dataset, fold, segments, spec))

        info = model_info(model, cell)
    out = evaluate_classification(dataset, spec, cell.level, cell.seed, embeddings)
    return {"status": "ok", "macro_f1": out.macro_f1, "macro_auroc": out.macro_auroc,
            "n_windows": out.n_windows, "details": json.dumps({"notes": list(out.notes)}), "model_info": info}


def _embedding_key(cell: Cell, dataset: Dataset) -> str:
    """The embedding cache entry of (model, options, spec, data, seed): the seed draws the segments,
    so every seed has its own pass; the budgets of one seed share it."""
    text = (f"{cell.model}|{cell.model_options}|{cell.spec.fingerprint()}|{dataset_fingerprint(dataset)}"
            f"|seed={cell.seed}")
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _cached_embeddings(root: Path, key: str, fold: str, compute) -> np.ndarray:
    """One embedding pass per (model, data, spec, seed, fold), shared by the budgets of that seed.

    A lock file serialises workers that need the same entry; the array is written to a
    temporary file and renamed, so a crash never leaves a half-written cache entry.
    """
    folder = root / "embeddings" / key
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha1(fold.encode()).hexdigest()[:12]}.npy"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            try:
                return np.load(path, allow_pickle=False)
            except (ValueError, OSError):
                path.unlink()  # unreadable entry: recompute
        arr = np.asarray(compute(), dtype=np.float64)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npy")
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)
        os.replace(tmp, path)
        return arr
