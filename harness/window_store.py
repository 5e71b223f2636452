"""Per-window errors beside the records: ``<out>/window_errors/<key>.npz``, one file per row key.

The records hold each cell's pooled sums; paired tests, bootstrap intervals over subjects, curves
by horizon step and MASE need the windows' own statistics (``protocols.metrics.WindowErrors``).
A file is written (atomically) before its row, so a finished row always has its file; a row that
has none was written before this existed, or scored nothing, and statistics that need it say so.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from harness.store import file_mode

FOLDER = "window_errors"


def window_errors_path(out: Path, key: str) -> Path:
    return Path(out) / FOLDER / f"{key}.npz"


def write_window_errors(out: Path, key: str, arrays: dict[str, np.ndarray] | None) -> None:
    """Store a row's per-window arrays; None removes an older file of the same key (a rerun that failed)."""
    path = window_errors_path(out, key)
    if arrays is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())  # mkstemp makes it 0600; records and per-window files share one mode
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **{name: np.asarray(value) for name, value in arrays.items()})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_window_errors(out: Path, key: str) -> dict[str, np.ndarray] | None:
    """A row's per-window arrays, or None when it has none. A damaged file raises, naming it."""
    path = window_errors_path(out, key)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ValueError(f"{path}: unreadable per-window errors ({exc}); delete it and rerun the cell "
                         "with --rerun") from exc
