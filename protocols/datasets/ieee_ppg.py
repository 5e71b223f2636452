"""IEEE PPG: IEEE Signal Processing Cup 2015 (heart rate during exercise), 125 Hz.

Not on PhysioNet: the user puts the competition files (or the Monash archive's ``IEEEPPG`` ``.ts``
files) under ``ROOT/ieee-ppg/`` (any sub-folders).  Layouts:

- ``.mat`` (default when present): each recording file holds ``sig``, ``[6, T]`` for the training
  set (``DATA_NN_TYPEMM.mat``: ECG, PPG1, PPG2, ACC x, y, z) and ``[5, T]`` for the test set
  (``TEST_SNN_TMM.mat``: no ECG).  ``*_BPMtrace.mat`` / ``True_*.mat`` hold the heart-rate truth
  ``BPM0`` and are not signals.  Subject ids: ``trainNN`` and ``testSNN`` (one test subject has two
  files); whether training and test subjects overlap is not published, we assume they do not (guess).
- ``.ts`` (``IEEEPPG_TRAIN.ts`` / ``IEEEPPG_TEST.ts``, 5 dimensions PPG1, PPG2, ACC x, y, z,
  8 s windows): each window is one recording, one pseudo-subject per file (``ts_subjects="series"``
  for one per window); see protocols.datasets.heartrate.

Channels: the paper's 5 by default (``ppg1, ppg2, acc_x, acc_y, acc_z``); ``ecg`` can be added for
``.mat`` training files only (asking for it with test files is an error).  The paper says it has
3,096 sequences (the ``.ts`` windows); whole recordings are kept here and windows are cut by the
protocol.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.heartrate import ts_recordings
from protocols.datasets.paper import dataset_dir

RATE = 125.0
ALL_CHANNELS = ("ecg", "ppg1", "ppg2", "acc_x", "acc_y", "acc_z")
DEFAULT_CHANNELS = ALL_CHANNELS[1:]
_TRUTH = re.compile(r"(BPMtrace|^True_)", re.IGNORECASE)


def subject_of(stem: str) -> str:
    if m := re.match(r"DATA_(\d+)_TYPE\d+$", stem, re.IGNORECASE):
        return f"train{int(m.group(1)):02d}"
    if m := re.match(r"TEST_S(\d+)_T\d+$", stem, re.IGNORECASE):
        return f"testS{int(m.group(1)):02d}"
    return stem


def load(root: Path, channels: tuple[str, ...] = DEFAULT_CHANNELS, source: str = "auto",
         ts_subjects: str = "file") -> Dataset:
    folder = dataset_dir(root, "ieee-ppg")
    channels = tuple(channels)
    bad = [c for c in channels if c not in ALL_CHANNELS] or ([] if channels else ["(none)"])
    if bad:
        raise DatasetError(f"ieee-ppg: unknown channel(s) {bad}; channels: {list(ALL_CHANNELS)}")
    mats = sorted(p for p in folder.rglob("*.mat") if not _TRUTH.search(p.stem))
    ts_files = sorted(folder.rglob("*.ts"))
    if source == "auto":
        source = "mat" if mats or not ts_files else "ts"
    if source == "ts":
        if "ecg" in channels:
            raise DatasetError("ieee-ppg: the .ts files have no ECG dimension")
        if not ts_files:
            raise DatasetError(f"ieee-ppg: no .ts file under {folder}")
        dims = tuple(ALL_CHANNELS.index(c) - 1 for c in channels)
        recs, targets = ts_recordings(ts_files, dims, ts_subjects, RATE)
        return Dataset("ieee-ppg", channels, tuple(recs), RATE, None, "IEEE SPC 2015 PPG (Monash IEEEPPG .ts)",
                       {"source": "ts", "targets": targets, "ts_subjects": ts_subjects})
    if source != "mat":
        raise DatasetError(f"ieee-ppg: source must be 'auto', 'mat' or 'ts', got {source!r}")
    if not mats:
        raise DatasetError(f"ieee-ppg: no recording .mat file under {folder} "
                           "(`python -m harness data download ieee-ppg` says where to get them)")
    recs = []
    for path in mats:
        sig = read_sig(path)
        names = ALL_CHANNELS if sig.shape[0] == 6 else DEFAULT_CHANNELS
        missing = [c for c in channels if c not in names]
        if missing:
            raise DatasetError(f"{path}: has no channel {missing} (a test-set file: no ECG)")
        values = sig[[names.index(c) for c in channels]]
        recs.append(Recording(subject_of(path.stem), path.stem, values, np.arange(values.shape[1]) / RATE))
    return Dataset("ieee-ppg", channels, tuple(recs), RATE, None, "IEEE SPC 2015 PPG: wrist PPG and ACC at 125 Hz",
                   {"source": "mat", "files": [str(p.relative_to(folder)) for p in mats]})


def read_sig(path: Path) -> np.ndarray:
    """The ``sig`` matrix of one competition file, ``[C, T]`` float64 with C in (5, 6)."""
    from scipy.io import loadmat

    try:
        content = loadmat(path)
    except Exception as exc:  # scipy raises ValueError, TypeError, OSError... for truncated files
        raise DatasetError(f"{path}: unreadable .mat file ({type(exc).__name__}: {exc})") from exc
    if "sig" not in content:
        variables = sorted(k for k in content if not k.startswith("__"))
        raise DatasetError(f"{path}: no variable 'sig' (variables: {variables})")
    sig = np.asarray(content["sig"], dtype=np.float64)
    if sig.ndim != 2 or sig.shape[0] not in (5, 6):
        raise DatasetError(f"{path}: 'sig' must be [5 or 6, T] (test or training file), got {sig.shape}")
    return sig
