"""WDD: Wearable Device Dataset from Induced Stress and Structured Exercise Sessions (PhysioNet
``wearable-device-dataset`` 1.0.1, ODC-By), recorded with the Empatica E4.

Layout: ``ROOT/wdd/[Wearable_Dataset/]{STRESS,AEROBIC,ANAEROBIC}/<SID>/{ACC,BVP,EDA,HR,TEMP}.csv``
(``IBI.csv`` and ``tags.csv`` are not read).  Empatica CSV: line 1 is the start time (UNIX seconds,
UTC; repeated per column for ACC), line 2 the sampling rate in Hz, then one sample per line (ACC:
``x, y, z`` in 1/64 g; BVP; EDA in uS; TEMP in degC; HR in bpm, which starts 10 s after the rest).

Channels (the paper's 7): ``acc_x, acc_y, acc_z`` (32 Hz), ``bvp`` (64 Hz), ``eda``, ``temp``
(4 Hz), ``hr`` (1 Hz), values as in the files.  Resampling (the paper is silent; our choice): every
channel goes onto one grid at ``rate`` Hz (default 64, the highest native rate, so no channel loses
bandwidth) spanning the interval all selected channels cover, ``t = 0`` at its start (the absolute
start is ``metadata["start_unix"][recording]``).  A channel slower than ``rate`` is linearly
interpolated (``numpy.interp``: no overshoot on EDA/TEMP steps); a faster one (only when ``rate`` is
lowered) is first low-pass filtered and decimated with ``scipy.signal.resample_poly`` (polyphase FIR,
anti-aliased), then interpolated onto the grid.

Subjects: ``<SID>``; a SID names the same person in the three session folders (guess from the
dataset's documentation; ``same_person_across_sessions=False`` makes every session its own subject).
Labels (the paper's 3 classes; guess): the session type, ``stress``, ``aerobic``, ``anaerobic``, for
every sample of the session.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.paper import dataset_dir, find_dirs

SESSIONS = ("STRESS", "AEROBIC", "ANAEROBIC")
LABELS = ("stress", "aerobic", "anaerobic")
CHANNEL_FILES = {"acc_x": ("ACC", 0), "acc_y": ("ACC", 1), "acc_z": ("ACC", 2), "bvp": ("BVP", 0),
                 "eda": ("EDA", 0), "temp": ("TEMP", 0), "hr": ("HR", 0)}
DEFAULT_CHANNELS = tuple(CHANNEL_FILES)
RATE = 64.0


def read_empatica(path: Path, columns: int) -> tuple[float, float, np.ndarray]:
    """(start UNIX time, rate Hz, samples ``[T, columns]``) of one Empatica E4 CSV."""
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        with open(path) as fh:
            lines = [fh.readline(), fh.readline()]
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: unreadable ({exc})") from exc
    try:
        start = float(lines[0].split(",")[0])
        rate = float(lines[1].split(",")[0])
    except ValueError as exc:
        raise DatasetError(f"{path}: lines 1-2 must be the start time and the sampling rate ({exc})") from exc
    if not rate > 0:
        raise DatasetError(f"{path}: sampling rate {rate} on line 2 is not positive")
    import pandas as pd

    try:
        frame = pd.read_csv(path, skiprows=2, header=None, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    except Exception as exc:  # ParserError: a line with more values than the others
        raise DatasetError(f"{path}: malformed Empatica CSV ({type(exc).__name__}: {exc})") from exc
    if frame.shape[0] == 0:
        raise DatasetError(f"{path}: truncated Empatica CSV (no samples after the two header lines)")
    if frame.shape[1] != columns:
        raise DatasetError(f"{path}: {frame.shape[1]} values per line, expected {columns}")
    numeric = frame.apply(pd.to_numeric, errors="coerce")
    bad = numeric.isna().any(axis=1).to_numpy()
    if bad.any():
        raise DatasetError(f"{path}: line {int(np.argmax(bad)) + 3} is not {columns} number(s)")
    data = numeric.to_numpy(np.float64)
    return start, rate, data


def to_grid(x: np.ndarray, start: float, rate: float, grid: np.ndarray, target: float) -> np.ndarray:
    """Samples of ``x`` (``start`` + i/``rate``) at the absolute times ``grid`` (see module docstring)."""
    if rate > target:
        ratio = Fraction(target / rate).limit_denominator(1000)
        from scipy.signal import resample_poly

        x = resample_poly(x, ratio.numerator, ratio.denominator)
        rate = rate * ratio.numerator / ratio.denominator
    return np.interp(grid, start + np.arange(x.size) / rate, x)


def load(root: Path, channels: tuple[str, ...] = DEFAULT_CHANNELS, rate: float = RATE,
         sessions: tuple[str, ...] = SESSIONS, same_person_across_sessions: bool = True) -> Dataset:
    folder = dataset_dir(root, "wdd")
    channels = tuple(channels)
    bad = [c for c in channels if c not in CHANNEL_FILES] or ([] if channels else ["(none)"])
    if bad:
        raise DatasetError(f"wdd: unknown channel(s) {bad}; channels: {list(CHANNEL_FILES)}")
    bad = [s for s in sessions if s not in SESSIONS]
    if bad or not sessions:
        raise DatasetError(f"wdd: unknown session(s) {bad or '(none)'}; sessions: {list(SESSIONS)}")
    if not rate > 0:
        raise DatasetError(f"wdd: rate must be positive, got {rate}")
    bases = find_dirs(folder, lambda d: any((d / s).is_dir() for s in SESSIONS))
    if not bases:
        raise DatasetError(f"wdd: no STRESS, AEROBIC or ANAEROBIC folder under {folder}")
    base = bases[0]
    recs, starts = [], {}
    for session in sessions:
        session_dir = base / session
        if not session_dir.is_dir():
            raise DatasetError(f"wdd: session folder {session_dir} is missing")
        for sid_dir in sorted(d for d in session_dir.iterdir() if d.is_dir()):
            name = f"{session.lower()}-{sid_dir.name}"
            values, t, start = _session(sid_dir, channels, float(rate))
            label = np.full(t.size, SESSIONS.index(session), dtype=np.int64)
            subject = sid_dir.name if same_person_across_sessions else name
            recs.append(Recording(subject, name, values, t, label))
            starts[name] = start
    if not recs:
        raise DatasetError(f"wdd: no subject folder in {[str(base / s) for s in sessions]}")
    return Dataset("wdd", channels, tuple(recs), float(rate), LABELS,
                   f"WDD (Empatica E4): stress and exercise sessions, resampled to {rate:g} Hz",
                   {"start_unix": starts, "resampling": "linear interpolation up, resample_poly + interpolation down"})


def _session(sid_dir: Path, channels: tuple[str, ...], rate: float) -> tuple[np.ndarray, np.ndarray, float]:
    files = {}
    for c in channels:
        stem, _ = CHANNEL_FILES[c]
        if stem not in files:
            files[stem] = read_empatica(sid_dir / f"{stem}.csv", 3 if stem == "ACC" else 1)
    for stem, (_, _, data) in files.items():
        if data.shape[0] < 2:
            raise DatasetError(f"{sid_dir / stem}.csv: fewer than 2 samples")
    t0 = max(s for s, _, _ in files.values())
    t1 = min(s + (d.shape[0] - 1) / r for s, r, d in files.values())
    if t1 <= t0:
        raise DatasetError(f"{sid_dir}: the files {sorted(files)} do not overlap in time")
    grid = t0 + np.arange(int(np.floor((t1 - t0) * rate + 1e-9)) + 1) / rate
    values = np.stack([to_grid(files[CHANNEL_FILES[c][0]][2][:, CHANNEL_FILES[c][1]], files[CHANNEL_FILES[c][0]][0],
                               files[CHANNEL_FILES[c][0]][1], grid, rate) for c in channels])
    return values, grid - t0, t0
