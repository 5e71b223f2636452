"""Values and timestamps that would silently distort results are refused or skipped (hardening #7, #8, #14):
input values beyond float32 are refused on load, a manifest rate the timestamps contradict is refused, and
windows spanning a time gap are skipped and counted like windows touching a missing value."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from protocols.data import FLOAT32_MAX, Dataset, DatasetError, Recording
from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
from protocols.specs import SamplingSpec, Setting
from protocols.windows import GAP_FACTOR, extract, select_windows
from tests.conftest import make_dataset
from tests.test_datasets_folder import _error  # the folder loader's error message, one helper for both files

HEAD = 'name = "mine"\nchannels = ["ecg", "ppg"]\n'


def _folder(path: Path, csv: str, head: str = HEAD) -> Path:
    """A one-file dataset folder (plus a second subject so that the manifest is a normal one)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "a.csv").write_text(csv)
    (path / "b.csv").write_text("time,ecg,ppg\n0,1,1\n0.5,1,1\n1,1,1\n")
    (path / "dataset.toml").write_text(head + '[[recordings]]\nfile = "a.csv"\nsubject = "A"\n'
                                       '[[recordings]]\nfile = "b.csv"\nsubject = "B"\n')
    return path


# -- #7: values beyond float32 --------------------------------------------------------------------------
@pytest.mark.parametrize("cell, what", [
    ("1e300", "value 1e+300 beyond the float32 range"),
    ("-3.5e38", "value -3.5e+38 beyond the float32 range"),
    ("-inf", "infinite value"),
])
def test_values_beyond_float32_are_refused_naming_file_column_and_row(tmp_path, cell, what):
    folder = _folder(tmp_path, f"time,ecg,ppg\n0,1,1\n0.5,1,1\n1,1,{cell}\n1.5,1,1\n")
    message = _error(folder)
    assert f"a.csv: {what}" in message and "in column 'ppg' at data row 3" in message


def test_largest_float32_and_missing_values_still_load(tmp_path):
    folder = _folder(tmp_path, f"time,ecg,ppg\n0,{FLOAT32_MAX!r},1\n0.5,{-FLOAT32_MAX!r},\n1,1,1\n",
                     HEAD + "allow_missing = true\n")
    rec = load_folder_dataset(folder).recordings[0]
    assert rec.values[0, :2].tolist() == [FLOAT32_MAX, -FLOAT32_MAX] and np.isnan(rec.values[1, 1])


def test_parquet_values_beyond_float32_are_refused(tmp_path):
    _folder(tmp_path, "time,ecg,ppg\n0,1,1\n")
    (tmp_path / "a.csv").unlink()
    pd.DataFrame({"time": [0.0, 0.5], "ecg": [1.0, 1e39], "ppg": [1.0, 1.0]}).to_parquet(tmp_path / "a.parquet")
    text = (tmp_path / "dataset.toml").read_text().replace("a.csv", "a.parquet")
    (tmp_path / "dataset.toml").write_text(text)
    assert "a.parquet: value 1e+39 beyond the float32 range" in _error(tmp_path)


def test_datasets_built_in_code_refuse_values_beyond_float32():
    values = np.zeros((2, 10))
    values[1, 4] = -1e300
    with pytest.raises(DatasetError, match=r"value -1e\+300 in channel 'b' at sample 4 is beyond the float32"):
        Dataset("d", ("a", "b"), (Recording("s", "r", values, np.arange(10.0)),))


# -- #8: declared sampling rate against the time column ----------------------------------------------------
def test_sampling_rate_contradicted_by_time_is_refused(tmp_path):
    folder = _folder(tmp_path, "time,ecg,ppg\n0,1,1\n1,1,1\n2,1,1\n", HEAD + "sampling_rate = 2.0\n")
    message = _error(folder)
    assert "a.csv: the manifest declares sampling_rate = 2 Hz but the 'time' column shows 1 Hz" in message


@pytest.mark.parametrize("step, ok", [(0.5, True), (0.5 * 1.009, True), (0.5 / 1.009, True),
                                      (0.5 * 1.011, False), (0.5 / 1.011, False)])
def test_sampling_rate_tolerance_is_one_percent(tmp_path, step, ok):
    times = np.arange(6) * step
    csv = "time,ecg,ppg\n" + "".join(f"{float(t)!r},1,1\n" for t in times)
    folder = _folder(tmp_path, csv, HEAD + "sampling_rate = 2.0\n")
    if ok:
        assert load_folder_dataset(folder).sampling_rate == 2.0
    else:
        assert "a.csv: the manifest declares sampling_rate = 2 Hz" in _error(folder)


