"""Imputation baselines and the statistical-feature embedding."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.features import StatisticalFeatures
from baselines.imputation import CarryForward, LinearExtrapolation, SplineExtrapolation
from protocols.interface import SeriesBatch, embed, impute


def _line_batch():
    t = np.array([[0.0, 1.0, 2.5, 4.0, 5.0, 7.0]])
    v = (2.0 * t - 1.0)[:, None, :]
    mask = np.ones_like(v, dtype=bool)
    mask[0, 0, 4] = False  # an unobserved point: its value must not matter
    v = v.copy()
    v[0, 0, 4] = 1e6
    return SeriesBatch(v, t, mask=mask)


@pytest.mark.parametrize("model", [LinearExtrapolation(), SplineExtrapolation()])
def test_extrapolations_are_exact_on_a_line_and_ignore_unobserved_points(model):
    out = impute(model, _line_batch(), np.array([9.0]))
    assert out[0, 0] == pytest.approx(17.0)


def test_locf_returns_the_last_observed_value():
    out = impute(CarryForward(), _line_batch(), np.array([9.0]))
    assert out[0, 0] == 13.0  # t = 7 is the last observed point


def test_spline_extrapolation_matches_scipy_on_irregular_points():
    from scipy.interpolate import CubicSpline

    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.5, 1.5, 12))[None]
    v = rng.normal(size=(1, 1, 12))
    q = t[0, -1] + 0.7
    expected = CubicSpline(t[0], v[0, 0], bc_type="natural")(q)
    assert impute(SplineExtrapolation(), SeriesBatch(v, t), np.array([q]))[0, 0] == pytest.approx(expected)


def test_statistical_features_see_the_rhythm():
    t = np.arange(128.0)
    slow = np.sin(2 * np.pi * 0.02 * t)
    fast = np.sin(2 * np.pi * 0.2 * t)
    x = np.stack([[slow, fast]])
    f = embed(StatisticalFeatures(), SeriesBatch(x, t[None])).reshape(2, 6)
    assert f.shape == (2, 6)
    assert np.argmax(f[0, 2:]) == 0 and np.argmax(f[1, 2:]) == 2
    assert np.all(f[:, 2:].sum(axis=1) <= 1 + 1e-9)
