"""Windows, LOSO, normalisation and metrics: the properties the protocol promises."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from protocols.data import Dataset, DatasetError, Recording
from protocols.metrics import ErrorSums, error_sums, mae, mean_std, rmse
from protocols.scaling import fit_fold_scaler, fit_minmax
from protocols.specs import PAPER_SETTINGS, ForecastingSpec, SamplingSpec, SpecError, Setting, spec_from_dict
from protocols.splits import loso_folds
from protocols.windows import candidate_starts, extract, select_windows
from tests.conftest import make_dataset


# -- specs ------------------------------------------------------------------------------
def test_paper_windows():
    assert [w.name for w in PAPER_SETTINGS] == ["48/24", "72/36", "96/48", "128/64"]


@pytest.mark.parametrize("text", ["96", "96/", "a/b", "96/48/2", "-4/2"])
def test_window_parse_rejects(text):
    with pytest.raises(SpecError):
        Setting.parse(text)


def test_spec_validation():
    with pytest.raises(SpecError):
        Setting(1, 5)
    with pytest.raises(SpecError):
        SamplingSpec(max_windows_per_subject=0)
    with pytest.raises(SpecError):
        ForecastingSpec(settings=(Setting(8, 4), Setting(8, 4)))
    with pytest.raises(SpecError, match="unknown SamplingSpec field"):
        spec_from_dict(SamplingSpec, {"max_windows": 3})


# -- windows ----------------------------------------------------------------------------
def test_candidate_starts_cover_recording_exactly():
    w = Setting(48, 24)
    starts = candidate_starts(200, w.length, stride=24)
    assert starts.tolist() == [0, 24, 48, 72, 96, 120]
    assert starts[-1] + w.length <= 200 and starts[-1] + 24 + w.length > 200
    assert candidate_starts(71, w.length, 24).size == 0


def test_window_selection_is_seeded_and_capped():
    ds = make_dataset(n_subjects=2, n_samples=2000)
    w = Setting(48, 24)
    a = select_windows(ds, "S00", w, SamplingSpec(max_windows_per_subject=5, seed=1))
    b = select_windows(ds, "S00", w, SamplingSpec(max_windows_per_subject=5, seed=1))
    c = select_windows(ds, "S00", w, SamplingSpec(max_windows_per_subject=5, seed=2))
    assert a == b and len(a.windows) == 5
    assert a.windows != c.windows
    assert all(ds.recordings[r.recording].subject == "S00" for r in a.windows)
    starts = [r.start for r in a.windows]
    assert starts == sorted(starts)


def test_windows_touching_nan_are_skipped_and_counted():
    ds = make_dataset(n_subjects=2, n_samples=200)
    vals = ds.recordings[0].values.copy()
    vals[1, 50] = np.nan
    recs = (dataclasses.replace(ds.recordings[0], values=vals),) + ds.recordings[1:]
    ds2 = Dataset(ds.name, ds.channels, recs, ds.sampling_rate, ds.label_names)
    sel = select_windows(ds2, "S00", Setting(48, 24), SamplingSpec(max_windows_per_subject=100))
    # starts 0, 24, 48, 72, 96, 120; sample 50 lies in windows starting at 0 and 24 and 48
    assert sel.skipped_missing == 3
    assert [r.start for r in sel.windows] == [72, 96, 120]
    arr = extract(ds2, sel.windows, Setting(48, 24))
    assert np.isfinite(arr.context).all() and np.isfinite(arr.target).all()


def test_short_recordings_are_counted():
    ds = make_dataset(n_subjects=2, n_samples=100)
    sel = select_windows(ds, "S00", Setting(128, 64), SamplingSpec())
    assert sel.windows == () and sel.short_recordings == 1


def test_extract_splits_context_and_target_contiguously():
    ds = make_dataset(n_subjects=2, n_samples=300)
    w = Setting(48, 24)
    sel = select_windows(ds, "S01", w, SamplingSpec(max_windows_per_subject=3))
    arr = extract(ds, sel.windows, w)
    rec = ds.recordings[sel.windows[0].recording]
    s = sel.windows[0].start
    np.testing.assert_array_equal(arr.context[0], rec.values[:, s:s + 48])
    np.testing.assert_array_equal(arr.target[0], rec.values[:, s + 48:s + 72])
    assert arr.target_times[0, 0] > arr.context_times[0, -1]


# -- LOSO ---------------------------------------------------------------------------------
def test_loso_no_subject_in_train_and_test():
    ds = make_dataset(n_subjects=5)
    folds = loso_folds(ds)
    assert sorted(f.test_subject for f in folds) == list(ds.subjects)
    for f in folds:
        assert f.test_subject not in f.train_subjects
        assert set(f.train_subjects) | {f.test_subject} == set(ds.subjects)


def test_loso_needs_two_subjects():
    ds = make_dataset(n_subjects=1)
    with pytest.raises(DatasetError, match="at least two"):
        loso_folds(ds)


def test_grouped_recordings_stay_in_one_fold():
    # two recordings of the same person (e.g. MIT-BIH 201/202) share a subject id
    ds = make_dataset(n_subjects=3)
    r = ds.recordings[0]
    extra = Recording(r.subject, "S00_r1", r.values + 1, r.timestamps, r.labels)
    ds2 = Dataset(ds.name, ds.channels, ds.recordings + (extra,), ds.sampling_rate, ds.label_names)
    for fold in loso_folds(ds2):
        test_recs = {x.name for x in ds2.recordings_of((fold.test_subject,))}
        train_recs = {x.name for x in ds2.recordings_of(fold.train_subjects)}
        assert not test_recs & train_recs
    assert len(loso_folds(ds2)) == 3


# -- normalisation ---------------------------------------------------------------------------
def test_scaler_fitted_on_training_subjects_only():
    ds = make_dataset(n_subjects=4)
    fold = loso_folds(ds)[0]
    scaler = fit_fold_scaler(ds, fold)
    train = np.concatenate([r.values for r in ds.recordings_of(fold.train_subjects)], axis=1)
    np.testing.assert_allclose(scaler.minimum, train.min(axis=1))
    np.testing.assert_allclose(scaler.maximum, train.max(axis=1))
    # changing the test subject's data changes nothing in its own fold's scaler
    recs = list(ds.recordings)
    idx = [i for i, r in enumerate(recs) if r.subject == fold.test_subject][0]
    recs[idx] = dataclasses.replace(recs[idx], values=recs[idx].values * 1000 - 77)
    ds2 = Dataset(ds.name, ds.channels, tuple(recs), ds.sampling_rate, ds.label_names)
    scaler2 = fit_fold_scaler(ds2, fold)
    np.testing.assert_array_equal(scaler.minimum, scaler2.minimum)
    np.testing.assert_array_equal(scaler.maximum, scaler2.maximum)


def test_scaler_maps_training_range_to_unit_interval_and_handles_constant_channel():
    ds = make_dataset(n_subjects=2, channels=("a", "flat"))
    recs = tuple(dataclasses.replace(r, values=np.stack([r.values[0], np.full(r.n_samples, 3.0)]))
                 for r in ds.recordings)
    ds2 = Dataset(ds.name, ds.channels, recs, ds.sampling_rate, ds.label_names)
    scaler = fit_minmax(ds2, ds2.subjects)
    x = scaler.transform(np.concatenate([r.values for r in recs], axis=1))
    assert x[0].min() == pytest.approx(0) and x[0].max() == pytest.approx(1)
    np.testing.assert_array_equal(x[1], 0.0)  # constant channel: shifted, range taken as 1
    np.testing.assert_allclose(scaler.inverse(x), np.concatenate([r.values for r in recs], axis=1))


# -- metrics --------------------------------------------------------------------------------
def test_metrics_hand_computed():
    pred = np.array([[1.0, 2.0, 3.0, 4.0]])
    target = np.array([[1.0, 0.0, 3.0, 8.0]])
    # errors 0, 2, 0, -4: squared 0 4 0 16 -> mean 5; abs 0 2 0 4 -> mean 1.5
    assert rmse(pred, target) == pytest.approx(np.sqrt(5))
    assert mae(pred, target) == pytest.approx(1.5)
    s = error_sums(pred, target)
    assert (s.sse, s.sae, s.n) == (20.0, 6.0, 4)


def test_pooling_sums_equals_metric_on_concatenation():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2, 5)), rng.normal(size=(7, 2, 5))
    ta, tb = rng.normal(size=a.shape), rng.normal(size=b.shape)
    pooled = error_sums(a, ta) + error_sums(b, tb)
    assert pooled.rmse == pytest.approx(rmse(np.concatenate([a, b]), np.concatenate([ta, tb])))
    assert pooled.mae == pytest.approx(mae(np.concatenate([a, b]), np.concatenate([ta, tb])))
    assert np.isnan(ErrorSums().rmse)


def test_mean_std_is_sample_std():
    m, s = mean_std([1.0, 2.0, 3.0, 4.0])
    assert m == 2.5 and s == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert mean_std([5.0]) == (5.0, 0.0)


def test_metrics_reject_mismatched_shapes_and_nan():
    with pytest.raises(ValueError, match="shape"):
        rmse(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="non-finite"):
        rmse(np.array([np.nan]), np.array([0.0]))


# -- dataset validation -------------------------------------------------------------------------
def test_dataset_validation_errors():
    t = np.arange(10.0)
    good = Recording("s", "r", np.zeros((2, 10)), t)
    with pytest.raises(DatasetError, match="values must be"):
        Dataset("d", ("a",), (good,))
    with pytest.raises(DatasetError, match="not strictly increasing"):
        Dataset("d", ("a", "b"), (Recording("s", "r", np.zeros((2, 10)), t[::-1].copy()),))
    bad = np.zeros((2, 10)); bad[1, 3] = np.inf
    with pytest.raises(DatasetError, match="infinite value in channel 'b' at sample 3"):
        Dataset("d", ("a", "b"), (Recording("s", "r", bad, t),))
    with pytest.raises(DatasetError, match="no channel"):
        Dataset("d", ("a", "b"), (good,)).select_channels(["c"])


def _period_row_by_row(y: np.ndarray, min_period: int = 2, threshold: float = 0.3) -> int | None:
    """The seasonal period rule as it was written row by row (the reference the batched rule must equal)."""
    x = y - y.mean()
    denom = float(np.dot(x, x))
    n = x.size
    max_period = n // 2
    if denom <= 0 or max_period < min_period + 1:
        return None
    acf = np.array([np.dot(x[:-k], x[k:]) / denom for k in range(1, max_period + 2)])
    best, best_val = None, threshold
    for lag in range(min_period, max_period + 1):
        v = acf[lag - 1]
        if v > acf[lag - 2] and v >= acf[lag] and v > best_val:
            best, best_val = lag, v
    return best


def _scale_row_by_row(context: np.ndarray) -> np.ndarray:
    b, c, length = context.shape
    scale = np.full((b, c), np.nan)
    for i in range(b):
        for j in range(c):
            row = np.asarray(context[i, j], dtype=np.float64)
            if length < 2 or not np.all(np.isfinite(row)):
                continue
            m = _period_row_by_row(row) or 1
            scale[i, j] = float(np.mean(np.abs(row[m:] - row[:-m])))
    return scale


def _seasonal_contexts() -> list[np.ndarray]:
    """Random, periodic, constant, short and NaN-holding contexts [B, C, L], and real MIT-BIH windows when staged."""
    rng = np.random.default_rng(7)
    t = np.arange(256)
    out = []
    for length in (5, 6, 7, 24, 48, 72, 96, 128, 256):
        periodic = np.sin(2 * np.pi * t[:length] / rng.uniform(3, 40, (16, 2, 1))) + 0.3 * rng.standard_normal((16, 2, length))
        noise = rng.standard_normal((16, 2, length)) * rng.uniform(1e-3, 1e3, (16, 2, 1))
        both = np.concatenate([periodic, noise, np.ones((2, 2, length)), np.round(periodic * 2) / 2])
        both[3, 1, length // 2] = np.nan
        out.append(both)
    from tests.test_datasets_real import SAMPLES

    if (SAMPLES / "mitbih" / "105.hea").is_file():
        from protocols.datasets import load_dataset

        values = load_dataset("mitbih", data_root=SAMPLES).recordings[0].values
        for length in (48, 128):
            starts = np.arange(0, values.shape[1] - length, 997)[:200]
            out.append(np.stack([values[:, s:s + length] for s in starts]))
    return out


def test_seasonal_periods_and_mase_scales_are_bit_for_bit_the_row_by_row_rule():
    from protocols.metrics import seasonal_naive_scale
    from protocols.seasonality import estimate_period, estimate_periods

    for context in _seasonal_contexts():
        rows = context.reshape(-1, context.shape[-1])
        expected = [_period_row_by_row(r) for r in rows]
        assert [estimate_period(r) for r in rows] == expected
        finite = np.all(np.isfinite(rows), axis=1)
        assert estimate_periods(rows[finite]).tolist() == [p or 0 for p, f in zip(expected, finite) if f]
        np.testing.assert_array_equal(seasonal_naive_scale(context), _scale_row_by_row(context))  # NaN where NaN
    assert any(p for p in expected) and estimate_periods(np.zeros((0, 48))).shape == (0,)
