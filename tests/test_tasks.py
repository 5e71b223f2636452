"""Imputation, noise and classification protocols: causal, leak-free, reproducible."""

from __future__ import annotations

import numpy as np
import pytest

from protocols import classification as cls
from protocols.forecasting import evaluate_forecasting
from protocols.imputation import build_task, evaluate_imputation, missing_mask
from protocols.interface import Capabilities, Model
from protocols.leakage import LeakageError, probe_forecasting, probe_imputation
from protocols.noise import channel_sigma, evaluate_noise, noise_draw
from protocols.scaling import fit_fold_scaler
from protocols.specs import ClassificationSpec, ForecastingSpec, ImputationSpec, NoiseSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from tests.conftest import make_dataset


class LastValue(Model):
    name = "last"
    capabilities = Capabilities(multivariate=True)

    def _forecast(self, batch, query_times):
        return np.repeat(batch.values[:, :, -1:], query_times.shape[1], axis=2)


class Cheater(Model):
    """Looks the true values up in the data source by timestamp: reads the future."""

    name = "cheater"
    capabilities = Capabilities(multivariate=True, impute=True)

    def __init__(self, dataset, fold):
        self.dataset, self.scaler = dataset, fit_fold_scaler(dataset, fold)

    def _lookup(self, t):
        rec = next(r for r in self.dataset.recordings if r.subject == self.subject)
        idx = np.searchsorted(rec.timestamps, t)
        return self.scaler.transform(rec.values[:, idx][:, None])[:, 0]

    def _forecast(self, batch, query_times):
        return np.stack([np.stack([self._lookup(t) for t in row], axis=1) for row in query_times])

    def _impute(self, batch, query_time):
        return np.stack([self._lookup(t) for t in query_time])


def _setup(n_subjects=3, n_samples=400):
    ds = make_dataset(n_subjects=n_subjects, n_samples=n_samples)
    return ds, loso_folds(ds)[0]


# -- leakage probes --------------------------------------------------------------------------
def test_forecasting_probe_passes_an_honest_model_and_catches_a_cheat():
    ds, fold = _setup()
    spec = ForecastingSpec(settings=(Setting(48, 24),), sampling=SamplingSpec(max_windows_per_subject=4))
    probe_forecasting(LastValue(), ds, fold, Setting(48, 24), spec)
    cheat = Cheater(ds, fold)
    cheat.subject = fold.test_subject
    # the cheat is perfect, which is how it would slip into a results table...
    assert evaluate_forecasting(cheat, ds, fold, Setting(48, 24), spec).errors.rmse < 1e-12
    with pytest.raises(LeakageError, match="changed"):
        probe_forecasting(cheat, ds, fold, Setting(48, 24), spec)
    before = ds.recordings[0].values.copy()
    np.testing.assert_array_equal(before, ds.recordings[0].values)  # restored


class BatchPooler(Model):
    """Adds the batch mean of every row's last value: reads later windows' contexts (another
    window's future) through the batch, and is exact when scored alone."""

    name = "pooler"
    capabilities = Capabilities(multivariate=True)
    batch_tolerance = (0.0, 1e-3)

    def _forecast(self, batch, query_times):
        last = batch.values[:, :, -1:]
        return np.repeat(last + last.mean(axis=0, keepdims=True), query_times.shape[1], axis=2)


def test_forecasting_probe_catches_pooling_across_the_batch_beyond_the_declared_tolerance():
    ds, fold = _setup()
    spec = ForecastingSpec(settings=(Setting(48, 24),), sampling=SamplingSpec(max_windows_per_subject=4))
    with pytest.raises(LeakageError, match=r"in its batch; the model declares batch effects up to rtol=0, atol=0.001"):
        probe_forecasting(BatchPooler(), ds, fold, Setting(48, 24), spec)
    probe_forecasting(BatchPooler(), ds, fold, Setting(48, 24), spec, tolerance=(0.0, 1e3))  # alone: exact


def test_imputation_probe_passes_an_honest_model_and_catches_a_cheat():
    ds, fold = _setup()
    spec = ImputationSpec(length=48, warmup=8, points_per_segment=3, max_windows_per_subject=3)
    probe_imputation(LastValue(), ds, fold, spec, 0.5, seed=0)
    cheat = Cheater(ds, fold)
    cheat.subject = fold.test_subject
    with pytest.raises(LeakageError):
        probe_imputation(cheat, ds, fold, spec, 0.5, seed=0)


