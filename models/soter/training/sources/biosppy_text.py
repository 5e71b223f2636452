"""BioSPPy's example signals (the ``examples/`` folder of the PIA-Group/BioSPPy repository,
BSD-3-Clause): one text file per clip in BioSPPy's "Simple Text Format".

Layout of a file: header lines starting with ``#`` (``# Simple Text Format``, ``# Sampling Rate
(Hz):= 1000.00``, optionally ``# Resolution:=``, ``# Date:=``, ``# Units:=``, ``# Data Type:=`` and
``# Labels:= ECG`` or tab-separated labels for several columns), then one row per sample with one
column per label. Each file is one recording of its own subject (the clips do not say whose they
are); the dataset key is the labels and the rate, so clips of one signal type and rate share a
dataset. Values are kept as stored (ADC codes or physical units): the corpus's per-dataset MinMax
makes the unit irrelevant.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks

SOURCE = "BioSPPy example signals (PIA-Group/BioSPPy, BSD-3-Clause)"
RATE_KEY = "sampling rate (hz)"


def read_text(path: Path) -> tuple[tuple[str, ...], float, np.ndarray]:
    """(channel labels, sampling rate in Hz, values [C, N]) of one BioSPPy text file."""
    header: dict[str, str] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
        if not first.startswith("# Simple Text Format"):
            raise CorpusError(f"{path}: not a BioSPPy text file (first line {first.strip()[:40]!r})")
        pos = f.tell()
        for line in iter(f.readline, ""):
            if not line.startswith("#"):
                break
            key, sep, value = line[1:].partition(":=")
            if sep:
                header[key.strip().lower()] = value.strip()
            pos = f.tell()
        f.seek(pos)
        try:
            data = np.loadtxt(f, ndmin=2, dtype=np.float64)
        except ValueError as exc:
            raise CorpusError(f"{path}: non-numeric data ({exc})") from exc
    if RATE_KEY not in header:
        raise CorpusError(f"{path}: no '# Sampling Rate (Hz):=' header line")
    try:
        rate = float(header[RATE_KEY])
    except ValueError as exc:
        raise CorpusError(f"{path}: sampling rate {header[RATE_KEY]!r} is not a number") from exc
    if not rate > 0:
        raise CorpusError(f"{path}: sampling rate must be positive, got {rate}")
    if data.size == 0:
        raise CorpusError(f"{path}: no samples")
    labels = tuple(header.get("labels", "").split("\t")) if header.get("labels") else ()
    if not labels or len(labels) != data.shape[1]:
        labels = tuple(f"{path.stem}{i}" for i in range(data.shape[1])) if data.shape[1] > 1 else (path.stem,)
    return tuple(label.strip() for label in labels), rate, data.T


def read(root: Path, exclude: tuple[str, ...] = ()) -> Iterator[SourceRecording]:
    files = [p for p in sorted(Path(root).glob("*.txt")) if p.stem not in exclude]
    if not files:
        raise CorpusError(f"biosppy: no *.txt signal files under {root}")
    for path in files:
        labels, rate, values = read_text(path)
        yield SourceRecording(f"biosppy[{','.join(labels)}@{rate:g}Hz]", labels, path.stem, path.stem,
                              regular_chunks(lambda a, b, v=values: v[:, a:b], values.shape[1], rate),
                              SOURCE)
