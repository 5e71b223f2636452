"""Issues #17 and #28: a task is one object; adding one touches no module of the harness, and it brings its
own flags of ``run`` and its own metrics.

The toy task below ("mean-level": how far each model's forecast of the next 8 samples is from them, on
average, per fold) lives in this file and is added with one ``register_task`` call, then run end to end
through the CLI: planned with its own flag (``--toy-context``), evaluated, recorded with its own metric
(``peakiness``, RMSE/MAE: no record column of its own), rerun from the records, tabulated, reported and listed.
"""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.records.store import COLUMNS, read_records
from harness.registry.metrics import MAE, Metric
from harness.registry.options import Option
from harness.reporting.tables import metric_table
from harness.tasks import TASKS, Task, UnknownTaskError, get_task, register_task
from protocols.datasets.folder import write_folder_dataset
from protocols.forecasting import evaluate_forecasting
from protocols.specs import ForecastingSpec, SamplingSpec, Setting, SpecError
from protocols.splits import get_fold
from tests.conftest import make_dataset

HORIZON = 8
CONTEXT = Option("--toy-context", "mean-level's context in samples (default: 32)", int, metavar="N", default=32)
PEAKINESS = Metric("peakiness", "RMSE/MAE")  # >= 1: how much the largest errors dominate


class MeanLevel(Task):
    name = "mean-level"
    description = "toy: mean absolute error of an 8-sample forecast after --toy-context samples of context"
    options = (CONTEXT,)
    metrics = (MAE, PEAKINESS)

    def spec(self, options, seed):
        if options.toy_context < 1:
            raise SpecError(f"--toy-context must be >= 1, got {options.toy_context}")
        setting = Setting(options.toy_context, HORIZON)
        return ForecastingSpec(settings=(setting,), sampling=SamplingSpec(seed=seed, max_windows_per_subject=3))

    def points(self, spec):
        return [(s, "clean", None) for s in spec.settings]  # typed: the cell carries it

    def capable(self, model, cell):
        return None if model.capabilities.forecast else f"{cell.model} does not forecast"

    def evaluate(self, cell, dataset, model):
        out = evaluate_forecasting(model, dataset, get_fold(dataset, cell.fold), cell.point, cell.spec)
        e = out.errors
        return {"status": "ok", "mae": e.mae, "sae": e.sae, "n_points": e.n, "n_windows": out.n_windows,
                "peakiness": e.rmse / e.mae}

    def tables(self, frame, models=None, datasets=None):
        return [("mean_level", metric_table(frame, self.name, "clean", self.metrics, models, datasets,
                                            "Toy: MAE and RMSE/MAE x100, mean over seeds."))]


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
            "--toy-context", "24", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Toy: MAE and RMSE/MAE" in printed and "last-value" in printed and "window-mean" in printed
    frame = read_records(out / "records.csv")
    assert len(frame) == 2 * 3  # two models, three folds, one setting, seed 0
    assert set(frame["task"]) == {"mean-level"} and set(frame["status"]) == {"ok"}
    assert set(frame["setting"]) == {"24/8"}  # the task's own flag reached its spec
    assert np.isfinite(frame["mae"]).all() and (frame["peakiness"] >= 1).all()  # its own metric, as a column
    assert "peakiness" not in COLUMNS  # ... kept in the details: the records' header is every task's
    assert (out / "tables" / "mean_level.md").exists()
    assert "| toy RMSE/MAE" in (out / "tables" / "mean_level.md").read_text()  # its label: a column per metric

    assert main(argv) == 0  # rerun: every cell found done
    assert "6 cells: 6 already done, 0 run now" in capsys.readouterr().out
    assert main(["table", "mean-level", "--out", str(out)]) == 0
    assert "RMSE/MAE" in capsys.readouterr().out
    assert main(["report", "--results", str(out), "--out", str(tmp_path / "report")]) == 0
    assert "this run's mean-level tables: mean_level" in (tmp_path / "report" / "REPORT.md").read_text()
    assert "RMSE/MAE" in (tmp_path / "report" / "tables" / "mean_level.md").read_text()
    assert main(["list", "tasks"]) == 0
    assert "mean-level" in capsys.readouterr().out


def test_the_tasks_flag_is_offered_by_run_and_refused_for_other_tasks(registered, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "mean-level: mean-level's context in samples (default: 32)" in " ".join(capsys.readouterr().out.split())
    assert main(["run", "forecasting", "--toy-context", "24", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "forecasting takes no option --toy-context" in capsys.readouterr().err
    assert main(["run", "mean-level", "--toy-context", "0", "--out", str(tmp_path), "--no-progress"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("--toy-context must be >= 1, got 0")


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
    from harness.reporting.paper_cells import our_cells

    assert registered.paper_cells(_toy_records(), str).empty
    assert our_cells(_toy_records()).empty


def test_the_report_gathers_the_paper_cells_of_every_registered_task():
    from harness.reporting.paper_cells import our_cells

    register_task(MeanLevelInThePaper())  # the one line; the report needs nothing else
    try:
        ours = our_cells(_toy_records())
    finally:
        TASKS.remove("mean-level")
    assert ours[["table", "model", "method", "dataset", "metric", "status", "reason"]].values.tolist() == [
        ["tab:main_results", "soter", "SOTER", "MIT-BIH", "MAE", "ok", ""],  # the paper's names put on
        ["tab:classification", "soter", "SOTER", "MIT-BIH and more", "Macro-AUROC", "error", "boom"]]
    assert ours["ours"].iloc[0] == 25.0 and np.isnan(ours["ours"].iloc[1])
