"""Issue #17: a task is one object; adding one touches no module of the harness.

The toy task below ("mean-level": how far each model's forecast of the next 8 samples is from them, on
average, per fold) lives in this file and is added with one ``register_task`` call, then run end to end
through the CLI: planned, evaluated, recorded, rerun from the records, tabulated and listed.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.records.store import read_records
from harness.reporting.tables import Column, Entry, Table, model_notes
from harness.tasks import TASKS, Task, UnknownTaskError, get_task, register_task
from protocols.datasets.folder import write_folder_dataset
from protocols.forecasting import evaluate_forecasting
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import get_fold
from tests.conftest import make_dataset

SETTING = Setting(32, 8)


class MeanLevel(Task):
    name = "mean-level"
    description = "toy: mean absolute error of an 8-sample forecast after 32 samples of context"

    def spec(self, config, seed):
        return ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(seed=seed, max_windows_per_subject=3))

    def points(self, spec):
        return [(s.name, "clean", None) for s in spec.settings]

    def capable(self, model, cell):
        return None if model.capabilities.forecast else f"{cell.model} does not forecast"

    def evaluate(self, cell, dataset, model):
        out = evaluate_forecasting(model, dataset, get_fold(dataset, cell.fold), SETTING, cell.spec)
        return {"status": "ok", "mae": out.errors.mae, "sae": out.errors.sae, "n_points": out.errors.n,
                "n_windows": out.n_windows}

    def tables(self, frame, models=None, datasets=None):
        rows = frame[(frame["task"] == self.name) & (frame["status"] == "ok")]
        models = models or list(dict.fromkeys(rows["model"]))
        columns = tuple(Column(ds, "MAE") for ds in datasets or dict.fromkeys(rows["dataset"]))
        entries = {}
        for col in columns:
            for model in models:
                g = rows[(rows["model"] == model) & (rows["dataset"] == col.group)]
                if len(g):
                    mae = 100 * g["sae"].sum() / g["n_points"].sum()
                    entries[(model, col)] = Entry(float(mae), np.nan, 1, 1, "ok")
        return [("mean_level", Table("Toy: MAE x100, folds pooled.", columns, tuple(models), entries, (),
                                     model_notes(models)))]


@pytest.fixture()
def registered():
    register_task(MeanLevel())  # the one line that adds the task
    yield TASKS["mean-level"]
    TASKS.remove("mean-level")


def test_a_task_defined_outside_the_harness_runs_end_to_end(registered, tmp_path, capsys):
    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=200), folder)
    out = tmp_path / "out"
    argv = ["run", "mean-level", "--dataset", str(folder), "--models", "last-value", "window-mean",
            "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Toy: MAE x100" in printed and "last-value" in printed and "window-mean" in printed
    frame = read_records(out / "records.csv")
    assert len(frame) == 2 * 3  # two models, three folds, one window, seed 0
    assert set(frame["task"]) == {"mean-level"} and set(frame["status"]) == {"ok"}
    assert set(frame["setting"]) == {"32/8"} and np.isfinite(frame["mae"]).all()
    assert (out / "tables" / "mean_level.md").exists()

    assert main(argv) == 0  # rerun: every cell found done
    assert "6 cells: 6 already done, 0 run now" in capsys.readouterr().out
    assert main(["table", "mean-level", "--out", str(out)]) == 0
    assert "Toy: MAE x100" in capsys.readouterr().out
    assert main(["list", "tasks"]) == 0
    assert "mean-level" in capsys.readouterr().out


def test_unknown_tasks_are_named_with_the_known_ones():
    with pytest.raises(UnknownTaskError, match="known tasks: forecasting, imputation, noise, classification"):
        get_task("no-such-task")


def test_the_built_in_tasks_are_registered_in_order():
    assert list(TASKS)[:4] == ["forecasting", "imputation", "noise", "classification"]
    assert all(isinstance(t, Task) and t.name == n for n, t in TASKS.mapping().items())


def test_a_task_of_another_class_under_a_registered_name_is_refused():
    class Impostor(MeanLevel):
        name = "forecasting"

    with pytest.raises(ValueError, match="'forecasting' is registered twice"):
        register_task(Impostor())
    assert type(get_task("forecasting")).__name__ != "Impostor"


class MeanLevelInThePaper(MeanLevel):
    """The toy task with cells of a paper table: ``harness report`` compares them with the paper's."""

    def paper_cells(self, frame, paper_dataset):
        from harness.tasks import cells_frame, paper_cell

        rows = frame[(frame["task"] == self.name) & (frame["status"] == "ok")]
        return cells_frame([paper_cell("tab:main_results", r["model"], r["dataset"], "MAE", "mean over 4 windows",
                                       100 * r["mae"], np.nan) for _, r in rows.iterrows()]
                           + [paper_cell("tab:classification", "soter", paper_dataset("mitbih") + " and more",
                                         "Macro-AUROC", "budget=100%", np.nan, np.nan, "error", "boom")])


def _toy_records() -> pd.DataFrame:
    from harness.records.store import COLUMNS

    row = dict.fromkeys(COLUMNS, "")
    row.update(task="mean-level", dataset="mitbih", fold="100", setting="32/8", condition="clean", model="soter",
               seed=0, status="ok", mae=0.25, sae=25.0, n_points=100)
    return pd.DataFrame([row])


def test_a_task_without_paper_cells_adds_none_to_the_report(registered):
    from harness.reporting.report import our_cells

    assert registered.paper_cells(_toy_records(), str).empty
    assert our_cells(_toy_records()).empty


def test_the_report_gathers_the_paper_cells_of_every_registered_task():
    from harness.reporting.report import our_cells

    register_task(MeanLevelInThePaper())  # the one line; the report needs nothing else
    try:
        ours = our_cells(_toy_records())
    finally:
        TASKS.remove("mean-level")
    assert ours[["table", "model", "method", "dataset", "metric", "status", "reason"]].values.tolist() == [
        ["tab:main_results", "soter", "SOTER", "MIT-BIH", "MAE", "ok", ""],  # the paper's names put on
        ["tab:classification", "soter", "SOTER", "MIT-BIH and more", "Macro-AUROC", "error", "boom"]]
    assert ours["ours"].iloc[0] == 25.0 and np.isnan(ours["ours"].iloc[1])
