"""Issue #31: contiguous and asynchronous missingness for imputation (protocols.masks), recorded and re-scorable."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.imputation import RecordedMask, build_task, evaluate_imputation, missing_mask
from protocols.masks import draw_mask, effective_gap, gap_runs
from protocols.specs import ImputationSpec, MaskSpec, SpecError
from protocols.splits import get_fold
from tests.conftest import make_dataset

FS = 100.0


def _gaps(observed: np.ndarray, warmup: int) -> list[int]:
    """Lengths of the gaps that start and end inside the masked span (edge-censored ones are left out)."""
    out = []
    for row in observed.reshape(-1, observed.shape[-1])[:, warmup:]:
        runs = gap_runs(~row)
        out += [n for a, n in runs if a > 0 and a + n < row.size]
    return out


@pytest.mark.parametrize("rate", [0.25, 0.5, 0.75])
@pytest.mark.parametrize("distribution", ["exponential", "fixed"])
def test_contiguous_masks_hit_the_rate_and_the_burst_length(rate, distribution):
    spec = MaskSpec("contiguous", burst_seconds=0.2, distribution=distribution)
    observed = draw_mask((40, 3, 2000), rate, 16, spec, FS, np.random.default_rng(7))
    assert observed[:, :, :16].all()
    share = 1.0 - observed[:, :, 16:].mean()
    assert share == pytest.approx(rate, abs=0.02)
    gaps = np.array(_gaps(observed, 16))
    assert gaps.size > 500
    assert gaps.mean() == pytest.approx(0.2 * FS, rel=0.08)  # 20 samples: 0.2 s at 100 Hz
    if distribution == "fixed":
        assert set(gaps.tolist()) == {20}
    else:  # geometric: about as spread as it is long
        assert gaps.std() == pytest.approx(gaps.mean(), rel=0.15)


def test_a_gap_in_seconds_means_the_same_at_every_rate():
    spec = MaskSpec("contiguous", burst_seconds=0.5, distribution="fixed")
    for fs in (64.0, 125.0, 360.0):
        gaps = _gaps(draw_mask((10, 1, 4000), 0.25, 2, spec, fs, np.random.default_rng(0)), 2)
        assert set(gaps) == {int(round(0.5 * fs))}


def test_shared_gaps_hit_every_channel_together_and_independent_ones_do_not():
    shape, rng = (20, 4, 600), np.random.default_rng
    shared = draw_mask(shape, 0.5, 10, MaskSpec("contiguous", "shared", 0.3), FS, rng(1))
    assert (shared == shared[:, :1]).all()
    independent = draw_mask(shape, 0.5, 10, MaskSpec("contiguous", "independent", 0.3), FS, rng(1))
    assert not (independent == independent[:, :1]).all()
    points = draw_mask(shape, 0.5, 10, MaskSpec("points", "shared"), FS, rng(1))
    assert (points == points[:, :1]).all() and 1 - points[:, :, 10:].mean() == pytest.approx(0.5, abs=0.03)


def test_masks_are_seeded():
    spec = MaskSpec("contiguous", burst_seconds=0.1)
    a = draw_mask((3, 2, 300), 0.25, 5, spec, FS, np.random.default_rng(3))
    b = draw_mask((3, 2, 300), 0.25, 5, spec, FS, np.random.default_rng(3))
    c = draw_mask((3, 2, 300), 0.25, 5, spec, FS, np.random.default_rng(4))
    assert (a == b).all() and not (a == c).all()


def test_gaps_too_short_for_the_rate_are_lengthened():
    spec = MaskSpec("contiguous", burst_seconds=0.001)  # less than a sample at 100 Hz
    assert effective_gap(spec, 0.25, FS) == 1.0
    assert effective_gap(spec, 0.75, FS) == pytest.approx(3.0)  # an observed run lasts at least one sample
    observed = draw_mask((50, 1, 1000), 0.75, 0, spec, FS, np.random.default_rng(0))
    assert 1 - observed.mean() == pytest.approx(0.75, abs=0.02)


@pytest.mark.parametrize("bad, message", [
    (dict(kind="bursts"), "unknown mask kind"), (dict(channels="some"), "unknown mask channels"),
    (dict(burst_seconds=0), "burst_seconds must be a positive"), (dict(distribution="pareto"), "burst distribution"),
])
def test_bad_mask_options_are_named(bad, message):
    with pytest.raises(SpecError, match=message):
        MaskSpec(**bad)


def test_the_paper_mask_keeps_its_draw_condition_and_fingerprint():
    spec = ImputationSpec(length=32)
    assert spec.mask.is_paper and spec.mask.condition(0.25) == "missing=25%"
    assert spec.fingerprint() == "imputation;len=32;warmup=16;points=8;maxw=8;stride=None"
    ds = make_dataset(n_subjects=3, n_samples=300)
    fold = get_fold(ds, ds.subjects[0])
    task, _ = build_task(ds, fold, spec, 0.25, 0)
    from protocols.windows import stable_seed

    rng = np.random.default_rng(stable_seed(0, ds.content_id, fold.test_subject, "imputation", 0.25))
    assert (task.observed == missing_mask(task.values.shape, 0.25, 16, rng)).all()
    contiguous = ImputationSpec(length=32, mask=MaskSpec("contiguous"))
    assert contiguous.mask.condition(0.5) == "contiguous-1s-exponential-independent missing=50%"
    assert contiguous.fingerprint().endswith(";mask=contiguous-1s-exponential-independent-v1")


def test_a_recorded_mask_rescores_to_the_same_sums():
    from baselines.imputation import CarryForward

    ds = make_dataset(n_subjects=3, n_samples=400)
    spec = ImputationSpec(length=64, mask=MaskSpec("contiguous", burst_seconds=0.1))
    fold = get_fold(ds, ds.subjects[1])
    first = evaluate_imputation(CarryForward(), ds, fold, spec, 0.5, 2)
    recorded = RecordedMask.from_arrays(first.mask.arrays())
    again = evaluate_imputation(CarryForward(), ds, fold, spec, 0.5, 9, recorded=recorded)  # another seed: unused
    assert again.errors == first.errors and again.n_queries == first.n_queries
    other = get_fold(ds, ds.subjects[0])
    with pytest.raises(ValueError, match="drawn for other segments"):
        evaluate_imputation(CarryForward(), ds, other, spec, 0.5, 2, recorded=recorded)


def test_contiguous_masks_keep_the_causal_prefix_rule():
    """The leakage probe of the imputation path passes an honest model and catches a cheat under contiguous,
    shared gaps too: the mask changes which points are missing, never what a query may see."""
    from baselines.naive import LastValue
    from protocols.leakage import LeakageError, probe_imputation
    from tests.test_tasks import Cheater, _setup

    ds, fold = _setup()
    spec = ImputationSpec(length=48, warmup=8, points_per_segment=3, max_windows_per_subject=3,
                          mask=MaskSpec("contiguous", "shared", 0.5))
    probe_imputation(LastValue(), ds, fold, spec, 0.5, seed=0)
    cheat = Cheater(ds, fold)
    cheat.subject = fold.test_subject
    with pytest.raises(LeakageError):
        probe_imputation(cheat, ds, fold, spec, 0.5, seed=0)


def test_a_bad_mask_option_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    from harness.cli import main

    assert main(["run", "imputation", "--mask", "contiguous", "--burst-seconds", "-1", "--out", str(tmp_path),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: burst_seconds must be a positive number of seconds, got -1.0"]


def test_a_cell_whose_mask_left_nothing_missing_says_so():
    """A contiguous mask with a mean gap far longer than a segment leaves whole segments observed; a fold whose
    segments all stay whole has no query, and its row says that, not that no segment could be drawn."""
    from baselines.imputation import CarryForward
    from harness.run.cells import Cell
    from harness.tasks.imputation import TASK

    ds = make_dataset(n_subjects=3, n_samples=400)
    fold = get_fold(ds, ds.subjects[0])
    spec = ImputationSpec(length=32, max_windows_per_subject=2, mask=MaskSpec("contiguous", burst_seconds=100.0))
    task, _ = build_task(ds, fold, spec, 0.01, 0)
    assert task.values.shape[0] > 0 and task.observed.all() and not task.queries  # segments drawn, none missing
    cell = Cell("imputation", ds.name, fold.test_subject, "32", "locf", 0, spec, spec.mask.condition(0.01), 0.01)
    row = TASK.evaluate(cell, ds, CarryForward())
    assert row["status"] == "error" and row["error"].startswith(f"nothing to impute for test subject {fold.test_subject}")
    assert "could be scored" not in row["error"]
