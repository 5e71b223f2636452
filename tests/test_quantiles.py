"""Quantile forecasts: the CRPS estimate and weighted quantile loss, computed by hand on small cases,
and reported for quantile models only (point forecasters get none, never a stand-in)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.reporting.stats_report import cell_windows, leaderboard
from harness.records.store import read_records
from protocols import interface
from protocols.datasets.folder import write_folder_dataset
from protocols.metrics import quantile_loss
from tests.conftest import make_dataset
from tests.plugin_models import QuantileLastValue


def test_quantile_loss_by_hand():
    # y = 1; levels 0.1 and 0.9 at 0 and 2: 2 * 0.1 * (1 - 0) = 0.2 and 2 * (1 - 0.9) * (2 - 1) = 0.2 -> 0.2
    out = quantile_loss(np.array([[[[0.0, 2.0]]]]), np.array([[[1.0]]]), (0.1, 0.9))
    assert out.shape == (1, 1, 1) and out[0, 0, 0] == pytest.approx(0.2)
    # every quantile at the point forecast, symmetric levels: the mean of 2 tau (or 2 (1 - tau)) is 1,
    # so the CRPS estimate is the absolute error
    y, q = np.array([[[1.0, -2.0]]]), np.array([[[0.25, 0.5]]])
    same = np.repeat(q[..., None], 9, axis=-1)
    np.testing.assert_allclose(quantile_loss(same, y, interface.QUANTILE_LEVELS), np.abs(y - q))
    with pytest.raises(ValueError, match="quantiles shape"):
        quantile_loss(same[..., :3], y, interface.QUANTILE_LEVELS)


def test_quantiles_are_asked_only_of_models_that_declare_them():
    from baselines.naive import LastValue
    from baselines.testing import queries, series

    batch = series(2, 2, 32)
    with pytest.raises(NotImplementedError, match="does not declare quantile forecasts"):
        interface.forecast_quantiles(LastValue(), batch, queries(batch, 4))
    point, quant = interface.forecast_quantiles(QuantileLastValue(spread=1.0), batch, queries(batch, 4))
    assert point.shape == (2, 2, 4) and quant.shape == (2, 2, 4, 9)
    np.testing.assert_allclose(quant[..., 4], point)  # the 0.5 level


def test_crps_and_wql_reach_the_leaderboard_for_quantile_models_only(tmp_path: Path):
    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    out = tmp_path / "run"
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "test-quantile-last-value",
                 "last-value", "seasonal-naive", "--settings", "48/24", "--max-windows-per-subject", "4",
                 "--out", str(out), "--no-progress"]) == 0
    frame = read_records(out / "records.csv")
    by_model = frame.groupby("model")[["sse", "sae"]].sum()
    # the same point forecast as last-value: identical errors (the quantiles change nothing there)
    assert by_model.loc["test-quantile-last-value"].tolist() == pytest.approx(by_model.loc["last-value"].tolist())
    board, _ = leaderboard(frame, cell_windows(frame, out, "forecasting")[0], "forecasting")
    # spread 0: every quantile is the point, so the CRPS estimate is the MAE (mean |error| over points)
    mae = by_model.loc["last-value", "sae"] / frame[frame.model == "last-value"].n_points.sum()
    assert board.loc["test-quantile-last-value", "crps"] == pytest.approx(mae)
    assert np.isnan(board.loc["last-value", "crps"]) and np.isnan(board.loc["seasonal-naive", "wql"])
    assert board.loc["test-quantile-last-value", "wql"] > 0


def test_fracast_quantiles_leave_its_point_forecast_unchanged():
    pytest.importorskip("fracast")
    from baselines.fracast_model import MEDIAN, Fracast
    from baselines.testing import queries, series

    model = Fracast()
    assert model.capabilities.quantiles
    batch = series(3, 2, 64)
    q = queries(batch, 60)  # beyond its native 48 steps: rolled out by the library
    point, quant = interface.forecast_quantiles(model, batch, q)
    assert quant.shape == (3, 2, 60, 9) and np.isfinite(quant).all()
    np.testing.assert_array_equal(point, interface.forecast(model, batch, q))  # bit-identical
    # the library's own output: the point is its median column, the quantiles its nine columns
    raw = model._model.forecast_batch(batch.values.reshape(6, 64).astype(np.float32), horizon=60)
    np.testing.assert_array_equal(point.reshape(6, 60), raw[:, :, MEDIAN].astype(np.float64))
    np.testing.assert_array_equal(quant.reshape(6, 60, 9), raw.astype(np.float64))
    _, two = interface.forecast_quantiles(model, batch, q, levels=(0.9, 0.1))
    np.testing.assert_array_equal(two, quant[..., [8, 0]])
    with pytest.raises(ValueError, match=r"fracast forecasts the quantiles .*, not \[0.25\]"):
        interface.forecast_quantiles(model, batch, q, levels=(0.25,))
