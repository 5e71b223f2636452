"""Pre-training corpus readers on fixtures in each native layout, checked value by value, and the
streaming corpus writer."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from models.soter.training.corpus import CorpusError, CorpusWriter, open_corpus
from models.soter.training.sources import read_source, synthetic

WFDB = Path(__file__).resolve().parents[3] / "shared" / "data" / "wfdb"
needs_wfdb = pytest.mark.skipif(not (WFDB / "03700181.hea").is_file(), reason=f"real WFDB records not found at {WFDB}")


def _collect(rec):
    parts = list(rec.chunks)
    return np.concatenate([v for v, _ in parts], axis=1), np.concatenate([t for _, t in parts])


@needs_wfdb
def test_mimic3wdb_multi_segment_records(tmp_path):
    import wfdb

    icu = wfdb.rdrecord(str(WFDB / "03700181"))  # ECG MCL1, ABP, RESP at 125 Hz
    folder = tmp_path / "matched" / "p00" / "p000020"
    folder.mkdir(parents=True)
    sig = icu.p_signal[:3000]
    wfdb.wrsamp("3544749_0001", fs=125, units=icu.units, sig_name=icu.sig_name, p_signal=sig[:1000],
                fmt=["16"] * 3, adc_gain=[200.0] * 3, baseline=[0] * 3, write_dir=str(folder))
    wfdb.wrsamp("3544749_0002", fs=125, units=["mV", "NU"], sig_name=["II", "PLETH"], p_signal=sig[1000:3000, :2],
                fmt=["16"] * 2, adc_gain=[200.0] * 2, baseline=[0] * 2, write_dir=str(folder))
    (folder / "p000020-2183-04-28-17-47.hea").write_text(
        "p000020-2183-04-28-17-47/4 3 125 3250\n3544749_layout 0\n3544749_0001 1000\n~ 250\n3544749_0002 2000\n")
    (folder / "p000020-2183-04-28-17-47n.hea").write_text("p000020-2183-04-28-17-47n 1 1 10\n")  # numerics: skipped
    recs = list(read_source("mimic3wdb", tmp_path))
    assert [r.name for r in recs] == ["3544749_0001", "3544749_0002"]
    assert recs[0].channels == ("RESP", "ABP")  # the wanted order
    assert recs[1].channels == ("II", "PLETH")
    assert recs[0].dataset != recs[1].dataset and {r.subject for r in recs} == {"p000020"}
    values, times = _collect(recs[0])
    full = wfdb.rdrecord(str(folder / "3544749_0001")).p_signal.T
    expected = full[[2, 1]]
    np.testing.assert_array_equal(values, expected)
    values, times = _collect(recs[1])
    assert times[0] == pytest.approx(1250 / 125) and np.allclose(np.diff(times), 1 / 125)  # after segment 1 and the gap
    (folder / "3544749_0002.hea").write_text("garbage\n")
    with pytest.raises(CorpusError, match="3544749_0002"):
        list(read_source("mimic3wdb", tmp_path))


def test_sleep_edf_groups_rates_and_names_subjects(tmp_path):
    pyedflib = pytest.importorskip("pyedflib")
    path = tmp_path / "sleep-cassette" / "SC4001E0-PSG.edf"
    path.parent.mkdir()
    rng = np.random.default_rng(0)
    signals = [rng.normal(0, 20, 3000), rng.normal(0, 20, 3000), rng.normal(0, 5, 30), np.zeros(30)]
    labels = ["EEG Fpz-Cz", "EEG Pz-Oz", "Resp oro-nasal", "Event marker"]
    rates = [100, 100, 1, 1]
    with pyedflib.EdfWriter(str(path), 4, file_type=pyedflib.FILETYPE_EDFPLUS) as w:
        w.setSignalHeaders([{"label": lab, "dimension": "uV", "sample_frequency": fs, "physical_max": 100,
                             "physical_min": -100, "digital_max": 32767, "digital_min": -32768}
                            for lab, fs in zip(labels, rates)])
        w.writeSamples(signals)
    recs = list(read_source("sleep-edf", tmp_path))
    assert len(recs) == 1 and recs[0].channels == ("EEG Fpz-Cz", "EEG Pz-Oz") and recs[0].subject == "SC400"
    values, times = _collect(recs[0])
    with pyedflib.EdfReader(str(path)) as f:
        np.testing.assert_array_equal(values, np.stack([f.readSignal(0), f.readSignal(1)]))
    np.testing.assert_allclose(values, np.stack(signals[:2]), atol=200 / 65535)  # 16-bit quantisation
    assert times[1] == pytest.approx(0.01)
    both = list(read_source("sleep-edf", tmp_path, all_rates=True))
    assert [r.channels for r in both] == [("EEG Fpz-Cz", "EEG Pz-Oz"), ("Resp oro-nasal",)]  # event marker dropped
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(CorpusError, match="SC4001E0-PSG.edf: unreadable EDF"):
        list(read_source("sleep-edf", tmp_path))


def test_ptbxl_reads_the_database_table(tmp_path):
    import wfdb

    rng = np.random.default_rng(1)
    rows = []
    for ecg_id, patient in ((1, 15709.0), (2, 15709.0), (3, 13243.0)):
        sub = tmp_path / "records500" / "00000"
        sub.mkdir(parents=True, exist_ok=True)
        name = f"{ecg_id:05d}_hr"
        wfdb.wrsamp(name, fs=500, units=["mV"] * 2, sig_name=["I", "II"], p_signal=rng.normal(0, 1, (5000, 2)),
                    fmt=["16"] * 2, adc_gain=[1000.0] * 2, baseline=[0] * 2, write_dir=str(sub))
        rows.append({"ecg_id": ecg_id, "patient_id": patient, "filename_lr": f"records100/00000/{ecg_id:05d}_lr",
                     "filename_hr": f"records500/00000/{name}"})
    pd.DataFrame(rows).to_csv(tmp_path / "ptbxl_database.csv", index=False)
    recs = list(read_source("ptb-xl", tmp_path))
    assert [r.subject for r in recs] == ["15709", "15709", "13243"] and recs[0].channels == ("I", "II")
    values, _ = _collect(recs[2])
    np.testing.assert_array_equal(values, wfdb.rdrecord(str(tmp_path / "records500/00000/00003_hr")).p_signal.T)
    with pytest.raises(CorpusError, match="00001_lr: unreadable WFDB record"):
        list(read_source("ptb-xl", tmp_path, rate=100))


@needs_wfdb
def test_chapman_reads_wfdb_with_mat_signals(tmp_path):
    import wfdb

    folder = tmp_path / "WFDBRecords" / "01" / "010"
    folder.mkdir(parents=True)
    for ext in ("hea", "mat"):  # a103l is a WFDB header with a MATLAB signal file, as in Chapman
        shutil.copy(WFDB / f"a103l.{ext}", folder)
    (rec,) = read_source("chapman-ecg", tmp_path)
    values, times = _collect(rec)
    np.testing.assert_array_equal(values, wfdb.rdrecord(str(WFDB / "a103l")).p_signal.T)
    assert rec.subject == "a103l" and times[-1] == pytest.approx((values.shape[1] - 1) / 250)


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_wesad_reads_chest_signals_and_refuses_foreign_classes(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    n = 1400
    chest = {"ACC": rng.normal(size=(n, 3)), **{k: rng.normal(size=(n, 1)) for k in ("ECG", "EMG", "EDA", "Temp", "Resp")}}
    (tmp_path / "S2").mkdir()
    with open(tmp_path / "S2" / "S2.pkl", "wb") as f:
        pickle.dump({"signal": {"chest": chest, "wrist": {}}, "label": np.zeros(n), "subject": "S2"}, f)
    (rec,) = read_source("wesad", tmp_path)
    values, times = _collect(rec)
    assert rec.channels[:3] == ("ACC_x", "ACC_y", "ACC_z") and rec.subject == "S2"
    np.testing.assert_array_equal(values[:3], chest["ACC"].T)
    np.testing.assert_array_equal(values[3], chest["ECG"][:, 0])
    assert times[1] == pytest.approx(1 / 700)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "S3").mkdir()
    (tmp_path / "S3" / "S3.pkl").write_bytes(pickle.dumps({"signal": {"chest": _Evil()}}))
    with pytest.raises(CorpusError, match="refusing to unpickle"):
        list(read_source("wesad", tmp_path))
    assert not (tmp_path / "pwned").exists()
    (tmp_path / "S3" / "S3.pkl").write_bytes(pickle.dumps({"signal": {"chest": chest}})[:50])
    with pytest.raises(CorpusError, match="S3.pkl: truncated or corrupt"):
        list(read_source("wesad", tmp_path))


def test_opensignals_text_with_two_devices_and_hdf5(tmp_path):
    header = {"A": {"sensor": ["ECG"], "column": ["nSeq", "DI", "CH1"], "label": ["CH1"], "sampling rate": 1000},
              "B": {"sensor": ["EDA", "RESP"], "column": ["nSeq", "DI", "CH1", "CH2"], "label": ["CH1", "CH2"],
                    "sampling rate": 1000}}
    rows = "".join(f"{i}\t0\t{100 + i}\t{i}\t0\t{200 + i}\t{300 + i}\n" for i in range(50))
    (tmp_path / "clip.txt").write_text("# OpenSignals Text File Format\n# " + json.dumps(header) + "\n# EndOfHeader\n"
                                       + rows)
    (tmp_path / "notes.txt").write_text("not a recording\n")
    (rec,) = read_source("opensignals", tmp_path)
    values, times = _collect(rec)
    assert rec.channels == ("ECG:CH1", "EDA:CH1", "RESP:CH2")
    np.testing.assert_array_equal(values[:, 3], [103, 203, 303])
    assert times[1] == pytest.approx(0.001)
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "other.h5", "w") as f:
        dev = f.create_group("00:07")
        dev.attrs["sampling rate"] = 100
        ch = dev.create_dataset("raw/channel_1", data=np.arange(30).reshape(-1, 1))
        ch.attrs["sensor"], ch.attrs["label"] = "BVP", "CH1"
    recs = list(read_source("opensignals", tmp_path))
    assert [r.channels for r in recs] == [("ECG:CH1", "EDA:CH1", "RESP:CH2"), ("BVP:CH1",)]
    np.testing.assert_array_equal(_collect(recs[1])[0][0], np.arange(30))
    (tmp_path / "clip.txt").write_text("# OpenSignals Text File Format\n# {broken\n# EndOfHeader\n")
    with pytest.raises(CorpusError, match="clip.txt: corrupt JSON header"):
        list(read_source("opensignals", tmp_path))


def test_unknown_source_and_missing_root_are_errors(tmp_path):
    with pytest.raises(CorpusError, match="unknown corpus source 'mimic'"):
        read_source("mimic", tmp_path)
    with pytest.raises(CorpusError, match="does not exist"):
        read_source("ptb-xl", tmp_path / "nowhere")


def test_streamed_chunks_equal_one_piece_and_minmax_spans_the_dataset(tmp_path, monkeypatch):
    import models.soter.training.corpus as corpus

    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 1000)), rng.normal(size=(2, 500)) * 3
    ta, tb = np.arange(1000) / 10.0, np.arange(500) / 10.0
    whole = CorpusWriter(tmp_path / "whole")
    whole.add("demo", ("x", "y"), "s1", "a", [(a, ta)])
    whole.add("demo", ("x", "y"), "s2", "b", [(b, tb)])
    whole.close()
    monkeypatch.setattr(corpus, "CHUNK", 64)  # normalise in many small passes
    parts = CorpusWriter(tmp_path / "parts")
    parts.add("demo", ("x", "y"), "s1", "a", [(a[:, i:i + 97], ta[i:i + 97]) for i in range(0, 1000, 97)])
    parts.add("demo", ("x", "y"), "s2", "b", [(b, tb)])
    parts.close()
    (w,), (p,) = open_corpus(tmp_path / "whole"), open_corpus(tmp_path / "parts")
    np.testing.assert_array_equal(np.asarray(w.values), np.asarray(p.values))
    both = np.concatenate([a, b], axis=1)
    lo, hi = both.min(axis=1, keepdims=True), both.max(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(p.values), (both - lo) / (hi - lo), atol=1e-6)
    assert list(p.lengths) == [1000, 500] and json.loads((tmp_path / "parts/demo/index.json").read_text())[
        "subjects"] == ["s1", "s2"]


def test_writer_errors(tmp_path):
    w = CorpusWriter(tmp_path)
    with pytest.raises(CorpusError, match="evaluation dataset"):
        w.add("mitbih[lead1]", ("a",), "s", "r", [(np.zeros((1, 3)), np.arange(3.0))])
    w.add("d", ("a",), "s", "r", [(np.zeros((1, 3)), np.arange(3.0))])
    with pytest.raises(CorpusError, match="channels"):
        w.add("d", ("a", "b"), "s", "r2", [(np.zeros((2, 3)), np.arange(3.0))])
    with pytest.raises(CorpusError, match="strictly increasing"):
        w.add("d", ("a",), "s", "r3", [(np.zeros((1, 3)), np.arange(3.0)), (np.zeros((1, 3)), np.arange(3.0))])
    long_key = "opensignals-eeg[" + ",".join(f"ch{i}" for i in range(64)) + "@160Hz]"
    w.add(long_key, ("a",), "s", "r", [(np.ones((1, 3)), np.arange(3.0))])
    folders = w.close()
    assert all(len(f.name) <= 96 for f in folders) and not list(tmp_path.glob(".tmp-*"))


def test_synthetic_stream_varies_rates_and_sampling():
    recs = list(synthetic.read(n_subjects=4, seconds_per_state=5, seed=1000, rates=(32.0, 64.0)))
    keys = sorted({r.dataset for r in recs})
    assert len(keys) == 2 and any("irregular" in k for k in keys)
    regular = next(r for r in recs if "@32Hz,regular" in r.dataset)
    odd = next(r for r in recs if "irregular" in r.dataset)
    _, t_reg = _collect(regular)
    _, t_irr = _collect(odd)
    assert np.allclose(np.diff(t_reg), 1 / 32) and t_irr.size < 5 * 64 * 0.9
    assert (np.diff(t_irr) > 0).all() and np.diff(t_irr).std() > 0.1 / 64
    assert all(r.subject.startswith("seed100") for r in recs)
    again = list(synthetic.read(n_subjects=4, seconds_per_state=5, seed=1000, rates=(32.0, 64.0)))
    np.testing.assert_array_equal(_collect(recs[0])[0], _collect(again[0])[0])


def test_sampler_draws_datasets_by_size_unless_uniform(tmp_path):
    from models.soter.training.sampler import WindowSampler

    w = CorpusWriter(tmp_path)
    w.add("big", ("x",), "s", "r", [(np.random.default_rng(0).normal(size=(1, 10_000)), np.arange(10_000.0))])
    w.add("small", ("x",), "s", "r", [(np.random.default_rng(1).normal(size=(1, 200)), np.arange(200.0))])
    w.close()
    datasets = open_corpus(tmp_path)
    by_size = WindowSampler(datasets, 99, 1, seed=0)
    uniform = WindowSampler(datasets, 99, 1, seed=0, dataset_weighting="uniform")
    share = np.mean([by_size.batch(s).dataset == "small" for s in range(400)])
    assert share < 0.05  # 101 of 10,003 window starts
    assert 0.35 < np.mean([uniform.batch(s).dataset == "small" for s in range(400)]) < 0.65
    with pytest.raises(ValueError, match="dataset_weighting"):
        WindowSampler(datasets, 99, 1, seed=0, dataset_weighting="temperature")
