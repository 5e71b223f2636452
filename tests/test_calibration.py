"""Calibration (issue #48): coverage of central intervals and the PIT histogram of quantile forecasts.

A model that forecasts the exact quantiles of a known Gaussian process covers each central interval at its
nominal rate and has a flat PIT histogram; an over-confident one covers too little; the cells' counts pool over
folds exactly; point forecasters get an ``unavailable`` row; a model lacking an interval's ends gets no number
for that interval (no extrapolation)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from harness.cli import main
from harness.records.store import read_records
from harness.tasks.calibration import coverage_interval, replicates, row_counts
from protocols import interface
from protocols.calibration import (CALIBRATION_LEVELS, NOMINAL, CalibrationCounts, calibration_counts,
                                   evaluate_calibration, pool, quantile_at)
from protocols.data import Dataset, Recording
from protocols.datasets import load_dataset
from protocols.datasets.folder import write_folder_dataset
from protocols.forecasting import fold_windows
from protocols.interface import Capabilities, Model
from protocols.scaling import MinMaxScaler, fit_fold_scaler
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from tests.conftest import make_dataset
from tests.plugin_models import QuantileLastValue

MU, SIGMA = 2.0, 3.0
SETTING = Setting(48, 24)


def gaussian_dataset(n_subjects: int = 3, n_samples: int = 2400) -> Dataset:
    """Independent N(MU, SIGMA^2) samples: the best forecast of any future point is that distribution."""
    rng = np.random.default_rng(7)
    t = np.arange(n_samples, dtype=float)
    recs = tuple(Recording(f"s{i}", f"r{i}", MU + SIGMA * rng.standard_normal((1, n_samples)), t)
                 for i in range(n_subjects))
    return Dataset("gaussian", ("x",), recs, sampling_rate=1.0)


class GaussianOracle(Model):
    """Forecasts the quantiles of N(MU, (SIGMA * width)^2), in the fold's normalised units (width 1: exact)."""

    name = "gaussian-oracle"
    capabilities = Capabilities(multivariate=True, quantiles=True)

    def __init__(self, scaler: MinMaxScaler, width: float = 1.0) -> None:
        self.scaler, self.width = scaler, width

    def _forecast_quantiles(self, batch, query_times, levels):
        raw = MU + SIGMA * self.width * norm.ppf(np.asarray(levels, dtype=float))
        q = (raw - self.scaler.minimum[0]) / self.scaler.scale[0]
        b, h = batch.shape[0], query_times.shape[1]
        point = np.full((b, 1, h), (MU - self.scaler.minimum[0]) / self.scaler.scale[0])
        return point, np.broadcast_to(q, (b, 1, h, len(levels))).copy()


def oracle_counts(width: float) -> CalibrationCounts:
    dataset = gaussian_dataset()
    spec = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=200))
    return pool([evaluate_calibration(GaussianOracle(fit_fold_scaler(dataset, f), width), dataset, f, SETTING,
                                      spec).counts for f in loso_folds(dataset)])


def test_exact_gaussian_quantiles_cover_at_nominal_with_a_flat_pit():
    c = oracle_counts(1.0)
    assert c.levels == CALIBRATION_LEVELS and c.n > 5000
    for cov, nominal in zip(c.coverage(), NOMINAL):
        assert cov == pytest.approx(nominal, abs=0.02)
    assert c.calibration_error() < 0.02
    assert c.pit_deviation() < 0.03
    np.testing.assert_allclose(c.below(), CALIBRATION_LEVELS, atol=0.02)  # the reliability diagram's diagonal


def test_an_over_confident_model_covers_too_little():
    c = oracle_counts(1 / 3)  # intervals a third as wide as the truth's
    for cov, nominal in zip(c.coverage(), NOMINAL):
        expected = 2 * norm.cdf(norm.ppf((1 + nominal) / 2) / 3) - 1  # P(|z| < z_p / 3)
        assert cov == pytest.approx(expected, abs=0.02) and cov < nominal - 0.2
    assert c.pit_deviation() > 0.2  # mass piled into the outer bins


def test_interval_ends_are_interpolated_inside_the_levels_and_never_extrapolated():
    deciles = tuple(interface.QUANTILE_LEVELS)
    q = np.arange(1.0, 10.0)  # the forecast at 0.1 .. 0.9 is 1 .. 9
    assert float(quantile_at(q, deciles, 0.25)) == pytest.approx(2.5)
    assert float(quantile_at(q, deciles, 0.9)) == 9.0
    assert quantile_at(q, deciles, 0.05) is None and quantile_at(q, deciles, 0.95) is None
    # y = 2.6 is inside [2.5, 7.5] (50 %) and [1, 9] (80 %); the 90 % interval is not available
    c = calibration_counts(q[None, :], np.array([2.6]), deciles)
    assert c.inside == (1, 1, None) and np.isnan(c.coverage()[2])
    assert c.pit == (0, 0, 1, 0, 0, 0, 0, 0, 0, 0)  # between the 0.2 and 0.3 forecasts
    # crossing quantiles are sorted first: reversed deciles count as the deciles
    assert calibration_counts(q[None, ::-1], np.array([2.6]), deciles) == c