def test_rate_check_uses_the_median_step_so_a_gap_does_not_trip_it(tmp_path):
    csv = "time,ecg,ppg\n" + "".join(f"{t},1,1\n" for t in (0, 0.5, 1, 101, 101.5, 102))
    assert load_folder_dataset(_folder(tmp_path, csv, HEAD + "sampling_rate = 2.0\n")).sampling_rate == 2.0


# -- #14: windows spanning a time gap ---------------------------------------------------------------------
def _with_jump(ds: Dataset, after: int, seconds: float) -> Dataset:
    """The dataset with recording 0's time jumping by ``seconds`` after sample ``after``."""
    t = ds.recordings[0].timestamps.copy()
    t[after + 1:] += seconds
    recs = (dataclasses.replace(ds.recordings[0], timestamps=t),) + ds.recordings[1:]
    return Dataset(ds.name, ds.channels, recs, ds.sampling_rate, ds.label_names)


def _max_step(arrays) -> float:
    times = np.concatenate([arrays.context_times, arrays.target_times], axis=1)
    return float(np.diff(times, axis=1).max())


def test_a_time_jump_is_never_inside_a_window_and_the_skips_are_counted(tmp_path):
    """The issue's case through a user folder: a 100 s jump; the same recording without it gives all windows."""
    w, sampling = Setting(48, 24), SamplingSpec(max_windows_per_subject=100)
    plain = make_dataset(n_subjects=2, n_samples=200)  # 10 Hz
    write_folder_dataset(_with_jump(plain, after=99, seconds=100.0), tmp_path / "jump")
    jumped = load_folder_dataset(tmp_path / "jump")
    sel = select_windows(jumped, "S00", w, sampling)
    # starts 0, 24, ..., 120; the step 99 -> 100 lies inside the windows starting at 48, 72 and 96
    assert [r.start for r in sel.windows] == [0, 24, 120] and sel.skipped_missing == 3
    assert _max_step(extract(jumped, sel.windows, w)) < 1.5 / jumped.sampling_rate
    whole = select_windows(plain, "S00", w, sampling)
    assert [r.start for r in whole.windows] == [0, 24, 48, 72, 96, 120] and whole.skipped_missing == 0


def test_exactly_the_windows_with_a_step_beyond_the_tolerance_are_skipped():
    """Stride 1: every window containing the step (context, target or the step between them) goes, no other."""
    ds = make_dataset(n_subjects=2, n_samples=200)
    w = Setting(48, 24)
    jumped = _with_jump(ds, after=99, seconds=0.1 * (GAP_FACTOR - 1) + 1e-9)  # just beyond 1.5 periods
    sel = select_windows(jumped, "S00", w, SamplingSpec(max_windows_per_subject=1000, stride=1))
    rec = jumped.recordings[0]
    expected = [s for s in range(200 - w.length + 1) if np.diff(rec.timestamps[s:s + w.length]).max() <= 0.15]
    assert [r.start for r in sel.windows] == expected
    assert sel.skipped_missing == 200 - w.length + 1 - len(expected) == w.length - 1
    tolerated = _with_jump(ds, after=99, seconds=0.1 * (GAP_FACTOR - 1) - 1e-9)  # just within
    assert select_windows(tolerated, "S00", w, SamplingSpec(max_windows_per_subject=1000, stride=1)).skipped_missing == 0


def test_a_window_with_both_a_gap_and_a_missing_value_is_counted_once():
    ds = _with_jump(make_dataset(n_subjects=2, n_samples=200), after=99, seconds=100.0)
    values = ds.recordings[0].values.copy()
    values[0, 130] = np.nan  # in the windows starting at 72, 96, 120; the jump is in those at 48, 72, 96
    recs = (dataclasses.replace(ds.recordings[0], values=values),) + ds.recordings[1:]
    both = Dataset(ds.name, ds.channels, recs, ds.sampling_rate, ds.label_names)
    sel = select_windows(both, "S00", Setting(48, 24), SamplingSpec(max_windows_per_subject=100))
    assert sel.skipped_missing == 4 and [r.start for r in sel.windows] == [0, 24]


def test_without_a_declared_rate_timestamps_are_irregular_and_no_window_is_skipped():
    ds = _with_jump(make_dataset(n_subjects=2, n_samples=200), after=99, seconds=100.0)
    irregular = Dataset(ds.name, ds.channels, ds.recordings, None, ds.label_names)
    sel = select_windows(irregular, "S00", Setting(48, 24), SamplingSpec(max_windows_per_subject=100))
    assert len(sel.windows) == 6 and sel.skipped_missing == 0
