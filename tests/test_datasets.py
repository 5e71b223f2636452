"""The embedded cohort (deterministic, cached, physiologically ordered) and user folders."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from protocols.data import DatasetError
from protocols.datasets import load_dataset
from protocols.datasets import synthetic
from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
from tests.conftest import make_dataset

SMALL = {"n_subjects": 3, "seconds_per_state": 10}


@pytest.fixture(scope="module")
def cohort():
    return synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL))


def test_cohort_shape_labels_and_rate(cohort):
    assert cohort.channels == ("ECG", "PPG", "RSP", "EDA")
    assert cohort.subjects == ("S01", "S02", "S03")
    assert cohort.label_names == ("rest", "mental_stress", "exercise")
    assert len(cohort.recordings) == 9
    for r in cohort.recordings:
        assert r.values.shape == (4, 640) and np.isfinite(r.values).all()
        np.testing.assert_allclose(np.diff(r.timestamps), 1 / 64)
        assert len(set(r.labels)) == 1


def test_cohort_is_deterministic_and_seeded(cohort):
    again = synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL))
    for a, b in zip(cohort.recordings, again.recordings):
        np.testing.assert_array_equal(a.values, b.values)
    other = synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL, seed=1))
    assert not np.array_equal(cohort.recordings[0].values, other.recordings[0].values)


def _heart_rate(ecg: np.ndarray, rate: float) -> float:
    import neurokit2 as nk

    _, info = nk.ecg_peaks(ecg, sampling_rate=int(rate))
    return 60 * rate / float(np.median(np.diff(info["ECG_R_Peaks"])))


def test_states_move_heart_rate_and_eda_as_designed(cohort):
    by = {r.name: r for r in cohort.recordings}
    for s in cohort.subjects:
        rest, stress, ex = (by[f"{s}_{k}"] for k in ("rest", "mental_stress", "exercise"))
        hr = [_heart_rate(r.values[0], 64) for r in (rest, stress, ex)]
        assert hr[0] < hr[1] < hr[2], hr  # measured from the ECG signal itself
        eda = [r.values[3].mean() for r in (rest, stress, ex)]
        assert eda[0] < eda[1] < eda[2]


def test_cache_is_used_and_a_corrupt_file_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path))
    first = synthetic.load_synthetic_cohort(**SMALL)
    files = list(tmp_path.glob("synthetic-cohort-*.npz"))
    assert len(files) == 1
    calls = []
    monkeypatch.setattr(synthetic, "generate", lambda cfg: calls.append(cfg) or first)
    second = synthetic.load_synthetic_cohort(**SMALL)
    assert calls == [] and np.array_equal(second.recordings[4].values, first.recordings[4].values)
    files[0].write_bytes(files[0].read_bytes()[:100])  # truncated
    with pytest.warns(UserWarning, match="unreadable"):
        synthetic.load_synthetic_cohort(**SMALL)
    assert len(calls) == 1


@pytest.mark.parametrize("options, message", [
    ({"n_subjects": 1}, "n_subjects"), ({"sampling_rate": 2}, "sampling_rate"),
    ({"states": ("rest", "sleep")}, "states"), ({"colour": "red"}, "unknown synthetic-cohort option"),
])
def test_cohort_config_errors(options, message):
    with pytest.raises(ValueError, match=message):
        synthetic.load_synthetic_cohort(**options)


def test_default_cohort_is_registered_with_enough_subjects():
    cfg = synthetic.SyntheticCohortConfig()
    assert cfg.n_subjects >= 8 and len(cfg.states) >= 3
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        load_dataset("nope")


# -- user folders --------------------------------------------------------------------------------
def _toml_folder(path: Path, rows: dict[str, str], manifest_extra: str = "") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    entries = ""
    for i, (name, text) in enumerate(rows.items()):
        (path / name).write_text(text)
        entries += f'\n[[recordings]]\nfile = "{name}"\nsubject = "P{i}"\n'
    (path / "dataset.toml").write_text(
        f'name = "mine"\nchannels = ["ecg", "ppg"]\nsampling_rate = 2.0\nlabels = ["calm", "busy"]\n'
        f"{manifest_extra}{entries}")
    return path


GOOD = "time,ecg,ppg,label\n0.0,1.0,2.0,calm\n0.5,1.5,2.5,calm\n1.0,1.0,3.0,busy\n"


def test_documented_toml_format_loads(tmp_path):
    ds = load_folder_dataset(_toml_folder(tmp_path / "d", {"a.csv": GOOD, "b.csv": GOOD}))
    assert ds.name == "mine" and ds.channels == ("ecg", "ppg") and ds.subjects == ("P0", "P1")
    np.testing.assert_array_equal(ds.recordings[0].values, [[1.0, 1.5, 1.0], [2.0, 2.5, 3.0]])
    np.testing.assert_array_equal(ds.recordings[0].labels, [0, 0, 1])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_round_trip_is_exact(tmp_path, fmt):
    ds = make_dataset(n_subjects=2, n_samples=50)
    write_folder_dataset(ds, tmp_path / fmt, format=fmt)
    back = load_folder_dataset(tmp_path / fmt)
    for a, b in zip(ds.recordings, back.recordings):
        np.testing.assert_array_equal(a.values, b.values)
        np.testing.assert_array_equal(a.timestamps, b.timestamps)
        np.testing.assert_array_equal(a.labels, b.labels)


@pytest.mark.parametrize("rows, extra, message", [
    ({"a.csv": "time,ecg\n0,1\n"}, "", "missing column 'ppg'"),
    ({"a.csv": "time,ecg,ppg,label\n0,1,x,calm\n"}, "", "non-numeric value 'x' in column 'ppg' at data row 1"),
    ({"a.csv": "time,ecg,ppg,label\n0,1,,calm\n"}, "", "missing value in column 'ppg' at data row 1"),
    ({"a.csv": "time,ecg,ppg,label\n0,1,inf,calm\n"}, "", "infinite value in column 'ppg'"),
    ({"a.csv": "time,ecg,ppg,label\n1,1,1,calm\n0,1,1,calm\n"}, "", "not strictly increasing at data row 2"),
    ({"a.csv": "time,ecg,ppg,label\n0,1,1,asleep\n"}, "", "label 'asleep' at data row 1"),
    ({"a.csv": GOOD}, "colour = 1\n", "unknown field(s) ['colour']"),
    ({"a.csv": "time,ecg,ppg,label\n"}, "", "no rows"),
])
def test_folder_errors_name_the_problem(tmp_path, rows, extra, message):
    path = _toml_folder(tmp_path / "d", rows, extra)
    with pytest.raises(DatasetError) as err:
        load_folder_dataset(path)
    assert message in str(err.value)


def test_folder_level_errors(tmp_path):
    with pytest.raises(DatasetError, match="does not exist"):
        load_folder_dataset(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no manifest"):
        load_folder_dataset(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dataset.toml").write_text("name = [unclosed")
    with pytest.raises(DatasetError, match="malformed manifest"):
        load_folder_dataset(bad)
    (bad / "dataset.toml").write_text('name = "x"\nchannels = ["a"]\n[[recordings]]\nfile = "gone.csv"\nsubject = "s"\n')
    with pytest.raises(DatasetError, match="gone.csv: listed in the manifest but missing"):
        load_folder_dataset(bad)
    (bad / "dataset.toml").write_text('name = "x"\nchannels = ["a"]\n')
    with pytest.raises(DatasetError, match="missing required field 'recordings'"):
        load_folder_dataset(bad)


def test_corrupt_parquet_is_a_clear_error(tmp_path):
    ds = make_dataset(n_subjects=2, n_samples=20)
    write_folder_dataset(ds, tmp_path / "p", format="parquet")
    victim = sorted((tmp_path / "p").glob("*.parquet"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    with pytest.raises(DatasetError, match=f"{victim.name}: cannot be read"):
        load_folder_dataset(tmp_path / "p")


def test_missing_values_allowed_when_declared_and_windows_skip_them(tmp_path):
    text = "time,ecg,ppg,label\n" + "".join(
        f"{i},{'' if i == 5 else i},{i},calm\n" for i in range(40))
    path = _toml_folder(tmp_path / "d", {"a.csv": text, "b.csv": text}, "allow_missing = true\n")
    ds = load_folder_dataset(path)
    assert np.isnan(ds.recordings[0].values[0, 5])
    from protocols.specs import SamplingSpec, WindowSpec
    from protocols.windows import select_windows

    sel = select_windows(ds, "P0", WindowSpec(8, 4), SamplingSpec(max_windows_per_subject=100))
    assert sel.skipped_missing == 2 and all(r.start > 5 or r.start + 12 <= 5 for r in sel.windows)


def test_json_manifest(tmp_path):
    path = tmp_path / "j"
    path.mkdir()
    (path / "a.csv").write_text("time,x\n0,1\n1,2\n")
    (path / "dataset.json").write_text(json.dumps({"name": "j", "channels": ["x"],
                                                   "recordings": [{"file": "a.csv", "subject": "s"}]}))
    assert load_folder_dataset(path).recordings[0].values.tolist() == [[1.0, 2.0]]
    assert pd.read_csv(path / "a.csv").shape == (2, 2)
