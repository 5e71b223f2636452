"""The paper's six datasets: loaders on fixtures in each native layout, checked value by value,
MIT-BIH on the real record 100, and clear errors on broken input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from protocols.data import DatasetError
from protocols.datasets import all_datasets, load_dataset
from protocols.datasets.check import check_dataset
from protocols.splits import loso_folds

WFDB = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "wfdb"
needs_wfdb = pytest.mark.skipif(not (WFDB / "100.hea").is_file(),
                                reason=f"real WFDB records not found at {WFDB} (../shared/data/wfdb beside the checkout)")


def test_six_datasets_registered_and_read_from_a_data_root():
    specs = all_datasets()
    for name in ("heartrate", "mitbih", "scientisst-move", "ieee-ppg", "mmash", "wdd"):
        assert specs[name].needs_root, name
        with pytest.raises(DatasetError, match="pass --data-root"):
            load_dataset(name)


def test_missing_dataset_folder_says_how_to_get_it(tmp_path):
    with pytest.raises(DatasetError, match=r"wdd: folder .*wdd does not exist; `python -m harness data download wdd"):
        load_dataset("wdd", data_root=tmp_path)


# -- MIT-BIH -----------------------------------------------------------------------------------
@needs_wfdb
def test_mitbih_record_100_equals_wfdb_and_one_subject_is_refused_by_loso():
    import wfdb

    ds = load_dataset("mitbih", data_root=WFDB)  # the folder holds record 100 and non-MIT-BIH records
    ref = wfdb.rdrecord(str(WFDB / "100"))
    assert ds.channels == ("lead1", "lead2") and ds.sampling_rate == 360.0 and ds.subjects == ("100",)
    (rec,) = ds.recordings
    assert rec.values.shape == (2, 650000)
    np.testing.assert_array_equal(rec.values, ref.p_signal.T)
    np.testing.assert_array_equal(rec.timestamps, np.arange(650000) / 360)
    assert ds.metadata["leads"] == {"100": ["MLII", "V5"]}
    with pytest.raises(DatasetError, match="leave-one-subject-out needs at least two"):
        loso_folds(ds)
    one = load_dataset("mitbih", data_root=WFDB, channels=("lead2",))
    np.testing.assert_array_equal(one.recordings[0].values[0], ref.p_signal[:, 1])
    with pytest.raises(DatasetError, match=r"unknown channel\(s\) \['V5'\]"):
        load_dataset("mitbih", data_root=WFDB, channels=("V5",))


def test_mitbih_201_and_202_are_one_person(tmp_path):
    import wfdb

    folder = tmp_path / "mitbih"
    folder.mkdir()
    sig = np.round(np.random.default_rng(0).normal(size=(720, 2)), 2)
    for name in ("201", "202", "203"):
        wfdb.wrsamp(name, fs=360, units=["mV", "mV"], sig_name=["MLII", "V1"], p_signal=sig, fmt=["212", "212"],
                    adc_gain=[200, 200], baseline=[0, 0], write_dir=str(folder))
    ds = load_dataset("mitbih", data_root=tmp_path)
    assert [r.subject for r in ds.recordings] == ["201", "201", "203"] and ds.subjects == ("201", "203")
    np.testing.assert_allclose(ds.recordings[0].values, sig.T, atol=1e-12)
    (folder / "203.dat").write_bytes(b"\x00" * 10)  # truncated
    with pytest.raises(DatasetError, match="203: unreadable WFDB record"):
        load_dataset("mitbih", data_root=tmp_path)


# -- HeartRate (.ts and raw bidmc) -------------------------------------------------------------
def _write_ts(path: Path, name: str, series: list[np.ndarray], targets: list[float]) -> None:
    lines = ["#comment", f"@problemName {name}", "@timeStamps false", "@missing false", "@univariate false",
             f"@dimensions {series[0].shape[0]}", "@equalLength true", f"@seriesLength {series[0].shape[1]}",
             "@targetlabel true", "@data"]
    lines += [":".join(",".join(repr(float(v)) for v in dim) for dim in s) + f":{t}" for s, t in zip(series, targets)]
    path.write_text("\n".join(lines) + "\n")


def test_heartrate_ts_files_value_by_value(tmp_path):
    folder = tmp_path / "heartrate"
    folder.mkdir()
    rng = np.random.default_rng(1)
    train = [rng.normal(size=(2, 12)) for _ in range(3)]
    test = [rng.normal(size=(2, 12)) for _ in range(2)]
    _write_ts(folder / "BIDMC32HR_TRAIN.ts", "BIDMC32HR", train, [71.5, 80.0, 64.25])
    _write_ts(folder / "BIDMC32HR_TEST.ts", "BIDMC32HR", test, [90.0, 55.0])
    ds = load_dataset("heartrate", data_root=tmp_path)
    assert ds.channels == ("ppg",) and ds.sampling_rate == 125.0 and ds.subjects == ("test", "train")
    assert [r.name for r in ds.recordings] == ["test-00000", "test-00001", "train-00000", "train-00001", "train-00002"]
    for rec, s in zip(ds.recordings, test + train):
        np.testing.assert_array_equal(rec.values, s[:1])
        np.testing.assert_array_equal(rec.timestamps, np.arange(12) / 125)
    assert ds.metadata["targets"]["train-00002"] == 64.25
    other = load_dataset("heartrate", data_root=tmp_path, ts_dimension=1, ts_subjects="series")
    np.testing.assert_array_equal(other.recordings[0].values, test[0][1:])
    assert len(other.subjects) == 5
    with pytest.raises(DatasetError, match="no dimension"):
        load_dataset("heartrate", data_root=tmp_path, ts_dimension=2)
    text = (folder / "BIDMC32HR_TEST.ts").read_text()
    (folder / "BIDMC32HR_TEST.ts").write_text(text.replace(repr(float(test[1][0, 3])), "abc"))
    with pytest.raises(DatasetError, match=r"BIDMC32HR_TEST.ts, line 12: not a number"):
        load_dataset("heartrate", data_root=tmp_path)
    (folder / "BIDMC32HR_TEST.ts").write_text(text.split("@data")[0])  # truncated before the data
    with pytest.raises(DatasetError, match=r"BIDMC32HR_TEST.ts: no @data line"):
        load_dataset("heartrate", data_root=tmp_path)
    report = check_dataset("heartrate", tmp_path)
    assert (report.present, report.corrupt) == (["BIDMC32HR_TRAIN.ts"], ["BIDMC32HR_TEST.ts"])


def _bidmc_csv(path: Path, sig: np.ndarray) -> None:
    """The layout of the real bidmc_NN_Signals.csv (../shared/data/paper-samples): this header, with its
    spaces, and every number, time included, printed to 5 significant digits (``100.01``, ``-0.015686``)."""
    rows = [",".join(f"{v:.5g}" for v in (i / 125, *row)) for i, row in enumerate(sig)]
    path.write_text("\n".join(["Time [s], RESP, PLETH, V, AVR, II", *rows]) + "\n")


def test_heartrate_raw_bidmc_wfdb_and_csv(tmp_path):
    import wfdb

    folder = tmp_path / "heartrate"
    folder.mkdir()
    sig = np.round(np.random.default_rng(2).uniform(0, 1, size=(250, 5)), 3)
    names = ["RESP,", "PLETH,", "V,", "AVR,", "II,"]  # bidmc headers carry a trailing comma
    for rec in ("bidmc01", "bidmc02"):
        wfdb.wrsamp(rec, fs=125, units=["NU"] * 5, sig_name=names, p_signal=sig, fmt=["16"] * 5,
                    adc_gain=[1000.0] * 5, baseline=[0] * 5, write_dir=str(folder))
    ds = load_dataset("heartrate", data_root=tmp_path)
    ref = wfdb.rdrecord(str(folder / "bidmc01"))
    assert ds.channels == ("ppg",) and ds.subjects == ("bidmc01", "bidmc02") and ds.metadata["source"] == "bidmc"
    np.testing.assert_array_equal(ds.recordings[0].values[0], ref.p_signal[:, 1])
    two = load_dataset("heartrate", data_root=tmp_path, channels=("PLETH", "II"))
    assert two.channels == ("ppg", "ii")
    with pytest.raises(DatasetError, match=r"unknown bidmc channel\(s\) \['ECG'\]"):
        load_dataset("heartrate", data_root=tmp_path, channels=("ECG",))
    for p in folder.iterdir():
        p.unlink()
    (folder / "bidmc_csv").mkdir()
    centred = np.round(sig - 0.5, 3)  # negative values too, as in the real file
    _bidmc_csv(folder / "bidmc_csv" / "bidmc_07_Signals.csv", centred)
    ds = load_dataset("heartrate", data_root=tmp_path)
    assert ds.subjects == ("bidmc07",)
    np.testing.assert_array_equal(ds.recordings[0].values[0], centred[:, 1])
    np.testing.assert_array_equal(ds.recordings[0].timestamps, np.arange(250) / 125)


# -- IEEE PPG ----------------------------------------------------------------------------------
def _ieee_competition_folder(root: Path, rng: np.random.Generator, without: tuple[str, ...] = ()) -> dict:
    """The organisers' layout (as in the real files: folders, names, ``sig`` [6 or 5, T], ``BPM0`` [n, 1]):
    a training file, two test files of subjects S02 and S04, the extra training file of S04, and the
    truth file of each.  Returns ``sig`` by file stem."""
    from scipy.io import savemat

    sigs = {"DATA_01_TYPE01": rng.normal(size=(6, 40)), "TEST_S02_T01": rng.normal(size=(5, 30)),
            "TEST_S04_T02": rng.normal(size=(5, 20)), "DATA_S04_T01": rng.normal(size=(6, 25))}
    files = {"Training_data/DATA_01_TYPE01": sigs["DATA_01_TYPE01"], "Training_data/DATA_01_TYPE01_BPMtrace": None,
             "TestData/TEST_S02_T01": sigs["TEST_S02_T01"], "TrueBPM/True_S02_T01": None,
             "TestData/TEST_S04_T02": sigs["TEST_S04_T02"], "TrueBPM/True_S04_T02": None,
             "Extra_TrainingData/DATA_S04_T01": sigs["DATA_S04_T01"], "Extra_TrainingData/BPM_S04_T01": None}
    for name, sig in files.items():
        if Path(name).name in without:
            continue
        path = root / "ieee-ppg" / f"{name}.mat"
        path.parent.mkdir(parents=True, exist_ok=True)
        savemat(path, {"sig": sig} if sig is not None else {"BPM0": np.full((3, 1), 72.0)})
    (root / "ieee-ppg" / "Extra_TrainingData" / "Readme.txt").write_text(
        "The data format is the same as the one of training datasets.")
    return sigs


def test_ieee_ppg_mat_files_value_by_value(tmp_path):
    from scipy.io import savemat

    folder = tmp_path / "ieee-ppg"
    sigs = _ieee_competition_folder(tmp_path, np.random.default_rng(3))
    ds = load_dataset("ieee-ppg", data_root=tmp_path)
    assert ds.channels == ("ppg1", "ppg2", "acc_x", "acc_y", "acc_z") and ds.sampling_rate == 125.0
    assert [(r.subject, r.name) for r in ds.recordings] == [
        ("testS04", "DATA_S04_T01"), ("testS02", "TEST_S02_T01"), ("testS04", "TEST_S04_T02"),
        ("train01", "DATA_01_TYPE01")]
    for rec in ds.recordings:
        np.testing.assert_array_equal(rec.values, sigs[rec.name][-5:])
    np.testing.assert_array_equal(ds.recordings[3].timestamps, np.arange(40) / 125)
    assert ds.metadata["truth_files"] == {"DATA_S04_T01": "Extra_TrainingData/BPM_S04_T01.mat",
                                          "TEST_S02_T01": "TrueBPM/True_S02_T01.mat",
                                          "TEST_S04_T02": "TrueBPM/True_S04_T02.mat",
                                          "DATA_01_TYPE01": "Training_data/DATA_01_TYPE01_BPMtrace.mat"}
    with pytest.raises(DatasetError, match=r"TEST_S02_T01.mat: has no channel \['ecg'\]"):
        load_dataset("ieee-ppg", data_root=tmp_path, channels=("ecg", "ppg1"))
    report = check_dataset("ieee-ppg", tmp_path)
    assert report.present == ["DATA_01_TYPE01.mat", "TEST_S02_T01.mat", "TEST_S04_T02.mat"]
    assert len(report.missing) == 19
    raw = (folder / "TestData" / "TEST_S02_T01.mat").read_bytes()
    (folder / "TestData" / "TEST_S02_T01.mat").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DatasetError, match="TEST_S02_T01.mat: unreadable .mat file"):
        load_dataset("ieee-ppg", data_root=tmp_path)
    assert check_dataset("ieee-ppg", tmp_path).corrupt == ["TEST_S02_T01.mat"]
    savemat(folder / "TestData" / "TEST_S02_T01.mat", {"signal": sigs["TEST_S02_T01"]})
    with pytest.raises(DatasetError, match=r"TEST_S02_T01.mat: no variable 'sig' \(variables: \['signal'\]\)"):
        load_dataset("ieee-ppg", data_root=tmp_path)


def test_ieee_ppg_extra_training_file_is_test_subject_s04(tmp_path):
    """By the test set's Readme, SNN in a name is the subject number: DATA_S04_T01 (extra training data) and
    TEST_S04_T02 are one person, so one subject, tested together in one fold (they used to be two subjects)."""
    _ieee_competition_folder(tmp_path, np.random.default_rng(4), without=("BPM_S04_T01",))
    ds = load_dataset("ieee-ppg", data_root=tmp_path)
    assert ds.subjects == ("testS02", "testS04", "train01")
    assert {r.name: r.subject for r in ds.recordings}["DATA_S04_T01"] == "testS04"
    (fold,) = [f for f in loso_folds(ds) if f.test_subject == "testS04"]
    assert "testS04" not in fold.train_subjects


def test_ieee_ppg_a_file_name_outside_the_competition_set_is_named(tmp_path):
    from scipy.io import savemat

    _ieee_competition_folder(tmp_path, np.random.default_rng(5))
    savemat(tmp_path / "ieee-ppg" / "TestData" / "TEST_S02_T01_copy.mat", {"sig": np.zeros((5, 10))})
    with pytest.raises(DatasetError, match=r"TEST_S02_T01_copy.mat: not an IEEE SPC 2015 file name .* its subject is "
                                           "unknown"):
        load_dataset("ieee-ppg", data_root=tmp_path)


def test_ieee_ppg_ts_form(tmp_path):
    folder = tmp_path / "ieee-ppg"
    folder.mkdir()
    series = [np.random.default_rng(i).normal(size=(5, 16)) for i in range(2)]
    _write_ts(folder / "IEEEPPG_TRAIN.ts", "IEEEPPG", series, [100.0, 101.0])
    ds = load_dataset("ieee-ppg", data_root=tmp_path, channels=("ppg2", "acc_z"))
    np.testing.assert_array_equal(ds.recordings[1].values, series[1][[1, 4]])
    assert ds.subjects == ("train",) and ds.metadata["targets"] == {"train-00000": 100.0, "train-00001": 101.0}


# -- ScientISST MOVE ---------------------------------------------------------------------------
# The published layout, as the dataset authors' notebook prints csv/F408.csv (scientisst/ScientISST-MOVE,
# usage/csv.ipynb): an unnamed date-time column from 2000-01-01 00:00:00.000 in 2 ms steps, then these
# columns in this order (acc_e4 is z, x, y), then ``activities``; sensors that have not started are empty.
SCIENTISST_COLUMNS = ["ecg:dry", "ecg:gel", "eda:dry", "eda:gel", "emg:Left Bicep", "temp:temp",
                      "ppg:Left index finger", "ppg:Left Wrist", "acc_e4:z", "acc_e4:x", "acc_e4:y",
                      "acc_chest:x", "acc_chest:y", "acc_chest:z"]
# (centre, spread, decimals) of each column in the files' units: mV, uS, degC, g; PPG raw counts
SCIENTISST_SCALE = {"ecg": (0.0, 0.5, 6), "eda": (16.6, 0.02, 6), "emg": (1.5, 0.1, 3), "temp": (33.0, 0.1, 2),
                    "ppg": (2000.0, 100.0, 0), "acc_e4": (0.0, 0.5, 6), "acc_chest": (0.0, 0.5, 6)}


def _scientisst_values(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Values of the magnitudes and precision the real file shows (PPG: whole numbers about 1,800-2,100)."""
    out = np.empty((rows, len(SCIENTISST_COLUMNS)))
    for i, column in enumerate(SCIENTISST_COLUMNS):
        centre, spread, decimals = SCIENTISST_SCALE[column.split(":")[0]]
        out[:, i] = np.round(centre + spread * rng.normal(size=rows), decimals)
    return out


