"""Issue #48 item 1, the imputation half: causal imputation under irregular sampling (protocols.irregular_imputation,
``run irregular --irregular-sources impute``)."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.imputation import CarryForward, LinearExtrapolation
from baselines.naive import LastValue
from protocols import irregular as irr
from protocols import irregular_imputation as ii
from protocols.imputation import build_task, evaluate_imputation
from protocols.specs import IMPUTE_RATE, SpecError
from protocols.splits import loso_folds
from tests.conftest import make_dataset
from tests.test_irregular import linear_dataset

SPEC = irr.IrregularSpec(sources=("forecast", "impute")).imputation()  # 96-sample segments at 25 % missing


class ContinuousLine(LinearExtrapolation):
    """linear-extrapolation declared continuous-time; it keeps every batch and query time it was given."""

    continuous_time = True

    def __init__(self) -> None:
        self.calls: list[tuple[object, np.ndarray]] = []

    def _impute(self, batch, query_time):
        self.calls.append((batch, np.asarray(query_time).copy()))
        return super()._impute(batch, query_time)


@pytest.mark.parametrize("pattern", irr.PATTERNS)
@pytest.mark.parametrize("model", [LastValue, CarryForward, LinearExtrapolation])
def test_severity_zero_reproduces_imputation_bit_for_bit(pattern, model):
    ds = make_dataset(n_subjects=3, n_samples=600)
    fold = loso_folds(ds)[0]
    ref = evaluate_imputation(model(), ds, fold, SPEC, IMPUTE_RATE, 0)
    assert ref.n_queries > 0
    for true_times in (False, True):
        zero = ii.evaluate_irregular_imputation(model(), ds, fold, SPEC, pattern, 0.0, 0, true_times)
        assert zero.errors == ref.errors and zero.n_queries == ref.n_queries  # sse, sae, n equal exactly
        assert zero.kept == 1.0


@pytest.mark.parametrize("pattern", irr.PATTERNS)
def test_a_continuous_time_model_is_scored_at_the_true_times(pattern):
    ds = linear_dataset(n_samples=600)
    fold = loso_folds(ds)[0]
    model = ContinuousLine()
    out = ii.evaluate_irregular_imputation(model, ds, fold, SPEC, pattern, 0.5, 0, true_times=True)
    assert out.n_queries > 0 and out.errors.n > 0 and out.errors.rmse < 1e-9  # the line is exact at the true times
    task, _ = build_task(ds, fold, SPEC, IMPUTE_RATE, 0)
    seg = ii.draw_segments(task, pattern, 0.5, ii.imputation_rng(0, ds, fold, SPEC, pattern, 0.5))
    queries = ii.scored_queries(task, seg)
    asked = np.unique(np.concatenate([q for _, q in model.calls]))  # per-channel model: one call per channel
    np.testing.assert_array_equal(asked, np.unique([seg.times[b, i] for b, i in queries]))
    for batch, q in model.calls:  # causal: every input sample precedes its query; lost samples never observed
        assert (batch.timestamps < q[:, None]).all()
    if pattern == "jitter":  # asked at the moved times, not the grid's
        assert np.isin(asked, task.times).mean() < 0.1
        grid = ii.evaluate_irregular_imputation(ContinuousLine(), ds, fold, SPEC, pattern, 0.5, 0, true_times=False)
        assert grid.errors.rmse > 1e-6  # the resampled grid (ends held) is not exact: the paths differ
    else:
        assert out.kept < 1.0 and out.n_queries < len(task.queries)  # queries with nothing left to score dropped
        for batch, _ in model.calls:
            seen = batch.timestamps[:, None, :].repeat(batch.shape[1], 1)[batch.mask]
            assert seen.size


def test_lost_samples_are_neither_input_nor_scored():
    ds = make_dataset(n_subjects=3, n_samples=600)
    fold = loso_folds(ds)[0]
    task, _ = build_task(ds, fold, SPEC, IMPUTE_RATE, 0)
    seg = ii.draw_segments(task, "multirate", 0.5, ii.imputation_rng(0, ds, fold, SPEC, "multirate", 0.5))
    assert seg.kept.mean(axis=(0, 2))[0] > seg.kept.mean(axis=(0, 2))[1]  # channel 1 at the lower rate
    lost = ~seg.kept
    poisoned = ii.IrregularSegments(np.where(lost, 1e6, seg.values), seg.times, seg.kept, seg.grid_times, False)
    queries = ii.scored_queries(task, seg)
    for impute in (ii.impute_true_times, ii.impute_resampled):
        a = impute(LinearExtrapolation(), task, seg, queries)
        b = impute(LinearExtrapolation(), task, poisoned, queries)
        np.testing.assert_array_equal(a, b)  # a lost value reaches no model
    out = ii.evaluate_irregular_imputation(LastValue(), ds, fold, SPEC, "multirate", 0.5, 0, False)
    scored = sum(int((~task.observed[b, :, i] & seg.kept[b, :, i]).sum()) for b, i in queries)
    assert out.errors.n == scored < sum(int((~task.observed[b, :, i]).sum()) for b, i in task.queries)


def test_bad_sources_are_refused():
    with pytest.raises(SpecError):
        irr.IrregularSpec(sources=("classify",))
    with pytest.raises(SpecError):
        irr.IrregularSpec(sources=())


def test_the_imputation_source_adds_its_cells_and_leaves_forecast_rows_as_they_were(tmp_path):
    from harness.records.store import read_records
    from harness.run.runner import RunConfig, execute
    from harness.tasks import get_task
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=600), folder)
    base = {"settings": (irr.Setting(32, 16),), "max_windows_per_subject": 2, "patterns": ("drop", "jitter"),
            "severities": (0.0, 0.5)}
    models = ("last-value", "soter-tiny-random")
    frames = {}
    for name, extra in (("forecast", {}), ("both", {"irregular_sources": ("forecast", "impute")})):
        execute(RunConfig(task="irregular", options={**base, **extra}, datasets=(str(folder),), models=models,
                          out=tmp_path / name, progress=False), log=lambda m: None)
        frames[name] = read_records(tmp_path / name / "records.csv")
    fc, both = frames["forecast"], frames["both"]
    imputed = both[both["condition"].str.startswith("impute ")]
    assert set(both["status"]) == {"ok"}
    assert set(imputed["condition"]) == {"impute regular", "impute drop=0.5", "impute jitter=0.5"}
    assert set(imputed["setting"]) == {"96"}
    columns = ["key", "task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol", "sse", "sae",
               "n_points", "rmse", "mae", "details"]
    fc_rows = fc[columns].sort_values("key").reset_index(drop=True).astype(str)
    kept = both[~both["condition"].str.startswith("impute ")][columns].sort_values("key").reset_index(drop=True)
    assert fc_rows.equals(kept.astype(str))  # the forecast rows' keys and values: byte for byte
    tables = dict(get_task("irregular").tables(both))
    assert {"irregular_impute_drop_0", "irregular_impute_drop_0.5", "irregular_impute_jitter_0.5",
            "irregular_drop_0.5"} <= set(tables), set(tables)
    note = tables["irregular_impute_drop_0.5"].notes[-1]
    assert "soter-tiny-random: true timestamps" in note and "last-value: resampled" in note and "mask kept" in note
    assert tables["irregular_impute_drop_0.5"].caption.startswith("Causal imputation (missing rate 25%)")
    assert tables["irregular_drop_0.5"].caption.startswith("Forecasting under irregular sampling")
    figures = get_task("irregular").figures(both, tmp_path / "figures")
    assert {p.name for p in figures} >= {"irregular_sampling_impute_drop.png", "irregular_sampling_drop.png"}
    # severity 0 is `run imputation`'s number for the same segments, seed and missing rate
    execute(RunConfig(task="imputation", options={"rates": (IMPUTE_RATE,), "max_windows_per_subject": 2},
                      datasets=(str(folder),), models=("last-value",), seeds=(0,), out=tmp_path / "imp",
                      progress=False), log=lambda m: None)
    imp = read_records(tmp_path / "imp" / "records.csv").sort_values("fold")
    zero = imputed[(imputed["model"] == "last-value") & (imputed["condition"] == "impute regular")].sort_values("fold")
    assert len(zero) == len(imp) > 0
    assert list(zero["sse"].astype(float)) == list(imp["sse"].astype(float))


def test_plan_counts_forecast_cells_and_leaves_imputation_cells_to_measured_rows(tmp_path):
    from harness.run.costs import cell_samples
    from harness.run.runner import RunConfig, plan
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=600), folder)
    config = RunConfig(task="irregular", options={"settings": (irr.Setting(32, 16),), "max_windows_per_subject": 2,
                                                  "irregular_sources": ("forecast", "impute")},
                       datasets=(str(folder),), models=("last-value",), out=tmp_path / "out", progress=False)
    cells = [cell for cell, _ in plan(config)[0]]
    samples = cell_samples(cells)
    imputed = [c for c in cells if c.condition.startswith("impute ")]
    assert imputed and all(samples[c] is None for c in imputed)  # as `run imputation`'s cells: no window count
    assert all(samples[c] > 0 for c in cells if c not in imputed)
