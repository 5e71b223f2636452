"""IEEE PPG: IEEE Signal Processing Cup 2015 (heart rate during exercise), 125 Hz.

Not on PhysioNet: the user puts the competition files (or the Monash archive's ``IEEEPPG`` ``.ts``
files) under ``ROOT/ieee-ppg/`` (any sub-folders).  Layouts:

- ``.mat`` (default when present): each recording file holds ``sig``, ``[6, T]`` for the training
  set (``DATA_NN_TYPEMM.mat``: ECG, PPG1, PPG2, ACC x, y, z), ``[5, T]`` for the test set
  (``TEST_SNN_TMM.mat``: no ECG) and ``[6, T]`` for the organisers' extra training file
  (``Extra_TrainingData/DATA_S04_T01.mat``).  Truth files hold the heart rate ``BPM0`` per 8 s window
  and are not signals: ``DATA_NN_TYPEMM_BPMtrace.mat``, ``True_SNN_TMM.mat``, ``BPM_SNN_TMM.mat``
  (:func:`parse_name` knows every name; any other ``.mat`` name is an error, since its subject is unknown).

  Subject rule (docs/paper-datasets.md): the test set's Readme names files ``TEST_xxx_yyy``, "xxx is the
  subject number (S01..S08), yyy the exercise type (T01, T02)", so every ``SNN`` name (``TEST_``,
  ``True_``, ``DATA_``, ``BPM_``) is test subject ``testSNN``: ``DATA_S04_T01`` (extra) and
  ``TEST_S04_T02`` are one person and fall in one LOSO fold.  The training set numbers its 12 files
  ``DATA_NN_TYPEMM``, one per subject (TYPE is the treadmill speed schedule): subject ``trainNN``.  The
  two sets number their subjects separately and the organisers do not say whether they share people:
  we assume they do not (guess; the test set's subject 08, aged 58, is outside the training ages 18-35).
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.heartrate import ts_recordings
from protocols.datasets.paper import dataset_dir

RATE = 125.0
ALL_CHANNELS = ("ecg", "ppg1", "ppg2", "acc_x", "acc_y", "acc_z")
DEFAULT_CHANNELS = ALL_CHANNELS[1:]


@dataclass(frozen=True)
class FileName:
    """What a competition file name says: recording (``sig``) or truth (``BPM0``), LOSO subject, session."""

    kind: str  # "signal" or "truth"
    subject: str
    session: str  # the training file's TYPEMM (speed schedule) or the test file's TMM (exercise type)


_NAMES = (  # (pattern, kind, set): every file name the organisers published
    (re.compile(r"DATA_(\d+)_(TYPE\d+)", re.IGNORECASE), "signal", "train"),
    (re.compile(r"DATA_(\d+)_(TYPE\d+)_BPMtrace", re.IGNORECASE), "truth", "train"),
    (re.compile(r"(?:TEST|DATA)_S(\d+)_(T\d+)", re.IGNORECASE), "signal", "test"),
    (re.compile(r"(?:True|BPM)_S(\d+)_(T\d+)", re.IGNORECASE), "truth", "test"),
)


def parse_name(path: Path) -> FileName:
    """The kind, subject and session of a competition ``.mat`` file, from its name (module docstring)."""
    for pattern, kind, which in _NAMES:
        if m := pattern.fullmatch(path.stem):
            number = int(m.group(1))
            subject = f"train{number:02d}" if which == "train" else f"testS{number:02d}"
            return FileName(kind, subject, m.group(2).upper())
    raise DatasetError(f"{path}: not an IEEE SPC 2015 file name (DATA_NN_TYPEMM, TEST_SNN_TMM, DATA_SNN_TMM, "
                       "or their truth files *_BPMtrace, True_SNN_TMM, BPM_SNN_TMM), so its subject is unknown")


def load(root: Path, channels: tuple[str, ...] = DEFAULT_CHANNELS, source: str = "auto",
         ts_subjects: str = "file") -> Dataset:
    folder = dataset_dir(root, "ieee-ppg")
    channels = tuple(channels)
    bad = [c for c in channels if c not in ALL_CHANNELS] or ([] if channels else ["(none)"])
    if bad:
        raise DatasetError(f"ieee-ppg: unknown channel(s) {bad}; channels: {list(ALL_CHANNELS)}")
    parsed = {p: parse_name(p) for p in sorted(folder.rglob("*.mat"))} if source != "ts" else {}
    mats = [p for p, n in parsed.items() if n.kind == "signal"]
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
        recs.append(Recording(parsed[path].subject, path.stem, values, np.arange(values.shape[1]) / RATE))
    truth = {(n.subject, n.session): p for p, n in parsed.items() if n.kind == "truth"}
    return Dataset("ieee-ppg", channels, tuple(recs), RATE, None, "IEEE SPC 2015 PPG: wrist PPG and ACC at 125 Hz",
                   {"source": "mat", "files": [str(p.relative_to(folder)) for p in mats],
                    "truth_files": {p.stem: str(truth[key].relative_to(folder)) for p in mats
                                    if (key := (parsed[p].subject, parsed[p].session)) in truth}})


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