def _scientisst_csv(path: Path, values: np.ndarray, activities: list[str]) -> None:
    index = pd.date_range("2000-01-01", periods=values.shape[0], freq="2ms")
    frame = pd.DataFrame(values, index=index, columns=SCIENTISST_COLUMNS)
    frame["activities"] = activities
    frame.to_csv(path)  # first column: the unnamed date-time index, as in the published files


def test_scientisst_move_value_by_value(tmp_path):
    folder = tmp_path / "scientisst-move" / "csv"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(4)
    values = _scientisst_values(rng, 10)
    values[:2, [0, 1, 2, 5, 7]] = np.nan  # sensors not started yet, as at the start of F408
    values[3:5, :] = np.nan  # an interruption of every sensor
    values[7, 1] = np.nan
    acts = ["", "baseline,", "lift,", "lift,", "", "walk_before,", "walk_after,", "run,", "sprint,", "lift,run,"]
    _scientisst_csv(folder / "AP3H.csv", values, acts)
    _scientisst_csv(folder / "F408.csv", values[::-1].copy(), acts[::-1])
    ds = load_dataset("scientisst-move", data_root=tmp_path)
    assert ds.channels == ("ecg:gel", "eda:gel", "ppg:Left index finger", "temp:temp", "emg:Left Bicep")
    assert ds.subjects == ("AP3H", "F408") and ds.sampling_rate == 500.0 and len(ds.label_names) == 7
    rec = ds.recordings[0]
    cols = [SCIENTISST_COLUMNS.index(c) for c in ds.channels]
    np.testing.assert_array_equal(rec.values, values[:, cols].T)  # NaN where the file is empty
    np.testing.assert_allclose(rec.timestamps, np.arange(10) * 0.002, atol=1e-12)
    names = [ds.label_names[c] if c >= 0 else None for c in rec.labels]
    assert names == [None, "baseline", "lift", "lift", None, "walk", "walk", "run", None, None]
    assert ds.metadata["unmapped_activities"] == {"sprint": 2}
    custom = load_dataset("scientisst-move", data_root=tmp_path, channels=("acc_e4:x",),
                          activity_map={"lift": "active", "run": "active", "baseline": "rest"})
    assert custom.label_names == ("active", "rest") and custom.recordings[0].labels[-1] == 0
    np.testing.assert_array_equal(custom.recordings[0].values[0], values[:, 9])
    with pytest.raises(DatasetError, match=r"AP3H.csv: no column \['ecg'\]"):
        load_dataset("scientisst-move", data_root=tmp_path, channels=("ecg",))
    with pytest.raises(DatasetError, match=r"no file for subject\(s\) \['ZZZZ'\]"):
        load_dataset("scientisst-move", data_root=tmp_path, subjects=("ZZZZ",))
    text = (folder / "F408.csv").read_text().splitlines()
    (folder / "F408.csv").write_text("\n".join(text[:4] + ["2000-01-01 00:00:00.006,1.0,oops"] + text[5:]))
    with pytest.raises(DatasetError, match=r"F408.csv: column 'ecg:gel' line 5 is not a number"):
        load_dataset("scientisst-move", data_root=tmp_path)


