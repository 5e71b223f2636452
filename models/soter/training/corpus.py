"""The pre-training corpus on disk: one folder per dataset, memory-mapped, never all in memory.

Layout: ``<corpus>/<dataset>/values.npy`` (float32 [C, N], recordings concatenated, already
MinMax-normalised per channel over the whole dataset), ``times.npy`` (float64 [N], seconds)
and ``index.json`` (channels, recording offsets and lengths, the MinMax, the source).  Missing
samples stay NaN; the sampler's gap filter skips windows that touch one.

Evaluation datasets never enter a corpus: ``build_corpus`` refuses them by name, the embedded
evaluation cohort also by content, and MIT-BIH records by record name; and every recording read
from a file, by content, when it copies an evaluation or held-out recording even renamed, cropped,
rescaled or resampled (``leakage.Guard``, given to the writer; :func:`check_not_copy` for a dataset).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from protocols.data import Dataset

EVALUATION_DATASETS = frozenset({"synthetic-cohort", "heartrate", "mitbih", "mit-bih", "scientisst-move",
                                 "ieee-ppg", "mmash", "wdd"})
MITDB_RECORDS = frozenset(str(r) for r in [*range(100, 125), *range(200, 235)])


class CorpusError(ValueError):
    pass


class Copy(Protocol):
    def line(self) -> str:
        """One line naming the candidate, the recording it copies and where."""
        ...


class Guard(Protocol):
    """What the corpus asks of a content check (``leakage.Guard``, which reads the selection set and so sits above
    this module): the copy a recording [C, n] at ``rate`` makes of a reference, or None."""

    def match(self, label: str, channels: tuple[str, ...], values: np.ndarray, rate: float) -> Copy | None:
        ...


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


def check_not_copy(ds: Dataset, guard: Guard) -> None:
    """Refuse a dataset one of whose recordings copies an evaluation or held-out recording (``leakage``)."""
    for rec in ds.recordings:
        rate = _rate(rec.timestamps)
        found = None if rate is None else guard.match(f"{ds.name}/{rec.name}", ds.channels, rec.values, rate)
        if found is not None:
            raise CorpusError(f"{found.line()}: evaluation and held-out data never enter a training corpus")


def _rate(times: np.ndarray) -> float | None:
    """A recording's sampling rate from its timestamps (the median step: an irregular one is read at its usual);
    None for a single sample, far too short to be compared (a guard needs seconds)."""
    step = np.diff(np.asarray(times, dtype=np.float64))
    return float(1.0 / np.median(step)) if step.size and np.median(step) > 0 else None


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


def wfdb_datasets(folder: Path, exclude: tuple[str, ...] = ("100",), split_rates: bool = False) -> list[Dataset]:
    """Every WFDB record of a folder as its own dataset (records differ in channel layout, and a
    batch holds windows of one dataset).

    A multi-frequency record (signals with several samples per frame) is read as wfdb reads it by
    default, every signal averaged to the frame rate, unless ``split_rates``: then one dataset per
    rate, each signal at its own rate (``wfdb-<record>@<rate>Hz``). The default keeps the corpus of
    the shipped ``soter-cpu-64`` reproducible; splitting keeps an ECG's QRS shape."""
    import wfdb

    from protocols.data import Recording

    out = []
    for hea in sorted(Path(folder).glob("*.hea")):
        name = hea.stem
        if name in exclude:
            continue
        if name in MITDB_RECORDS:
            raise CorpusError(f"{hea}: MIT-BIH record {name} is evaluation data; exclude it from the corpus")
        r = wfdb.rdrecord(str(hea.with_suffix("")), smooth_frames=not split_rates)
        frames = [int(n) for n in r.samps_per_frame] if split_rates else [1] * r.n_sig
        if max(frames) == 1:
            groups = {1: list(range(len(frames)))}
        else:  # a multi-frequency record: one dataset per rate, each signal at its own rate (not frame-averaged)
            groups = {}
            for i, n in enumerate(frames):
                groups.setdefault(n, []).append(i)
        for n, idx in sorted(groups.items()):
            fs = float(r.fs) * n
            sig = (np.asarray(r.p_signal, dtype=np.float64).T if not split_rates
                   else np.stack([np.asarray(r.e_p_signal[i], dtype=np.float64) for i in idx]))
            key = f"wfdb-{name}" if len(groups) == 1 else f"wfdb-{name}@{fs:g}Hz"
            out.append(Dataset(key, tuple(r.sig_name[i] for i in idx),
                               (Recording(name, name, sig, np.arange(sig.shape[1]) / fs),),
                               fs, None, f"WFDB record {hea}", {"source": "wfdb"}))
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
    channels: tuple[str, ...] = ()  # the channels' names (augmentation's flips depend on the signal)


