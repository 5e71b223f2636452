"""ScientISST MOVE (PhysioNet ``scientisst-move-biosignals`` 1.0.1): 17 subjects, everyday activities.

Layout: ``ROOT/scientisst-move/csv/<CODE>.csv`` (``csv/`` may be absent), one file per subject
(``<CODE>`` = four-character subject code, the LOSO subject).  Each file is the whole session on one
500 Hz grid: the first (unnamed) column is a date-time index (``2000-01-01 00:00:00.000``, 2 ms steps),
then one column per sensor named ``modality:place``, in this file order (the dataset authors' notebook,
``usage/csv.ipynb`` of scientisst/ScientISST-MOVE): ``ecg:dry``, ``ecg:gel``, ``eda:dry``, ``eda:gel``,
``emg:Left Bicep``, ``temp:temp``, ``ppg:Left index finger``, ``ppg:Left Wrist``, ``acc_e4:z``,
``acc_e4:x``, ``acc_e4:y`` (z first), ``acc_chest:x``, ``acc_chest:y``, ``acc_chest:z``.  Columns are
selected by name, never by position.  Units as published, not converted: ECG and EMG mV, EDA uS,
TEMP degC, ACC g (the authors' "respective modality units"); PPG has no physical unit and its values
are raw sensor counts (about 1,800-2,100 at the finger in the authors' example).  The protocol scales
every channel per fold, so units do not reach the metrics.  Empty cells (NaN) are interruptions, or a
sensor that has not started yet, kept as missing samples.  The last column ``activities`` holds
comma-terminated activity names (``lift,``), empty when none; it is read as text (pandas would
otherwise warn of mixed types there).

Channels (the paper's 5, named by us since the paper does not list them; guess): ``ecg:gel``,
``eda:gel``, ``ppg:Left index finger``, ``temp:temp``, ``emg:Left Bicep`` (gel electrodes and the
500 Hz finger PPG over the dry and wrist variants).  ``channels=`` takes any column names.

Labels (the paper's 7 classes; mapping is our guess, ``activity_map=`` overrides it): baseline,
lift, greetings, gesticulate, jumps, walk (``walk_before`` and ``walk_after``), run.  A sample whose
activity names map to no class (other names, none, or classes that disagree) is unlabelled (-1);
the names seen but not mapped are counted in ``metadata["unmapped_activities"]``.
Timestamps are seconds from the file's first row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.paper import dataset_dir

RATE = 500.0
DEFAULT_CHANNELS = ("ecg:gel", "eda:gel", "ppg:Left index finger", "temp:temp", "emg:Left Bicep")
LABELS = ("baseline", "lift", "greetings", "gesticulate", "jumps", "walk", "run")
ACTIVITY_MAP = {"baseline": "baseline", "lift": "lift", "greetings": "greetings", "gesticulate": "gesticulate",
                "jumps": "jumps", "walk_before": "walk", "walk_after": "walk", "run": "run"}


def load(root: Path, channels: tuple[str, ...] = DEFAULT_CHANNELS, subjects: tuple[str, ...] | None = None,
         activity_map: Mapping[str, str] | None = None) -> Dataset:
    import pandas as pd

    folder = dataset_dir(root, "scientisst-move")
    csv_dir = folder / "csv" if (folder / "csv").is_dir() else folder
    files = {p.stem: p for p in sorted(csv_dir.glob("*.csv"))}
    if subjects is not None:
        missing = [s for s in subjects if s not in files]
        if missing:
            raise DatasetError(f"scientisst-move: no file for subject(s) {missing} in {csv_dir} "
                               f"(found: {sorted(files)})")
        files = {s: files[s] for s in subjects}
    if not files:
        raise DatasetError(f"scientisst-move: no <CODE>.csv file in {csv_dir}")
    channels = tuple(channels)
    if not channels:
        raise DatasetError("scientisst-move: no channel selected")
    mapping = dict(ACTIVITY_MAP if activity_map is None else activity_map)
    labels = tuple(dict.fromkeys(mapping.values())) if activity_map is not None else LABELS
    recs, unmapped = [], Counter()
    for code, path in files.items():
        try:
            header = pd.read_csv(path, nrows=0).columns.tolist()
        except Exception as exc:  # EmptyDataError, ParserError, UnicodeDecodeError
            raise DatasetError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from exc
        missing = [c for c in (*channels, "activities") if c not in header]
        if missing:
            raise DatasetError(f"{path}: no column {missing}; columns: {header[1:]}")
        try:
            frame = pd.read_csv(path, usecols=[header[0], *channels, "activities"], dtype={"activities": str},
                                low_memory=False)
        except Exception as exc:
            raise DatasetError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from exc
        if frame.empty:
            raise DatasetError(f"{path}: no data rows")
        times = pd.to_datetime(frame[header[0]], errors="coerce")
        if times.isna().any():
            row = int(np.argmax(times.isna().to_numpy()))
            raise DatasetError(f"{path}: line {row + 2}: time {frame[header[0]].iloc[row]!r} is not a date-time")
        t = (times - times.iloc[0]).dt.total_seconds().to_numpy()
        values = np.empty((len(channels), len(frame)))
        for i, c in enumerate(channels):
            col = pd.to_numeric(frame[c], errors="coerce")
            bad = (col.isna() & frame[c].notna()).to_numpy()
            if bad.any():
                raise DatasetError(f"{path}: column {c!r} line {int(np.argmax(bad)) + 2} is not a number")
            values[i] = col.to_numpy(np.float64)
        codes = _label_codes(frame["activities"], mapping, labels, unmapped)
        recs.append(Recording(code, code, values, t, codes))
    return Dataset("scientisst-move", channels, tuple(recs), RATE, labels,
                   "ScientISST MOVE: chest/arm/wrist wearables during everyday activities, 500 Hz with gaps",
                   {"unmapped_activities": dict(unmapped), "activity_map": mapping})


def _label_codes(activities, mapping: dict[str, str], labels: tuple[str, ...], unmapped: Counter) -> np.ndarray:
    """One code per row: the class all of its mapped activity names agree on, else -1."""
    index = {name: i for i, name in enumerate(labels)}
    codes = np.full(len(activities), -1, dtype=np.int64)
    values = activities.to_numpy()
    for text in set(activities.dropna().unique()):
        names = [n.strip() for n in str(text).split(",") if n.strip()]
        classes = {mapping[n] for n in names if n in mapping}
        for n in names:
            if n not in mapping:
                unmapped[n] += int((values == text).sum())
        if len(classes) == 1:
            codes[values == text] = index[classes.pop()]
    return codes
