"""Task figures: one unit with the tables (x100, stated on every y axis), the plotted points are the
tables' cells, legends cover no data, coinciding lines stay distinguishable and are named, and the
label-efficiency axis reads in percent.

The figure is read back from the Axes of the Figure handed to ``harness.reporting.figures.save_png_pdf`` (wrapped,
so the PNG and PDF are still written): exact values and labels, no image parsing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.reporting import figures
from harness.records.store import COLUMNS
from harness.reporting.tables import condition_value, condition_tables
from harness.tasks.classification import TASK as CLASSIFICATION


def _row(**kw) -> dict:
    row = {c: "" for c in COLUMNS}
    row.update(kw)
    return row


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    frame["key"] = [f"k{i}" for i in range(len(frame))]
    for c in ("sse", "sae", "n_points", "seed", "macro_f1", "macro_auroc"):
        frame[c] = pd.to_numeric(frame[c])
    return frame


def error_records(task: str) -> pd.DataFrame:
    """Two folds per replicate; locf and last-value identical (as the real baselines are), drift not."""
    levels = {"imputation": ("missing=25%", "missing=50%", "missing=75%"),
              "noise": ("beta=0", "beta=0.05", "beta=0.2", "beta=0.5")}[task]
    rows = []
    for c, condition in enumerate(levels):
        for seed in (0, 1, 2):
            for f, fold in enumerate(("S01", "S02")):
                for model, base in (("locf", 0.05), ("last-value", 0.05), ("drift", 0.08)):
                    err = base * (1 + c) + 0.003 * seed + 0.001 * f
                    n = 50 + 10 * f
                    rows.append(_row(task=task, dataset="cohort", fold=fold, condition=condition, model=model,
                                     seed=seed, setting="96" if task == "imputation" else "96/48", status="ok",
                                     sse=err ** 2 * n, sae=0.7 * err * n, n_points=n))
    return _frame(rows)


def classification_records() -> pd.DataFrame:
    rows = []
    for b, budget in enumerate(("budget=1%", "budget=10%", "budget=100%")):
        for seed in (0, 1):
            for model, base in (("stat-features", 0.6), ("random", 0.3)):
                rows.append(_row(task="classification", dataset="cohort", fold="all", setting="128", condition=budget,
                                 model=model, seed=seed, status="ok", macro_f1=base + 0.1 * b + 0.01 * seed,
                                 macro_auroc=base + 0.2 + 0.05 * b - 0.01 * seed, details=""))
    return _frame(rows)


RECORDS = {"imputation": lambda: error_records("imputation"), "noise": lambda: error_records("noise"),
           "classification": classification_records}


@pytest.fixture
def saved(monkeypatch, tmp_path):
    """task -> (the Figure handed to save_png_pdf, the paths written): the real save, observed."""
    caught = {}
    real = figures.save_png_pdf

    def spy(fig, path):
        caught["fig"] = fig
        return real(fig, path)

    monkeypatch.setattr(figures, "save_png_pdf", spy)

    def make(task: str):
        paths = figures.task_figures(RECORDS[task](), task, tmp_path / task)
        return caught.pop("fig"), paths

    return make


def _table_cells(task: str, frame: pd.DataFrame) -> dict[tuple[str, str, float], tuple[float, float]]:
    """(model, metric, x) -> (mean, std) as the task's tables print them (x100)."""
    if task == "classification":
        table = CLASSIFICATION.label_efficiency_table(frame, "cohort")
        return {(model, col.label, condition_value(col.group)): (e.mean, e.std)
                for (model, col), e in table.entries.items()}
    return {(model, col.label, condition_value(condition)): (e.mean, e.std)
            for condition, table in condition_tables(frame, task) for (model, col), e in table.entries.items()}


@pytest.mark.parametrize("task", ["imputation", "noise", "classification"])
def test_figures_plot_the_tables_cells_in_the_tables_unit(saved, task):
    fig, paths = saved(task)
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.is_file() for p in paths)
    cells = _table_cells(task, RECORDS[task]())
    plotted, metrics = set(), set()
    for ax in fig.axes:
        assert "x100" in ax.get_ylabel(), ax.get_ylabel()
        metric = ax.get_ylabel().split(" (")[0]
        metrics.add(metric)
        for container in ax.containers:
            model = container.get_label()
            for x, y in container.lines[0].get_xydata():
                assert y == pytest.approx(cells[(model, metric, x)][0], rel=1e-12)
                plotted.add((model, metric, x))
            bars = container.lines[2][0].get_segments()  # mean - std to mean + std
            assert [s[1, 1] - s[0, 1] for s in bars] == pytest.approx(
                [2 * cells[(model, metric, s[0, 0])][1] for s in bars], rel=1e-9)
    assert metrics == ({"RMSE"} if task == "imputation" else {"RMSE", "MAE"} if task == "noise"
                       else {"Macro-F1", "Macro-AUROC"})
    assert plotted == {key for key in cells if key[1] in metrics}


