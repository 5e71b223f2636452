"""The loaders on real native files (../shared/data/paper-samples, README there): MIT-BIH record 105, the
raw BIDMC CSV of record 01, and part of the IEEE SPC 2015 set with every file kind the organisers published.

Read in place, never copied into the project (the IEEE files carry no licence); tests that need other
names or combinations build folders of symbolic links under tmp_path.  Every file is checked against an
independent reader (wfdb, the csv module, scipy.io), through the public ``load_dataset`` path.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from protocols.data import DatasetError
from protocols.datasets import load_dataset
from protocols.datasets.check import check_dataset
from protocols.splits import loso_folds

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SAMPLES = SHARED / "paper-samples"
WFDB = SHARED / "wfdb"
IEEE = SAMPLES / "ieee-ppg"
IEEE_FILES = ("Training_data/DATA_01_TYPE01.mat", "Training_data/DATA_01_TYPE01_BPMtrace.mat",
              "Training_data/DATA_02_TYPE02.mat", "Training_data/DATA_02_TYPE02_BPMtrace.mat",
              "TestData/TEST_S01_T01.mat", "TrueBPM/True_S01_T01.mat", "Extra_TrainingData/DATA_S04_T01.mat",
              "Extra_TrainingData/BPM_S04_T01.mat", "Extra_TrainingData/Readme.txt")


def _needs(*files: Path):
    missing = [str(f) for f in files if not f.is_file()]
    return pytest.mark.skipif(bool(missing), reason=f"real data files not found: {missing[:2]} (the staged copies "
                                                    "in ../shared/data beside the checkout)")


needs_105 = _needs(SAMPLES / "mitbih" / "105.hea", SAMPLES / "mitbih" / "105.dat")
needs_100_and_105 = _needs(SAMPLES / "mitbih" / "105.hea", WFDB / "100.hea", WFDB / "100.dat")
needs_bidmc = _needs(SAMPLES / "heartrate" / "bidmc_csv" / "bidmc_01_Signals.csv")
needs_ieee = _needs(*(IEEE / f for f in IEEE_FILES))


def _link(files: dict[str, Path], root: Path) -> Path:
    """A folder of symbolic links ``root/NAME -> file``: real files under other names, nothing copied."""
    for name, target in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).symlink_to(target.resolve())
    return root


# -- MIT-BIH -----------------------------------------------------------------------------------
@needs_105
def test_mitbih_record_105_loads_in_physical_units_and_passes_its_header_checksums():
    import wfdb

    ds = load_dataset("mitbih", data_root=SAMPLES)
    ref = wfdb.rdrecord(str(SAMPLES / "mitbih" / "105"))
    assert ds.subjects == ("105",) and ds.channels == ("lead1", "lead2") and ds.sampling_rate == 360.0
    assert ds.metadata["leads"] == {"105": ["MLII", "V1"]}
    (rec,) = ds.recordings
    assert rec.values.shape == (2, 650000)
    np.testing.assert_array_equal(rec.values, ref.p_signal.T)
    report = check_dataset("mitbih", SAMPLES)  # header lengths and checksums, then the loader
    assert report.ok and report.present == ["105"], report.problems


@needs_100_and_105
def test_mitbih_headers_give_each_person_age_and_sex_without_moving_the_fingerprint(tmp_path):
    """Record 100's header holds its age and sex after an unrelated comment line (``# unnecessary comment``);
    the committed mitbih-2records rows were keyed before the fields existed (data=20c59c926ded)."""
    from dataclasses import replace

    from protocols.data import dataset_fingerprint

    root = _link({f"{r}.{ext}": folder / f"{r}.{ext}" for r, folder in (("100", WFDB), ("105", SAMPLES / "mitbih"))
                  for ext in ("hea", "dat")}, tmp_path / "mitbih2")
    ds = load_dataset("mitbih", data_root=root)
    assert ds.metadata["subjects"] == {"100": {"age": 69, "sex": "M"}, "105": {"age": 73, "sex": "F"}}
    assert dataset_fingerprint(ds) == dataset_fingerprint(replace(ds, metadata={})) == "20c59c926ded"
    blocks = load_dataset("mitbih:blocks=6", data_root=root)
    assert blocks.metadata["subjects"]["105#6"] == {"age": 73, "sex": "F"}


@needs_100_and_105
def test_records_100_and_105_are_two_subjects_and_run_leave_one_subject_out(tmp_path, capsys):
    root = _link({f"{r}.{ext}": folder / f"{r}.{ext}" for r, folder in (("100", WFDB), ("105", SAMPLES / "mitbih"))
                  for ext in ("hea", "dat")}, tmp_path / "mitbih2")
    ds = load_dataset("mitbih", data_root=root)
    assert ds.subjects == ("100", "105") and ds.metadata["leads"] == {"100": ["MLII", "V5"], "105": ["MLII", "V1"]}
    folds = loso_folds(ds)
    assert [(f.test_subject, f.train_subjects) for f in folds] == [("100", ("105",)), ("105", ("100",))]
    out = tmp_path / "run"
    assert main(["run", "forecasting", "--dataset", "mitbih", "--data-root", str(root), "--models", "last-value",
                 "--settings", "48/24", "--max-windows-per-subject", "2", "--out", str(out), "--no-progress"]) == 0
    records = pd.read_csv(out / "records.csv", dtype={"fold": str})
    assert sorted(records["fold"]) == ["100", "105"] and set(records["status"]) == {"ok"}
    assert set(records["dataset"]) == {"mitbih"} and (records["n_windows"] == 2).all()
    assert "mitbih RMSE" in capsys.readouterr().out


# -- HeartRate: raw BIDMC CSV ------------------------------------------------------------------
@needs_bidmc
def test_bidmc_csv_record_01_equals_its_columns():
    path = SAMPLES / "heartrate" / "bidmc_csv" / "bidmc_01_Signals.csv"
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Time [s]", " RESP", " PLETH", " V", " AVR", " II"]  # the leading spaces the loader strips
    columns = {name.strip(): np.array([float(r[i]) for r in rows[1:]]) for i, name in enumerate(rows[0])}
    ds = load_dataset("heartrate", data_root=SAMPLES)
    assert ds.metadata["source"] == "bidmc" and ds.subjects == ("bidmc01",) and ds.channels == ("ppg",)
    (rec,) = ds.recordings
    assert rec.values.shape == (1, 60001)  # 8 min at 125 Hz, both ends included
    np.testing.assert_array_equal(rec.values[0], columns["PLETH"])
    # the assumed 125 Hz is the file's: its time column, printed to 5 significant digits (100.01 for 100.008)
    np.testing.assert_allclose(rec.timestamps, columns["Time [s]"], rtol=0, atol=0.005)
    three = load_dataset("heartrate", data_root=SAMPLES, channels=("PLETH", "II", "RESP"))
    assert three.channels == ("ppg", "ii", "resp")
    np.testing.assert_array_equal(three.recordings[0].values, np.stack([columns[c] for c in ("PLETH", "II", "RESP")]))


# -- IEEE SPC 2015 -----------------------------------------------------------------------------
def _sig(path: Path) -> np.ndarray:
    from scipy.io import loadmat

    return loadmat(path)["sig"]


@needs_ieee
def test_ieee_ppg_reads_the_staged_folder_whole_with_every_file_kind():
    """Training, test, truth and the organisers' extra training files side by side (the extra truth file
    BPM_S04_T01.mat used to be read as a recording, and the whole dataset failed)."""
    ds = load_dataset("ieee-ppg", data_root=SAMPLES)
    assert ds.channels == ("ppg1", "ppg2", "acc_x", "acc_y", "acc_z") and ds.sampling_rate == 125.0
    assert [(r.subject, r.name, r.values.shape[1]) for r in ds.recordings] == [
        ("testS04", "DATA_S04_T01", 27576), ("testS01", "TEST_S01_T01", 36452),
        ("train01", "DATA_01_TYPE01", 37937), ("train02", "DATA_02_TYPE02", 37850)]
    for rec, file in zip(ds.recordings, ds.metadata["files"]):
        sig = _sig(IEEE / file)
        np.testing.assert_array_equal(rec.values, sig[-5:])  # PPG1, PPG2, ACC x, y, z: the last five rows
    assert ds.metadata["truth_files"] == {
        "DATA_S04_T01": "Extra_TrainingData/BPM_S04_T01.mat", "TEST_S01_T01": "TrueBPM/True_S01_T01.mat",
        "DATA_01_TYPE01": "Training_data/DATA_01_TYPE01_BPMtrace.mat",
        "DATA_02_TYPE02": "Training_data/DATA_02_TYPE02_BPMtrace.mat"}
    with pytest.raises(DatasetError, match=r"TEST_S01_T01.mat: has no channel \['ecg'\]"):
        load_dataset("ieee-ppg", data_root=SAMPLES, channels=("ecg", "ppg1"))


def _person(name: str) -> tuple[str, int]:
    """The person a file name denotes, read independently of the loader: the test set's Readme numbers its
    subjects S01..S08 in every SNN name; the training set numbers its 12 subjects NN in DATA_NN_TYPEMM."""
    if m := re.search(r"_S(\d+)_T\d+", name):
        return ("test", int(m.group(1)))
    return ("train", int(re.fullmatch(r"DATA_(\d+)_TYPE\d+", name).group(1)))


@needs_ieee
def test_ieee_ppg_no_person_under_two_subject_ids(tmp_path):
    """DATA_S04_T01 (extra training data) is test subject S04's T01 session: with S04's T02 test file beside it
    (a link to another real test file under that name), both are one subject, on one side of every fold."""
    files = {f: IEEE / f for f in IEEE_FILES}
    files["TestData/TEST_S04_T02.mat"] = IEEE / "TestData" / "TEST_S01_T01.mat"
    files["TrueBPM/True_S04_T02.mat"] = IEEE / "TrueBPM" / "True_S01_T01.mat"
    ds = load_dataset("ieee-ppg", data_root=_link({f"ieee-ppg/{k}": v for k, v in files.items()}, tmp_path))
    ids_of: dict[tuple[str, int], set[str]] = {}
    people_of: dict[str, set[tuple[str, int]]] = {}
    for rec in ds.recordings:
        ids_of.setdefault(_person(rec.name), set()).add(rec.subject)
        people_of.setdefault(rec.subject, set()).add(_person(rec.name))
    assert all(len(ids) == 1 for ids in ids_of.values()), ids_of
    assert all(len(people) == 1 for people in people_of.values()), people_of
    assert ids_of[("test", 4)] == {"testS04"} and len(ds.recordings) == 5 and len(ds.subjects) == 4
    for fold in loso_folds(ds):
        sides = [{r.name for r in ds.recordings_of(s)} for s in (fold.train_subjects, (fold.test_subject,))]
        assert not ({"DATA_S04_T01", "TEST_S04_T02"} & sides[0] and {"DATA_S04_T01", "TEST_S04_T02"} & sides[1])
    assert ds.metadata["truth_files"]["TEST_S04_T02"] == "TrueBPM/True_S04_T02.mat"


@needs_ieee
def test_ieee_ppg_data_check_reads_the_staged_competition_files(tmp_path):
    report = check_dataset("ieee-ppg", SAMPLES)
    assert report.present == ["DATA_01_TYPE01.mat", "DATA_02_TYPE02.mat", "TEST_S01_T01.mat"] and not report.corrupt
