"""Corpus readers on the real files of ../shared/data (issue #26): MIMIC-III multi-segment records with
missing and duplicated segments, BioSPPy's text clips, a multi-frequency WFDB record."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.soter.training.corpus import CorpusError, wfdb_datasets
from models.soter.training.sources import read_source
from models.soter.training.sources.biosppy_text import read_text

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SAMPLE = DATA / "wfdb-python-sample"
BIOSPPY = DATA / "biosppy-examples"
needs_sample = pytest.mark.skipif(not (SAMPLE / "multi-segment").is_dir(), reason=f"{SAMPLE} not found")
needs_biosppy = pytest.mark.skipif(not (BIOSPPY / "ecg.txt").is_file(), reason=f"{BIOSPPY} not found")


@needs_sample
def test_mimic3wdb_skips_missing_segments_and_names_them(capsys):
    recs = list(read_source("mimic3wdb", SAMPLE / "multi-segment" / "s00001", channels=None))
    names = {r.name for r in recs}
    err = capsys.readouterr().err
    for missing in ("3975656_0009", "3975656_0010", "3975656_0011"):  # named in the master, no .dat here
        assert missing not in names
        assert f"skipped segment {missing}" in err and f"{missing}.dat missing" in err
    assert {"3975656_0005", "3975656_0006"} <= names  # the two long segments (2.0 h and 2.9 h)
    long = next(r for r in recs if r.name == "3975656_0005")
    assert long.channels == ("MCL1", "V") and long.subject == "s00001"


@needs_sample
def test_mimic3wdb_reads_a_fixed_layout_record_once_and_excludes(capsys):
    recs = list(read_source("mimic3wdb", SAMPLE / "multi-segment" / "fixed1", channels=None))
    assert [r.name for r in recs] == ["v102s_1"]  # its three segments name the same bytes of v102s.dat
    assert "the same signal data as segment v102s_1" in capsys.readouterr().err
    assert list(read_source("mimic3wdb", SAMPLE / "multi-segment", exclude=("s00001", "s25047", "fixed1"))) == []
    kept = {r.name for r in read_source("mimic3wdb", SAMPLE / "multi-segment" / "s25047", channels=None,
                                        exclude=("3234460_0016",))}
    assert "3234460_0016" not in kept and "3234460_0015" in kept


@needs_sample
def test_multi_frequency_record_split_by_rate():
    import wfdb

    averaged = {d.name: d for d in wfdb_datasets(SAMPLE, exclude=("p10143",))}
    assert list(averaged) == ["wfdb-mixedsignals"]  # wfdb's default: every signal at the frame rate
    split = {d.name: d for d in wfdb_datasets(SAMPLE, exclude=("p10143",), split_rates=True)}
    assert set(split) == {"wfdb-mixedsignals@62.4725Hz", "wfdb-mixedsignals@124.945Hz", "wfdb-mixedsignals@249.89Hz"}
    ecg = split["wfdb-mixedsignals@249.89Hz"]
    raw = wfdb.rdrecord(str(SAMPLE / "mixedsignals"), smooth_frames=False)
    assert ecg.channels == ("II", "III", "V")
    np.testing.assert_array_equal(ecg.recordings[0].values[0], raw.e_p_signal[0])
    assert np.allclose(np.diff(ecg.recordings[0].timestamps), 1 / 249.89)


@needs_biosppy
def test_biosppy_text_clips():
    labels, rate, values = read_text(BIOSPPY / "acc.txt")
    assert labels == ("acc_x", "acc_y", "acc_z") and rate == 100.0 and values.shape == (3, 2000)
    np.testing.assert_allclose(values[:, 0], [0.28467, -0.88965, 0.22266])
    labels, rate, values = read_text(BIOSPPY / "ecg.txt")
    assert labels == ("ECG",) and rate == 1000.0 and values.shape == (1, 15000)
    recs = list(read_source("biosppy", BIOSPPY))
    assert len(recs) == len(list(BIOSPPY.glob("*.txt")))
    emg = [r for r in recs if r.channels == ("EMG",)]
    assert len(emg) == 2 and len({r.dataset for r in emg}) == 1  # one signal type and rate: one dataset
    assert {r.subject for r in recs} == {p.stem for p in BIOSPPY.glob("*.txt")}


def test_biosppy_text_errors(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("# Simple Text Format\n# Labels:= ECG\n1.0\n2.0\n")
    with pytest.raises(CorpusError, match="x.txt: no '# Sampling Rate"):
        read_text(bad)
    bad.write_text("# Simple Text Format\n# Sampling Rate (Hz):= 100\n1.0\nabc\n")
    with pytest.raises(CorpusError, match="x.txt: non-numeric"):
        read_text(bad)
    bad.write_text("time,ecg\n1,2\n")
    with pytest.raises(CorpusError, match="not a BioSPPy text file"):
        read_text(bad)
