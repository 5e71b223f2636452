"""The broad selection set (issue #45): real recordings held out from SOTER's training by construction, frozen
before any run that it scores, plus the synthetic seed set.

Why: the earlier held-out score read one MIMIC-III ECG segment and one synthetic seed; it stopped separating runs,
and what it rewarded did not carry over to other modalities. This set covers ECG, PPG, respiration, EDA and arterial
pressure from five sources. Every recording named here leaves every training corpus: ``build-corpus`` always
excludes :data:`HELD_OUT` (``models.soter.training.train``), and ``tests/soter/test_selection_set.py`` checks it on a
corpus built from the staged data. Never evaluation data (MIT-BIH 100, the cohort), never other PyPI packages'
recordings (those of ``heartpy`` may serve selection only).

    python -m models.soter.training.selection_set --out SELDIR [--data-root ../shared/data]

writes one folder dataset per set (``python -m harness.selection run`` scores a checkpoint on them). A written set
must match its frozen fingerprint (the SHA-256 of its channels, rate, values and timestamps): the set cannot drift.
Short clips are resampled to a wearable rate (scipy's polyphase filter), documented per set.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from protocols.data import Dataset, Recording

SYNTHETIC_SEED = 9000  # the cohort generator with a seed that is neither the evaluation's (0) nor the corpus's
# every recording of the set, by the names build-corpus's readers match (WFDB record, MIMIC-III subject, BioSPPy
# clip): excluded from every training corpus
HELD_OUT = ("s25047", "a103l", "03700181", "ecg", "ppg", "resp", "eda")


@dataclass(frozen=True)
class SelectionSet:
    name: str  # the folder dataset's name
    source: str  # where it comes from (for the model card's table)
    modality: str
    kind: str  # "wfdb" (a record under the data root), "biosppy" (a clip), "heartpy" (a file of its wheel)
    path: str  # relative to the data root, or the wheel's data file
    blocks: int  # scored as NAME:blocks=N (leave-one-block-out)
    rate: float | None = None  # resample to this rate (Hz); None: native
    sha256: str = ""  # the frozen fingerprint of the written dataset


MIMIC = "wfdb-python-sample/multi-segment/s25047"
SETS: tuple[SelectionSet, ...] = (
    SelectionSet("sel-mimic-3234460_0016", "MIMIC-III matched subset, subject s25047", "ECG", "wfdb",
                 f"{MIMIC}/3234460_0016", 6,
                 sha256="24c1407ca0841aa9da76f9838ede0f5226ef057e61553e3543bc3190c59bb3b3"),
    SelectionSet("sel-mimic-3234460_0018", "MIMIC-III matched subset, subject s25047", "ECG, ABP", "wfdb",
                 f"{MIMIC}/3234460_0018", 6,
                 sha256="1ce67a7d23fcad0d2b72f8da9d4f49c991d30c8e8f888bc8bc1ed2a585718562"),
    SelectionSet("sel-mimic-3234460_0015", "MIMIC-III matched subset, subject s25047", "ECG", "wfdb",
                 f"{MIMIC}/3234460_0015", 4,
                 sha256="d99846825c50a8ea08982443833bc298ff262025fcd0b2922b14098f9077f3f8"),
    SelectionSet("sel-challenge2015-a103l", "PhysioNet/CinC Challenge 2015", "ECG, PPG", "wfdb", "wfdb/a103l", 6,
                 sha256="b53c20680d90054decab8db4b578bf7db6d807fbaa8a476478f3c70ae09ef503"),
    SelectionSet("sel-icu-03700181", "ICU record of the wfdb-python sample data", "ECG, ABP, RESP", "wfdb",
                 "wfdb/03700181", 6,
                 sha256="f7a5a393b379594eda63c6e9ae190be64be21425f137d900c9b21c92f5d5c717"),
    SelectionSet("sel-biosppy-ecg", "BioSPPy example signals", "ECG", "biosppy", "biosppy-examples/ecg.txt", 4,
                 rate=250.0,
                 sha256="3bea8ceeba9bf0f263318669168d2c2541904748eec650e7d2e81611945282e3"),
    SelectionSet("sel-biosppy-ppg", "BioSPPy example signals", "PPG", "biosppy", "biosppy-examples/ppg.txt", 4,
                 rate=100.0,
                 sha256="d6af70c4bc48e50864de7f7eebc99a35b171d2b5bd3cfdbe83d706e58309a9c1"),
    SelectionSet("sel-biosppy-resp", "BioSPPy example signals", "RESP", "biosppy", "biosppy-examples/resp.txt", 4,
                 rate=25.0,
                 sha256="0370846f1b3bcc807f596c3c44a199b076116072cce4d384a0fd17df49509348"),
    SelectionSet("sel-biosppy-eda", "BioSPPy example signals", "EDA", "biosppy", "biosppy-examples/eda.txt", 4,
                 rate=20.0,
                 sha256="03921e16ee1ee034523a286b2c226118d60990bbddca7a31990105baf6e8ba02"),
    SelectionSet("sel-heartpy-data", "heartpy wheel (data.csv)", "PPG", "heartpy", "data.csv", 4,
                 sha256="f54b56402c683882ba7cad3f8b5a9b6094e4e03d562c5a4934e0bfac638db8bf"),
    SelectionSet("sel-heartpy-data2", "heartpy wheel (data2.csv)", "PPG", "heartpy", "data2.csv", 6,
                 sha256="10b385531e279127c95e7f71c3f6a0d30149ed7eb7434e8cb322321ec3d4059c"),
    SelectionSet("sel-heartpy-data3", "heartpy wheel (data3.csv)", "PPG", "heartpy", "data3.csv", 6,
                 sha256="f618b0468dce75af366c90490b4de6dad91b07235b09c9768c133396c5c32a62"),
)
HEARTPY_RATE = 100.0  # heartpy's documentation of data.csv (its examples pass sample_rate=100)


class SelectionSetError(ValueError):
    """The set cannot be built here (missing data, package) or does not match its frozen fingerprint."""


def fingerprint(ds: Dataset) -> str:
    h = hashlib.sha256()
    h.update(repr((tuple(ds.channels), ds.sampling_rate)).encode())
    for r in ds.recordings:
        h.update(np.ascontiguousarray(r.values, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(r.timestamps, dtype=np.float64).tobytes())
    return h.hexdigest()


def _resampled(values: np.ndarray, rate: float, target: float | None) -> tuple[np.ndarray, float]:
    if target is None or target == rate:
        return values, rate
    from fractions import Fraction

    from scipy.signal import resample_poly

    ratio = Fraction(target / rate).limit_denominator(1000)
    return resample_poly(values, ratio.numerator, ratio.denominator, axis=-1), target


def _wfdb(s: SelectionSet, root: Path) -> tuple[tuple[str, ...], np.ndarray, float, np.ndarray | None]:
    import wfdb

    path = root / s.path
    if not path.with_suffix(".hea").is_file():
        raise SelectionSetError(f"{s.name}: {path}.hea not found (--data-root names the folder of ../shared/data)")
    record = wfdb.rdrecord(str(path))
    values = np.asarray(record.p_signal, dtype=np.float64).T
    return tuple(record.sig_name), values, float(record.fs), None


def _biosppy(s: SelectionSet, root: Path) -> tuple[tuple[str, ...], np.ndarray, float, np.ndarray | None]:
    from models.soter.training.sources.biosppy_text import read_text

    path = root / s.path
    if not path.is_file():
        raise SelectionSetError(f"{s.name}: {path} not found (--data-root names the folder of ../shared/data)")
    channels, rate, values = read_text(path)
    return channels, np.asarray(values, dtype=np.float64), rate, None


def _heartpy(s: SelectionSet, root: Path) -> tuple[tuple[str, ...], np.ndarray, float, np.ndarray | None]:
    """A recording the heartpy wheel ships (selection only, never training): PPG, with its own time column where
    the file has one (data2: a timer in ms; data3: date-times, read as their mean rate), else heartpy's documented
    100 Hz."""
    import importlib.util

    import pandas as pd

    spec = importlib.util.find_spec("heartpy")
    if spec is None or not spec.submodule_search_locations:
        raise SelectionSetError(f"{s.name}: needs the heartpy package (pip install 'soter-bench[selection]')")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / s.path
    frame = pd.read_csv(path)
    values = frame["hr"].to_numpy(dtype=np.float64)[None] if "hr" in frame else frame.to_numpy(np.float64).T[:1]
    if "timer" in frame:
        times = (frame["timer"].to_numpy(np.float64) - frame["timer"].iloc[0]) / 1000.0
    elif "datetime" in frame:  # a logger clock of ~16 ms resolution (repeated stamps): its mean rate, as heartpy
        stamps = pd.to_datetime(frame["datetime"], format="ISO8601")  # reads it (get_samplerate_datetime)
        span = (stamps.iloc[-1] - stamps.iloc[0]).total_seconds()
        times = np.arange(values.shape[1]) * span / (values.shape[1] - 1)
    else:
        times = np.arange(values.shape[1]) / HEARTPY_RATE
    rate = float(1.0 / np.median(np.diff(times)))
    return ("PPG",), values, rate, times


READERS = {"wfdb": _wfdb, "biosppy": _biosppy, "heartpy": _heartpy}


def load_set(s: SelectionSet, data_root: Path) -> Dataset:
    channels, values, rate, times = READERS[s.kind](s, Path(data_root))
    if times is None:
        values, rate = _resampled(values, rate, s.rate)
        times = np.arange(values.shape[1]) / rate
    return Dataset(s.name, channels, (Recording(s.name, s.name, values, times),), rate,
                   description=f"selection set (issue #45): {s.source}, {s.modality}; never training data",
                   metadata={"source": s.kind})


def synthetic_set() -> Dataset:
    from models.soter.training.heldout import synthetic

    ds = synthetic(SYNTHETIC_SEED)
    return Dataset(f"sel-synthetic-{SYNTHETIC_SEED}", ds.channels, ds.recordings, ds.sampling_rate, ds.label_names,
                   ds.description)


def dataset_names() -> list[str]:
    """What ``harness run forecasting --dataset`` scores, relative to the built folder."""
    return [f"{s.name}:blocks={s.blocks}" for s in SETS] + [f"sel-synthetic-{SYNTHETIC_SEED}"]


def build(out: Path, data_root: Path, check: bool = True) -> dict[str, str]:
    """Write every set under ``out`` (folder datasets); returns name -> fingerprint. ``check``: each must equal
    its frozen fingerprint (a changed reader or file is an error naming the set)."""
    from protocols.datasets.folder import write_folder_dataset

    found = {}
    for s in SETS:
        ds = load_set(s, data_root)
        found[s.name] = fingerprint(ds)
        if check and s.sha256 and found[s.name] != s.sha256:
            raise SelectionSetError(f"{s.name}: its data differ from the frozen selection set "
                                    f"(fingerprint {found[s.name][:12]}, frozen {s.sha256[:12]})")
        if not (Path(out) / s.name / "dataset.json").is_file():
            write_folder_dataset(ds, Path(out) / s.name)
    syn = synthetic_set()
    if not (Path(out) / syn.name / "dataset.json").is_file():
        write_folder_dataset(syn, Path(out) / syn.name)
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.training.selection_set", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    p.add_argument("--print-fingerprints", action="store_true", help="print each set's fingerprint, check none")
    args = p.parse_args(argv)
    try:
        found = build(args.out, args.data_root, check=not args.print_fingerprints)
    except SelectionSetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, digest in found.items():
        print(f"{name} {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
