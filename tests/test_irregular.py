"""Issue #48 item 1: forecasting under irregular sampling (protocols.irregular, the `irregular` task)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baselines.naive import Drift, LastValue
from protocols import irregular as irr
from protocols.data import Dataset, Recording
from protocols.forecasting import evaluate_forecasting, fold_windows
from protocols.interface import Capabilities, Model, SeriesBatch
from protocols.specs import SamplingSpec, Setting, SpecError
from protocols.splits import loso_folds
from tests.conftest import make_dataset

SETTING = Setting(32, 16)
SPEC = irr.IrregularSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=4))


class TwoPointLine(Model):
    """A continuous-time model: each channel's line through its last two context points, at the query times.
    It keeps every batch and query it was given."""

    name = "two-point-line"
    capabilities = Capabilities(forecast=True, multivariate=True, min_context=2)
    continuous_time = True

    def __init__(self) -> None:
        self.calls: list[tuple[SeriesBatch, np.ndarray]] = []

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        self.calls.append((batch, query_times))
        v, t = batch.values, batch.timestamps
        slope = (v[:, :, -1] - v[:, :, -2]) / (t[:, -1] - t[:, -2])[:, None]
        return v[:, :, -1:] + slope[..., None] * (query_times - t[:, -1:])[:, None, :]


def linear_dataset(n_subjects: int = 3, n_samples: int = 300, rate: float = 10.0) -> Dataset:
    """Every channel a straight line of time (different per subject and channel): linear interpolation is exact."""
    t = np.arange(n_samples) / rate
    recs = tuple(Recording(subject=f"S{s}", name=f"S{s}_r0", values=np.stack([(0.3 + 0.1 * s) * t + s,
                                                                             (-0.2 - 0.05 * s) * t + 2 * s]),
                           timestamps=t.copy()) for s in range(n_subjects))
    return Dataset(name="lines", channels=("a", "b"), recordings=recs, sampling_rate=rate)


def _arrays():
    ds = make_dataset(n_subjects=3, n_samples=300)
    fold = loso_folds(ds)[0]
    return ds, fold, fold_windows(ds, fold, SETTING, SPEC.forecasting())[0]


@pytest.mark.parametrize("pattern", irr.PATTERNS)
@pytest.mark.parametrize("model", [LastValue, Drift, TwoPointLine])
def test_severity_zero_reproduces_forecasting_bit_for_bit(pattern, model):
    ds, fold, _ = _arrays()
    clean = evaluate_forecasting(model(), ds, fold, SETTING, SPEC.forecasting())
    for true_times in (False, True):
        zero = irr.evaluate_irregular(model(), ds, fold, SETTING, SPEC, pattern, 0.0, 0, true_times)
        assert zero.errors == clean.errors  # ErrorSums: sse, sae and n equal exactly
        assert zero.observed_context == zero.scored_target == 1.0


@pytest.mark.parametrize("pattern", irr.PATTERNS)
def test_a_continuous_time_model_is_scored_at_the_true_target_times(pattern):
    ds = linear_dataset()
    fold = loso_folds(ds)[0]
    model = TwoPointLine()
    out = irr.evaluate_irregular(model, ds, fold, SETTING, SPEC, pattern, 0.5, 0, true_times=True)
    assert out.errors.n > 0 and out.errors.rmse < 1e-9  # exact: the line is right at every true time
    arrays = fold_windows(ds, fold, SETTING, SPEC.forecasting())[0]
    w = irr.draw_windows(arrays, pattern, 0.5, irr.irregular_rng(0, ds, fold, SETTING, pattern, 0.5))
    asked = np.concatenate([q.ravel() for _, q in model.calls])
    if pattern == "jitter":  # asked at the moved times, not at the grid's
        np.testing.assert_array_equal(np.sort(asked), np.sort(w.target_times.ravel()))
        assert np.isin(asked, arrays.target_times).mean() < 0.1  # only a clamped last target time is on the grid
    else:  # asked only at target times that were observed
        assert out.scored_target < 1.0
        assert np.isin(asked, w.target_times[w.target_mask.any(axis=1)]).all()
    if pattern == "jitter":  # the grid path (resampled context, ends held) is not exact: the paths differ
        grid = irr.evaluate_irregular(TwoPointLine(), ds, fold, SETTING, SPEC, pattern, 0.5, 0, true_times=False)
        assert grid.errors.rmse > 1e-6


def test_multirate_calls_each_channel_with_only_its_own_observed_times():
    ds, fold, arrays = _arrays()
    w = irr.draw_windows(arrays, "multirate", 0.5, np.random.default_rng(0))
    share = w.context_mask.mean(axis=(0, 2))
    assert share[0] > share[1]  # channel 1 of 2 runs at half the rate, channel 0 at three quarters
    np.testing.assert_allclose(share, [0.75, 0.5], atol=0.08)
    model = TwoPointLine()
    irr.predict_true_times(model, w, 64)
    assert model.calls and all(batch.shape[1] == 1 and batch.mask.all() for batch, _ in model.calls)


def test_the_draws_are_seeded_and_shares_follow_the_severity():
    ds, fold, arrays = _arrays()
    for pattern in irr.PATTERNS:
        a = irr.draw_windows(arrays, pattern, 0.5, irr.irregular_rng(0, ds, fold, SETTING, pattern, 0.5))
        b = irr.draw_windows(arrays, pattern, 0.5, irr.irregular_rng(0, ds, fold, SETTING, pattern, 0.5))
        c = irr.draw_windows(arrays, pattern, 0.5, irr.irregular_rng(1, ds, fold, SETTING, pattern, 0.5))
        for f in dataclasses.fields(a):
            np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name))
        assert not (np.array_equal(a.context_times, c.context_times) and np.array_equal(a.context_mask, c.context_mask))
    big = fold_windows(make_dataset(n_subjects=3, n_samples=3000), loso_folds(make_dataset(3, 3000))[0],
                       SETTING, dataclasses.replace(SPEC, sampling=SamplingSpec(max_windows_per_subject=64)).forecasting())[0]
    for pattern in ("drop", "renewal"):
        lost = 1 - irr.draw_windows(big, pattern, 0.5, np.random.default_rng(0)).target_mask.mean()
        assert 0.4 < lost < 0.6, (pattern, lost)
    jit = irr.draw_windows(big, "jitter", 0.5, np.random.default_rng(0))
    step = 0.1
    assert np.abs(jit.target_times - big.target_times).max() <= 0.25 * step + 1e-12
    assert np.all(np.diff(jit.context_times, axis=1) > 0) and np.all(jit.target_times[:, 0] > jit.context_times[:, -1])


@pytest.mark.parametrize("pattern", irr.PATTERNS)
def test_no_target_value_reaches_what_a_model_sees(pattern):
    _, _, arrays = _arrays()
    other = dataclasses.replace(arrays, target=arrays.target + 1000.0)
    seen = []
    for a in (arrays, other):
        w = irr.draw_windows(a, pattern, 0.5, np.random.default_rng(3))
        model = TwoPointLine()
        irr.predict_true_times(model, w, 64)
        seen.append(([c[0].values for c in model.calls], irr.resample_to_grid(w)))
    assert all(np.array_equal(x, y) for x, y in zip(seen[0][0], seen[1][0]))
    np.testing.assert_array_equal(seen[0][1], seen[1][1])


def test_bad_specs_are_refused():
    with pytest.raises(SpecError):
        irr.IrregularSpec(patterns=("sideways",))
    with pytest.raises(SpecError):
        irr.IrregularSpec(severities=(0.0, 1.0))


def test_the_task_runs_and_its_tables_name_each_rows_input_path(tmp_path):
    from harness.records.store import read_records
    from harness.run.runner import RunConfig, execute
    from harness.tasks import get_task
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    options = {"settings": (SETTING,), "max_windows_per_subject": 2, "patterns": ("drop", "jitter"),
               "severities": (0.0, 0.5)}
    execute(RunConfig(task="irregular", options=options, datasets=(str(folder),),
                      models=("last-value", "soter-tiny-random"), out=tmp_path / "out", progress=False),
            log=lambda m: None)
    frame = read_records(tmp_path / "out" / "records.csv")
    rows = frame[frame["task"] == "irregular"]
    assert set(rows["status"]) == {"ok"} and set(rows["condition"]) == {"regular", "drop=0.5", "jitter=0.5"}
    tables = dict(get_task("irregular").tables(frame))
    assert set(tables) == {"irregular_drop_0", "irregular_drop_0.5", "irregular_jitter_0", "irregular_jitter_0.5"}, set(tables)
    figures = get_task("irregular").figures(frame, tmp_path / "figures")
    assert {p.name for p in figures} >= {"irregular_sampling_drop.png", "irregular_sampling_jitter.png"}
    note = next(iter(tables.values())).notes[-1]
    assert "soter-tiny-random: true timestamps" in note and "last-value: resampled" in note
    # severity 0 of the task is the forecasting task's number for the same windows
    execute(RunConfig(task="forecasting", options={"settings": (SETTING,), "max_windows_per_subject": 2},
                      datasets=(str(folder),), models=("last-value",), out=tmp_path / "fc", progress=False),
            log=lambda m: None)
    fc = read_records(tmp_path / "fc" / "records.csv")
    zero = rows[(rows["model"] == "last-value") & (rows["condition"] == "regular")].sort_values("fold")
    ref = fc[fc["model"] == "last-value"].sort_values("fold")
    assert list(zero["sse"].astype(float)) == list(ref["sse"].astype(float))


def test_plan_counts_an_irregular_cells_windows_as_forecasting_does():
    from harness.run.costs import WINDOW_TASKS  # the plan's cost estimate: windows x channels of the setting

    assert {"forecasting", "irregular"} <= WINDOW_TASKS


@pytest.mark.parametrize("sources", [("forecast",), ("impute",)])
def test_a_severity_that_leaves_nothing_to_score_says_so(tmp_path, sources):
    """Drop or renewal at 0.999 hides every target sample: the error row once blamed short recordings or
    missing values (0 and 0 of them)."""
    from harness.records.store import read_records
    from harness.run.runner import RunConfig, execute
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    options = {"settings": (SETTING,), "max_windows_per_subject": 2, "patterns": ("drop", "renewal"),
               "severities": (0.999,), "irregular_sources": sources}
    execute(RunConfig(task="irregular", options=options, datasets=(str(folder),), models=("last-value",),
                      out=tmp_path / "out", progress=False), log=lambda m: None)
    rows = read_records(tmp_path / "out" / "records.csv")
    assert len(rows) == 6 and set(rows["status"]) == {"error"}
    what = "target sample" if sources == ("forecast",) else "query with its true value"
    for condition, error in zip(rows["condition"], rows["error"]):
        pattern = condition.split("=")[0].removeprefix("impute ").strip()
        assert error.startswith(f"{pattern} at severity 0.999 left no {what} observed in any of the "), error
        assert "shorter than that" not in error
