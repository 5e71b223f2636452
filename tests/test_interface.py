"""The model interface: input validation, channel folding and the default imputation."""

from __future__ import annotations

import numpy as np
import pytest

from protocols import interface
from protocols.interface import Capabilities, Model, ModelInputError, SeriesBatch, fill_prefix


class Linear(Model):
    """Per-channel: extrapolates the last two points linearly in time (uses timestamps)."""

    name = "linear"
    capabilities = Capabilities(multivariate=False)

    def _forecast(self, batch, query_times):
        assert batch.shape[1] == 1
        v, t = batch.values[:, 0], batch.timestamps
        slope = (v[:, -1] - v[:, -2]) / (t[:, -1] - t[:, -2])
        return (v[:, -1:] + slope[:, None] * (query_times - t[:, -1:]))[:, None, :]


def _batch(b=2, c=3, t=8):
    rng = np.random.default_rng(0)
    return SeriesBatch(rng.normal(size=(b, c, t)), np.tile(np.arange(t, dtype=float), (b, 1)))


def test_series_batch_validation():
    with pytest.raises(ModelInputError, match=r"\[B, C, T\]"):
        SeriesBatch(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ModelInputError, match="timestamps must be"):
        SeriesBatch(np.zeros((2, 1, 4)), np.zeros((2, 5)))
    with pytest.raises(ModelInputError, match="strictly increasing"):
        SeriesBatch(np.zeros((1, 1, 3)), np.array([[0.0, 2.0, 1.0]]))
    with pytest.raises(ModelInputError, match="NaN"):
        SeriesBatch(np.array([[[0.0, np.nan]]]), np.array([[0.0, 1.0]]))
    with pytest.raises(ModelInputError, match="mask"):
        SeriesBatch(np.zeros((1, 1, 2)), np.array([[0.0, 1.0]]), mask=np.ones((1, 1, 2)))


def test_unobserved_values_are_zero_filled():
    vals = np.array([[[1.0, np.nan, 3.0]]])
    mask = np.array([[[True, False, True]]])
    b = SeriesBatch(vals, np.array([[0.0, 1.0, 2.0]]), mask=mask)
    assert b.values.tolist() == [[[1.0, 0.0, 3.0]]]


def test_query_times_must_follow_context():
    b = _batch()
    with pytest.raises(ModelInputError, match="strictly after"):
        interface.forecast(Linear(), b, np.tile([7.0, 8.0], (2, 1)))
    with pytest.raises(ModelInputError, match=r"\[B=2, H\]"):
        interface.forecast(Linear(), b, np.array([8.0, 9.0]))


def test_per_channel_models_get_one_channel_at_a_time():
    b = _batch(b=2, c=3)
    q = np.tile([8.0, 9.0, 10.5], (2, 1))
    out = interface.forecast(Linear(), b, q)
    assert out.shape == (2, 3, 3)
    for c in range(3):
        single = SeriesBatch(b.values[:, c:c + 1], b.timestamps)
        np.testing.assert_allclose(out[:, c:c + 1], interface.forecast(Linear(), single, q))


def test_fill_prefix_carries_last_observation_forward():
    vals = np.array([[[np.nan, 2.0, np.nan, np.nan, 5.0, np.nan]]])
    mask = ~np.isnan(vals)
    b = SeriesBatch(vals, np.arange(6.0)[None], mask=mask)
    assert fill_prefix(b).values.tolist() == [[[2.0, 2.0, 2.0, 2.0, 5.0, 5.0]]]


def test_default_impute_forecasts_to_the_query_time():
    b = _batch(b=2, c=2, t=6)
    q = np.array([6.0, 9.5])  # next regular step; an off-grid time three steps ahead
    out = interface.impute(Linear(), b, q)
    assert out.shape == (2, 2)
    expect = interface.forecast(Linear(), b, np.array([[6.0], [9.5]]))[:, :, 0]
    np.testing.assert_allclose(out, expect)


def test_wrong_output_shape_is_caught():
    class Bad(Model):
        name = "bad"
        capabilities = Capabilities(multivariate=True)

        def _forecast(self, batch, query_times):
            return np.zeros((1, 1, 1))

    with pytest.raises(RuntimeError, match="returned shape"):
        interface.forecast(Bad(), _batch(), np.tile([8.0], (2, 1)))