CHUNK = 1 << 20  # samples per normalisation pass: memory stays bounded whatever the corpus size


class CorpusWriter:
    """Streams recordings of many datasets to disk, then normalises each dataset chunk by chunk.

    Per dataset key: raw float32 samples ([N, C], appended as they arrive) and float64 times go to
    scratch files while a running per-channel min / max is kept; ``close`` writes the final
    ``values.npy`` ([C, N], MinMax-normalised over the whole dataset), ``times.npy`` and
    ``index.json``, and renames each folder into place.  Nothing is ever held whole in memory.
    """

    def __init__(self, corpus: Path, guard: Guard | None = None) -> None:
        self.corpus = Path(corpus)
        self.corpus.mkdir(parents=True, exist_ok=True)
        self.guard = guard  # compares every recording added with ``checked`` by content (None: names only)
        self._open: dict[str, dict] = {}

    def add(self, dataset: str, channels: tuple[str, ...], subject: str, name: str,
            chunks: Iterable[tuple[np.ndarray, np.ndarray]], source: str = "", checked: bool = True) -> None:
        """One recording, given as consecutive (values [C, n], times [n]) chunks. With a guard and ``checked``
        (every recording read from a file; the synthetic stream, generated here from its own seeds, is not), the
        recording is read back from the scratch file once written and refused if it copies a reference."""
        if dataset.split("[")[0].lower() in EVALUATION_DATASETS:
            raise CorpusError(f"dataset {dataset!r} is an evaluation dataset and must never enter the pre-training "
                              "corpus")
        state = self._open.get(dataset)
        if state is None:
            tmp = Path(tempfile.mkdtemp(dir=self.corpus, prefix=".tmp-"))
            state = {"tmp": tmp, "channels": tuple(channels), "values": open(tmp / "values.raw", "wb"),
                     "times": open(tmp / "times.raw", "wb"), "lo": np.full(len(channels), np.inf),
                     "hi": np.full(len(channels), -np.inf), "lengths": [], "subjects": [], "names": [],
                     "sources": set()}
            self._open[dataset] = state
        elif state["channels"] != tuple(channels):
            raise CorpusError(f"dataset {dataset!r}: channels {list(channels)} differ from {list(state['channels'])}")
        n, last, first = 0, -np.inf, sum(state["lengths"])
        for values, times in chunks:
            values = np.asarray(values, dtype=np.float64)
            times = np.asarray(times, dtype=np.float64)
            if values.ndim != 2 or values.shape != (len(channels), times.shape[0]):
                raise CorpusError(f"{dataset}/{name}: values {values.shape} do not match {len(channels)} channels x "
                                  f"{times.shape[0]} times")
            if times.size == 0:
                continue
            if not (np.all(np.diff(times) > 0) and times[0] > last):
                raise CorpusError(f"{dataset}/{name}: timestamps must be strictly increasing")
            last = times[-1]
            with np.errstate(all="ignore"):
                state["lo"] = np.fmin(state["lo"], np.nanmin(values, axis=1))
                state["hi"] = np.fmax(state["hi"], np.nanmax(values, axis=1))
            state["values"].write(np.ascontiguousarray(values.T, dtype=np.float32).tobytes())
            state["times"].write(times.tobytes())
            n += times.size
        if n and self.guard is not None and checked:
            self._check(dataset, name, state, first, n)
        if n:
            state["lengths"].append(n)
            state["subjects"].append(subject)
            state["names"].append(name)
            if source:
                state["sources"].add(source)

    def _check(self, dataset: str, name: str, state: dict, first: int, n: int) -> None:
        """The recording just written (samples ``first`` .. ``first + n`` of the scratch files), by content."""
        state["values"].flush(), state["times"].flush()
        channels = state["channels"]
        raw = np.memmap(state["tmp"] / "values.raw", dtype=np.float32, mode="r", shape=(first + n, len(channels)))
        times = np.memmap(state["tmp"] / "times.raw", dtype=np.float64, mode="r", shape=(first + n,))
        rate = _rate(times[first:])
        found = None if rate is None else self.guard.match(f"{dataset}/{name}", channels, raw[first:].T, rate)
        del raw, times
        if found is not None:
            raise CorpusError(f"{found.line()}: evaluation and held-out data never enter a training corpus")

    def discard(self) -> None:
        """Remove the scratch folders of a build that stopped (nothing half-written stays in the corpus)."""
        for state in self._open.values():
            state["values"].close(), state["times"].close()
            shutil.rmtree(state["tmp"], ignore_errors=True)
        self._open.clear()

    def close(self) -> list[Path]:
        out = [self._finish(name, state) for name, state in sorted(self._open.items()) if state["lengths"]]
        for state in self._open.values():
            if state["tmp"].exists():
                state["values"].close(), state["times"].close()
                shutil.rmtree(state["tmp"])
        self._open.clear()
        return out

    def _finish(self, dataset: str, state: dict) -> Path:
        state["values"].close(), state["times"].close()
        tmp, channels = state["tmp"], state["channels"]
        total = int(sum(state["lengths"]))
        lo = np.where(np.isfinite(state["lo"]), state["lo"], 0.0)
        hi = np.where(np.isfinite(state["hi"]), state["hi"], 0.0)
        span = np.where(hi - lo > 0, hi - lo, 1.0)
        raw = np.memmap(tmp / "values.raw", dtype=np.float32, mode="r", shape=(total, len(channels)))
        values = np.lib.format.open_memmap(tmp / "values.npy", mode="w+", dtype=np.float32,
                                           shape=(len(channels), total))
        for a in range(0, total, CHUNK):
            block = raw[a:a + CHUNK].T.astype(np.float64)
            values[:, a:a + CHUNK] = ((block - lo[:, None]) / span[:, None]).astype(np.float32)
        values.flush()
        del values, raw
        raw_t = np.memmap(tmp / "times.raw", dtype=np.float64, mode="r", shape=(total,))
        times = np.lib.format.open_memmap(tmp / "times.npy", mode="w+", dtype=np.float64, shape=(total,))
        for a in range(0, total, CHUNK):
            times[a:a + CHUNK] = raw_t[a:a + CHUNK]
        times.flush()
        del times, raw_t
        (tmp / "values.raw").unlink()
        (tmp / "times.raw").unlink()
        lengths = state["lengths"]
        (tmp / "index.json").write_text(json.dumps({
            "name": dataset, "channels": list(channels), "lengths": lengths,
            "starts": np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist(),
            "subjects": state["subjects"], "recordings": state["names"],
            "minimum": lo.tolist(), "maximum": hi.tolist(), "source": "; ".join(sorted(state["sources"]))}, indent=1))
        final = self.corpus / _folder_name(dataset)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        return final


def _folder_name(dataset: str) -> str:
    """A safe, short folder name; long keys (many channels) keep a prefix plus a hash."""
    import hashlib

    safe = "".join(c if c.isalnum() or c in "-_.+" else "_" for c in dataset)
    if len(safe) <= 96:
        return safe
    return f"{safe[:80]}-{hashlib.sha1(dataset.encode()).hexdigest()[:12]}"


def write_dataset(ds: Dataset, corpus: Path) -> Path:
    """Normalise (per-channel MinMax over the dataset) and write one dataset, atomically."""
    check_not_evaluation(ds)
    writer = CorpusWriter(corpus)
    for r in ds.recordings:
        writer.add(ds.name, ds.channels, r.subject, r.name, [(r.values, r.timestamps)], ds.description or "")
    return writer.close()[0]


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
                                 np.asarray(index["lengths"]), tuple(index.get("channels", ()))))
    return out
