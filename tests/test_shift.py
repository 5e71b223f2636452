"""Issue #48 item 2: subject shift (protocols.shift, harness/tasks/shift.py): the test subject's level and amplitude
moved before the fold's MinMax, fitted on the unshifted training subjects, so that it lands outside [0, 1]; the
no-shift point is the plain forecasting run, bit for bit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from protocols.forecasting import evaluate_forecasting, fold_training_series, fold_windows
from protocols.scaling import fit_fold_scaler
from protocols.shift import evaluate_shift, parse_condition, shifted_dataset
from protocols.specs import NO_SHIFT, SamplingSpec, Setting, Shift, ShiftSpec, SpecError
from protocols.splits import get_fold
from tests.conftest import Recorder, make_dataset

SETTING = Setting(48, 24)
SPEC = ShiftSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=3))


def _toy():
    ds = make_dataset(n_subjects=3, n_samples=400)
    return ds, get_fold(ds, ds.subjects[0])


@pytest.mark.parametrize("kind", ["level", "scale", "both"])
def test_severity_zero_is_the_plain_forecasting_run_bit_for_bit(kind):
    ds, fold = _toy()
    plain = evaluate_forecasting(Recorder(), ds, fold, SETTING, SPEC.forecasting())
    zero = evaluate_shift(Recorder(), ds, fold, SETTING, SPEC, Shift(kind, 0.0))
    assert zero.errors == plain.errors and zero.n_windows == plain.n_windows
    for name, value in plain.windows.arrays().items():
        np.testing.assert_array_equal(zero.windows.arrays()[name], value)
    assert Shift(kind, 0.0).condition == NO_SHIFT


def test_the_scaler_is_the_training_subjects_so_a_level_shift_lands_outside_0_1():
    ds, fold = _toy()
    moved = shifted_dataset(ds, fold, Shift("level", 1.0))
    before, after = fit_fold_scaler(ds, fold), fit_fold_scaler(moved, fold)
    np.testing.assert_array_equal(before.minimum, after.minimum)  # the test subject takes no part in the MinMax
    np.testing.assert_array_equal(before.maximum, after.maximum)
    plain, selection = fold_windows(ds, fold, SETTING, SPEC.forecasting())
    shifted, moved_selection = fold_windows(moved, fold, SETTING, SPEC.forecasting())
    assert moved_selection.windows == selection.windows  # the same windows as the plain run
    # one training range up: the normalised context and target move by exactly 1, past the training maximum
    np.testing.assert_allclose(shifted.context, plain.context + 1.0, atol=1e-12)
    np.testing.assert_allclose(shifted.target, plain.target + 1.0, atol=1e-12)
    assert (plain.context > 1).mean() < 0.1 and (shifted.context > 1).mean() > 0.9
    rec = Recorder()
    evaluate_shift(rec, ds, fold, SETTING, SPEC, Shift("level", 1.0))
    np.testing.assert_array_equal(np.concatenate(rec.seen).reshape(shifted.context.shape), shifted.context)  # seen


def test_a_scale_shift_multiplies_the_amplitude_about_the_subjects_mean():
    ds, fold = _toy()
    plain, _ = fold_windows(ds, fold, SETTING, SPEC.forecasting())
    shifted, _ = fold_windows(shifted_dataset(ds, fold, Shift("scale", 2.0)), fold, SETTING, SPEC.forecasting())
    ratio = shifted.context.std(axis=-1) / plain.context.std(axis=-1)
    np.testing.assert_allclose(ratio, 3.0, rtol=1e-9)
    subject = np.concatenate([r.values for r in ds.recordings_of((fold.test_subject,))], axis=1)
    moved = np.concatenate([r.values for r in shifted_dataset(ds, fold, Shift("scale", 2.0)).recordings_of(
        (fold.test_subject,))], axis=1)
    np.testing.assert_allclose(moved.mean(axis=1), subject.mean(axis=1), rtol=1e-9)


def test_supervised_models_train_on_the_unshifted_training_subjects():
    ds, fold = _toy()
    moved = shifted_dataset(ds, fold, Shift("both", 1.0))
    a, b = fold_training_series(ds, fold, SETTING), fold_training_series(moved, fold, SETTING)
    assert a.subjects == b.subjects and fold.test_subject not in b.subjects
    for x, y in zip(a.values, b.values):
        np.testing.assert_array_equal(x, y)


def test_a_shifted_cell_is_deterministic_and_differs_from_the_plain_one():
    ds, fold = _toy()
    plain = evaluate_shift(Recorder(), ds, fold, SETTING, SPEC, Shift("scale", 0.0))
    one = evaluate_shift(Recorder(), ds, fold, SETTING, SPEC, Shift("scale", 1.0))
    two = evaluate_shift(Recorder(), ds, fold, SETTING, SPEC, Shift("scale", 1.0))
    assert one.errors == two.errors and one.errors != plain.errors
    assert one.n_windows == plain.n_windows


def test_conditions_and_bad_severities():
    assert [s.condition for s in ShiftSpec(severities=(0.0, 0.5, 2.0)).shifts] == [
        NO_SHIFT, "level=0.5", "level=2", "scale=0.5", "scale=2"]
    assert parse_condition("scale=0.5") == Shift("scale", 0.5) and parse_condition(NO_SHIFT).severity == 0
    with pytest.raises(SpecError, match=r"--shift-severities -1: scale multiplies the amplitude"):
        ShiftSpec(kinds=("scale",), severities=(0.0, -1.0))
    ShiftSpec(kinds=("level",), severities=(-1.0, 0.0))  # a level may move down
    with pytest.raises(SpecError, match="not a finite number"):
        ShiftSpec(severities=(float("nan"),))
    with pytest.raises(SpecError, match="each once"):
        ShiftSpec(severities=(1.0, 1.0))
    with pytest.raises(SpecError, match="unknown shift kind 'tilt'"):
        Shift("tilt", 1.0)


@pytest.mark.parametrize("words, start", [
    (["--shift-kinds", "scale", "--shift-severities", "0", "-1"], "error: --shift-severities -1: scale multiplies"),
    (["--shift-severities", "inf"], "error: --shift-severities: inf is not a finite number"),
    (["--shift-severities", "big"], "error: --shift-severities:"),
    (["--shift-kinds", "tilt"], "error: --shift-kinds:"),
    (["--shift-severities", "0", "1e15"], "error: --shift-severities 1e+15: level at this severity makes float64 "
                                          "round the shifted signal"),
])
def test_bad_shift_options_on_the_command_line_are_one_line_and_exit_2(tmp_path, capsys, words, start):
    from harness.cli import main

    assert main(["run", "shift", *words, "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(start), err


def test_the_no_shift_rows_equal_the_forecasting_rows_and_every_kind_gets_its_table_and_figure(tmp_path):
    from harness.records.store import read_records
    from harness.records.window_store import read_window_errors
    from harness.run.runner import RunConfig, execute
    from harness.tasks import get_task
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    common = dict(datasets=(str(folder),), models=("last-value", "window-mean"), out=tmp_path / "out", progress=False)
    options = {"settings": (Setting(32, 8),), "max_windows_per_subject": 2}
    execute(RunConfig(task="forecasting", options=options, **common), log=lambda m: None)
    execute(RunConfig(task="shift", options={**options, "shift_severities": (0.0, 1.0)}, **common), log=lambda m: None)
    frame = read_records(tmp_path / "out" / "records.csv")
    assert set(frame["status"]) == {"ok"}
    plain = frame[frame["task"] == "forecasting"].set_index(["model", "fold"])
    zero = frame[(frame["task"] == "shift") & (frame["condition"] == NO_SHIFT)].set_index(["model", "fold"])
    assert len(zero) == len(plain) == 6
    for column in ("rmse", "mae", "sse", "sae", "n_points", "n_windows"):
        assert zero[column].sort_index().tolist() == plain[column].sort_index().tolist(), column
    for (model, fold), row in zero.iterrows():
        ours, theirs = (read_window_errors(tmp_path / "out", r["key"]) for r in (row, plain.loc[(model, fold)]))
        for name in theirs:
            np.testing.assert_array_equal(ours[name], theirs[name])
    task = get_task("shift")
    assert sorted(stem for stem, _ in task.tables(frame)) == ["shift_level_0", "shift_level_1", "shift_scale_0",
                                                              "shift_scale_1"]
    paths = task.figures(frame, tmp_path / "figures")
    assert sorted(p.name for p in paths if p.suffix == ".png") == ["subject_shift_level.png",
                                                                   "subject_shift_scale.png"]


def test_default_models_are_forecastings():
    from harness.tasks import get_task

    assert get_task("shift").default_models() == get_task("forecasting").default_models()
    assert dataclasses.is_dataclass(SPEC)


def test_the_default_draws_8_windows_per_subject_and_a_given_count_is_kept():
    from harness.registry.options import options_of
    from harness.tasks import get_task

    task = get_task("shift")
    assert task.spec(options_of(task, {}), 0).sampling == SamplingSpec(max_windows_per_subject=8, seed=0)
    assert task.spec(options_of(task, {"max_windows_per_subject": 16}), 1).sampling.max_windows_per_subject == 16
    with pytest.raises(SpecError, match="--max-windows-per-subject"):
        task.spec(options_of(task, {"max_windows_per_subject": 0}), 0)
    assert ShiftSpec().fingerprint() == "shift;maxw=8;stride=None;seed=0"


def test_a_severity_at_which_float64_loses_the_signal_is_refused_and_every_admitted_one_keeps_last_value_exact():
    """docs/protocols.md: last value's error is identical at every level. At level 1e15 float64 rounds the shifted
    signal to an eighth of its range (last value's RMSE 0.3294 -> 0.4028 on a real run): such a severity is refused;
    at the largest admitted ones, last value's errors equal the plain run's to far below a printed digit."""
    from baselines.naive import LastValue
    from protocols.specs import PRECISION_FRACTION, SIGNAL_RESOLUTION, rounding

    ds, fold = _toy()
    plain = evaluate_shift(LastValue(), ds, fold, SETTING, SPEC, Shift("level", 0.0))
    for severity in (2.0 ** 18, -(2.0 ** 18), 1e5):
        moved = evaluate_shift(LastValue(), ds, fold, SETTING, SPEC, Shift("level", severity))
        assert moved.errors.rmse == pytest.approx(plain.errors.rmse, rel=1e-6), severity
        assert moved.errors.mae == pytest.approx(plain.errors.mae, rel=1e-6), severity
    unchecked = object.__new__(Shift)  # what the study scored before the check
    object.__setattr__(unchecked, "kind", "level")
    object.__setattr__(unchecked, "severity", 1e15)
    rounded = evaluate_forecasting(LastValue(), shifted_dataset(ds, fold, unchecked), fold, SETTING, SPEC.forecasting())
    assert rounded.errors.rmse != pytest.approx(plain.errors.rmse, rel=1e-3)
    for kind, severity in (("level", 1e15), ("level", -1e7), ("both", -1 + 1e-12), ("scale", -1 + 1e-12)):
        assert rounding(kind, severity) > PRECISION_FRACTION * SIGNAL_RESOLUTION
        with pytest.raises(SpecError, match="makes float64 round the shifted signal"):
            Shift(kind, severity)
    ShiftSpec(kinds=("scale", "both"), severities=(0.0, 1e15))  # a scale change keeps the signal's own precision


def test_run_shift_prints_the_no_shift_table_once_though_every_kind_writes_it(tmp_path, capsys):
    from harness.cli import main
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    assert main(["run", "shift", "--dataset", str(folder), "--models", "last-value", "--settings", "32/8",
                 "--max-windows-per-subject", "2", "--shift-kinds", "level", "scale", "--shift-severities", "0", "1",
                 "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"Forecasting under subject shift, {NO_SHIFT}") == 1, out
    assert out.count("Forecasting under subject shift, level=1") == out.count("Forecasting under subject shift, "
                                                                                "scale=1") == 1
    assert {p.name for p in (tmp_path / "out" / "tables").glob("shift_*_0.txt")} == {"shift_level_0.txt",
                                                                                    "shift_scale_0.txt"}