@pytest.mark.parametrize("task", ["imputation", "noise", "classification"])
def test_legend_sits_outside_every_axes(saved, task):
    fig, _ = saved(task)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()  # the figure was closed after saving: draw it again
    fig.draw(renderer)
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    legend = fig.legends[0].get_window_extent(renderer)
    assert not any(legend.overlaps(ax.get_window_extent(renderer)) for ax in fig.axes)
    assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == sorted(set(RECORDS[task]()["model"]))


def test_coinciding_lines_keep_distinct_markers_and_are_named(saved):
    fig, _ = saved("imputation")
    (ax,) = fig.axes
    lines = [c.lines[0] for c in ax.containers]
    assert len({(line.get_marker(), line.get_linestyle(), line.get_markersize()) for line in lines}) == len(lines)
    locf, last = (c.lines[0].get_ydata() for c in ax.containers if c.get_label() in ("locf", "last-value"))
    np.testing.assert_array_equal(locf, last)
    notes = "\n".join(t.get_text() for t in fig.texts)
    assert "coincide exactly" in notes and "locf = last-value" in notes and "drift" not in notes.split("exactly")[1]


def test_coinciding_needs_every_point_equal():
    a = figures.Curve("a", (1.0, 2.0), (1.0, 2.0), (0.0, 0.0))
    b = figures.Curve("b", (1.0, 2.0), (1.0, 2.0), (0.1, 0.1))
    c = figures.Curve("c", (1.0, 2.0), (1.0, 2.01), (0.0, 0.0))
    assert figures.coinciding((a, b, c)) == [["a", "b"]]
    assert figures.coinciding((a, b, c), rtol=0.02) == [["a", "b", "c"]]


def test_label_efficiency_ticks_read_in_percent_at_the_budgets(saved):
    fig, _ = saved("classification")
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_xscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1%", "10%", "100%"]
        assert list(ax.get_xticks()) == [1.0, 10.0, 100.0] and not len(ax.get_xticks(minor=True))


def test_a_log_error_axis_reads_plain_numbers(saved, monkeypatch):
    frame = error_records("imputation")
    frame.loc[frame["model"] == "drift", ["sse", "sae"]] *= 1e4  # 100x the others' errors: a log axis
    monkeypatch.setitem(RECORDS, "imputation", lambda: frame)
    fig, _ = saved("imputation")
    (ax,) = fig.axes
    fig.canvas.draw()
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and not any("^" in s for s in labels)


def _every_label(fig) -> list[str]:
    fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) for minor in (False, True)
            for t in axis.get_ticklabels(minor=minor) if t.get_text()]


@pytest.mark.parametrize("worst", [7.0, float("inf")])
def test_a_log_axis_never_prints_raw_mathtext_when_a_model_blows_up(worst):
    """Mathtext is off (figures.pyplot): matplotlib's log labels printed as `$\\mathdefault{2\\times10^{0}}$`
    on the minor ticks, which it labels when the axis spans little more than a decade (one model's inf)."""
    curves = (figures.Curve("last-value", (1.0, 2.0, 4.0), (0.3, 0.4, 0.5), (0.0, 0.0, 0.0)),
              figures.Curve("soter", (1.0, 2.0, 4.0), (0.3, 5.0, worst), (0.0, 0.0, 0.0)))
    fig = figures.draw([[figures.Panel("t", "x", "y", curves, log_x=True)]])
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    labels = _every_label(fig)
    assert labels and not any("$" in s or "mathdefault" in s for s in labels), labels
    assert "0.3" in labels and "2" in labels  # the minor ticks read as plain numbers
    figures.pyplot().close(fig)


def test_the_accuracy_against_cost_figure_reads_plain_numbers(tmp_path, monkeypatch):
    from harness.reporting import overhead

    caught = {}
    monkeypatch.setattr(figures, "save_png_pdf", lambda fig, path: caught.setdefault("fig", fig) and [])
    points = pd.DataFrame({"model": ["a", "b"], "seconds_per_sample": [0.002, 0.5], "rmse_x100": [30.0, 20.0],
                           "cells": [4, 4]})
    overhead.plot_accuracy_vs_cost(points, tmp_path / "cost")
    labels = _every_label(caught["fig"])
    assert labels and not any("$" in s for s in labels), labels


def test_no_records_no_figure(tmp_path):
    empty = error_records("imputation").iloc[:0]
    assert figures.task_figures(empty, "imputation", tmp_path) == []
    one_budget = classification_records()
    one_budget = one_budget[one_budget["condition"] == "budget=100%"]
    assert figures.task_figures(one_budget, "classification", tmp_path) == []
    assert not list(Path(tmp_path).iterdir())
