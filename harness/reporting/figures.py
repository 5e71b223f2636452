"""Figures from records (matplotlib, PNG and PDF): the task tables' cells, drawn.

The generic parts: panels and curves from tables, drawing and saving, and the figure of error tasks
(:func:`error_panels`).  A task's own figure is its ``figures`` method (``harness.tasks``):
classification's label-efficiency panels are built in ``harness/tasks/classification.py``.

Every point is a cell of the task's table (:mod:`harness.reporting.tables`: mean and sample std over
replicates, x ``SCALE``), so a figure and its table show the same numbers in the same unit, which
every y-axis label states ("RMSE (x100, normalised)").  The legend sits outside the axes, so it
covers no data; each model has its own hollow marker, marker size and line style, so lines that
coincide stay distinguishable, and a note under the figure names the models whose lines coincide
exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.tables import SCALE, Column, Table, condition_value, condition_tables

UNIT = f"x{SCALE:g}"
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Curve:
    """One model's line: the table's mean and std at each x where the table has a number."""

    model: str
    x: tuple[float, ...]
    mean: tuple[float, ...]
    std: tuple[float, ...]


@dataclass(frozen=True)
class Panel:
    """One axes: what it plots and how its axes read (units in ``ylabel``)."""

    title: str
    xlabel: str
    ylabel: str
    curves: tuple[Curve, ...]
    tick_format: str | None = None  # ticks at the conditions, labelled so ("{:g}%"); None: matplotlib's
    log_x: bool = False


def pyplot():
    """matplotlib's pyplot, headless, with every text drawn as it is: names from the records (a dataset called
    ``$x\\frac{1``) are labels, never mathtext, which would fail to parse and stop the figure (no figure of
    this project writes formulas)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def save_png_pdf(fig, path: Path) -> list[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    for p in out:
        fig.savefig(p, dpi=150, bbox_inches="tight", metadata=reproducible_metadata(p))
    return out


def reproducible_metadata(path: Path) -> dict[str, None]:
    """No creation date in a PDF: the same records then give the same file, byte for byte."""
    return {"CreationDate": None} if path.suffix == ".pdf" else {}


def table_curves(points: list[tuple[float, Table, Column]]) -> tuple[Curve, ...]:
    """A curve per model through ``column`` of ``table`` at each ``x``: the table's own cells, so the
    figure cannot disagree with it (unavailable or failed cells are left out)."""
    models = list(dict.fromkeys(m for _, table, _ in points for m in table.models))
    out = []
    for model in models:
        cells = [(x, table.entries.get((model, col))) for x, table, col in points]
        cells = [(x, e) for x, e in cells if e is not None and e.status == "ok" and np.isfinite(e.mean)]
        if cells:
            out.append(Curve(model, tuple(x for x, _ in cells), tuple(e.mean for _, e in cells),
                             tuple(e.std if np.isfinite(e.std) else 0.0 for _, e in cells)))
    return tuple(out)


def error_panels(frame: pd.DataFrame, task: str, metrics: tuple[str, ...],
                 xlabel: str | None = None) -> list[list[Panel]]:
    """Imputation and noise: a row per metric, a column per dataset; each point is the cell of the
    condition's table (the same numbers as ``tables/<task>_<condition>``). ``xlabel``: the task's by default."""
    tables = [(condition_value(c), t) for c, t in condition_tables(frame, task)]
    datasets = list(dict.fromkeys(c.group for _, t in tables for c in t.columns))
    from harness.registry.tasks import get_task

    xlabel, ticks = xlabel or get_task(task).x_label, get_task(task).x_ticks
    grid = [[Panel(ds, xlabel, f"{metric} ({UNIT}, normalised)",
                   table_curves([(x, t, Column(ds, metric)) for x, t in tables]), ticks)
             for ds in datasets] for metric in metrics]
    return drop_empty_columns(grid)


def drop_empty_columns(grid: list[list[Panel]]) -> list[list[Panel]]:
    """Datasets with no number in any panel get no column (a figure with none is not drawn)."""
    keep = [j for j in range(len(grid[0]) if grid else 0) if any(row[j].curves for row in grid)]
    return [[row[j] for j in keep] for row in grid] if keep else []


EXACT, CLOSE = 1e-9, 0.02  # relative differences: "identical" and "hard to tell apart"


def coinciding(curves: tuple[Curve, ...], rtol: float = EXACT) -> list[list[str]]:
    """Groups of two or more models whose lines agree at every x to ``rtol`` relative (the default:
    identical): drawn on top of each other, they need saying."""
    groups: list[list[Curve]] = []
    for c in curves:
        for g in groups:
            if g[0].x == c.x and np.allclose(g[0].mean, c.mean, rtol=rtol, atol=0.0):
                g.append(c)
                break
        else:
            groups.append([c])
    return [[c.model for c in g] for g in groups if len(g) > 1]


def model_index(model: str) -> int:
    """A model's place among every registered model (then other names, e.g. the random row, by name): the
    index of its style in every figure, so one model has one colour and marker in all of them."""
    from models.registry import all_specs

    names = list(all_specs())
    return names.index(model) if model in names else len(names) + sum(ord(c) for c in model) % 10


def model_colours(models) -> dict[str, str]:
    """Model -> its colour in a figure that tells models apart by colour alone (the critical-difference
    diagram): its own colour (:func:`model_style`, the one of every figure) unless a model before it in the
    registry's order took it, then the next free one of :func:`colour_palette`, so that no two of up to 20
    models share a colour (registry indices ten apart would)."""
    palette = colour_palette()
    out: dict[str, str] = {}
    for m in sorted(dict.fromkeys(models), key=lambda m: (model_index(m), m)):
        first = palette.index(model_style(model_index(m))["color"])
        free = [palette[(first + k) % len(palette)] for k in range(len(palette))
                if palette[(first + k) % len(palette)] not in out.values()]
        out[m] = free[0] if free else palette[first]
    return {m: out[m] for m in models}


def colour_palette() -> list[str]:
    """Twenty distinct colours: matplotlib's ten (C0..C9, every figure's) then tab20's lighter ten."""
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    return [f"C{i}" for i in range(10)] + [to_hex(c) for c in colormaps["tab20"].colors[1::2]]


def model_style(i: int) -> dict:
    """Model i's colour, hollow marker, marker size and line style: coinciding lines still show each
    marker (smaller shapes nest inside larger ones) and alternate dashes."""
    return dict(color=f"C{i % 10}", marker=MARKERS[i % len(MARKERS)], ls=LINESTYLES[i % len(LINESTYLES)],
                ms=9 - 0.5 * (i % 10), mfc="none", mew=1.1, lw=1.2, capsize=2)


def _draw_panel(ax, panel: Panel, styles: dict[str, dict]) -> None:
    for curve in panel.curves:
        ax.errorbar(curve.x, curve.mean, yerr=curve.std, label=curve.model, **styles[curve.model])
    if panel.log_x:
        ax.set_xscale("log")
        plain_log_labels(ax.xaxis)
    if panel.tick_format:
        xs = sorted({x for c in panel.curves for x in c.x})
        ax.set_xticks(xs, [panel.tick_format.format(x) for x in xs])
        ax.set_xticks([], minor=True)
    means = np.array([m for c in panel.curves for m in c.mean])
    positive = means[means > 0]
    if positive.size and positive.max() / positive.min() > 20:  # one model's errors dwarf the others'
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis)
    ax.set_title(panel.title)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.grid(alpha=0.3)


