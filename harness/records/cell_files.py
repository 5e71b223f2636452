"""Arrays a cell keeps beside its record row: ``<out>/<folder>/<key>.npz``, one file per folder and row key.

The records hold each cell's pooled sums; breakdowns and re-scoring need more, without changing a row:
``channel_errors`` (imputation's error sums per channel, for breakdowns by modality; forecasting and noise
keep theirs in the per-window errors), ``masks`` (imputation's mask and
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

from harness.records.store import file_mode

CELL_FILES = "cell_files"  # a result's {folder: {name: array}}; not a record column
FOLDERS = ("channel_errors", "masks", "rates", "predictions")


def cell_file_path(out: Path, folder: str, key: str) -> Path:
    if folder not in FOLDERS:
        raise ValueError(f"unknown cell-file folder {folder!r}; known: {', '.join(FOLDERS)}")
    return Path(out) / folder / f"{key}.npz"


def write_npz(path: Path, arrays: dict[str, np.ndarray], compressed: bool = False) -> None:
    """Write ``arrays`` to ``path`` atomically (a reader sees the old file or the new one, never a part), with
    the records' file mode: what every file kept beside a row is written with."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())  # mkstemp makes it 0600: records and every file beside them share one mode
        with os.fdopen(fd, "wb") as fh:
            (np.savez_compressed if compressed else np.savez)(fh, **{n: np.asarray(v) for n, v in arrays.items()})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_npz(path: Path, what: str) -> dict[str, np.ndarray] | None:
    """The arrays of ``path``, or None when it does not exist. A damaged file raises, naming it and ``what``."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path}: unreadable {what} ({exc}); delete it and rerun the cell with --rerun") from exc


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
        else:
            write_npz(path, arrays, compressed=True)


def read_cell_file(out: Path, folder: str, key: str) -> dict[str, np.ndarray] | None:
    """A row's arrays of one folder, or None when it has none. A damaged file raises, naming it."""
    return read_npz(cell_file_path(out, folder, key), f"{folder} arrays")
