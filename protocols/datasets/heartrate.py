"""HeartRate: the paper's single-channel PPG benchmark, from the Monash regression archive.

No archive set carries this name; our reading (a guess) is ``BIDMC32HR``: 32 s segments at 125 Hz
of PhysioNet's ``bidmc`` recordings, with the heart rate as regression target (unused here).

Two native layouts under ``ROOT/heartrate/``, chosen with ``source=`` (default ``"auto"``: the
``.ts`` files when present, else raw bidmc):

- ``source="ts"``: ``BIDMC32HR_TRAIN.ts`` / ``BIDMC32HR_TEST.ts`` (sktime/Monash ``.ts`` format,
  read by :func:`read_ts`).  Each series is one 32 s recording; ``ts_dimension`` picks the
  dimension used as ``ppg`` (default 0; guess: the archive does not name its dimensions).  The
  ``.ts`` form has no subject ids, so by default (``ts_subjects="file"``) each file is one
  pseudo-subject (LOSO then trains on the archive's train split and tests on its test split and
  vice versa); ``ts_subjects="series"`` makes every segment its own subject (segments of one person
  then fall on both sides of a fold).  Targets are kept in ``metadata["targets"]``.
- ``source="bidmc"``: the 53 raw records, WFDB ``bidmcNN.{hea,dat}`` (what ``data download
  heartrate`` fetches) or ``bidmc_csv/bidmc_NN_Signals.csv`` (header ``Time [s], RESP, PLETH, V, AVR,
  II``: names after the first carry a leading space, stripped; ``Time [s]`` is ignored, the 125 Hz grid
  it prints to 5 significant digits is rebuilt exactly); one subject per record, 8 min each.
  ``channels`` picks signals by their bidmc names (default ``("PLETH",)``, exposed as ``ppg``;
  others: ``RESP``, ``V``, ``AVR``, ``II``, exposed lower-case).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets.paper import dataset_dir

RATE = 125.0
BIDMC_SIGNALS = ("RESP", "PLETH", "V", "AVR", "II")


@dataclass
class TsFile:
    """A parsed ``.ts`` file: one ``[D, T]`` array per series, and its target or class label."""

    header: dict[str, str]
    series: list[np.ndarray]
    targets: list[str] = field(default_factory=list)


def read_ts(path: Path) -> TsFile:
    """Read an sktime/Monash ``.ts`` file (equal-length dimensions, no time stamps).

    ``@targetlabel true`` or ``@classlabel true ...`` means the last ``:``-field of a data line is
    the target; ``?`` is a missing value (NaN).  Any deviation is a DatasetError naming the line.
    """
    header: dict[str, str] = {}
    series, targets = [], []
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: unreadable .ts file ({exc})") from exc
    in_data = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            if not line.startswith("@"):
                raise DatasetError(f"{path}, line {no}: expected an @header line before @data, got {line[:40]!r}")
            key, _, value = line[1:].partition(" ")
            key = key.lower()
            if key == "data":
                in_data = True
            else:
                header[key] = value.strip()
            continue
        if header.get("timestamps", "false").lower() == "true":
            raise DatasetError(f"{path}: .ts files with time stamps are not supported")
        fields = line.split(":")
        has_target = (header.get("targetlabel", "false").lower() == "true"
                      or header.get("classlabel", "false").lower().startswith("true"))
        if has_target:
            targets.append(fields.pop().strip())
        try:
            dims = [np.array([np.nan if v.strip() == "?" else float(v) for v in f.split(",")]) for f in fields]
        except ValueError as exc:
            raise DatasetError(f"{path}, line {no}: not a number ({exc})") from exc
        if len({d.size for d in dims}) != 1:
            raise DatasetError(f"{path}, line {no}: dimensions of unequal length {[d.size for d in dims]}")
        if "dimensions" in header and len(dims) != int(header["dimensions"]):
            raise DatasetError(f"{path}, line {no}: {len(dims)} dimensions, header says {header['dimensions']}")
        if series and len(dims) != series[0].shape[0]:
            raise DatasetError(f"{path}, line {no}: {len(dims)} dimensions, earlier series have {series[0].shape[0]}")
        series.append(np.stack(dims))
    if not in_data:
        raise DatasetError(f"{path}: no @data line (truncated or not a .ts file)")
    if not series:
        raise DatasetError(f"{path}: no series after @data")
    return TsFile(header, series, targets)


def ts_recordings(files: list[Path], dimensions: tuple[int, ...], subjects: str, rate: float
                  ) -> tuple[list[Recording], dict[str, float]]:
    """Recordings from ``.ts`` files: the chosen dimensions, one recording per series."""
    if subjects not in ("file", "series"):
        raise DatasetError(f"ts_subjects must be 'file' or 'series', got {subjects!r}")
    recs, targets = [], {}
    for path in files:
        ts = read_ts(path)
        n_dims = ts.series[0].shape[0]
        bad = [d for d in dimensions if not 0 <= d < n_dims]
        if bad:
            raise DatasetError(f"{path}: no dimension {bad}; the file has {n_dims}")
        split = re.sub(r"^.*_", "", path.stem).lower()  # BIDMC32HR_TRAIN -> train
        for i, s in enumerate(ts.series):
            name = f"{split}-{i:05d}"
            recs.append(Recording(split if subjects == "file" else name, name, s[list(dimensions)],
                                  np.arange(s.shape[1]) / rate))
            if ts.targets:
                try:
                    targets[name] = float(ts.targets[i])
                except ValueError:
                    pass
    return recs, targets


def load(root: Path, source: str = "auto", channels: tuple[str, ...] = ("PLETH",), ts_dimension: int = 0,
         ts_subjects: str = "file") -> Dataset:
    folder = dataset_dir(root, "heartrate")
    ts_files = sorted(folder.glob("*.ts"))
    if source == "auto":
        source = "ts" if ts_files else "bidmc"
    if source == "ts":
        if not ts_files:
            raise DatasetError(f"heartrate: no .ts file in {folder} (expected BIDMC32HR_TRAIN.ts / _TEST.ts)")
        recs, targets = ts_recordings(ts_files, (ts_dimension,), ts_subjects, RATE)
        return Dataset("heartrate", ("ppg",), tuple(recs), RATE, None,
                       "HeartRate (Monash BIDMC32HR .ts): PPG segments of 32 s at 125 Hz",
                       {"source": "ts", "files": [p.name for p in ts_files], "targets": targets,
                        "ts_dimension": ts_dimension, "ts_subjects": ts_subjects})
    if source != "bidmc":
        raise DatasetError(f"heartrate: source must be 'auto', 'ts' or 'bidmc', got {source!r}")
    return _load_bidmc(folder, tuple(channels))


def _load_bidmc(folder: Path, channels: tuple[str, ...]) -> Dataset:
    bad = [c for c in channels if c not in BIDMC_SIGNALS] or ([] if channels else ["(none)"])
    if bad:
        raise DatasetError(f"heartrate: unknown bidmc channel(s) {bad}; channels: {list(BIDMC_SIGNALS)}")
    headers = sorted(folder.glob("bidmc[0-9][0-9].hea"))
    csvs = sorted(folder.glob("**/bidmc_[0-9][0-9]_Signals.csv"))
    if not headers and not csvs:
        raise DatasetError(f"heartrate: no .ts file, no bidmcNN.hea and no bidmc_NN_Signals.csv in {folder}")
    recs = []
    for path in headers or csvs:
        number = re.search(r"(\d\d)", path.name).group(1)
        table = _read_wfdb(path) if headers else _read_csv(path)
        missing = [c for c in channels if c not in table]
        if missing:
            raise DatasetError(f"{path}: no signal {missing}; it has {sorted(table)}")
        values = np.stack([table[c] for c in channels])
        recs.append(Recording(f"bidmc{number}", f"bidmc{number}", values, np.arange(values.shape[1]) / RATE))
    names = tuple("ppg" if c == "PLETH" else c.lower() for c in channels)
    return Dataset("heartrate", names, tuple(recs), RATE, None,
                   "HeartRate from raw PhysioNet bidmc: 8 min recordings at 125 Hz",
                   {"source": "bidmc", "signals": list(channels)})


def _read_wfdb(path: Path) -> dict[str, np.ndarray]:
    import wfdb

    try:
        rec = wfdb.rdrecord(str(path.with_suffix("")))
    except Exception as exc:  # wfdb raises many types for truncated or corrupt files
        raise DatasetError(f"{path.with_suffix('')}: unreadable WFDB record ({type(exc).__name__}: {exc})") from exc
    if rec.fs != RATE:
        raise DatasetError(f"{path}: sampled at {rec.fs} Hz, bidmc records are {RATE:g} Hz")
    # bidmc headers write signal names with a trailing comma ("PLETH,")
    return {n.strip().rstrip(",").strip(): rec.p_signal[:, i].astype(np.float64) for i, n in enumerate(rec.sig_name)}


def _read_csv(path: Path) -> dict[str, np.ndarray]:
    import pandas as pd

    try:
        frame = pd.read_csv(path, skipinitialspace=True)
    except Exception as exc:  # pandas: ParserError, EmptyDataError, UnicodeDecodeError
        raise DatasetError(f"{path}: unreadable CSV ({type(exc).__name__}: {exc})") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    out = {}
    for c in frame.columns:
        if c in BIDMC_SIGNALS:
            col = pd.to_numeric(frame[c], errors="coerce")
            bad = (col.isna() & frame[c].notna()).to_numpy()  # text where a number belongs (empty = missing)
            if bad.any():
                raise DatasetError(f"{path}: column {c!r} line {int(np.argmax(bad)) + 2} is not a number")
            out[c] = col.to_numpy(np.float64)
    return out
