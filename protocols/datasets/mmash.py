"""MMASH (PhysioNet ``mmash`` 1.0.0): 24 h of wrist actigraphy and heart rate, 22 participants.

Layout: ``ROOT/mmash/.../user_N/`` (the PhysioNet zip unpacks into ``MMASH/DataPaper/``; any depth up
to three folders is searched).  Per user (the LOSO subject, ``user_N``):

- ``Actigraph.csv``: unnamed index column, ``Axis1, Axis2, Axis3, Steps, HR, Inclinometer Off,
  Inclinometer Standing, Inclinometer Sitting, Inclinometer Lying, Vector Magnitude, day, time``;
  one row per second, ``day`` 1 or 2 and ``time`` ``HH:MM:SS``.  Rows are placed on a regular 1 Hz
  grid from the first to the last second (seconds since 00:00 of day 1, re-based to 0); seconds with
  no row are missing (NaN); for a second given twice the first row is kept and the others counted
  in ``metadata["duplicate_seconds"]``.
- ``Activity.csv``: unnamed index, ``Activity, Start, End, Day``: intervals ``HH:MM`` on ``Day``
  (an ``End`` before ``Start`` crosses midnight) with codes 1-12.

Channels (the paper's 6; our guess): ``Axis1, Axis2, Axis3, Steps, HR, Vector Magnitude`` (the
Actigraph's numeric channels without the inclinometer flags); ``channels=`` takes any column.

Labels (the paper's 6 classes; our guess): codes 1-6 = sleeping, laying down, sitting, light
movement, medium movement, heavy movement.  Codes 7-12 (eating, small / large screen usage,
caffeinated drink, smoking, alcohol) describe concurrent behaviour, not a movement level, so they
label nothing; where class intervals overlap the later row wins (guess).  ``label_map=`` (code ->
class name) restores another reading.  Activity rows with an empty or malformed field are skipped
and counted in ``metadata["skipped_activity_rows"]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.paper import dataset_dir, find_dirs

RATE = 1.0
DEFAULT_CHANNELS = ("Axis1", "Axis2", "Axis3", "Steps", "HR", "Vector Magnitude")
LABEL_MAP = {1: "sleeping", 2: "laying down", 3: "sitting", 4: "light movement", 5: "medium movement",
             6: "heavy movement"}
_USER = re.compile(r"^user_(\d+)$")


def load(root: Path, channels: tuple[str, ...] = DEFAULT_CHANNELS, users: tuple[str, ...] | None = None,
         label_map: Mapping[int, str] | None = None) -> Dataset:
    folder = dataset_dir(root, "mmash")
    found = {d.name: d for d in find_dirs(folder, lambda d: bool(_USER.match(d.name)))}
    if users is not None:
        missing = [u for u in users if u not in found]
        if missing:
            raise DatasetError(f"mmash: no folder for user(s) {missing} under {folder} (found: {_sorted(found)})")
        found = {u: found[u] for u in users}
    if not found:
        raise DatasetError(f"mmash: no user_N folder under {folder}")
    channels = tuple(channels)
    if not channels:
        raise DatasetError("mmash: no channel selected")
    mapping = {int(k): v for k, v in (LABEL_MAP if label_map is None else label_map).items()}
    labels = tuple(dict.fromkeys(mapping[k] for k in sorted(mapping)))
    recs, duplicates, skipped = [], {}, {}
    for user in _sorted(found):
        values, t, dup = _actigraph(found[user] / "Actigraph.csv", channels)
        codes, skip = _activity(found[user] / "Activity.csv", t, mapping, labels)
        duplicates[user], skipped[user] = dup, skip
        recs.append(Recording(user, user, values, t - t[0], codes))
    return Dataset("mmash", channels, tuple(recs), RATE, labels,
                   "MMASH: 24 h wrist actigraphy and heart rate at 1 Hz",
                   {"duplicate_seconds": duplicates, "skipped_activity_rows": skipped, "label_map": mapping})


def _sorted(users) -> list[str]:
    return sorted(users, key=lambda u: int(_USER.match(u).group(1)))


def _read(path: Path):
    import pandas as pd

    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        return pd.read_csv(path)
    except Exception as exc:  # EmptyDataError, ParserError, UnicodeDecodeError
        raise DatasetError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from exc


def _clock(text: str, path: Path, line: int) -> int:
    """Seconds since midnight of ``HH:MM`` or ``HH:MM:SS``."""
    parts = str(text).strip().split(":")
    if len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise DatasetError(f"{path}: line {line}: time {text!r} is not HH:MM[:SS]")
    h, m, s = (int(p) for p in (*parts, "0")[:3])
    return h * 3600 + m * 60 + s


def _actigraph(path: Path, channels: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, int]:
    import pandas as pd

    frame = _read(path)
    missing = [c for c in (*channels, "day", "time") if c not in frame.columns]
    if missing:
        raise DatasetError(f"{path}: no column {missing}; columns: {list(frame.columns[1:])}")
    if frame.empty:
        raise DatasetError(f"{path}: no data rows")
    day = pd.to_numeric(frame["day"], errors="coerce")
    if day.isna().any():
        raise DatasetError(f"{path}: line {int(np.argmax(day.isna().to_numpy())) + 2}: day is not a number")
    secs = np.array([_clock(v, path, i + 2) for i, v in enumerate(frame["time"])], dtype=np.int64)
    t = (day.to_numpy(np.int64) - 1) * 86400 + secs
    vals = np.empty((len(channels), len(frame)))
    for i, c in enumerate(channels):
        col = pd.to_numeric(frame[c], errors="coerce")
        bad = (col.isna() & frame[c].notna()).to_numpy()
        if bad.any():
            raise DatasetError(f"{path}: column {c!r} line {int(np.argmax(bad)) + 2} is not a number")
        vals[i] = col.to_numpy(np.float64)
    order = np.argsort(t, kind="stable")
    t, vals = t[order], vals[:, order]
    first = np.r_[True, np.diff(t) > 0]  # the first row of each second
    grid = np.arange(t[0], t[-1] + 1)
    values = np.full((len(channels), grid.size), np.nan)
    values[:, t[first] - t[0]] = vals[:, first]
    return values, grid.astype(np.float64), int((~first).sum())


def _activity(path: Path, t: np.ndarray, mapping: dict[int, str], labels: tuple[str, ...]) -> tuple[np.ndarray, int]:
    frame = _read(path)
    missing = [c for c in ("Activity", "Start", "End", "Day") if c not in frame.columns]
    if missing:
        raise DatasetError(f"{path}: no column {missing}; columns: {list(frame.columns[1:])}")
    codes = np.full(t.size, -1, dtype=np.int64)
    skipped = 0
    for i, row in enumerate(frame.itertuples(index=False)):
        try:
            code, day = int(row.Activity), int(row.Day)
            start, end = _clock(row.Start, path, i + 2), _clock(row.End, path, i + 2)
        except (ValueError, TypeError, DatasetError):
            skipped += 1
            continue
        if code not in mapping:
            continue
        end += 86400 if end < start else 0  # crosses midnight
        start, end = start + (day - 1) * 86400, end + (day - 1) * 86400
        codes[(t >= start) & (t < end)] = labels.index(mapping[code])
    return codes, skipped