# -- MMASH -------------------------------------------------------------------------------------
ACTIGRAPH = ["Axis1", "Axis2", "Axis3", "Steps", "HR", "Inclinometer Off", "Inclinometer Standing",
             "Inclinometer Sitting", "Inclinometer Lying", "Vector Magnitude", "day", "time"]


def _mmash_user(folder: Path, rows: list[tuple[int, str]], values: np.ndarray, activity: list[tuple]) -> None:
    folder.mkdir(parents=True)
    frame = pd.DataFrame(values, columns=ACTIGRAPH[:10])
    frame["day"] = [d for d, _ in rows]
    frame["time"] = [t for _, t in rows]
    frame.to_csv(folder / "Actigraph.csv")  # unnamed index column first, as published
    pd.DataFrame(activity, columns=["Activity", "Start", "End", "Day"]).to_csv(folder / "Activity.csv")


def test_mmash_value_by_value(tmp_path):
    base = tmp_path / "mmash" / "MMASH" / "DataPaper"
    rows = [(1, "23:59:57"), (1, "23:59:58"), (1, "23:59:58"), (2, "00:00:00"), (2, "00:00:01"), (2, "00:00:02")]
    values = np.arange(60.0).reshape(6, 10)
    # sleeping from 23:59 to 00:00 (crosses midnight), eating 7 (no class), heavy from 00:00 day 2,
    # one malformed row
    activity = [(1, "23:59", "00:00", 1), (7, "23:50", "23:59", 1), (6, "00:00", "00:01", 2), (3, None, "10:00", 1)]
    _mmash_user(base / "user_1", rows, values, activity)
    _mmash_user(base / "user_2", rows, values + 1, activity[:1])
    ds = load_dataset("mmash", data_root=tmp_path)
    assert ds.channels == ("Axis1", "Axis2", "Axis3", "Steps", "HR", "Vector Magnitude")
    assert ds.subjects == ("user_1", "user_2") and ds.sampling_rate == 1.0 and len(ds.label_names) == 6
    rec = ds.recordings[0]
    np.testing.assert_array_equal(rec.timestamps, np.arange(6.0))  # 23:59:57 .. 00:00:02 on a 1 Hz grid
    cols = [ACTIGRAPH.index(c) for c in ds.channels]
    expected = np.full((6, 6), np.nan)
    expected[:, [0, 1, 3, 4, 5]] = values[[0, 1, 3, 4, 5]][:, cols].T  # 23:59:59 missing; duplicate: first kept
    np.testing.assert_array_equal(rec.values, expected)
    assert [ds.label_names[c] for c in rec.labels] == ["sleeping"] * 3 + ["heavy movement"] * 3
    assert ds.metadata["duplicate_seconds"] == {"user_1": 1, "user_2": 1}
    assert ds.metadata["skipped_activity_rows"] == {"user_1": 1, "user_2": 0}
    alt = load_dataset("mmash", data_root=tmp_path, users=("user_2",), channels=("HR",),
                       label_map={1: "rest", 6: "active", 7: "rest"})
    assert alt.label_names == ("rest", "active") and alt.channels == ("HR",)
    with pytest.raises(DatasetError, match=r"no folder for user\(s\) \['user_3'\]"):
        load_dataset("mmash", data_root=tmp_path, users=("user_3",))
    with pytest.raises(DatasetError, match=r"Actigraph.csv: no column \['Heart Rate'\]"):
        load_dataset("mmash", data_root=tmp_path, channels=("Heart Rate",))
    (base / "user_2" / "Actigraph.csv").unlink()
    with pytest.raises(DatasetError, match=r"user_2/Actigraph.csv: missing"):
        load_dataset("mmash", data_root=tmp_path)
    (base / "user_2" / "Actigraph.csv").write_text("")
    with pytest.raises(DatasetError, match=r"user_2/Actigraph.csv: unreadable CSV"):
        load_dataset("mmash", data_root=tmp_path)