def plain_log_labels(axis) -> None:
    """A log axis's labels as plain numbers (10 and 100, 2 and 0.3), major and minor: matplotlib writes them as
    mathtext (``$\\mathdefault{2\\times10^{0}}$``), which :func:`pyplot` turns off, so they would print raw
    (minor ticks are labelled when the axis spans little more than a decade, as it does when one model's errors
    are infinite)."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    class PlainLogFormatter(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):  # noqa: ARG002 - matplotlib's signature
            return f"{x:g}"

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


def draw(grid: list[list[Panel]]):
    """The figure of a grid of panels; the legend right of the axes, notes on coinciding lines below."""
    plt = pyplot()
    rows, cols = len(grid), len(grid[0])
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.2 * rows), squeeze=False)
    panels = [p for row in grid for p in row]
    models = list(dict.fromkeys(c.model for p in panels for c in p.curves))
    styles = {m: model_style(model_index(m)) for m in models}
    exact, close = [], []
    for ax, panel in zip(axes.flat, panels):
        _draw_panel(ax, panel, styles)
        what = f"{panel.title}, {panel.ylabel.split(' (')[0]}" if len(panels) > 1 else panel.title
        same = coinciding(panel.curves)
        exact += [f"{what}: {' = '.join(group)}" for group in same]
        close += [f"{what}: {', '.join(group)}" for group in coinciding(panel.curves, CLOSE) if group not in same]
    fig.tight_layout()
    handles: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle[0])  # the errorbar's data line: marker and dashes, no bar
    fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
               title="model", title_fontsize=8)
    notes = (["Lines that coincide exactly (drawn on top of each other):", *exact] if exact else []) + (
        [f"Lines within {CLOSE:.0%} of each other at every point (told apart by marker and dashes):", *close]
        if close else [])
    if notes:
        fig.text(0.01, 0.0, "\n".join(notes), ha="left", va="top", fontsize=8)
    return fig


def save_figure(grid: list[list[Panel]], path: Path) -> list[Path]:
    """Draw ``grid`` and save it as ``path`` (PNG and PDF); nothing for an empty grid."""
    if not grid:
        return []
    fig = draw(grid)
    paths = save_png_pdf(fig, path)
    pyplot().close(fig)
    return paths


def task_figures(frame: pd.DataFrame, task: str, out_dir: Path) -> list[Path]:
    """The task's figure (PNG and PDF) under ``out_dir``; none when the records support none."""
    from harness.registry.tasks import get_task

    return get_task(task).figures(frame, out_dir)


__all__ = ["save_figure", "task_figures"]