class RefusesTails(Model):
    """Forecasts the deciles only, and refuses other levels as the adapters do (interface.quantile_indices)."""

    name = "refuses-tails"
    capabilities = Capabilities(multivariate=True, quantiles=True)

    def _forecast_quantiles(self, batch, query_times, levels):
        interface.quantile_indices(interface.QUANTILE_LEVELS, levels, self.name)
        b, h = batch.shape[0], query_times.shape[1]
        return np.zeros((b, 1, h)), np.broadcast_to(np.asarray(levels) - 0.5, (b, 1, h, len(levels))).copy()


def test_a_model_without_the_tails_levels_gets_the_deciles_and_no_90_percent_number():
    dataset = gaussian_dataset(n_samples=600)
    fold = loso_folds(dataset)[0]
    out = evaluate_calibration(RefusesTails(), dataset, fold, SETTING, ForecastingSpec(settings=(SETTING,)))
    assert out.counts.levels == tuple(interface.QUANTILE_LEVELS) and "not [0.05" in out.refused
    assert out.counts.inside[2] is None and out.counts.inside[1] is not None


def test_run_pools_folds_exactly_and_point_models_are_unavailable(tmp_path: Path):
    folder = tmp_path / "toy"
    dataset = make_dataset(n_subjects=3, n_samples=300)
    write_folder_dataset(dataset, folder)
    out = tmp_path / "run"
    assert main(["run", "calibration", "--dataset", str(folder), "--models", "test-quantile-last-value",
                 "last-value", "--model-option", "test-quantile-last-value.spread=0.3", "--settings", "48/24",
                 "--max-windows-per-subject", "4", "--out", str(out), "--no-progress"]) == 0
    frame = read_records(out / "records.csv")
    point = frame[frame["model"] == "last-value"]
    assert len(point) == 3 and set(point["status"]) == {"unavailable"}
    assert point["error"].str.contains("point forecasts only").all()
    assert point["coverage_80"].isna().all()  # no number stands in for it
    rows = frame[frame["model"] == "test-quantile-last-value"]
    assert set(rows["status"]) == {"ok"} and rows["coverage_80"].between(0, 1).all()
    # the pooled counts equal the counts of every fold's windows scored at once
    (rep,) = [r for r in replicates(frame) if r["model"] == "test-quantile-last-value"]
    spec = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=4))
    ds = load_dataset(str(folder))
    model = QuantileLastValue(spread=0.3)
    quantiles, targets = [], []
    for fold in loso_folds(ds):
        arrays, _ = fold_windows(ds, fold, SETTING, spec)
        batch = interface.SeriesBatch(arrays.context, arrays.context_times)
        quantiles.append(interface.forecast_quantiles(model, batch, arrays.target_times, CALIBRATION_LEVELS)[1])
        targets.append(arrays.target)
    direct = calibration_counts(np.concatenate(quantiles), np.concatenate(targets), CALIBRATION_LEVELS)
    assert rep["complete"] and rep["counts"] == direct
    # one row's counts are what its metrics say
    first = rows.iloc[0]
    assert row_counts(first).coverage()[1] == pytest.approx(first["coverage_80"])
    assert json.loads(first["details"])["calibration"]["n"] == first["n_points"]
    # the report's tables and figure
    text = (out / "tables" / "calibration.md").read_text()
    assert "unavailable" in text and "80% cov." in text
    assert (out / "figures" / "calibration.png").exists()


def test_bootstrap_interval_brackets_the_pooled_coverage():
    subjects = [CalibrationCounts(CALIBRATION_LEVELS, 100, (50 + k, 80, 90), (0,) * 14) for k in (-10, 0, 10)]
    pooled, lo, hi = coverage_interval(subjects, 0)
    assert pooled == pytest.approx(0.5) and lo < pooled < hi and lo >= 0.4 and hi <= 0.6
    assert tuple(coverage_interval(subjects, 1)) == pytest.approx((0.8, 0.8, 0.8))


def test_coverage_columns_are_never_bold_while_the_calibration_error_is_ranked():
    from harness.reporting.tables import Column, Entry, Table, render

    cov, err = Column("d", "80% cov.", ranked=False), Column("d", "cal. err.")
    entries = {(m, c): Entry(v, float("nan"), 1, 1, "ok")
               for m, vs in (("a", (79.0, 1.0)), ("b", (95.0, 15.0)), ("c", (60.0, 20.0)))
               for c, v in zip((cov, err), vs)}
    text = render(Table("t", (cov, err), ("a", "b", "c"), entries), "markdown")
    assert "**1.00**" in text and "**95.00**" not in text and "**79.00**" not in text
