"""The on-disk embedding cache of classification: the budgets of one seed share one embedding pass per
model and fold (each seed draws its own segments).

Entries live under ``cell.cache_dir`` (the run's ``<out>/cache``), one folder per (model, options, spec,
data, seed, task version, model revision) and one array per test fold. The versions follow the rule of the rows
(``harness.registry.versions``): an entry of another task version or model revision is never served, and ``run
--rerun`` empties the cache first, so that a rerun recomputes the embeddings too, never only the probe on top of
them. A module of its own, beside the cells rather than in them, so that a task uses it without reaching back into
the code that calls the task.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from harness.records.store import file_mode
from harness.registry.tasks import get_task
from harness.registry.versions import task_version, version_token
from models.registry import get_spec
from protocols.classification import embed_segments
from protocols.data import Dataset, dataset_fingerprint
from protocols.interface import Model
from protocols.splits import Fold


def embeddings_of(cell: Any, dataset: Dataset, model: Model, segments, spec) -> Callable[[Fold], np.ndarray]:
    """The embeddings of ``segments`` per test fold, from the on-disk cache (under ``cell.cache_dir``),
    computed by ``model`` on a miss: one pass per (model, options, spec, data, seed, fold)."""
    key = embedding_key(cell, dataset)

    def embeddings(fold: Fold) -> np.ndarray:
        return _cached_embeddings(Path(cell.cache_dir or tempfile.gettempdir()), key, fold.test_subject,
                                  lambda: embed_segments(model, dataset, fold, segments, spec))

    return embeddings


def embedding_key(cell: Any, dataset: Dataset) -> str:
    """The embedding cache entry of (model, options, spec, data, seed, task version, model revision): the seed
    draws the segments, so every seed has its own pass; the budgets of one seed share it. The task's version and
    the model's revision keep a changed protocol or model from being served the embeddings of before, as they keep
    its rows from being reused."""
    version = version_token(cell.task, task_version(get_task(cell.task)))
    if cell.model not in get_task(cell.task).model_free:
        version += f"|revision={get_spec(cell.model).revision}"
    text = (f"{cell.model}|{cell.model_options}|{cell.spec.fingerprint()}|{dataset_fingerprint(dataset)}"
            f"|seed={cell.seed}" + (f"|model_id={cell.model_id}" if cell.model_id else "")  # other weights, same path
            + f"|{version}")
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def clear_embeddings(cache_dir: Path) -> None:
    """Forget every cached embedding under a run's cache (``run --rerun``: recompute, never reuse)."""
    import shutil

    shutil.rmtree(Path(cache_dir) / "embeddings", ignore_errors=True)


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
        os.fchmod(fd, file_mode())  # mkstemp makes it 0600: every file a run writes shares the records' mode
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, arr, allow_pickle=False)
        os.replace(tmp, path)
        return arr
