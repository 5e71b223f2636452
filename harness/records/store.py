"""Append-only CSV record store that survives crashes and concurrent runs.

One row per (task, dataset, fold, setting, condition, model, seed, protocol).  Each row
is appended with one write and fsync'd, so a run killed at any moment leaves every
finished row intact; a final line without its newline (a write cut short) is dropped
when the file is opened.  Every read and append holds an exclusive ``flock`` on the file,
so two runs writing into one ``--out`` interleave whole rows and never write two headers;
``refresh`` picks up rows another run appended, so a cell finished there is not recomputed
here.  A damaged file is refused with its line number; ``repair_store`` (``harness repair``)
keeps the valid rows and moves the rest aside.  Column meanings: docs/records.md.

Columns are read by their names in the file's header (any order); new rows are appended in the
file's own order.  Readers (``read_records``: tables, report, statistics) open the file read-only
under a shared lock and never change it: a final row without its newline is read if it is a whole
row, and ignored otherwise.  Only a writer (a run) finishes that line, with its newline, or moves
an incomplete one aside (``records.rejected-<time>.csv``) before it appends.

Files written before issue #17 name the ``setting`` column ``window`` (:data:`LEGACY_COLUMNS`): only the
name differs, so they are read as they are (the column is ``setting`` in every frame) and new rows are
appended to them unchanged; the header is never rewritten under another run that may be reading it.

Files written before the provenance columns (:data:`PROVENANCE`: what a row consumed) lack them: they are read
with those columns empty, and a run appends to them in their own header, each new row's provenance kept in its
``details`` (under ``provenance``) and read back into the columns, so that every frame has them whatever the
header. Only a rewrite of the whole file (``compact``, ``replace_rows``: ``harness restamp``) writes the current
header: an append never changes the header under another run that may be reading the file.
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import math
import os
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from harness.records.keys import KEY_FIELDS, KEY_NAMES, row_key  # noqa: F401 (re-exported: the store's key)
from harness.records.row_metrics import add_columns as add_metric_columns
from harness.records.row_metrics import into_details
from harness.records.row_metrics import problem as details_problem

if TYPE_CHECKING:  # pandas is imported on use: `python -m harness --help` does not need it
    import pandas as pd

COLUMNS: tuple[str, ...] = (
    "key", "task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol",
    "status", "rmse", "mae", "sse", "sae", "n_points", "macro_f1", "macro_auroc", "n_windows",
    "skipped_missing", "short_recordings", "details", "error", "seconds", "model_info", "code_version",
    "finished_at",
    # provenance: what the row consumed (docs/records.md); files written before them lack these columns
    "data_fingerprint", "context_samples", "horizon_samples", "context_seconds", "horizon_seconds",
    "sampling_rate", "windows_planned", "inference_seconds_per_window", "training_seconds",
)
PROVENANCE: tuple[str, ...] = COLUMNS[COLUMNS.index("data_fingerprint"):]
MEASURED: tuple[str, ...] = ("inference_seconds_per_window", "training_seconds")  # timed, not derivable afterwards
PROVENANCE_KEY = "provenance"  # the entry of ``details`` that holds them in a file whose header lacks them
# the header of files written before issue #17 renamed the context/horizon column: same columns, same order
LEGACY_COLUMNS: tuple[str, ...] = tuple("window" if c == "setting" else c for c in COLUMNS)
BEFORE_PROVENANCE: tuple[str, ...] = COLUMNS[:COLUMNS.index("data_fingerprint")]  # files written before them
# the headers a records file may have
HEADERS: tuple[tuple[str, ...], ...] = (COLUMNS, LEGACY_COLUMNS, BEFORE_PROVENANCE,
                                        tuple("window" if c == "setting" else c for c in BEFORE_PROVENANCE))
STATUSES = ("ok", "error", "unavailable")
TIMING = ("seconds", "finished_at", *MEASURED)  # what two computations of one cell may differ in; the rest agree
NUMERIC = ("rmse", "mae", "sse", "sae", "macro_f1", "macro_auroc", "seconds", "context_seconds", "horizon_seconds",
           "sampling_rate", "inference_seconds_per_window", "training_seconds")
INTEGER = ("n_points", "n_windows", "skipped_missing", "short_recordings", "seed", "context_samples",
           "horizon_samples", "windows_planned")


class RecordStoreError(RuntimeError):
    pass


FILE_MODE = 0o666  # every file the harness writes: the user's umask decides (records, per-window files alike)


def file_mode() -> int:
    """The mode a new file gets from :data:`FILE_MODE` and the umask (what ``open`` would give it): for
    files made with ``tempfile.mkstemp``, which creates them 0600, before they are renamed into place."""
    mask = os.umask(0)
    os.umask(mask)
    return FILE_MODE & ~mask
# what a finished row's ``finished_at`` looks like: a final line cut short inside it is not a whole row
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)")


@dataclass
class RecordStore:
    """The records file of one ``--out``. ``readonly``: a reader (tables, report) that never writes,
    creates or truncates anything, and so works on archived, read-only results."""

    path: Path
    readonly: bool = False
    _rows: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _offset: int = field(default=0, init=False, repr=False)  # bytes of the file already parsed
    _lines: int = field(default=0, init=False, repr=False)  # lines in those bytes
    _names: tuple[str, ...] = field(default=COLUMNS, init=False, repr=False)  # the file's columns, in its order
    # keys whose current row another writer appended while this store was open (two runs into one --out)
    _elsewhere: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not self.readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.refresh()

    # -- reading -----------------------------------------------------------
    def refresh(self) -> None:
        """Take in rows that another run appended since this store last read the file."""
        with self._locked() as fd:
            self._read_new(fd)

    def _read_new(self, fd: int) -> None:
        """Parse the file from ``_offset`` on (under the lock); a writer writes the header into an empty file."""
        size = os.fstat(fd).st_size
        if size < self._offset:  # replaced underneath us (e.g. by `harness repair`): read it all again
            self._rows, self._offset, self._lines, self._elsewhere = {}, 0, 0, set()
        appended = self._offset > 0  # rows past what this store read before: another writer's
        data = os.pread(fd, size - self._offset, self._offset) if size > self._offset else b""
        tail = b""
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            data, tail = data[:cut], data[cut:]
        if self._offset == 0 and not data:
            self._start(fd, tail)
            return
        if self._offset == 0:
            self._names = _header(data, self.path)
        for row in _parse(data, self.path, self._names, header=self._offset == 0, line_base=self._lines):
            self._rows[row["key"]] = _complete(row)  # later rows supersede earlier ones
            if appended:
                self._elsewhere.add(row["key"])
        self._offset += len(data)
        self._lines += data.count(b"\n")
        if tail:  # a final line without its newline
            row = _whole_row(tail, self._names)
            if row is not None:
                self._rows[row["key"]] = _complete(row)
                if appended:
                    self._elsewhere.add(row["key"])
                if not self.readonly:  # finish the line: the row is kept, and the next append starts a new one
                    _write_all(fd, b"\n", self.path)
                    self._offset, self._lines = self._offset + len(tail) + 1, self._lines + 1
            elif not self.readonly:  # a write cut short (a kill, a full disk): moved aside, never deleted
                _move_aside(fd, self._offset, tail, self.path)

    def _start(self, fd: int, tail: bytes) -> None:
        """A file without one whole line: empty (a writer writes the header), or a header without its
        newline (finished), or a header cut short (a writer moves it aside and writes the header)."""
        if tail:
            try:
                names = header_columns(next(csv.reader(io.StringIO(tail.decode("utf-8"))), None))
            except (UnicodeDecodeError, csv.Error):
                names = None
            if names is not None:
                self._names = names
                if not self.readonly:
                    _write_all(fd, b"\n", self.path)
                    self._offset, self._lines = len(tail) + 1, 1
                return
            if not any(_csv_line(h).encode().startswith(tail) for h in HEADERS):
                _header(tail, self.path)  # raises: not a records file
            if self.readonly:
                return
            _move_aside(fd, 0, tail, self.path)
        if not self.readonly:
            _write_all(fd, _csv_line(COLUMNS).encode(), self.path)
            self._offset, self._lines = os.fstat(fd).st_size, 1

    def get(self, key: str) -> dict[str, str] | None:
        return self._rows.get(key)

    def rows(self) -> dict[str, dict[str, str]]:
        """Key -> the latest row of that key (as read: every value a string)."""
        return dict(self._rows)

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

    def rows(self) -> dict[str, dict[str, str]]:
        """Current rows (the latest per key) as the file holds them: key -> column -> text."""
        return {key: dict(row) for key, row in self._rows.items()}

    def frame(self) -> pd.DataFrame:
        """Current rows (the latest per key) as a DataFrame with typed metric columns."""
        return rows_to_frame(list(self._rows.values()))

    # -- writing -----------------------------------------------------------
    def write(self, row: dict[str, object]) -> bool:
        """Append ``row`` (a later row of a key supersedes the earlier ones). Not appended (False) when another
        writer appended a row of its key while this store was open and that row is ``ok`` or equal to this one but
        for :data:`TIMING`: two runs into one ``--out`` that computed the same cell at once leave one row of it."""
        if self.readonly:
            raise RecordStoreError(f"{self.path}: opened read-only")
        row = into_details(row, COLUMNS)  # a task's own metrics: in details (harness.records.row_metrics)
        if row.get("status") not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {row.get('status')!r}")
        full = {c: format_value(row.get(c, "")) for c in COLUMNS}
        if not full["data_fingerprint"]:
            full["data_fingerprint"] = data_of(full["protocol"])
        if not full["key"]:
            full["key"] = row_key(**{f: row[f] for f in KEY_FIELDS})
        problem = row_problem(full)
        if problem:
            raise ValueError(f"not a valid record: {problem}")
        with self._locked() as fd:
            self._read_new(fd)  # rows of other runs first, so our offset stays at the end
            if self._done_elsewhere(full):
                return False
            line = _row_line(full, self._names).encode("utf-8")
            _write_all(fd, line, self.path)
            self._offset = os.fstat(fd).st_size
            self._lines += line.count(b"\n")
        self._rows[full["key"]] = full
        self._elsewhere.discard(full["key"])
        return True

    def _done_elsewhere(self, row: dict[str, str]) -> bool:
        """Whether another writer finished ``row``'s cell while this store was open (its row ok, or the same)."""
        held = self._rows.get(row["key"]) if row["key"] in self._elsewhere else None
        return held is not None and (held["status"] == "ok" or all(
            held.get(c, "") == row[c] for c in COLUMNS if c not in TIMING))

    def compact(self) -> int:
        """Rewrite the file with the latest row of each key only (each where its key first appeared), dropping the
        rows later ones superseded: what a committed results folder keeps after a rerun (results/regenerate.sh).
        Written beside the file and moved over it under the lock; readers see the replaced file and read it again.
        Returns the number of rows dropped."""
        if self.readonly:
            raise RecordStoreError(f"{self.path}: opened read-only")
        with self._locked() as fd:
            self._read_new(fd)
            dropped = self._lines - 1 - len(self._rows)
            if dropped <= 0:
                return 0
            self._rewrite(list(self._rows.values()))
        self._rows, self._offset, self._lines = {}, 0, 0
        self.refresh()
        return dropped

    def replace_rows(self, changes: dict[str, dict[str, str]]) -> int:
        """Rewrite the file with the latest row of each key, the rows of the keys in ``changes`` replaced by their
        new values (a new key among them: a re-stamp re-keys a row), each where its key first appeared. Only a
        re-stamp (``harness restamp``) changes finished rows: what identifies them, never their numbers. Returns the
        number of rows replaced."""
        if self.readonly:
            raise RecordStoreError(f"{self.path}: opened read-only")
        with self._locked() as fd:
            self._read_new(fd)
            rows = [{**row, **changes[key]} if key in changes else row for key, row in self._rows.items()]
            for row in rows:
                problem = row_problem(row)
                if problem:
                    raise ValueError(f"not a valid record after re-stamping row {row['key']}: {problem}")
            self._rewrite(rows)
        self._rows, self._offset, self._lines = {}, 0, 0
        self.refresh()
        return sum(1 for key in changes if key)

    def _rewrite(self, rows: list[dict[str, str]]) -> None:
        """Write ``rows`` beside the file and move them over it (under the lock the caller holds), under the
        current header: a whole rewrite is where a file written before the provenance columns gets them (every
        reader reads the replaced file again from its start)."""
        names = COLUMNS if set(self._names) != set(COLUMNS) else self._names
        text = _csv_line(names) + "".join(_row_line(row, names) for row in rows)
        tmp = self.path.with_name(f".{self.path.name}.rewrite")
        tmp.write_text(text, encoding="utf-8")
        os.chmod(tmp, file_mode())
        os.replace(tmp, self.path)

    @contextmanager
    def _locked(self) -> Iterator[int]:
        if self.readonly:
            fd = os.open(self.path, os.O_RDONLY)
        else:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, FILE_MODE)
            except OSError as exc:
                raise RecordStoreError(f"{self.path}: cannot open the records for writing "
                                       f"({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if self.readonly else fcntl.LOCK_EX)
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
            pass  # the partial line has no newline: the next writer moves it aside
        raise RecordStoreError(f"{path}: could not append a record ({exc.strerror or exc}); "
                               "every row written before it is kept") from None


def _move_aside(fd: int, offset: int, tail: bytes, path: Path) -> None:
    """An incomplete final line (a write cut short) goes to ``<stem>.rejected-<time>.csv`` before the
    file is cut back to its last whole row: nothing is lost, and the next row starts on a line of its own."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    aside = path.with_name(f"{path.stem}.rejected-{stamp}.csv")
    with open(aside, "ab") as fh:
        fh.write(tail + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.ftruncate(fd, offset)


def _header(data: bytes, path: Path) -> tuple[str, ...]:
    """The columns of a records file, by name in its own order (``window`` read as ``setting``)."""
    first = data.split(b"\n", 1)[0]
    try:
        names = next(csv.reader(io.StringIO(first.decode("utf-8"))), None)
    except (UnicodeDecodeError, csv.Error):
        names = None
    named = header_columns(names)
    if named is None:
        raise RecordStoreError(
            f"{path}: unexpected columns {names}; this file was written by another "
            "version of soter-bench (move it away or use another --out)"
        )
    return named


def header_columns(names: list[str] | None) -> tuple[str, ...] | None:
    """A header's column names as this store names them, or None when it is not a records header: the
    columns of :data:`COLUMNS` in any order (``window``, the name before issue #17, for ``setting``)."""
    if not names:
        return None
    named = tuple("setting" if n == "window" else n for n in names)
    if len(set(named)) != len(named) or set(named) not in (set(COLUMNS), set(BEFORE_PROVENANCE)):
        return None
    return named


def data_of(protocol: str) -> str:
    """The data fingerprint a row's ``protocol`` names (``...;data=217e7b50048d``; "" when it names none): the
    ``data_fingerprint`` column of every row written."""
    for part in str(protocol).split(";"):
        if part.startswith("data="):
            return part[len("data="):]
    return ""


def _complete(row: dict[str, str]) -> dict[str, str]:
    """A row read from a file whose header lacks the provenance columns, with them: from its ``details``
    (a row appended there by a run that knew them), else empty (a row that predates them)."""
    if "data_fingerprint" in row:
        return row
    details, found = _provenance_of(row.get("details", ""))
    return {**row, "details": details, **{c: str(found.get(c, "")) for c in PROVENANCE}}


def _provenance_of(details: str) -> tuple[str, dict[str, object]]:
    """(``details`` without the provenance a row kept there, that provenance) ({} when it holds none)."""
    if f'"{PROVENANCE_KEY}"' not in details:
        return details, {}
    try:
        value = json.loads(details)
    except ValueError:
        return details, {}
    if not isinstance(value, dict) or not isinstance(value.get(PROVENANCE_KEY), dict):
        return details, {}
    found = value.pop(PROVENANCE_KEY)
    return (json.dumps(value) if value else ""), found


def _row_line(row: dict[str, str], names: tuple[str, ...]) -> str:
    """A row as a CSV line of a file with columns ``names``; a header without the provenance columns keeps the
    row's provenance in its ``details`` (read back by :func:`_complete`)."""
    missing = {c: row[c] for c in PROVENANCE if c not in names and row.get(c, "") != ""}
    if missing:
        row = {**row, "details": _with_provenance(row.get("details", ""), missing)}
    return _csv_line([row.get(c, "") for c in names])


def _with_provenance(details: str, provenance: dict[str, str]) -> str:
    try:
        value = json.loads(details) if details else {}
    except ValueError:
        value = None
    if not isinstance(value, dict):  # details a task wrote as plain text: kept beside
        value = {"text": details}
    return json.dumps({**value, PROVENANCE_KEY: provenance})


def _parse(data: bytes, path: Path, names: tuple[str, ...], header: bool, line_base: int) -> Iterator[dict[str, str]]:
    """Rows of ``data`` (whole lines after ``line_base`` lines), validated; errors name file and line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_base + data[:exc.start].count(b"\n") + 1
        raise _damaged(path, line, "bytes that are not UTF-8 text") from None
    reader = csv.reader(io.StringIO(text))
    if header:
        next(reader, None)  # checked by _header
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _damaged(path, line_base + reader.line_num, f"unreadable CSV ({exc})") from None
        if len(values) != len(names):
            raise _damaged(path, line_base + reader.line_num, f"{len(values)} fields, expected {len(names)}")
        row = dict(zip(names, values))
        problem = row_problem(row)
        if problem:
            raise _damaged(path, line_base + reader.line_num, problem)
        yield row


def _whole_row(tail: bytes, names: tuple[str, ...]) -> dict[str, str] | None:
    """A final line without its newline, as a row when it is a whole valid one (else None: cut short)."""
    try:
        records = list(csv.reader(io.StringIO(tail.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return None
    if len(records) != 1 or len(records[0]) != len(names) or tail.count(b'"') % 2:
        return None
    row = dict(zip(names, records[0]))
    if row_problem(row) is not None or not _TIMESTAMP.fullmatch(row["finished_at"]):
        return None
    return row


FINITE_WHEN_OK = ("rmse", "mae", "sse", "sae", "macro_f1")  # an ok row's metrics: numbers, never NaN or inf


def row_problem(values: list[str] | dict[str, str]) -> str | None:
    """Why a parsed CSV record cannot be a row of this store (None: it can). A list is in the order of
    :data:`COLUMNS`; a dict names its columns. An ``ok`` row's metrics must be finite: a NaN or an
    infinity is no result (Macro-AUROC may be NaN: undefined when a class is absent, which the row notes);
    the same holds for a task's own metrics in ``details`` (``harness.records.row_metrics``)."""
    if not isinstance(values, dict):
        if len(values) != len(COLUMNS):
            return f"{len(values)} fields, expected {len(COLUMNS)}"
        values = dict(zip(COLUMNS, values))
    row = values
    if not row["key"]:
        return "an empty key"
    if row["status"] not in STATUSES:
        return f"status {row['status']!r} (expected one of {', '.join(STATUSES)})"
    for col in NUMERIC:
        if row.get(col):
            try:
                value = float(row[col])
            except ValueError:
                return f"{col} {row[col][:40]!r} is not a number"
            if row["status"] == "ok" and (math.isinf(value) or (math.isnan(value) and col in FINITE_WHEN_OK)):
                return f"an ok row with {col} {row[col]!r}: a metric that is not finite is no result"
    for col in INTEGER:
        if row.get(col) and not row[col].lstrip("-").isdigit():
            return f"{col} {row[col][:40]!r} is not an integer"
    return details_problem(row) or (_ok_problem(row) if row["status"] == "ok" else None)


def _ok_problem(row: dict[str, str]) -> str | None:
    """Why an ok row lacks a metric its task holds (``Task.ok_row_problem``); None for a task not registered in
    this process (a plugin not loaded: its columns cannot be named)."""
    from harness.registry.tasks import all_tasks

    task = all_tasks().get(row["task"])
    return task.ok_row_problem(row) if task is not None else None


def _damaged(path: Path, line: int, problem: str) -> RecordStoreError:
    return RecordStoreError(f"{path}, line {line}: {problem}. The file is damaged; `python -m harness repair --out "
                            f"{path.parent}` keeps every valid row and moves the rest aside")


def format_value(value: object) -> str:
    """A value as a records field: "" for None, floats exactly (``repr``)."""
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
    return add_metric_columns(frame, COLUMNS)


def read_records(path: Path) -> pd.DataFrame:
    """Rows of a records file for tables and analysis: the latest row of every cell and configuration,
    read without changing the file (archived, read-only results too).

    A cell (the key fields) may have rows under several keys: the same model run with other weights
    or options (``--weights``, ``--model-option``). Tables must not pool those: each configuration is
    a model of its own, named after what tells it apart (``harness.records.configurations``), with the
    registry's name in ``model_name``.

    Rows made with random weights (``model_info`` says ``random_weights``: ``--random-weights``, speed and
    shape only) are left out before that, so they never reach a table, the leaderboard or the paper
    comparison, nor make the trained rows of the same model a second configuration:
    :func:`random_weight_rows` lists them.

    Rows computed under another version of their task or another revision of their model than the current ones
    (``harness.registry.versions``) are left out too: tables show current results only, and the frame's
    ``attrs["older_versions"]`` says in one line what was left out (tables print it as a note).
    """
    from harness.records.configurations import label_configurations, older_versions_note, out_of_date

    frame = _all_rows(path)
    frame = frame[~_random(frame)]
    old = out_of_date(frame)
    out = label_configurations(frame[~old])
    out.attrs["older_versions"] = {task: older_versions_note(rows) for task, rows in frame[old].groupby("task")}
    return out


def random_weight_rows(path: Path) -> pd.DataFrame:
    """The rows :func:`read_records` leaves out because they were made with random weights (latest per cell
    and configuration)."""
    from harness.records.configurations import label_configurations

    frame = _all_rows(path)
    return label_configurations(frame[_random(frame)])


def _all_rows(path: Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise RecordStoreError(f"no records file at {path}; run `python -m harness run ...` first")
    try:
        store = RecordStore(path, readonly=True)
    except OSError as exc:
        raise RecordStoreError(f"{path}: cannot read the records ({exc.strerror or exc})") from None
    return store.frame()


def _random(frame: pd.DataFrame) -> pd.Series:
    from models.random_weights import is_random_info

    return frame["model_info"].map(is_random_info).astype(bool)


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
    rows in their original order. Rows are read by the header's column names (any order; the header is
    kept). A line that is not a row (bad bytes, wrong field count, a value that is not a number, a
    metric of an ok row that is not finite, an unbalanced quote) is rejected alone, so one bad line
    never costs others.
    """
    path = Path(path)
    if not path.is_file():
        raise RecordStoreError(f"no records file at {path}")
    try:
        return _repair(path)
    except OSError as exc:
        raise RecordStoreError(f"{exc.filename or path}: cannot repair the records here ({exc.strerror or exc}); "
                               "copy the folder somewhere writable and repair the copy") from None


def _repair(path: Path) -> RepairReport:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = os.pread(fd, os.fstat(fd).st_size, 0)
        header, names = _file_header(data)
        kept, rejected = _split_valid(data[len(header):] if names else data, names or COLUMNS)
        if not rejected and names and data.endswith(b"\n"):
            return RepairReport(path, len(kept), 0, None, None)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        backup = path.with_name(f"{path.name}.damaged-{stamp}")
        rejected_file = path.with_name(f"{path.stem}.rejected-{stamp}.csv")
        rejected_file.write_bytes(b"".join(rejected))
        fresh = path.with_name(f".{path.name}.repair-{stamp}")
        head = header if names else _csv_line(COLUMNS).encode()
        fresh.write_bytes((head if head.endswith(b"\n") else head + b"\n") + b"".join(kept))
        shutil.copyfile(path, backup)  # the damaged original stays, byte for byte
        os.replace(fresh, path)
        return RepairReport(path, len(kept), len(rejected), backup, rejected_file)
    finally:
        os.close(fd)


def _file_header(data: bytes) -> tuple[bytes, tuple[str, ...] | None]:
    """(the header line's bytes, its columns), or (b"", None) when the file starts with no records header."""
    end = data.find(b"\n")
    line = data if end < 0 else data[:end + 1]
    try:
        names = header_columns(next(csv.reader(io.StringIO(line.decode("utf-8"))), None))
    except (UnicodeDecodeError, csv.Error):
        names = None
    return (line, names) if names else (b"", None)


def _split_valid(data: bytes, names: tuple[str, ...] = COLUMNS,
                 max_record_lines: int = 64) -> tuple[list[bytes], list[bytes]]:
    """(valid row records, rejected chunks) of a records file's rows (no header), read by ``names``."""
    lines = data.splitlines(keepends=True)
    kept: list[bytes] = []
    rejected: list[bytes] = []
    i = 0
    while i < len(lines):
        # a record may span lines (a quoted field holding a newline): grow it while quotes are open
        j, chunk = i + 1, lines[i]
        while chunk.count(b'"') % 2 and j < len(lines) and j - i < max_record_lines:
            chunk += lines[j]
            j += 1
        record = _valid_record(chunk, names)
        if record is not None:
            kept.append(record)
            i = j
        else:
            rejected.append(lines[i] if lines[i].endswith(b"\n") else lines[i] + b"\n")
            i += 1
    return kept, rejected


def _valid_record(chunk: bytes, names: tuple[str, ...]) -> bytes | None:
    """The record with its newline when it is one valid row (a whole final row may lack the newline)."""
    if not chunk.endswith(b"\n"):
        return chunk + b"\n" if _whole_row(chunk, names) is not None else None
    if chunk.count(b'"') % 2:
        return None
    try:
        records = list(csv.reader(io.StringIO(chunk.decode("utf-8"))))
    except (UnicodeDecodeError, csv.Error):
        return None
    if len(records) != 1 or len(records[0]) != len(names) or row_problem(dict(zip(names, records[0]))) is not None:
        return None
    return chunk
