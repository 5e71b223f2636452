"""The supervised models' tuned training mode (issue #49 item 2): the search finds a known optimum, validation subjects
are drawn from the fold's training subjects only and never fitted on, one training subject falls back to a
time-ordered split, tuned rows carry their choice and their own key, and the fixed mode's keys and numbers are those
of the code before the tuned mode existed."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import numpy as np
import pytest

from baselines.supervised_tuning import TuningBudget, grid_search, lookbacks, split_by_subject, validation_windows
from baselines.testing import TINY_TRAINING
from harness.cli import _parser
from harness.commands.run import run_config as _config
from protocols.specs import SpecError
from harness.records.keys import row_key
from harness.run.cells import Cell, model_info
from harness.run.runner import _model_options, model_identity
from models.registry import load_model
from protocols.forecasting import evaluate_forecasting, fold_training_series
from protocols.interface import TrainingSeries
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from tests.conftest import make_dataset

needs_gluonts = pytest.mark.skipif(importlib.util.find_spec("gluonts") is None,
                                   reason="gluonts is not installed (pip install 'soter-bench[supervised]')")


def _periodic(n_subjects: int = 3, period: int = 24, length: int = 1200, noise: float = 0.01) -> TrainingSeries:
    """A fixed random pattern of ``period`` samples repeated, per subject with its own phase and a little noise: the
    next values are a linear function of the last ``period`` ones, not of a shorter look-back (any look-back of at
    least a period forecasts it; 12 samples cannot, linearly)."""
    pattern = np.random.default_rng(7).uniform(0, 1, period)
    rng = np.random.default_rng(1)
    values = tuple(np.tile(pattern, length // period + 2)[k:k + length][None, :] + noise * rng.standard_normal((1, length))
                   for k in range(n_subjects))
    return TrainingSeries(values=values, subjects=tuple(f"S{k}" for k in range(n_subjects)), channels=("x",),
                          context=48, horizon=8)


def test_grid_search_keeps_the_lowest_validation_loss_first_of_equals_and_never_a_nan():
    losses = {(8, 0.1): 3.0, (8, 1.0): 1.0, (16, 0.1): float("nan"), (16, 1.0): 1.0}
    model, (lookback, rate, epochs, loss), tried = grid_search((8, 16), (0.1, 1.0),
                                                               lambda lb, r: ((lb, r), losses[(lb, r)], 5))
    assert (model, lookback, rate, epochs, loss) == ((8, 1.0), 8, 1.0, 5, 1.0)
    assert [(t["lookback"], t["learning_rate"]) for t in tried] == list(losses)
    with pytest.raises(ValueError, match="no candidate"):
        grid_search((8,), (0.1,), lambda lb, r: (None, float("nan"), 1))


def test_lookbacks_are_fractions_of_the_context_within_the_model_minimum_and_the_context():
    assert lookbacks(48, (0.25, 0.5, 1.0), 2) == (12, 24, 48)
    assert lookbacks(48, (0.25, 1.0), 16) == (16, 48)  # DeepAR's shortest context
    assert lookbacks(20, (0.5, 0.6), 16) == (16,)
    with pytest.raises(ValueError, match="context only"):
        TuningBudget(lookback_fractions=(2.0,))


def test_ridge_search_picks_the_known_look_back_and_penalty():
    ridge = load_model("ridge", training="tuned")
    ridge.tuning = dataclasses.replace(ridge.tuning, lookback_fractions=(0.25, 1.0), ridge_alphas=(1e-4, 100.0))
    series = _periodic()
    ridge._fit(series, seed=0)
    s = ridge.fit_summary
    assert (s.lookback, s.learning_rate, s.epochs_run) == (48, 1e-4, 0)
    assert len(s.candidates) == 4 and s.validation_loss == min(c["validation_loss"] for c in s.candidates)
    assert s.validation_loss < 1e-3 < min(c["validation_loss"] for c in s.candidates if c["lookback"] == 12)


@needs_gluonts
def test_dlinear_search_picks_the_known_look_back_and_learning_rate():
    model = load_model("dlinear", training="tuned")
    model.tuning = dataclasses.replace(model.tuning, lookback_fractions=(0.25, 1.0), learning_rates=(1e-6, 1e-2),
                                       max_epochs=3, batches_per_epoch=10)
    model._fit(_periodic(), seed=0)
    s = model.fit_summary
    assert (s.lookback, s.learning_rate) == (48, 1e-2)
    assert all(1 <= c["epochs_run"] <= 3 for c in s.candidates)


def test_validation_subjects_come_from_the_training_subjects_never_the_test_subject_nor_those_fitted():
    ds = make_dataset(n_subjects=6, n_samples=200)
    for fold in loso_folds(ds):
        series = fold_training_series(ds, fold, Setting(32, 16))
        for seed in (0, 1, 2):
            split = split_by_subject(series.values, series.subjects, 0.2, seed)
            assert split.how == "subjects" and len(split.validation_subjects) == 1
            assert fold.test_subject not in split.validation_subjects + split.fit_subjects
            assert not set(split.validation_subjects) & set(split.fit_subjects)
            assert set(split.validation_subjects) | set(split.fit_subjects) == set(fold.train_subjects)
            held = [row for v, s in zip(series.values, series.subjects) if s in split.validation_subjects for row in v]
            assert len(split.validation) == len(held)
            for got, want in zip(split.validation, held):
                np.testing.assert_array_equal(got, want)
        again = split_by_subject(series.values, series.subjects, 0.2, 0)  # seeded: the same draw again
        assert again.validation_subjects == split_by_subject(series.values, series.subjects, 0.2, 0).validation_subjects


def test_one_training_subject_falls_back_to_a_time_ordered_split_inside_it():
    ds = make_dataset(n_subjects=2, n_samples=200)
    fold = loso_folds(ds)[0]
    series = fold_training_series(ds, fold, Setting(32, 16))
    assert set(series.subjects) == {fold.train_subjects[0]} != {fold.test_subject}
    split = split_by_subject(series.values, series.subjects, 0.2, 0)
    assert split.how.startswith("time") and split.validation_subjects == split.fit_subjects == tuple(fold.train_subjects)
    rows = [row for v in series.values for row in v]
    for fit, val, whole in zip(split.fit, split.validation, rows):  # the first 80 % fits, the last 20 % validates
        assert fit.shape[0] == 160 and val.shape[0] == 40
        np.testing.assert_array_equal(np.concatenate([fit, val]), whole)
    windows = validation_windows(split.validation, 20, 256)  # from the validation part only
    assert windows.shape == (len(rows) * 2, 20)


def _tuned_cell(name: str, options: dict, seed: int = 0):
    ds = make_dataset(n_subjects=4, n_samples=200)
    spec = ForecastingSpec(settings=(Setting(32, 16),), sampling=SamplingSpec(max_windows_per_subject=3, seed=seed))
    model = load_model(name, training="tuned", **options)
    if name != "ridge":
        model.tuning = dataclasses.replace(model.tuning, max_epochs=2, batches_per_epoch=3, batch_size=8)
    out = evaluate_forecasting(model, ds, loso_folds(ds)[0], Setting(32, 16), spec)
    return model, out


@pytest.mark.parametrize("name", ["ridge", pytest.param("dlinear", marks=needs_gluonts)])
def test_a_tuned_cell_is_deterministic_under_its_seed_and_records_its_choice(name):
    model, first = _tuned_cell(name, {})
    _, second = _tuned_cell(name, {})
    assert (first.errors.sse, first.errors.sae) == (second.errors.sse, second.errors.sae)
    cell = Cell("forecasting", "d", "S01", "32/16", name, 0, None, model_options=(("seed", 0), ("training", "tuned")))
    info = json.loads(model_info(model, cell))
    assert info["training"] == "tuned"
    tuning = info["tuning"]
    assert tuning["lookback"] in (16, 32) and np.isfinite(tuning["validation_loss"]) and tuning["validation"] == "subjects"
    assert tuning["validation_subjects"] and not set(tuning["validation_subjects"]) & set(tuning["fit_subjects"])
    assert {"lookback", "learning_rate", "epochs_run", "validation_loss"} <= set(tuning["candidates"][0])


def _identity_and_key(argv: list[str], model: str) -> tuple[str, str]:
    config = _config(_parser().parse_args(["run", "forecasting", *argv, "--out", "/tmp/unused"]))
    model_id = model_identity("forecasting", model, _model_options(config, model))["model_id"]
    return model_id, row_key(model_id, task="forecasting", dataset="synthetic-cohort", fold="S01", setting="48/24",
                             condition="clean", model=model, seed=0, protocol="p")


# computed by the code before the tuned mode existed (commit bb40b7b), by the same calls
FIXED_KEYS = {"ridge": "8c1018ba7f1038f3", "dlinear": "c3ff6bd06bf41fe6"}
FIXED_SUMS = {"ridge": (3.0051586258267813, 14.415073020602899), "dlinear": (3.0141938502046104, 13.197818669096133),
              "deepar": (4.552414501854866, 17.751119279787915)}


@pytest.mark.parametrize("flags", [[], ["--supervised-training", "fixed"]])
def test_fixed_mode_keeps_its_record_keys_and_tuned_rows_have_their_own(flags):
    for model in FIXED_KEYS:
        assert _identity_and_key(["--models", "ridge", "dlinear", *flags], model) == ("", FIXED_KEYS[model])
        tuned_id, tuned_key = _identity_and_key(["--models", "ridge", "dlinear", "--supervised-training", "tuned"], model)
        assert tuned_id and tuned_key != FIXED_KEYS[model]
        assert (tuned_id, tuned_key) == _identity_and_key(["--models", "ridge", "dlinear", "--model-option",
                                                           f"{model}.training=tuned"], model)


def test_supervised_training_flag_needs_a_supervised_model():
    with pytest.raises(SpecError, match="no supervised model"):
        _config(_parser().parse_args(["run", "forecasting", "--models", "last-value", "--supervised-training", "tuned",
                                      "--out", "/tmp/unused"]))


@pytest.mark.parametrize("name", ["ridge", pytest.param("dlinear", marks=needs_gluonts),
                                  pytest.param("deepar", marks=needs_gluonts)])
def test_fixed_mode_numbers_are_those_of_the_fixed_training_before_the_tuned_mode(name):
    ds = make_dataset(n_subjects=3, n_samples=200)
    spec = ForecastingSpec(settings=(Setting(32, 16),), sampling=SamplingSpec(max_windows_per_subject=3))
    model = load_model(name, **({} if name == "ridge" else TINY_TRAINING))
    out = evaluate_forecasting(model, ds, loso_folds(ds)[0], Setting(32, 16), spec)
    np.testing.assert_allclose((out.errors.sse, out.errors.sae), FIXED_SUMS[name], rtol=1e-6)
    assert model.fit_summary is None and "tuning" not in model.describe()


def test_fit_chunks_keep_every_window_whole_in_some_piece():
    from baselines.supervised_tuning import fit_chunks

    series = [np.arange(1000.0), np.arange(30.0), np.arange(5.0)]
    pieces = fit_chunks(series, window=40, step=100)
    assert all(40 <= p.shape[0] <= 139 for p in pieces)
    starts = {(int(p[0]) + k) for p in pieces if p[0] >= 0 for k in range(p.shape[0] - 39)}
    assert starts == set(range(961))  # every window of the long series; the short ones hold none
    assert fit_chunks([np.arange(50.0)], window=40, step=4096)[0].shape == (50,)
