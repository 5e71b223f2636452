"""Offline baselines: hand-computed forecasts, and the contract for every registered model."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.naive import Drift, LastValue, SeasonalNaive, WindowMean, estimate_period
from baselines.testing import TINY_TRAINING, check_embed_contract, check_forecast_contract
from models.registry import all_specs
from protocols import interface
from protocols.interface import SeriesBatch


def _batch(y, t=None):
    y = np.asarray(y, dtype=float)
    t = np.arange(y.size, dtype=float) if t is None else np.asarray(t, dtype=float)
    return SeriesBatch(y[None, None], t[None])


def test_naive_forecasts_by_hand():
    b = _batch([1.0, 3.0, 2.0, 6.0])
    q = np.array([[4.0, 5.0, 7.0]])
    assert interface.forecast(LastValue(), b, q).tolist() == [[[6.0, 6.0, 6.0]]]
    assert interface.forecast(WindowMean(), b, q).tolist() == [[[3.0, 3.0, 3.0]]]
    # drift: slope (6 - 1) / (3 - 0) per second, extended to the query times
    np.testing.assert_allclose(interface.forecast(Drift(), b, q)[0, 0], [6 + 5 / 3, 6 + 10 / 3, 6 + 20 / 3])


def test_masked_points_are_carried_forward():
    y = np.array([[[1.0, 2.0, 99.0]]])
    b = SeriesBatch(y, np.array([[0.0, 1.0, 2.0]]), mask=np.array([[[True, True, False]]]))
    assert interface.forecast(LastValue(), b, np.array([[3.0]])).tolist() == [[[2.0]]]


def test_seasonal_naive_recovers_the_period_and_repeats_the_season():
    season = np.array([0.0, 1.0, 4.0, 2.0, -1.0, 0.5, 3.0])
    y = np.tile(season, 10)
    assert estimate_period(y) == 7
    out = interface.forecast(SeasonalNaive(), _batch(y), (70 + np.arange(14.0))[None])
    np.testing.assert_array_equal(out[0, 0], np.tile(season, 2))
    assert estimate_period(np.arange(50.0)) is None  # a ramp has no season


def test_statsforecast_models_follow_a_clean_trend():
    pytest.importorskip("statsforecast")
    from baselines.statsforecast_models import AutoETS, AutoTheta

    t = np.arange(96.0)
    b = _batch(0.5 * t + 3.0)
    q = (96 + np.arange(12.0))[None]
    for model in (AutoETS(), AutoTheta()):
        out = interface.forecast(model, b, q)[0, 0]
        np.testing.assert_allclose(out, 0.5 * (96 + np.arange(12.0)) + 3.0, rtol=0.02)


def test_constant_context_gives_a_constant_forecast():
    pytest.importorskip("statsforecast")
    from baselines.statsforecast_models import AutoETS

    model = AutoETS()
    out = interface.forecast(model, _batch(np.full(48, 2.5)), (48 + np.arange(5.0))[None])
    assert out.tolist() == [[[2.5] * 5]]


FORECASTERS = sorted(name for name, spec in all_specs().items()
                     if "forecasting" in spec.tasks and spec.unavailable_reason() is None
                     and name != "auto-arima" and not name.startswith("test-"))  # AutoARIMA: ~0.6 s per series; covered in the slow test below


# the contract's properties do not depend on the horizon's length; the faithful rollout runs one
# backbone pass per horizon step, so a short one keeps its check under 15 s instead of about 55 s
CONTRACT_SIZES = {"soter-autoregressive": {"h": 6},
                  # supervised gluonts models: trained in the contract on a toy fold, with the smallest budget
                  **{name: {"options": TINY_TRAINING} for name in ("dlinear", "patchtst", "deepar", "mlp")}}


@pytest.mark.parametrize("name", FORECASTERS)
def test_registered_forecaster_meets_the_contract(name):
    check_forecast_contract(all_specs()[name], **CONTRACT_SIZES.get(name, {}))


@pytest.mark.slow
def test_auto_arima_meets_the_contract():
    pytest.importorskip("statsforecast")
    check_forecast_contract(all_specs()["auto-arima"], t=24, h=4, b=2, c=2)


EMBEDDERS = sorted(name for name, spec in all_specs().items()
                   if "classification" in spec.tasks and spec.unavailable_reason() is None
                   and not name.startswith("test-"))


@pytest.mark.parametrize("name", EMBEDDERS)
def test_registered_embedder_meets_the_contract(name):
    check_embed_contract(all_specs()[name])
