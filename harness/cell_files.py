"""Arrays a cell keeps beside its record row: ``<out>/<folder>/<key>.npz``, one file per folder and row key.

The records hold each cell's pooled sums; breakdowns and re-scoring need more, without changing a row:
``channel_errors`` (error sums per channel, for breakdowns by modality), ``masks`` (imputation's mask and
queries, to re-score a run), ``rates`` (the physiological rates of every pair), ``predictions``
(classification's per-segment labels, for breakdowns by subject).  A task returns them under
:data:`CELL_FILES` in its row; the runner writes them (atomically, before the row) and removes files of a
key that a rerun no longer produced, so a row never sits beside another run's arrays.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

CELL_FILES = "cell_files"  # a result's {folder: {name: array}}; not a record column
FOLDERS = ("channel_errors", "masks", "rates", "predictions")


def cell_file_path(out: Path, folder: str, key: str) -> Path:
    if folder not in FOLDERS:
        raise ValueError(f"unknown cell-file folder {folder!r}; known: {', '.join(FOLDERS)}")
    return Path(out) / folder / f"{key}.npz"


def write_cell_files(out: Path, key: str, files: dict[str, dict[str, np.ndarray]] | None) -> None:
    """Store a row's arrays; folders it has none for lose an older file of the same key."""
    files = files or {}
    unknown = sorted(set(files) - set(FOLDERS))
    if unknown:
        raise ValueError(f"unknown cell-file folder(s) {unknown}; known: {', '.join(FOLDERS)}")
    for folder in FOLDERS:
        path = cell_file_path(out, folder, key)
        arrays = files.get(folder)
        if arrays is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, **{name: np.asarray(value) for name, value in arrays.items()})
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def read_cell_file(out: Path, folder: str, key: str) -> dict[str, np.ndarray] | None:
    """A row's arrays of one folder, or None when it has none. A damaged file raises, naming it."""
    path = cell_file_path(out, folder, key)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}); delete it and rerun the cell with --rerun") from exc
