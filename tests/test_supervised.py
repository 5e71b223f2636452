"""Supervised models trained on each fold's training subjects (issue #30): what the fit sees, that nothing of the
test subject or the future reaches it, seeded training, clear errors, cached and resumable runs, their own group."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from baselines.supervised import Ridge
from baselines.testing import TINY_TRAINING, series as random_series, queries
from harness.records.store import read_records
from harness.run.runner import RunConfig, execute
from models.registry import get_spec, load_model
from protocols import interface
from protocols.forecasting import evaluate_forecasting, fold_training_series
from protocols.interface import Capabilities, Model, NotFittedError, SeriesBatch, TrainingSeries
from protocols.leakage import LeakageError, probe_fit
from protocols.scaling import fit_fold_scaler
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from tests.conftest import make_dataset
from tests.waiting import wait_for_lines

GLUONTS = ("dlinear", "patchtst", "deepar", "mlp")
SUPERVISED = ("ridge", *GLUONTS)
SETTING = Setting(32, 16)
needs_gluonts = pytest.mark.skipif(importlib.util.find_spec("gluonts") is None,
                                   reason="gluonts is not installed (pip install 'soter-bench[supervised]')")


def _options(name: str) -> dict:
    return dict(TINY_TRAINING) if name in GLUONTS else {}


def _setup(n_subjects: int = 3, n_samples: int = 200):
    ds = make_dataset(n_subjects=n_subjects, n_samples=n_samples)
    spec = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=3))
    return ds, loso_folds(ds)[0], spec


class Spy(Model):
    """Records every training set it is handed; forecasts the last value."""

    name = "spy"
    capabilities = Capabilities(multivariate=True, fit=True)

    def __init__(self) -> None:
        self.seen: list[TrainingSeries] = []

    def _fit(self, series, seed):
        self.seen.append(series)

    def _forecast(self, batch, query_times):
        return np.repeat(batch.values[:, :, -1:], query_times.shape[1], axis=2)


def test_fit_gets_the_training_subjects_under_the_fold_minmax_and_never_the_test_subject():
    ds, fold, spec = _setup(n_subjects=4)
    spy = Spy()
    evaluate_forecasting(spy, ds, fold, SETTING, spec)
    (seen,) = spy.seen  # trained once per cell, before forecasting
    assert fold.test_subject not in seen.subjects and set(seen.subjects) == set(fold.train_subjects)
    assert (seen.context, seen.horizon, seen.channels) == (SETTING.context, SETTING.horizon, ds.channels)
    scaler = fit_fold_scaler(ds, fold)
    expected = [scaler.transform(r.values) for r in ds.recordings_of(fold.train_subjects)]
    assert len(seen.values) == len(expected)
    for got, want in zip(seen.values, expected):
        np.testing.assert_array_equal(got, want)
    pooled = np.concatenate(seen.values, axis=1)  # the fold's MinMax maps the training subjects onto [0, 1]
    np.testing.assert_allclose(np.nanmin(pooled, axis=1), 0.0)
    np.testing.assert_allclose(np.nanmax(pooled, axis=1), 1.0)


def test_models_that_are_not_trained_per_fold_are_never_fitted():
    ds, fold, spec = _setup()
    with pytest.raises(NotImplementedError, match="not trained per fold"):
        interface.fit(load_model("last-value"), fold_training_series(ds, fold, SETTING), seed=0)


@pytest.mark.parametrize("name", SUPERVISED)
def test_supervised_model_learns_nothing_of_the_test_subject_or_the_future(name):
    if name in GLUONTS and importlib.util.find_spec("gluonts") is None:
        pytest.skip("gluonts is not installed (pip install 'soter-bench[supervised]')")
    ds, fold, spec = _setup()
    probe_fit(load_model(name, seed=0, **_options(name)), ds, fold, SETTING, spec, n_windows=1)


class PeekingRidge(Ridge):
    """Trains on every subject through a handle on the dataset: the test subject included (a leak)."""

    def __init__(self, dataset) -> None:
        super().__init__()
        self.dataset = dataset

    def _train(self, series, seed):
        scaler_free = tuple(r.values for r in self.dataset.recordings)
        everything = TrainingSeries(scaler_free, tuple(r.subject for r in self.dataset.recordings),
                                    series.channels, series.context, series.horizon)
        return super()._train(everything, seed)


def test_probe_fit_catches_a_model_that_trains_on_the_test_subject():
    ds, fold, spec = _setup()
    with pytest.raises(LeakageError, match="test subject"):
        probe_fit(PeekingRidge(ds), ds, fold, SETTING, spec, n_windows=1)
    probe_fit(Ridge(), ds, fold, SETTING, spec, n_windows=1)  # the honest one passes


@needs_gluonts
def test_training_is_seeded():
    ds, fold, _ = _setup()
    train = fold_training_series(ds, fold, SETTING)
    batch = random_series(4, 1, SETTING.context)
    q = queries(batch, SETTING.horizon)

    def forecast(seed):
        model = load_model("dlinear", seed=0, **TINY_TRAINING)
        interface.fit(model, train, seed=seed)
        return interface.forecast(model, batch, q)

    first = forecast(0)
    np.testing.assert_array_equal(forecast(0), first)
    assert not np.array_equal(forecast(1), first)


@needs_gluonts
def test_deepar_samples_with_the_cells_seed_not_the_factorys():
    """The harness passes every factory seed 0 and the cell's seed (--seeds) to the fit: DeepAR's sample paths
    are drawn with the latter, so two loads trained with one cell seed forecast alike."""
    ds, fold, _ = _setup()
    train = fold_training_series(ds, fold, SETTING)
    batch = random_series(2, 1, SETTING.context)
    out = []
    for factory_seed in (0, 5):
        model = load_model("deepar", seed=factory_seed, **TINY_TRAINING)
        interface.fit(model, train, seed=1)
        out.append(interface.forecast(model, batch, queries(batch, SETTING.horizon)))
    np.testing.assert_array_equal(out[0], out[1])


def test_forecast_before_training_or_for_another_setting_is_a_clear_error():
    ds, fold, _ = _setup()
    model = Ridge()
    batch = random_series(2, 1, SETTING.context)
    with pytest.raises(NotFittedError, match="only after it was trained on a fold's training subjects"):
        interface.forecast(model, batch, queries(batch, SETTING.horizon))
    interface.fit(model, fold_training_series(ds, fold, SETTING), seed=0)
    with pytest.raises(NotFittedError, match="trained for setting 32/16, not 32/8"):
        interface.forecast(model, batch, queries(batch, 8))
    with pytest.raises(ValueError, match="ridge: alpha must be >= 0"):
        Ridge(alpha=-1.0)


def test_a_missing_gluonts_makes_the_models_unavailable_naming_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gluonts" else real(name, *a))
    for name in GLUONTS:
        reason = get_spec(name).unavailable_reason()
        assert reason is not None and "pip install 'soter-bench[supervised]'" in reason
    assert get_spec("ridge").unavailable_reason() is None  # scikit-learn only


def test_supervised_models_are_off_by_default_and_marked_supervised():
    for name in SUPERVISED:
        spec = get_spec(name)
        assert spec.supervised and not spec.is_default_for("forecasting") and "forecasting" in spec.tasks
        assert spec.model_capabilities() is None or spec.model_capabilities().fit


# -- runs: cached per cell, resumable ----------------------------------------------------------------------------
REPO = Path(__file__).resolve().parents[1]
METRIC_COLS = ["key", "status", "rmse", "mae", "sse", "sae", "n_points", "n_windows"]
TINY_FLAGS = [f"dlinear.{k}={v}" for k, v in TINY_TRAINING.items()]


def _metrics(path: Path) -> pd.DataFrame:
    return read_records(path)[METRIC_COLS].sort_values("key").reset_index(drop=True)


def _cli(args, out):
    return [sys.executable, "-m", "harness", "run", "forecasting", *args, "--out", str(out), "--no-progress"]


def _config(folder, out) -> RunConfig:
    return RunConfig(datasets=(str(folder),), models=("ridge", "dlinear"), out=out, progress=False,
                     options={"settings": (SETTING,), "max_windows_per_subject": 3},
                     model_options=tuple(("dlinear", k, v) for k, v in TINY_TRAINING.items()))


@needs_gluonts
def test_interrupted_supervised_run_resumes_to_the_records_of_an_uninterrupted_run(folder, tmp_path):
    """Ctrl-C during a run of supervised models (in a cell's training, between cells, or in the import of the next
    model's libraries, which may swallow the interrupt) keeps the finished rows and exits 130; the rerun trains only
    the missing cells and ends with the records of an uninterrupted run. The state it needs is finished rows: the
    signal may land anywhere after them (harness.run.stopping), so nothing races."""
    env = {**os.environ, "SOTER_BENCH_PLUGINS": "tests.plugin_models", "PYTHONPATH": str(REPO),
           "OMP_NUM_THREADS": "1"}
    args = ["--dataset", str(folder), "--models", "ridge", "dlinear", "--settings", SETTING.name,
            "--max-windows-per-subject", "3", "--model-option", *TINY_FLAGS]
    interrupted = tmp_path / "interrupted"
    proc = subprocess.Popen(_cli(args, interrupted), cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    records = interrupted / "records.csv"
    wait_for_lines(records, 3, proc)  # header + 2 of 6 rows
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate()
    partial = read_records(records)
    assert proc.returncode == 130 and 2 <= len(partial) < 6, err.decode()
    assert b"rerun the same command to resume" in err
    resumed = execute(_config(folder, interrupted))  # the same run as the command line's
    assert resumed.ran == 6 - len(partial) and resumed.skipped_done == len(partial)
    clean = execute(_config(folder, tmp_path / "clean"))
    pd.testing.assert_frame_equal(_metrics(records), _metrics(clean.records_path))
    frame = read_records(records)
    assert set(frame.status) == {"ok"} and set(frame.model) == {"ridge", "dlinear"}
    assert execute(_config(folder, interrupted)).ran == 0  # every cell's training is cached with its row


@needs_gluonts
def test_ctrl_c_during_training_stays_an_interrupt(monkeypatch):
    """Lightning turns a KeyboardInterrupt in training into exit status 1 and ignores SIGINT afterwards; the
    adapter gives the harness its interrupt back (exit 130, "rerun to resume") and its SIGINT handler."""
    from lightning.pytorch import Trainer

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "_fit_impl", interrupted)
    ds, fold, _ = _setup()
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        interface.fit(load_model("dlinear", seed=0, **TINY_TRAINING), fold_training_series(ds, fold, SETTING), 0)
    assert signal.getsignal(signal.SIGINT) is handler


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_tables_show_the_supervised_group_apart_and_rank_it_apart(folder, tmp_path):
    from harness.reporting.tables import SUPERVISED_GROUP, error_table, render

    options = {"settings": (Setting(32, 16), Setting(48, 24)), "max_windows_per_subject": 3}
    run = execute(RunConfig(datasets=(str(folder),), models=("last-value", "drift", "ridge"), out=tmp_path / "o",
                            progress=False, options=options))
    frame = read_records(run.records_path)
    both = error_table(frame, "forecasting")
    alone = error_table(frame[frame.model != "ridge"], "forecasting")
    assert both.supervised == ("ridge",) and alone.supervised == ()
    text, zero_shot = render(both).splitlines(), render(alone).splitlines()
    label = text.index("-- supervised --")
    assert label > max(i for i, line in enumerate(text) if line.startswith(("last-value", "drift")))
    # ranked in its own group only: alone there, it is better than nothing, so it has no mark (never the zero-shot
    # rows' best, whatever its numbers)
    assert text[label + 1].startswith("ridge") and "¹" not in text[label + 1] and "²" not in text[label + 1]
    # the zero-shot rows are ranked exactly as without the supervised model
    assert [line.split() for line in text if line.startswith(("last-value", "drift"))] == \
        [line.split() for line in zero_shot if line.startswith(("last-value", "drift"))]
    assert f"*{SUPERVISED_GROUP}*" in render(both, "markdown")
    assert r"\midrule \multicolumn{3}{l}{\emph{supervised" in render(both, "latex")
    # the report's leaderboard ranks the supervised model apart too: the zero-shot models' ranks, wins, ties and
    # losses are what they are without it, and it counts none against them
    from harness.reporting.stats_report import write_statistics

    write_statistics(frame, run.records_path.parent, tmp_path / "stats")
    write_statistics(frame[frame.model != "ridge"], run.records_path.parent, tmp_path / "alone")
    board = pd.read_csv(tmp_path / "stats" / "leaderboard_forecasting.csv", index_col=0)
    zero_shot = pd.read_csv(tmp_path / "alone" / "leaderboard_forecasting.csv", index_col=0)
    ranked = ["avg_rank", "cells_completed"] + [c for c in ("wins", "ties", "losses") if c in zero_shot]
    pd.testing.assert_frame_equal(board.loc[list(zero_shot.index), ranked], zero_shot[ranked])
    assert board.loc["ridge", "avg_rank"] == 1.0 and board.loc["ridge", ranked[2:]].sum() == 0  # alone in its group
    assert list(board.index)[-1] == "ridge" and board["group"].to_dict() == {
        "last-value": "zero-shot", "drift": "zero-shot", "ridge": SUPERVISED_GROUP}
    assert "group" not in zero_shot  # one group: the leaderboard keeps its columns


def test_noise_task_trains_on_the_clean_training_subjects(folder, tmp_path):
    """The noise study corrupts the test context only: the fit sees the same clean training series at every level."""
    from protocols.noise import evaluate_noise
    from protocols.specs import NoiseSpec

    ds, fold, _ = _setup()
    spy = Spy()
    spec = NoiseSpec(settings=(SETTING,), levels=(0.0, 0.5), sampling=SamplingSpec(max_windows_per_subject=3))
    for level in spec.levels:
        evaluate_noise(spy, ds, fold, SETTING, spec, level, seed=0)
    clean, noisy = spy.seen
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(clean.values, noisy.values))
    run = execute(RunConfig(task="noise", datasets=(str(folder),), models=("ridge",), out=tmp_path / "n",
                            progress=False, options={"settings": (SETTING,), "levels": (0.0, 0.3),
                                                     "max_windows_per_subject": 3}))
    assert set(read_records(run.records_path).status) == {"ok"}
