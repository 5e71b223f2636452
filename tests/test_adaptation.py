"""Adaptation (issue #49): a pretrained model fine-tuned on each fold's training subjects learns nothing of the test
subject, differs from its frozen model and between folds, and its rows are keyed apart (mode and budget in the key)
while the frozen rows keep their keys; tables group adapted rows apart."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.reporting.tables import ADAPTED_GROUP, SUPERVISED_GROUP, ZERO_SHOT, model_groups
from harness.run.adaptation import adapted_models, check_adaptation
from harness.run.runner import RunConfig, check_arguments, plan
from models.registry import load_model
from models.soter.adaptation import AdaptedSoter, trained_parameters
from protocols.forecasting import fit_for_fold, fold_windows, predict_windows
from protocols.interface import NotFittedError, TrainingSeries
from protocols.leakage import LeakageError, probe_fit
from protocols.specs import ForecastingSpec, SamplingSpec, Setting, SpecError
from protocols.splits import loso_folds
from tests.conftest import make_dataset

SETTING = Setting(32, 16)
TINY = "soter-tiny-random"
ROOT = Path(__file__).resolve().parents[1]


def _setup(n_subjects: int = 3):
    ds = make_dataset(n_subjects=n_subjects, n_samples=200)
    spec = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=2))
    return ds, loso_folds(ds), spec


def _adapted(mode: str = "head") -> AdaptedSoter:
    return load_model(f"{TINY}@{mode}", budget="smoke")


@pytest.mark.parametrize("mode", ["head", "full"])
def test_adapted_soter_learns_nothing_of_the_test_subject_or_the_future(mode):
    ds, folds, spec = _setup()
    probe_fit(_adapted(mode), ds, folds[0], SETTING, spec, n_windows=1)


needs_fracast = pytest.mark.skipif(importlib.util.find_spec("fracast") is None,
                                   reason="fracast is not installed (pip install 'soter-bench[fracast]')")


@needs_fracast
def test_adapted_fracast_learns_nothing_of_the_test_subject_and_moves_its_forecasts():
    ds, folds, spec = _setup()
    model = load_model("fracast@head", budget="smoke")
    probe_fit(model, ds, folds[0], SETTING, spec, n_windows=1)
    arrays, _ = fold_windows(ds, folds[0], SETTING, spec)
    fit_for_fold(model, ds, folds[0], SETTING, spec)
    first = predict_windows(model, arrays, 64)
    fit_for_fold(model, ds, folds[1], SETTING, spec)
    assert not np.allclose(first, predict_windows(load_model("fracast"), arrays, 64))
    assert not np.allclose(first, predict_windows(model, arrays, 64))


class PeekingSoter(AdaptedSoter):
    """Adapts on every subject through a handle on the dataset, the test subject included (a leak)."""

    def __init__(self, base: AdaptedSoter, dataset) -> None:
        super().__init__(base.base, base.mode, base.budget, base.name)
        self.dataset = dataset

    def _fit(self, series, seed):
        everything = TrainingSeries(tuple(r.values for r in self.dataset.recordings),
                                    tuple(r.subject for r in self.dataset.recordings), series.channels,
                                    series.context, series.horizon, series.sampling_rate)
        super()._fit(everything, seed)


def test_probe_fit_catches_an_adapter_that_trains_on_the_test_subject():
    ds, folds, spec = _setup()
    with pytest.raises(LeakageError, match="test subject"):
        probe_fit(PeekingSoter(_adapted(), ds), ds, folds[0], SETTING, spec, n_windows=1)


def test_adapted_forecasts_differ_from_the_frozen_model_and_between_folds():
    ds, folds, spec = _setup()
    arrays, _ = fold_windows(ds, folds[0], SETTING, spec)
    frozen = predict_windows(load_model(TINY), arrays, 64)
    model = _adapted("full")
    with pytest.raises(NotFittedError):
        predict_windows(model, arrays, 64)
    fit_for_fold(model, ds, folds[0], SETTING, spec)
    first = predict_windows(model, arrays, 64)
    fit_for_fold(model, ds, folds[1], SETTING, spec)
    other = predict_windows(model, arrays, 64)
    fit_for_fold(model, ds, folds[0], SETTING, spec)  # from the shipped weights again: nothing of fold 1 survives
    again = predict_windows(model, arrays, 64)
    assert not np.allclose(first, frozen) and not np.allclose(first, other)
    np.testing.assert_array_equal(again, first)


def test_head_mode_trains_the_output_side_only():
    model = _adapted("head").base.model
    head = {id(p) for p in trained_parameters(model, "head")}
    assert head and head == {id(p) for p in model.decoder.parameters()}
    assert len(trained_parameters(model, "full")) == len(list(model.parameters()))


def _keys(**config) -> dict[str, str]:
    cells, _ = plan(RunConfig(**config))
    return {str(f["key"]): str(f["model"]) for _, f in cells}


def test_zero_shot_keys_are_those_of_the_committed_rows_and_adapted_rows_are_keyed_apart():
    with open(ROOT / "results" / "cohort" / "records.csv", newline="") as f:
        committed = {row["key"] for row in csv.DictReader(f) if row["model"] in ("soter", "last-value")}
    base = dict(models=("soter", "last-value"))
    plain = _keys(**base)
    assert set(plain) <= committed and len(plain) == 80
    both = _keys(**base, adapt=("zero-shot", "head", "full"))
    assert {k: m for k, m in both.items() if "@" not in m} == plain  # byte-identical zero-shot keys
    assert sorted(set(both.values())) == ["last-value", "soter", "soter@full", "soter@head"]
    only = _keys(**base, adapt=("head",))
    assert sorted(set(only.values())) == ["last-value", "soter@head"]
    medium = _keys(**base, adapt=("head",), adapt_budget="cpu-medium")
    head = {k for k, m in only.items() if m == "soter@head"}
    assert head and not head & set(medium)  # the budget is part of the key
    assert head == {k for k, m in _keys(**base, adapt=("head",), adapt_budget="cpu-small").items()
                    if m == "soter@head"}  # the default budget named or not: one key


def test_adapt_flags_are_checked_before_any_work():
    with pytest.raises(SpecError, match="unknown mode"):
        check_adaptation(("half",), None)
    with pytest.raises(SpecError, match="needs --adapt head or full"):
        check_arguments(RunConfig(models=("soter",), adapt_budget="cpu-small"))
    with pytest.raises(SpecError, match="unknown adaptation budget"):
        check_arguments(RunConfig(models=("soter",), adapt=("head",), adapt_budget="huge"))
    assert adapted_models(("ridge", "soter-anchored"), ("full",)) == ("ridge", "soter-anchored@full")
    assert adapted_models(("fracast", "last-value"), ("zero-shot", "head")) == ("fracast", "fracast@head", "last-value")


def test_tables_group_adapted_rows_apart():
    frame = pd.DataFrame({"model": ["soter", "soter@head", "ridge"]})
    groups = model_groups(frame, ["soter", "soter@head", "ridge"])
    assert groups == {"soter": ZERO_SHOT, "soter@head": ADAPTED_GROUP, "ridge": SUPERVISED_GROUP}


def test_a_run_with_adapt_gives_frozen_and_adapted_rows_and_the_table_ranks_them_apart(folder, tmp_path):
    from harness.records.store import read_records
    from harness.reporting.tables import error_table, render
    from harness.run.runner import execute

    run = execute(RunConfig(datasets=(str(folder),), models=("last-value", TINY), out=tmp_path / "o", progress=False,
                            options={"settings": (SETTING,), "max_windows_per_subject": 2},
                            adapt=("zero-shot", "head"), adapt_budget="smoke"))
    frame = read_records(run.records_path)
    assert set(frame.model) == {"last-value", TINY, f"{TINY}@head"} and set(frame.status) == {"ok"}
    info = frame[frame.model == f"{TINY}@head"].model_info.iloc[0]
    assert '"mode": "head"' in info and '"budget": "smoke"' in info
    table = error_table(frame, "forecasting")
    assert table.adapted == (f"{TINY}@head",)
    text = render(table).splitlines()
    label = text.index("-- adapted --")
    assert text[label + 1].startswith(f"{TINY}@head") and "¹" not in text[label + 1]  # alone in its group: unranked


def test_an_adapted_entry_carries_its_base_models_pretraining_overlap():
    from models.pretraining import model_overlap

    for base in ("fracast", "soter-anchored"):
        assert model_overlap(f"{base}@head", "mitbih") == model_overlap(base, "mitbih")
