"""Our metrics against gluonts' evaluation module (``gluonts.ev``) on random forecasts: equal wherever the
definitions agree. Where ours deliberately differ (the season of MASE's scale, MASE's mean over a window's channels,
pooling over cells) docs/report.md ("Metrics and gluonts.ev") says how and why; here the season is handed to both."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.interface import QUANTILE_LEVELS
from protocols.metrics import error_sums, window_errors
from protocols.seasonality import estimate_period

ev = pytest.importorskip("gluonts.ev", reason="gluonts is not installed (pip install 'soter-bench[supervised]')")
from gluonts.ev.ts_stats import seasonal_error  # noqa: E402

B, C, T, H = 7, 3, 64, 12


def _random_forecasts(seed: int):
    """Contexts with and without a period (so MASE's season is 1 for some rows and > 1 for others), targets,
    point forecasts and sorted quantiles at the harness's levels."""
    rng = np.random.default_rng(seed)
    t = np.arange(T + H)
    period = rng.integers(5, 16, size=(B, C, 1))
    amplitude = rng.choice([0.0, 1.0], size=(B, C, 1))  # 0: white noise, no autocorrelation peak
    full = amplitude * np.sin(2 * np.pi * t / period) + rng.normal(0, 0.3, size=(B, C, T + H))
    context, target = full[..., :T], full[..., T:]
    point = target + rng.normal(0, 0.5, size=target.shape)
    quantiles = np.sort(point[..., None] + rng.normal(0, 0.5, size=(*target.shape, len(QUANTILE_LEVELS))), axis=-1)
    return context, target, point, quantiles


def _gluonts_data(context, target, point, quantiles) -> dict[str, np.ndarray]:
    """One gluonts series per (window, channel); the season per series is ours (estimate_period, else 1)."""
    seasons = np.array([[estimate_period(context[b, c]) or 1 for c in range(C)] for b in range(B)])
    scale = np.array([[seasonal_error(context[b, c], int(seasons[b, c]))[0] for c in range(C)] for b in range(B)])
    data = {"label": target.reshape(B * C, H), "mean": point.reshape(B * C, H),
            "seasonal_error": scale.reshape(B * C, 1)}
    for k, q in enumerate(QUANTILE_LEVELS):
        data[str(q)] = quantiles[..., k].reshape(B * C, H)
    return data, seasons


def _metric(definition, data, axis=None) -> np.ndarray:
    return np.asarray(definition(axis=axis).update(data).get())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rmse_mae_mase_crps_and_wql_equal_gluonts_ev(seed):
    from gluonts.ev.metrics import MAE, MASE, RMSE, MeanSumQuantileLoss, MeanWeightedSumQuantileLoss

    context, target, point, quantiles = _random_forecasts(seed)
    data, seasons = _gluonts_data(context, target, point, quantiles)
    assert (seasons > 1).any() and (seasons == 1).any()  # both branches of the season rule are compared
    ours = window_errors(point, target, context, np.zeros(B), np.arange(B), quantiles, QUANTILE_LEVELS)
    sums = error_sums(point, target)

    # RMSE and MAE of the point forecast over every point (gluonts' axis=None: our folds pooled exactly)
    np.testing.assert_allclose(sums.rmse, _metric(RMSE(forecast_type="mean"), data), rtol=1e-12)
    np.testing.assert_allclose(sums.mae, _metric(MAE(forecast_type="mean"), data), rtol=1e-12)

    # MASE: per series (window x channel) the same as gluonts' with the same season; a window's MASE is the
    # mean over its channels (gluonts' dataset MASE is the mean over all series: the mean of our windows' values)
    per_series = _metric(MASE(forecast_type="mean"), data, axis=1).reshape(B, C)
    np.testing.assert_allclose(ours.channel_mae / ours.channel_scale, per_series, rtol=1e-12)
    np.testing.assert_allclose(ours.mase, per_series.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(ours.mase.mean(), _metric(MASE(forecast_type="mean"), data), rtol=1e-12)

    # CRPS (the quantile-loss estimate): our summed loss over the scored points = gluonts' mean over the levels
    # of the summed quantile loss, divided by the number of points; WQL = gluonts' mean weighted quantile loss
    n = B * C * H
    crps = ours.quantile_loss.sum() / n
    np.testing.assert_allclose(crps, _metric(MeanSumQuantileLoss(QUANTILE_LEVELS), data) / n, rtol=1e-12)
    wql = ours.quantile_loss.sum() / ours.abs_target.sum()
    np.testing.assert_allclose(wql, _metric(MeanWeightedSumQuantileLoss(QUANTILE_LEVELS), data), rtol=1e-12)


def test_the_agreement_test_can_fail():
    """A wrong season (always 1 where ours finds a period) moves MASE off gluonts': the comparison is not vacuous."""
    from gluonts.ev.metrics import MASE

    context, target, point, quantiles = _random_forecasts(0)
    data, seasons = _gluonts_data(context, target, point, quantiles)
    ours = window_errors(point, target, context, np.zeros(B), np.arange(B), quantiles, QUANTILE_LEVELS)
    data["seasonal_error"] = np.array([seasonal_error(row, 1)[0] for row in context.reshape(B * C, T)])[:, None]
    per_series = _metric(MASE(forecast_type="mean"), data, axis=1).reshape(B, C)
    assert not np.allclose(ours.channel_mae / ours.channel_scale, per_series, rtol=1e-6)