# -- imputation ------------------------------------------------------------------------------
def test_masks_are_reproducible_and_respect_warmup_and_rate():
    a = missing_mask((50, 3, 96), 0.5, 16, np.random.default_rng(3))
    b = missing_mask((50, 3, 96), 0.5, 16, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert a[:, :, :16].all()
    assert abs((~a[:, :, 16:]).mean() - 0.5) < 0.02


def test_imputation_task_is_seeded_and_queries_are_missing_points():
    ds, fold = _setup()
    spec = ImputationSpec(length=48, warmup=8, points_per_segment=4, max_windows_per_subject=3)
    t1, _ = build_task(ds, fold, spec, 0.25, seed=1)
    t2, _ = build_task(ds, fold, spec, 0.25, seed=1)
    t3, _ = build_task(ds, fold, spec, 0.25, seed=2)
    assert t1.queries == t2.queries and np.array_equal(t1.observed, t2.observed)
    assert not np.array_equal(t1.observed, t3.observed)
    np.testing.assert_array_equal(t1.values, t3.values)  # same segments for every seed
    for b, i in t1.queries:
        assert i >= spec.warmup and not t1.observed[b, :, i].all()


def test_imputation_scores_only_missing_channels():
    ds, fold = _setup()
    spec = ImputationSpec(length=48, warmup=8, points_per_segment=4, max_windows_per_subject=3)
    task, _ = build_task(ds, fold, spec, 0.5, seed=0)
    out = evaluate_imputation(LastValue(), ds, fold, spec, 0.5, seed=0)
    expected = sum(int((~task.observed[b, :, i]).sum()) for b, i in task.queries)
    assert out.errors.n == expected and out.n_queries == len(task.queries)


def test_bad_imputation_spec():
    from protocols.specs import SpecError

    with pytest.raises(SpecError):
        ImputationSpec(rates=(1.0,))
    with pytest.raises(SpecError):
        ImputationSpec(length=10, warmup=10)


# -- noise -----------------------------------------------------------------------------------
def test_noise_is_seeded_and_zero_level_equals_clean_forecasting():
    ds, fold = _setup()
    w = Setting(48, 24)
    spec = NoiseSpec(settings=(w,), sampling=SamplingSpec(max_windows_per_subject=4))
    np.testing.assert_array_equal(noise_draw((2, 3), 0, "d", "s", w), noise_draw((2, 3), 0, "d", "s", w))
    assert not np.array_equal(noise_draw((2, 3), 0, "d", "s", w), noise_draw((2, 3), 1, "d", "s", w))
    clean = evaluate_forecasting(LastValue(), ds, fold, w, spec.forecasting())
    zero = evaluate_noise(LastValue(), ds, fold, w, spec, 0.0, seed=0)
    assert zero.errors == clean.errors
    noisy = evaluate_noise(LastValue(), ds, fold, w, spec, 0.5, seed=0)
    assert noisy.errors.n == clean.errors.n and noisy.errors.sse != clean.errors.sse


def test_noise_scale_comes_from_training_subjects():
    ds, fold = _setup()
    sigma = channel_sigma(ds, fold)
    scaler = fit_fold_scaler(ds, fold)
    train = np.concatenate([r.values for r in ds.recordings_of(fold.train_subjects)], axis=1)
    np.testing.assert_allclose(sigma, scaler.transform(train).std(axis=1))


# -- classification ----------------------------------------------------------------------------
def test_label_pure_segments_only():
    ds = make_dataset(n_subjects=3, n_samples=400)  # label changes at sample 200
    segs = cls.labelled_segments(ds, ClassificationSpec(length=64, stride=32, max_windows_per_subject=100))
    for ref, label in zip(segs.refs, segs.labels):
        rec = ds.recordings[ref.recording]
        assert (rec.labels[ref.start:ref.start + 64] == label).all()
    assert set(segs.labels) == {0, 1}


def test_budget_subset_is_stratified_and_seeded():
    labels = np.array([0] * 90 + [1] * 10)
    a = cls.budget_subset(labels, 0.1, np.random.default_rng(0))
    b = cls.budget_subset(labels, 0.1, np.random.default_rng(0))
    np.testing.assert_array_equal(a, b)
    assert (labels[a] == 0).sum() == 9 and (labels[a] == 1).sum() == 1
    tiny = cls.budget_subset(labels, 0.01, np.random.default_rng(0))
    assert set(labels[tiny]) == {0, 1}  # at least one of every class


def test_probes_never_see_the_test_subject(monkeypatch):
    ds = make_dataset(n_subjects=4, n_samples=400)
    spec = ClassificationSpec(length=64, stride=32, budgets=(1.0,))
    segs = cls.labelled_segments(ds, spec)
    subject_code = {s: i for i, s in enumerate(ds.subjects)}
    seen = []
    real = cls.probe_fold

    def spy(x_train, y_train, x_test, *args):
        seen.append((set(x_train[:, 0].astype(int)), set(x_test[:, 0].astype(int))))
        return real(x_train, y_train, x_test, *args)

    monkeypatch.setattr(cls, "probe_fold", spy)
    feats = np.stack([[subject_code[s], l] for s, l in zip(segs.subjects, segs.labels)]).astype(float)
    out = cls.evaluate_classification(ds, spec, 1.0, 0, lambda fold: feats)
    assert len(seen) == 4
    for train_subjects, test_subjects in seen:
        assert len(test_subjects) == 1 and not train_subjects & test_subjects
    assert out.macro_f1 == 1.0 and out.macro_auroc == 1.0  # label is a feature


def test_random_baseline_has_auroc_one_half():
    ds = make_dataset(n_subjects=3, n_samples=400)
    out = cls.evaluate_classification(ds, ClassificationSpec(length=64, stride=32), 1.0, 0, None)
    assert out.macro_auroc == 0.5 and 0 <= out.macro_f1 <= 1


def test_macro_scores_hand_computed_and_undefined_auroc_reported():
    y_true = np.array([0, 0, 1, 1])
    y_pred = np.array([0, 1, 1, 1])
    proba = np.array([[0.9, 0.1, 0], [0.4, 0.6, 0], [0.2, 0.8, 0], [0.1, 0.9, 0]])
    f1, auroc, notes = cls.macro_scores(y_true, y_pred, proba)
    # class 0: P=1, R=0.5 -> F1 2/3; class 1: P=2/3, R=1 -> 0.8; macro 0.7333
    assert f1 == pytest.approx((2 / 3 + 0.8) / 2)
    assert auroc == 1.0  # both defined classes ranked perfectly
    assert notes == ["class 2: AUROC undefined (no positives)"]


def test_classification_needs_labels():
    from protocols.data import Dataset, DatasetError, Recording

    ds = Dataset("nolabels", ("a",), (Recording("s", "r", np.zeros((1, 10)), np.arange(10.0)),))
    with pytest.raises(DatasetError, match="no labels"):
        cls.labelled_segments(ds, ClassificationSpec(length=4))
