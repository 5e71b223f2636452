"""The pre-training corpus on disk: one folder per dataset, memory-mapped, never all in memory.

Layout: ``<corpus>/<dataset>/values.npy`` (float32 [C, N], recordings concatenated, already
MinMax-normalised per channel over the whole dataset), ``times.npy`` (float64 [N], seconds)
and ``index.json`` (channels, recording offsets and lengths, the MinMax, the source).  Missing
samples stay NaN; the sampler's gap filter skips windows that touch one.

Evaluation datasets never enter a corpus: ``build_corpus`` refuses them by name, the embedded
evaluation cohort also by content, and MIT-BIH records by record name.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from protocols.data import Dataset

EVALUATION_DATASETS = frozenset({"synthetic-cohort", "heartrate", "mitbih", "mit-bih", "scientisst-move",
                                 "ieee-ppg", "mmash", "wdd"})
MITDB_RECORDS = frozenset(str(r) for r in [*range(100, 125), *range(200, 235)])


class CorpusError(ValueError):
    pass


def _signal_hash(ds: Dataset) -> str:
    """The signals alone: a renamed copy of evaluation data hashes the same."""
    import hashlib

    h = hashlib.sha1()
    for r in ds.recordings:
        h.update(np.ascontiguousarray(r.values, dtype=np.float64).tobytes())
    return h.hexdigest()


def check_not_evaluation(ds: Dataset) -> None:
    """Refuse evaluation data: by dataset name, by the embedded cohort's content, by MIT-BIH record."""
    if ds.name.lower() in EVALUATION_DATASETS:
        raise CorpusError(f"dataset {ds.name!r} is an evaluation dataset and must never enter the pre-training corpus")
    from protocols.datasets.synthetic import load_synthetic_cohort

    if ds.channels == ("ECG", "PPG", "RSP", "EDA") and _signal_hash(ds) == _signal_hash(load_synthetic_cohort()):
        raise CorpusError("this is the embedded evaluation cohort (renamed); the synthetic corpus stream uses other "
                          "seeds")
    for rec in ds.recordings:
        if rec.name in MITDB_RECORDS and ds.metadata.get("source") == "wfdb":
            raise CorpusError(f"record {rec.name} is a MIT-BIH record, an evaluation dataset")


def synthetic_stream(n_subjects: int = 20, seconds_per_state: float = 60.0, seed: int = 1000,
                     sampling_rate: float = 64.0) -> Dataset:
    """Offline training data from the same simulators with other seeds and subject ids."""
    from protocols.datasets.synthetic import SyntheticCohortConfig, generate

    if seed < 1000:
        raise CorpusError("synthetic corpus seeds start at 1000 (seeds below are the evaluation cohort's)")
    ds = generate(SyntheticCohortConfig(n_subjects=n_subjects, seconds_per_state=seconds_per_state, seed=seed,
                                        sampling_rate=sampling_rate))
    return Dataset(f"synthetic-stream-{seed}", ds.channels, ds.recordings, ds.sampling_rate, ds.label_names,
                   "synthetic pre-training stream", {"source": "synthetic", "seed": seed})


def wfdb_datasets(folder: Path, exclude: tuple[str, ...] = ("100",)) -> list[Dataset]:
    """Every WFDB record of a folder as its own dataset (records differ in channel layout, and a
    batch holds windows of one dataset)."""
    import wfdb

    from protocols.data import Recording

    out = []
    for hea in sorted(Path(folder).glob("*.hea")):
        name = hea.stem
        if name in exclude:
            continue
        if name in MITDB_RECORDS:
            raise CorpusError(f"{hea}: MIT-BIH record {name} is evaluation data; exclude it from the corpus")
        r = wfdb.rdrecord(str(hea.with_suffix("")))
        sig = np.asarray(r.p_signal, dtype=np.float64).T
        out.append(Dataset(f"wfdb-{name}", tuple(r.sig_name), (Recording(name, name, sig, np.arange(sig.shape[1]) / r.fs),),
                           float(r.fs), None, f"WFDB record {hea}", {"source": "wfdb"}))
    if not out:
        raise CorpusError(f"{folder}: no WFDB records")
    return out


@dataclass(frozen=True)
class CorpusDataset:
    name: str
    values: np.ndarray  # memmap [C, N]
    times: np.ndarray  # memmap [N]
    starts: np.ndarray  # recording offsets
    lengths: np.ndarray


def write_dataset(ds: Dataset, corpus: Path) -> Path:
    """Normalise (per-channel MinMax over the dataset) and write one dataset, atomically."""
    check_not_evaluation(ds)
    corpus.mkdir(parents=True, exist_ok=True)
    stacked = np.concatenate([r.values for r in ds.recordings], axis=1)
    with np.errstate(all="ignore"):
        lo, hi = np.nanmin(stacked, axis=1), np.nanmax(stacked, axis=1)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    lengths = [r.n_samples for r in ds.recordings]
    tmp = Path(tempfile.mkdtemp(dir=corpus, prefix=".tmp-"))
    np.save(tmp / "values.npy", ((stacked - lo[:, None]) / span[:, None]).astype(np.float32))
    np.save(tmp / "times.npy", np.concatenate([r.timestamps for r in ds.recordings]))
    (tmp / "index.json").write_text(json.dumps({
        "name": ds.name, "channels": list(ds.channels), "lengths": lengths,
        "starts": np.concatenate([[0], np.cumsum(lengths)[:-1]]).tolist(),
        "minimum": lo.tolist(), "maximum": hi.tolist(), "source": ds.description}, indent=1))
    final = corpus / ds.name
    if final.exists():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


def open_corpus(corpus: Path) -> list[CorpusDataset]:
    corpus = Path(corpus)
    folders = sorted(p for p in corpus.iterdir() if (p / "index.json").is_file()) if corpus.is_dir() else []
    if not folders:
        raise CorpusError(f"{corpus}: no corpus datasets (build one with `python -m models.soter.training.train "
                          "build-corpus`)")
    out = []
    for f in folders:
        index = json.loads((f / "index.json").read_text())
        if index["name"].lower() in EVALUATION_DATASETS:
            raise CorpusError(f"{f}: evaluation dataset {index['name']!r} found in the corpus")
        out.append(CorpusDataset(index["name"], np.load(f / "values.npy", mmap_mode="r"),
                                 np.load(f / "times.npy", mmap_mode="r"), np.asarray(index["starts"]),
                                 np.asarray(index["lengths"])))
    return out