# -- WDD ---------------------------------------------------------------------------------------
def _empatica(path: Path, start: float, rate: float, data: np.ndarray) -> None:
    data = np.atleast_2d(data.T).T if data.ndim == 1 else data
    cols = data.shape[1]
    head = [", ".join([f"{start:.6f}"] * cols), ", ".join([f"{rate:.6f}"] * cols)]
    path.write_text("\n".join(head + [", ".join(f"{v:g}" for v in row) for row in data]) + "\n")


def _wdd_subject(folder: Path, t0: float, seed: int) -> dict[str, tuple[float, float, np.ndarray]]:
    rng = np.random.default_rng(seed)
    files = {"ACC": (t0, 32.0, rng.integers(-64, 64, size=(32 * 6, 3)).astype(float)),
             "BVP": (t0, 64.0, np.round(rng.normal(size=64 * 6), 2)),
             "EDA": (t0, 4.0, np.round(rng.uniform(0, 5, size=4 * 6), 3)),
             "TEMP": (t0, 4.0, np.round(rng.uniform(30, 33, size=4 * 6), 2)),
             "HR": (t0 + 2, 1.0, np.round(rng.uniform(60, 90, size=4), 2))}  # HR starts later, as on the E4
    folder.mkdir(parents=True)
    for stem, (start, rate, data) in files.items():
        _empatica(folder / f"{stem}.csv", start, rate, data)
    (folder / "IBI.csv").write_text(f"{t0}, IBI\n")
    (folder / "tags.csv").write_text("")
    return files


