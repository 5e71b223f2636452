"""Sleep-EDF Expanded (PhysioNet ``sleep-edfx`` 1.0.0).

Layout: ``sleep-cassette/SC4ssNE0-PSG.edf`` and ``sleep-telemetry/ST7ssNJ0-PSG.edf`` (EDF, one
per night) beside ``*-Hypnogram.edf`` (EDF+ annotations, not read).  The subject is the first five
characters of the file name (``SC4ss``: study, subject).  Signals are grouped by sampling rate
(EEG Fpz-Cz, EEG Pz-Oz and EOG horizontal at 100 Hz; respiration, EMG and temperature at 1 Hz
in the cassette files); by default only the highest-rate group is kept (``all_rates=True`` adds
the others as their own datasets).  The event marker channel is dropped.  Read with ``pyedflib``
(extra ``corpus``), in chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks

SKIP = ("Event marker",)


def open_edf(path: Path):
    try:
        import pyedflib
    except ImportError as exc:
        raise CorpusError("reading EDF needs pyedflib: pip install 'soter-bench[corpus]'") from exc
    try:
        return pyedflib.EdfReader(str(path))
    except OSError as exc:
        raise CorpusError(f"{path}: unreadable EDF file ({exc})") from exc


def edf_groups(path: Path, skip: tuple[str, ...] = ()) -> dict[float, list[int]]:
    """Signal indices by sampling rate, highest rate first."""
    with open_edf(path) as f:
        labels = f.getSignalLabels()
        groups: dict[float, list[int]] = {}
        for i, label in enumerate(labels):
            if label.strip() in skip or "annotation" in label.lower():
                continue
            groups.setdefault(float(f.getSampleFrequency(i)), []).append(i)
    return dict(sorted(groups.items(), reverse=True))


def edf_recordings(path: Path, dataset: str, subject: str, source: str, all_rates: bool = False,
                   skip: tuple[str, ...] = (), chunk: int = 1 << 20) -> Iterator[SourceRecording]:
    groups = edf_groups(path, skip)
    for k, (fs, idx) in enumerate(groups.items()):
        if k and not all_rates:
            break
        with open_edf(path) as f:
            labels = tuple(f.getSignalLabels()[i].strip() for i in idx)
            n = min(int(f.getNSamples()[i]) for i in idx)

        def read_part(a: int, b: int, idx: list[int] = idx) -> np.ndarray:
            with open_edf(path) as f:
                return np.stack([f.readSignal(i, a, b - a) for i in idx])

        yield SourceRecording(f"{dataset}[{','.join(labels)}@{fs:g}Hz]", labels, subject, path.stem,
                              regular_chunks(read_part, n, fs, 0.0, chunk), source)


def read(root: Path, all_rates: bool = False, chunk: int = 1 << 20) -> Iterator[SourceRecording]:
    files = sorted(root.rglob("*-PSG.edf"))
    if not files:
        raise CorpusError(f"sleep-edf: no *-PSG.edf file under {root}")
    for path in files:
        yield from edf_recordings(path, "sleep-edf", path.name[:5], "Sleep-EDF Expanded 1.0.0 (PhysioNet, ODC-By)",
                                  all_rates, SKIP, chunk)
