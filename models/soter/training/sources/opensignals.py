"""OpenSignals recordings (PLUX devices), e.g. the ~150 sample clips shipped in the
``biosignalsnotebooks`` wheel (MIT licence; ``pip download --no-deps biosignalsnotebooks`` and
unzip it; the clips are under ``biosignalsnotebooks/notebook_files/osf_files/signal_samples``).

Reads the OpenSignals text format (``# OpenSignals Text File Format``, one JSON header line
keyed by device, ``# EndOfHeader``, then tab-separated columns ``nSeq, DI, CH1, ...``, the devices'
columns one after another) and EDF files (``pyedflib``; skipped when a text copy of the same clip
sits beside them) and the OpenSignals HDF5 format (``h5py``: one group per device with
``raw/channel_N`` datasets and a ``sampling rate`` attribute; skipped when a text copy exists).
Each file is its own dataset (the clips differ in sensors and rates); values are
the raw ADC codes, whose per-dataset MinMax equals that of the physical units (PLUX transfer
functions are affine).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from models.soter.training.corpus import CorpusError
from models.soter.training.sources import SourceRecording, regular_chunks
from models.soter.training.sources.sleep_edf import edf_recordings

SOURCE = "OpenSignals sample recordings (biosignalsnotebooks, MIT)"


def read_text(path: Path) -> tuple[tuple[str, ...], float, np.ndarray]:
    """(channel names, rate, values [C, N]) of an OpenSignals text file; the first device only."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first = f.readline()
        if "OpenSignals" not in first:
            raise CorpusError(f"{path}: not an OpenSignals text file")
        header_line = f.readline()
        if not header_line.startswith("#"):
            raise CorpusError(f"{path}: missing the JSON header line")
        try:
            header = json.loads(header_line[1:].strip())
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}: corrupt JSON header ({exc})") from exc
        if f.readline().strip() != "# EndOfHeader":
            raise CorpusError(f"{path}: missing '# EndOfHeader'")
        try:
            data = np.loadtxt(f, ndmin=2)
        except ValueError as exc:
            raise CorpusError(f"{path}: non-numeric data ({exc})") from exc
    names: list[str] = []
    idx: list[int] = []
    offset, rates = 0, set()
    for device in header.values():  # several synchronised devices: their columns follow one another
        columns, sensors, labels = device.get("column", []), device.get("sensor", []), device.get("label", [])
        for k, label in enumerate(labels):
            if label in columns:
                idx.append(offset + columns.index(label))
                names.append(f"{sensors[k] if k < len(sensors) else 'CH'}:{label}")
        offset += len(columns)
        rates.add(float(device["sampling rate"]))
    if data.shape[1] != offset:
        raise CorpusError(f"{path}: {data.shape[1]} data columns but the header names {offset}")
    if not idx:
        raise CorpusError(f"{path}: no analogue channel")
    if len(rates) != 1:
        raise CorpusError(f"{path}: devices at different rates {sorted(rates)}")
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    return tuple(names), rates.pop(), data[:, idx].T


def read_h5(path: Path) -> tuple[tuple[str, ...], float, np.ndarray]:
    """(channel names, rate, values [C, N]) of an OpenSignals HDF5 file, all devices."""
    try:
        import h5py
    except ImportError as exc:
        raise CorpusError("reading OpenSignals HDF5 needs h5py: pip install 'soter-bench[corpus]'") from exc
    names, columns, rate = [], [], None
    try:
        with h5py.File(path, "r") as f:
            for device in f.values():
                if "raw" not in device:
                    continue
                fs = float(device.attrs["sampling rate"])
                if rate is not None and fs != rate:
                    continue  # a device at another rate: only the first device's rate is kept
                rate = fs
                for key in sorted((k for k in device["raw"] if k.startswith("channel_")),
                                  key=lambda k: int(k.split("_")[1])):
                    ds = device["raw"][key]
                    names.append(f"{ds.attrs.get('sensor', 'CH')}:{ds.attrs.get('label', key)}")
                    columns.append(np.asarray(ds[()], dtype=np.float64).reshape(-1))
    except (OSError, KeyError) as exc:
        raise CorpusError(f"{path}: unreadable OpenSignals HDF5 file ({exc})") from exc
    if not columns:
        raise CorpusError(f"{path}: no raw channel")
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    n = min(c.size for c in columns)  # synchronised devices may stop a few samples apart
    return tuple(names), float(rate), np.stack([c[:n] for c in columns])


def read(root: Path) -> Iterator[SourceRecording]:
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".txt", ".edf", ".h5"))
    if not files:
        raise CorpusError(f"opensignals: no .txt, .h5 or .edf recording under {root}")
    for path in files:
        siblings = {q.suffix.lower() for q in path.parent.glob(path.stem + ".*")}
        if path.suffix.lower() == ".h5":
            if ".txt" in siblings:
                continue  # the same clip in text form is read instead
            names, fs, signal = read_h5(path)
            yield SourceRecording(f"opensignals-{path.stem}[{','.join(names)}@{fs:g}Hz]", names, path.stem,
                                  path.stem, regular_chunks(lambda a, b, s=signal: s[:, a:b], signal.shape[1], fs),
                                  SOURCE)
            continue
        if path.suffix.lower() == ".edf":
            if ".txt" in siblings or ".h5" in siblings:
                continue  # the same clip in another form is read instead
            yield from edf_recordings(path, f"opensignals-{path.stem}", path.stem, SOURCE, all_rates=False)
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            if "OpenSignals" not in f.readline():
                continue  # other text files (notes, READMEs)
        names, fs, signal = read_text(path)
        yield SourceRecording(f"opensignals-{path.stem}[{','.join(names)}@{fs:g}Hz]", names, path.stem, path.stem,
                              regular_chunks(lambda a, b, s=signal: s[:, a:b], signal.shape[1], fs), SOURCE)