def test_wdd_value_by_value(tmp_path):
    base = tmp_path / "wdd" / "Wearable_Dataset"
    t0 = 1_600_000_000.0
    s01 = _wdd_subject(base / "STRESS" / "S01", t0, 0)
    _wdd_subject(base / "AEROBIC" / "S01", t0, 1)
    _wdd_subject(base / "ANAEROBIC" / "S02", t0, 2)
    ds = load_dataset("wdd", data_root=tmp_path)
    assert ds.channels == ("acc_x", "acc_y", "acc_z", "bvp", "eda", "temp", "hr") and ds.sampling_rate == 64.0
    assert [r.name for r in ds.recordings] == ["stress-S01", "aerobic-S01", "anaerobic-S02"]
    assert ds.subjects == ("S01", "S02") and ds.label_names == ("stress", "aerobic", "anaerobic")
    assert [int(r.labels[0]) for r in ds.recordings] == [0, 1, 2]
    rec = ds.recordings[0]
    # common span: from HR's start (t0 + 2) to the earliest end (HR: t0 + 5; ACC: t0 + 6 - 1/32 ...)
    assert rec.timestamps[0] == 0 and rec.timestamps[-1] == pytest.approx(3.0) and rec.n_samples == 3 * 64 + 1
    assert ds.metadata["start_unix"]["stress-S01"] == t0 + 2
    k = np.arange(rec.n_samples)
    np.testing.assert_array_equal(rec.values[3], s01["BVP"][2][128 + k])  # native rate: the samples themselves
    np.testing.assert_allclose(rec.values[0, ::2], s01["ACC"][2][64 + k[::2] // 2, 0])  # on ACC's own instants
    np.testing.assert_allclose(rec.values[0, 1::2], (s01["ACC"][2][64 + k[1::2] // 2, 0]
                                                     + s01["ACC"][2][65 + k[1::2] // 2, 0]) / 2)  # halfway: mean
    eda = s01["EDA"][2]
    np.testing.assert_allclose(rec.values[4, 8], eda[8] + (eda[9] - eda[8]) * 0.5)  # t = 2.125 s between samples
    np.testing.assert_allclose(rec.values[6, ::64], s01["HR"][2])
    slow = load_dataset("wdd", data_root=tmp_path, rate=32, channels=("bvp",), sessions=("STRESS",),
                        same_person_across_sessions=False)
    from scipy.signal import resample_poly

    decimated = resample_poly(s01["BVP"][2], 1, 2)
    np.testing.assert_allclose(slow.recordings[0].values[0], decimated)  # BVP alone: its whole span
    assert slow.subjects == ("stress-S01",)
    with pytest.raises(DatasetError, match=r"unknown channel\(s\) \['ppg'\]"):
        load_dataset("wdd", data_root=tmp_path, channels=("ppg",))
    (base / "AEROBIC" / "S01" / "BVP.csv").write_text(f"{t0}\n64.0\n")
    with pytest.raises(DatasetError, match=r"AEROBIC/S01/BVP.csv: truncated Empatica CSV"):
        load_dataset("wdd", data_root=tmp_path)
    (base / "AEROBIC" / "S01" / "BVP.csv").unlink()
    with pytest.raises(DatasetError, match=r"AEROBIC/S01/BVP.csv: missing"):
        load_dataset("wdd", data_root=tmp_path)
    (base / "AEROBIC" / "S01" / "BVP.csv").write_text(f"{t0}\n64.0\n1.0\n2.0\nx\n")
    with pytest.raises(DatasetError, match=r"BVP.csv: line 5 is not 1 number"):
        load_dataset("wdd", data_root=tmp_path)
    _empatica(base / "AEROBIC" / "S01" / "BVP.csv", t0 + 100, 64.0, np.zeros(64))
    with pytest.raises(DatasetError, match=r"AEROBIC/S01: the files .* do not overlap in time"):
        load_dataset("wdd", data_root=tmp_path)


def test_corrupt_or_missing_mitbih_records_are_named(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset("mitbih", data_root=tmp_path / "nowhere")
    (tmp_path / "mitbih").mkdir()
    with pytest.raises(DatasetError, match="no MIT-BIH record"):
        load_dataset("mitbih", data_root=tmp_path)
    (tmp_path / "mitbih" / "100.hea").write_text("100 2 360 650000\n100.dat 212 200 11 1024 995 -22131 0 MLII\n"
                                                 "100.dat 212 200 11 1024 1011 20052 0 V5\n")
    (tmp_path / "mitbih" / "100.dat").write_bytes(b"\x00" * 30)  # truncated
    with pytest.raises(DatasetError, match="100: unreadable WFDB record"):
        load_dataset("mitbih", data_root=tmp_path)
    with pytest.raises(DatasetError, match="pass --data-root"):
        load_dataset("mitbih")
