"""Append-only CSV record store that survives crashes.

One row per (task, dataset, fold, window, condition, model, seed, protocol).  Each row
is appended with one write and fsync'd, so a run killed at any moment leaves every
finished row intact; a final line without its newline (a write cut short) is dropped
when the file is opened.  The column meanings are documented in docs/records.md.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS: tuple[str, ...] = (
    "key", "task", "dataset", "fold", "window", "condition", "model", "seed", "protocol",
    "status", "rmse", "mae", "sse", "sae", "n_points", "macro_f1", "macro_auroc", "n_windows",
    "skipped_missing", "short_recordings", "details", "error", "seconds", "model_info", "code_version",
    "finished_at",
)
KEY_FIELDS: tuple[str, ...] = ("task", "dataset", "fold", "window", "condition", "model", "seed", "protocol")
STATUSES = ("ok", "error", "unavailable")


def row_key(model_id: str = "", **fields: object) -> str:
    """The row's identity. ``model_id`` (``ModelSpec.identity``: a digest of the model's weights and
    options) enters only when non-empty, so rows of models without weights keep their keys, while a
    row computed with other weights, or written before weights were part of the key, never matches."""
    missing = [f for f in KEY_FIELDS if f not in fields]
    if missing:
        raise ValueError(f"row key needs {missing}")
    text = "|".join(f"{f}={fields[f]}" for f in KEY_FIELDS) + (f"|model_id={model_id}" if model_id else "")
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class RecordStoreError(RuntimeError):
    pass


@dataclass
class RecordStore:
    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._rows: dict[str, dict[str, str]] = {}
        if self.path.exists():
            self._load()
        else:
            self._append_text(_csv_line(COLUMNS))

    # -- reading -----------------------------------------------------------
    def _load(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            # a write cut short by a kill: drop the partial line, keep everything before it
            cut = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
            data = data[:cut]
        if not data:
            self._append_text(_csv_line(COLUMNS))
            return
        reader = csv.reader(io.StringIO(data.decode("utf-8")))
        header = next(reader)
        if tuple(header) != COLUMNS:
            raise RecordStoreError(
                f"{self.path}: unexpected columns {header}; this file was written by another "
                "version of soter-bench (move it away or use another --out)"
            )
        for lineno, values in enumerate(reader, start=2):
            if len(values) != len(COLUMNS):
                raise RecordStoreError(f"{self.path}: line {lineno} has {len(values)} fields, expected {len(COLUMNS)}")
            row = dict(zip(COLUMNS, values))
            self._rows[row["key"]] = row  # later rows supersede earlier ones

    def get(self, key: str) -> dict[str, str] | None:
        return self._rows.get(key)

    def is_done(self, key: str) -> bool:
        row = self._rows.get(key)
        return row is not None and row["status"] == "ok"

    def frame(self) -> pd.DataFrame:
        """Current rows (the latest per key) as a DataFrame with typed metric columns."""
        return rows_to_frame(list(self._rows.values()))

    # -- writing -----------------------------------------------------------
    def write(self, row: dict[str, object]) -> None:
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown record columns {sorted(unknown)}")
        if row.get("status") not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {row.get('status')!r}")
        full = {c: _fmt(row.get(c, "")) for c in COLUMNS}
        if not full["key"]:
            full["key"] = row_key(**{f: row[f] for f in KEY_FIELDS})
        self._append_text(_csv_line([full[c] for c in COLUMNS]))
        self._rows[full["key"]] = full

    def _append_text(self, text: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, text.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def _fmt(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return repr(float(value))  # exact round trip (and no "np.float64(...)")
    if isinstance(value, np.integer):
        return str(int(value))
    return str(value)


def _csv_line(values) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


NUMERIC = ("rmse", "mae", "sse", "sae", "macro_f1", "macro_auroc", "seconds")
INTEGER = ("n_points", "n_windows", "skipped_missing", "short_recordings", "seed")


def rows_to_frame(rows: list[dict[str, str]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in NUMERIC:
        # Python's float() round-trips repr() exactly; pandas' fast parser does not
        frame[col] = frame[col].map(lambda v: float(v) if v not in ("", None) else float("nan")).astype(float)
    for col in INTEGER:
        frame[col] = pd.to_numeric(frame[col].replace("", None), errors="coerce").astype("Int64")
    return frame


def read_records(path: Path) -> pd.DataFrame:
    """Rows of a records file (latest per key), for tables and analysis."""
    path = Path(path)
    if not path.exists():
        raise RecordStoreError(f"no records file at {path}; run `python -m harness run ...` first")
    return RecordStore(path).frame()
