"""Evaluation and held-out data never enter a training corpus by content (models/soter/training/leakage.py): a
renamed, cropped, rescaled or resampled copy of an evaluation or selection-set recording is refused by
``check_not_copy``, by the corpus writer and by ``build-corpus``; recordings that are training data pass; the
library and its verdicts are deterministic."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import resample_poly

from models.soter.training import leakage, selection_set
from models.soter.training.corpus import CorpusError, CorpusWriter, check_not_copy, check_not_evaluation
from models.soter.training.leakage import Guard, Library, build_library, load_library
from protocols.data import Dataset, Recording

DATA = Path(os.environ.get(leakage.SHARED_DATA_ENV) or Path(__file__).resolve().parents[3] / "shared" / "data")
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data beside the clone (the CI provides it)")


def _dataset(name: str, values: np.ndarray, rate: float, channels: tuple[str, ...]) -> Dataset:
    times = np.arange(values.shape[1]) / rate
    return Dataset(name, channels, (Recording("s1", "rec-1", values, times),), rate, metadata={"source": "folder"})


def _crop(values: np.ndarray, rate: float, start: float, seconds: float) -> np.ndarray:
    return values[:, int(start * rate):int((start + seconds) * rate)]


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Library:
    return load_library(DATA, cache=tmp_path_factory.mktemp("leakage"))


@pytest.fixture(scope="module")
def guard(library) -> Guard:
    return Guard(library)


def _mitbih_100(seconds: float = 60.0) -> tuple[np.ndarray, float]:
    import wfdb

    start = 123_457  # an odd offset: the copy's 50 Hz grid is not the reference's
    r = wfdb.rdrecord(str(DATA / "wfdb" / "100"), sampfrom=start, sampto=start + int(seconds * 360))
    return np.asarray(r.p_signal, dtype=np.float64).T, float(r.fs)


@needs_data
def test_a_renamed_cropped_rescaled_copy_of_mitbih_100_is_refused(guard):
    values, rate = _mitbih_100()
    copy = _dataset("wearable-ecg", values * -3.7 + 12.0, rate, ("ECG", "ECG2"))  # inverted, scaled, offset
    check_not_evaluation(copy)  # its name and source say nothing
    with pytest.raises(CorpusError, match=r"wearable-ecg/rec-1 channel 'ECG' is a copy of MIT-BIH 100 "
                                          r"\(evaluation\) channel 'MLII' \(from 342\.9 s"):
        check_not_copy(copy, guard)


@needs_data
def test_a_resampled_copy_of_mitbih_100_is_refused_by_the_corpus_writer(guard, tmp_path):
    values, rate = _mitbih_100(30.0)
    resampled = resample_poly(values, 25, 36, axis=-1) * 1e3  # 360 -> 250 Hz, in uV
    writer = CorpusWriter(tmp_path / "corpus", guard)
    times = np.arange(resampled.shape[1]) / 250.0
    with pytest.raises(CorpusError, match="is a copy of MIT-BIH 100"):
        writer.add("wearable-ecg", ("ECG", "ECG2"), "s1", "rec-1", [(resampled[:, :4000], times[:4000]),
                                                                     (resampled[:, 4000:], times[4000:])])
    writer.discard()
    assert not any((tmp_path / "corpus").iterdir())  # nothing half-written stays


@needs_data
def test_build_corpus_refuses_a_renamed_copy_in_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from models.soter.training.train import main
    from protocols.datasets.folder import write_folder_dataset

    monkeypatch.setenv(leakage.SHARED_DATA_ENV, str(DATA))
    values, rate = _mitbih_100(20.0)
    write_folder_dataset(_dataset("holter-clip", values * 1000.0, rate, ("ECG", "ECG2")), tmp_path / "clip")
    out = tmp_path / "corpus"
    code = main(["build-corpus", "--out", str(out), "--synthetic-subjects", "0", "--folder", str(tmp_path / "clip")])
    assert code == 2
    error = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "holter-clip/rec-1 channel 'ECG' is a copy of MIT-BIH 100 (evaluation)" in error[0]
    assert not list(out.iterdir())


@needs_data
def test_a_resampled_copy_of_a_selection_set_recording_is_refused(guard):
    held = next(s for s in selection_set.SETS if s.name == "sel-challenge2015-a103l")
    ds = selection_set.load_set(held, DATA)
    values = _crop(ds.recordings[0].values, ds.sampling_rate, 100.0, 40.0)
    copy = _dataset("ppg-study", resample_poly(values, 64, 125, axis=-1), 128.0, ("lead", "lead2", "pleth"))
    with pytest.raises(CorpusError, match="is a copy of selection-set sel-challenge2015-a103l"):
        check_not_copy(copy, guard)


@needs_data
@pytest.mark.parametrize("source", ["biosppy-examples/emg.txt", "biosppy-examples/pcg.txt", "wfdb/s0010_re",
                                    "wfdb-python-sample/p10143"])
def test_training_recordings_are_accepted(guard, source):
    """Real recordings the corpus reads (not evaluation, not held out): no false positive."""
    if source.startswith("biosppy"):
        from models.soter.training.sources.biosppy_text import read_text

        channels, rate, values = read_text(DATA / source)
    else:
        import wfdb

        r = wfdb.rdrecord(str(DATA / source))
        channels, rate, values = tuple(r.sig_name), float(r.fs), np.asarray(r.p_signal, dtype=np.float64).T
    check_not_copy(_dataset("training", _crop(np.asarray(values, dtype=np.float64), rate, 0.0, 30.0), rate,
                            tuple(channels)), guard)


@needs_data
def test_the_library_and_its_verdicts_are_deterministic(library, guard, tmp_path_factory):
    cached = load_library(DATA, cache=tmp_path_factory.getbasetemp() / "leakage0")  # read back from the file
    assert cached.names == library.names and cached.missing == library.missing
    np.testing.assert_array_equal(cached.values, library.values)
    np.testing.assert_array_equal(cached.starts, library.starts)
    values, rate = _mitbih_100(20.0)
    first = guard.match("copy", ("a", "b"), values, rate)
    assert first is not None and first == Guard(cached).match("copy", ("a", "b"), values, rate)
    assert any("MIT-BIH 100" in label for label, _ in library.names)
    assert any(label.startswith("selection-set sel-mimic") for label, _ in library.names)
    assert any(label.startswith("the embedded evaluation cohort") for label, _ in library.names)


def test_the_guard_refuses_a_copy_of_the_embedded_cohort_and_not_another_seed():
    """Without the shared data: a library of the embedded cohort alone still finds a resampled, rescaled copy of
    one of its recordings, and not the synthetic corpus stream (other seeds, the same simulators)."""
    from models.soter.training.corpus import synthetic_stream
    from protocols.datasets.synthetic import load_synthetic_cohort

    cohort = load_synthetic_cohort()
    rec = cohort.recordings[4]
    references = [("cohort " + rec.name, ch, v.astype(np.float32))
                  for ch, v in zip(cohort.channels, leakage.resample(rec.values, cohort.sampling_rate))]
    guard = Guard(Library.of(references, []))
    copy = resample_poly(_crop(rec.values, cohort.sampling_rate, 10.0, 30.0), 4, 1, axis=-1) * 2 + 1  # 256 Hz
    found = guard.match("copy", cohort.channels, copy, 4 * cohort.sampling_rate)
    assert found is not None and found.reference == "cohort " + rec.name and found.channel == found.reference_channel
    assert abs(found.at - 10.0) <= 1 / leakage.RATE
    other = synthetic_stream(n_subjects=2, seconds_per_state=20, seed=1000)
    for r in other.recordings:
        assert guard.match(r.name, other.channels, r.values, other.sampling_rate) is None, r.name


def test_the_library_lists_what_it_could_not_read(tmp_path):
    """A source missing here is named in the summary, never faked."""
    library = build_library(tmp_path)  # an empty data folder: only the embedded and packaged sources remain
    assert any(m.startswith("MIT-BIH 100") for m in library.missing)
    assert any(m.startswith("scipy.datasets") for m in library.missing)
    assert all(not label.startswith("MIT-BIH") for label, _ in library.names)
    assert "not available here" in library.summary()
