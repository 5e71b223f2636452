"""Figures of the breakdowns (``harness.reporting.breakdown``): bars per modality and the spread over subjects, a row per
condition and a column per dataset, so that a figure shows what its table lists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.figures import pyplot, save_png_pdf
from harness.reporting.tables import SCALE, condition_value


def condition_order(conditions, task) -> list[str]:
    """Conditions in table order: the paper's first, then each named option's (``task.family``), each by level,
    so that a figure's rows follow its table and never interleave two families' levels."""
    family = getattr(task, "family", lambda c: "")
    return sorted(dict.fromkeys(conditions), key=lambda c: (family(c) != "", family(c), condition_value(c), c))


def _grid(frame: pd.DataFrame, task):
    conditions = condition_order(frame["condition"], task)
    datasets = list(dict.fromkeys(frame["dataset"]))
    plt = pyplot()
    fig, axes = plt.subplots(len(conditions), len(datasets), squeeze=False,
                             figsize=(max(4.5, 1.1 * frame["model"].nunique() + 2) * len(datasets), 3.2 * len(conditions)))
    return plt, fig, axes, conditions, datasets


def modality_figure(sums: pd.DataFrame, task, path: Path) -> list[Path]:
    """Grouped bars: RMSE (x100) per modality, one bar per model (mean over replicates)."""
    if sums.empty:
        return []
    sums = sums.assign(rmse=np.sqrt(sums["sse"] / sums["n"].where(sums["n"] > 0)) * SCALE)
    plt, fig, axes, conditions, datasets = _grid(sums, task)
    models = list(dict.fromkeys(sums["model"]))
    width = 0.8 / len(models)
    for r, cond in enumerate(conditions):
        for c, ds in enumerate(datasets):
            ax = axes[r, c]
            here = sums[(sums["condition"] == cond) & (sums["dataset"] == ds)]
            modalities = list(dict.fromkeys(here["modality"]))
            for i, model in enumerate(models):
                for k, m in enumerate(modalities):
                    v = here.loc[(here["model"] == model) & (here["modality"] == m), "rmse"].to_numpy()
                    if len(v):
                        ax.bar(k - 0.4 + width * (i + 0.5), v.mean(), width, color=f"C{i % 10}",
                               label=model if (r, c, k) == (0, 0, 0) or k == 0 else None)
            ax.set_xticks(range(len(modalities)), modalities)
            ax.set_title(f"{ds}, {cond}", fontsize=9)
            ax.set_ylabel(f"RMSE (x{SCALE:g}, normalised)")
            ax.grid(axis="y", alpha=0.3)
    return _save(plt, fig, axes, path)


def subject_figure(per: pd.DataFrame, metric: str, higher: bool, task, path: Path) -> list[Path]:
    """Each model's subjects as dots over a box (median, quartiles); the worst subject named."""
    if per.empty:
        return []
    plt, fig, axes, conditions, datasets = _grid(per, task)
    models = list(dict.fromkeys(per["model"]))
    unit = {"RMSE": f"RMSE (x{SCALE:g}, normalised)", "MAE": f"rate MAE ({getattr(task, 'unit', '')})",
            "Macro-F1": "Macro-F1 (x100)"}[metric]
    for r, cond in enumerate(conditions):
        for c, ds in enumerate(datasets):
            ax = axes[r, c]
            here = per[(per["condition"] == cond) & (per["dataset"] == ds)]
            data = [here.loc[here["model"] == m, "value"].dropna().to_numpy() for m in models]
            keep = [i for i, d in enumerate(data) if len(d)]
            if keep:
                ax.boxplot([data[i] for i in keep], positions=keep, widths=0.5, showfliers=False)
            for i in keep:
                g = here[here["model"] == models[i]].dropna(subset=["value"])
                jitter = np.linspace(-0.12, 0.12, len(g)) if len(g) > 1 else np.zeros(1)
                ax.scatter(i + jitter, g["value"], s=12, color=f"C{i % 10}", zorder=3)
                w = g.iloc[int(np.argmin(g["value"]) if higher else np.argmax(g["value"]))]
                ax.annotate(str(w["subject"]), (i, w["value"]), xytext=(4, 2), textcoords="offset points", fontsize=7)
            ax.set_xticks(range(len(models)), models, rotation=30, ha="right", fontsize=8)
            ax.set_title(f"{ds}, {cond}", fontsize=9)
            ax.set_ylabel(unit)
            ax.grid(axis="y", alpha=0.3)
    fig.text(0.01, 0.0, f"Dots: subjects (LOSO test folds); box: median and quartiles; the worst subject is named "
                        f"({'lowest' if higher else 'highest'} {metric}).", fontsize=7, ha="left", va="top")
    return _save(plt, fig, axes, path, legend=False)


def _save(plt, fig, axes, path: Path, legend: bool = True) -> list[Path]:
    fig.tight_layout()
    if legend:
        handles, labels = {}, {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(lab, h)
        fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
                   title="model", title_fontsize=8)
    paths = save_png_pdf(fig, path)
    plt.close(fig)
    return paths
