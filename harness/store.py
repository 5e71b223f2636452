"""Append-only CSV record store that survives crashes and concurrent runs.

One row per (task, dataset, fold, setting, condition, model, seed, protocol).  Each row
is appended with one write and fsync'd, so a run killed at any moment leaves every
finished row intact; a final line without its newline (a write cut short) is dropped
when the file is opened.  Every read and append holds an exclusive ``flock`` on the file,
so two runs writing into one ``--out`` interleave whole rows and never write two headers;
``refresh`` picks up rows another run appended, so a cell finished there is not recomputed
here.  A damaged file is refused with its line number; ``repair_store`` (``harness repair``)
keeps the valid rows and moves the rest aside.  Column meanings: docs/records.md.

Files written before issue #17 name the ``setting`` column ``window`` (:data:`LEGACY_COLUMNS`): only the
name differs, so they are read as they are (the column is ``setting`` in every frame) and new rows are
appended to them unchanged; the header is never rewritten under another run that may be reading it.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import io
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

if TYPE_CHECKING:  # pandas is imported on use: `python -m harness --help` does not need it
    import pandas as pd

COLUMNS: tuple[str, ...] = (
    "key", "task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol",
    "status", "rmse", "mae", "sse", "sae", "n_points", "macro_f1", "macro_auroc", "n_windows",
    "skipped_missing", "short_recordings", "details", "error", "seconds", "model_info", "code_version",
    "finished_at",
)
# the header of files written before issue #17 renamed the context/horizon column: same columns, same order
LEGACY_COLUMNS: tuple[str, ...] = tuple("window" if c == "setting" else c for c in COLUMNS)
HEADERS: tuple[tuple[str, ...], ...] = (COLUMNS, LEGACY_COLUMNS)  # the headers a records file may have
KEY_FIELDS: tuple[str, ...] = ("task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol")
# the names the key hash spells the fields with: ``setting`` was ``window`` before issue #17, and the hash
# keeps the old spelling so that every key (and so every finished row of an existing records file) is unchanged
KEY_NAMES: dict[str, str] = {"setting": "window"}
STATUSES = ("ok", "error", "unavailable")
NUMERIC = ("rmse", "mae", "sse", "sae", "macro_f1", "macro_auroc", "seconds")
INTEGER = ("n_points", "n_windows", "skipped_missing", "short_recordings", "seed")


def row_key(model_id: str = "", **fields: object) -> str:
    """The row's identity. ``model_id`` (``ModelSpec.identity``: a digest of the model's weights and
    options) enters only when non-empty, so rows of models without weights keep their keys, while a
    row computed with other weights, or written before weights were part of the key, never matches."""
    if "setting" not in fields and "window" in fields:  # the field's name before issue #17
        fields["setting"] = fields.pop("window")
    missing = [f for f in KEY_FIELDS if f not in fields]
    if missing:
        raise ValueError(f"row key needs {missing}")
    text = "|".join(f"{KEY_NAMES.get(f, f)}={fields[f]}" for f in KEY_FIELDS) + (f"|model_id={model_id}" if model_id else "")
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class RecordStoreError(RuntimeError):
    pass


@dataclass
class RecordStore:
    path: Path
    _rows: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _offset: int = field(default=0, init=False, repr=False)  # bytes of the file already parsed
    _lines: int = field(default=0, init=False, repr=False)  # lines in those bytes

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.refresh()

    # -- reading -----------------------------------------------------------
    def refresh(self) -> None:
        """Take in rows that another run appended since this store last read the file."""
        with self._locked() as fd:
            self._read_new(fd)

    def _read_new(self, fd: int) -> None:
        """Parse the file from ``_offset`` on (under the lock); write the header into an empty file."""
        size = os.fstat(fd).st_size
        if size < self._offset:  # replaced underneath us (e.g. by `harness repair`): read it all again
            self._rows, self._offset, self._lines = {}, 0, 0
        data = os.pread(fd, size - self._offset, self._offset) if size > self._offset else b""
        if data and not data.endswith(b"\n"):
            # a write cut short by a kill: drop the partial line, keep everything before it
            cut = data.rfind(b"\n") + 1
            os.ftruncate(fd, self._offset + cut)
            data = data[:cut]
        if self._offset == 0 and not data:
            _write_all(fd, _csv_line(COLUMNS).encode(), self.path)
            self._offset, self._lines = os.fstat(fd).st_size, 1
            return
        for row in _parse(data, self.path, header=self._offset == 0, line_base=self._lines):
            self._rows[row["key"]] = row  # later rows supersede earlier ones
        self._offset += len(data)
        self._lines += data.count(b"\n")

    def get(self, key: str) -> dict[str, str] | None:
        return self._rows.get(key)

    def is_done(self, key: str) -> bool:
        row = self._rows.get(key)
        return row is not None and row["status"] == "ok"

    def seconds_by_model(self, task: str) -> dict[str, list[float]]:
        """Seconds of the finished cells of ``task`` per model: what earlier runs measured (progress estimates)."""
        out: dict[str, list[float]] = {}
        for row in self._rows.values():
            if row["task"] == task and row["status"] == "ok" and row["seconds"]:
                out.setdefault(row["model"], []).append(float(row["seconds"]))
        return out

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
        with self._locked() as fd:
            self._read_new(fd)  # rows of other runs first, so our offset stays at the end
            line = _csv_line([full[c] for c in COLUMNS]).encode("utf-8")
            _write_all(fd, line, self.path)
            self._offset = os.fstat(fd).st_size
            self._lines += line.count(b"\n")
        self._rows[full["key"]] = full

    @contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # closing releases the lock


def _write_all(fd: int, data: bytes, path: Path) -> None:
    """Append ``data`` completely or not at all: a short or failed write (disk full) is undone."""
    start = os.fstat(fd).st_size
    try:
        done = 0
        while done < len(data):
            n = os.write(fd, data[done:])
            if n <= 0:
                raise OSError(f"wrote {done} of {len(data)} bytes")
            done += n
        os.fsync(fd)
    except OSError as exc:
        try:
            os.ftruncate(fd, start)
        except OSError:
            pass  # the partial line has no newline: the next open drops it
        raise RecordStoreError(f"{path}: could not append a record ({exc.strerror or exc}); "
                               "every row written before it is kept") from None


def _parse(data: bytes, path: Path, header: bool, line_base: int) -> Iterator[dict[str, str]]:
    """Rows of ``data`` (whole lines after ``line_base`` lines), validated; errors name file and line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_base + data[:exc.start].count(b"\n") + 1
        raise _damaged(path, line, "bytes that are not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text))
    if header:
        names = next(reader, None)
        if names is not None and tuple(names) not in HEADERS:
            raise RecordStoreError(
                f"{path}: unexpected columns {names}; this file was written by another "
                "version of soter-bench (move it away or use another --out)"
            )
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _damaged(path, line_base + reader.line_num, f"unreadable CSV ({exc})") from None
        problem = row_problem(values)
        if problem:
            raise _damaged(path, line_base + reader.line_num, problem)
        yield dict(zip(COLUMNS, values))


def row_problem(values: list[str]) -> str | None:
    """Why a parsed CSV record cannot be a row of this store (None: it can)."""
    if len(values) != len(COLUMNS):
        return f"{len(values)} fields, expected {len(COLUMNS)}"
    row = dict(zip(COLUMNS, values))
    if not row["key"]:
        return "an empty key"
    if row["status"] not in STATUSES:
        return f"status {row['status']!r} (expected one of {', '.join(STATUSES)})"
    for col in NUMERIC:
        if row[col]:
            try:
                float(row[col])
            except ValueError:
                return f"{col} {row[col][:40]!r} is not a number"
    for col in INTEGER:
        if row[col] and not row[col].lstrip("-").isdigit():
            return f"{col} {row[col][:40]!r} is not an integer"
    return None


def _damaged(path: Path, line: int, problem: str) -> RecordStoreError:
    return RecordStoreError(f"{path}, line {line}: {problem}. The file is damaged; `python -m harness repair --out "
                            f"{path.parent}` keeps every valid row and moves the rest aside")


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


def rows_to_frame(rows: list[dict[str, str]]) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for col in NUMERIC:
        # Python's float() round-trips repr() exactly; pandas' fast parser does not
        frame[col] = frame[col].map(lambda v: float(v) if v not in ("", None) else float("nan")).astype(float)
    for col in INTEGER:
        frame[col] = pd.to_numeric(frame[col].replace("", None), errors="coerce").astype("Int64")
    return frame


def read_records(path: Path) -> pd.DataFrame:
    """Rows of a records file for tables and analysis: the latest row of every cell.

    A cell (the key fields) may have rows under several keys: the same model run with other weights
    or options (``--weights``, ``--model-option``). Tables must not pool those, so only the row
    written last is kept (``finished_at``, then file order); the others stay in the file.

    Rows made with random weights (``model_info`` says ``random_weights``: ``--random-weights``, speed and
    shape only) are left out before that, so they never reach a table, the leaderboard or the paper
    comparison: :func:`random_weight_rows` lists them.
    """
    frame = _all_rows(path)
    return latest_per_cell(frame[~_random(frame)])


def random_weight_rows(path: Path) -> pd.DataFrame:
    """The rows :func:`read_records` leaves out because they were made with random weights (latest per cell)."""
    frame = _all_rows(path)
    return latest_per_cell(frame[_random(frame)])


def _all_rows(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.exists():
        raise RecordStoreError(f"no records file at {path}; run `python -m harness run ...` first")
    return RecordStore(path).frame()


def _random(frame: pd.DataFrame) -> pd.Series:
    from models.random_weights import is_random_info

    return frame["model_info"].map(is_random_info).astype(bool)


def latest_per_cell(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell (``KEY_FIELDS``): the one written last."""
    order = frame.reset_index(drop=True).assign(_pos=lambda f: range(len(f)))
    order = order.sort_values(["finished_at", "_pos"], kind="stable")
    return order.drop_duplicates(list(KEY_FIELDS), keep="last").sort_values("_pos").drop(columns="_pos") \
        .reset_index(drop=True)


# -- repair -------------------------------------------------------------------
@dataclass(frozen=True)
class RepairReport:
    path: Path
    kept: int
    rejected: int
    backup: Path | None  # the damaged file, moved aside unchanged (None: nothing to repair)
    rejected_file: Path | None  # the lines that were not valid rows, byte for byte


def repair_store(path: Path) -> RepairReport:
    """Keep every valid row of a damaged records file and move everything else aside; delete nothing.

    Runs under the store's lock. The original file is kept unchanged as ``<name>.damaged-<time>``,
    the rejected lines as ``<stem>.rejected-<time>.csv``; the new file holds the header and the valid
    rows in their original order. A line that is not a row (bad bytes, wrong field count, a value
    that is not a number, an unbalanced quote) is rejected alone, so one bad line never costs others.
    """
    path = Path(path)
    if not path.exists():
        raise RecordStoreError(f"no records file at {path}")
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        kept, rejected = _split_valid(data)
        if not rejected and any(data.startswith(_csv_line(h).encode()) for h in HEADERS) and data.endswith(b"\n"):
            return RepairReport(path, len(kept), 0, None, None)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        backup = path.with_name(f"{path.name}.damaged-{stamp}")
        rejected_file = path.with_name(f"{path.stem}.rejected-{stamp}.csv")
        rejected_file.write_bytes(b"".join(rejected))
        fresh = path.with_name(f".{path.name}.repair-{stamp}")
        fresh.write_bytes(_csv_line(COLUMNS).encode() + b"".join(kept))
        shutil.copyfile(path, backup)  # the damaged original stays, byte for byte
        os.replace(fresh, path)
        return RepairReport(path, len(kept), len(rejected), backup, rejected_file)
    finally:
        os.close(fd)


def _split_valid(data: bytes, max_record_lines: int = 64) -> tuple[list[bytes], list[bytes]]:
    """(valid row records, rejected chunks) of a records file's bytes; the header is neither."""
    lines = data.splitlines(keepends=True)
    if lines and lines[0].rstrip(b"\r\n") in {_csv_line(h).rstrip("\n").encode() for h in HEADERS}:
        lines = lines[1:]
    kept: list[bytes] = []
    rejected: list[bytes] = []
    i = 0
    while i < len(lines):
        # a record may span lines (a quoted field holding a newline): grow it while quotes are open
        j, chunk = i + 1, lines[i]
        while chunk.count(b'"') % 2 and j < len(lines) and j - i < max_record_lines:
            chunk += lines[j]
            j += 1
        record = _valid_record(chunk)
        if record is not None:
            kept.append(record)
            i = j
        else:
            rejected.append(lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
            i += 1
    return kept, rejected


def _valid_record(chunk: bytes) -> bytes | None:
    if not chunk.endswith(b"\n") or chunk.count(b'"') % 2:
        return None
    try:
        records = list(csv.reader(io.StringIO(chunk.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return None
    if len(records) != 1 or row_problem(records[0]) is not None:
        return None
    return chunk
