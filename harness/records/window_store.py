"""Per-window errors beside the records: ``<out>/window_errors/<key>.npz``, one file per row key.

The records hold each cell's pooled sums; paired tests, bootstrap intervals over subjects, curves
by horizon step and MASE need the windows' own statistics (``protocols.metrics.WindowErrors``).
A file is written (atomically) before its row, so a finished row always has its file; a row that
has none was written before this existed, or scored nothing, and statistics that need it say so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.records.cell_files import read_npz, write_npz

FOLDER = "window_errors"


def window_errors_path(out: Path, key: str) -> Path:
    return Path(out) / FOLDER / f"{key}.npz"


def write_window_errors(out: Path, key: str, arrays: dict[str, np.ndarray] | None) -> None:
    """Store a row's per-window arrays; None removes an older file of the same key (a rerun that failed)."""
    path = window_errors_path(out, key)
    if arrays is None:
        path.unlink(missing_ok=True)
    else:
        write_npz(path, arrays)


def read_window_errors(out: Path, key: str) -> dict[str, np.ndarray] | None:
    """A row's per-window arrays, or None when it has none. A damaged file raises, naming it."""
    return read_npz(window_errors_path(out, key), "per-window errors")
