"""Figures from records (matplotlib, PNG and PDF): pure plotting of pooled results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.tables import _condition_value, conditions, pooled


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> list[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = [path.with_suffix(".png"), path.with_suffix(".pdf")]
    for p in out:
        fig.savefig(p, dpi=150, bbox_inches="tight")
    return out


def _log_if_wide(ax, values: pd.Series) -> None:
    """A log axis when one model's errors dwarf the others' (more than 20x apart)."""
    v = values[values > 0]
    if len(v) and v.max() / v.min() > 20:
        ax.set_yscale("log")


def error_curves(frame: pd.DataFrame, task: str, out_dir: Path, metrics: tuple[str, ...]) -> list[Path]:
    """Error against the condition level (missing rate, noise beta): a line per model, a panel per
    dataset and metric; points are means over replicates, bars their std."""
    per = pooled(frame, task)
    if per.empty:
        return []
    per = per[per["complete"]]
    datasets = list(dict.fromkeys(per["dataset"]))
    plt = _plt()
    fig, axes = plt.subplots(len(metrics), len(datasets), figsize=(4.2 * len(datasets), 3.2 * len(metrics)),
                             squeeze=False)
    for j, ds in enumerate(datasets):
        for i, metric in enumerate(metrics):
            ax = axes[i][j]
            for model, g in per[per["dataset"] == ds].groupby("model", sort=False):
                stats = g.groupby("condition")[metric].agg(["mean", "std"]).reset_index()
                stats["x"] = stats["condition"].map(_condition_value)
                stats = stats.sort_values("x")
                ax.errorbar(stats["x"], stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=3,
                            capsize=2, label=model)
            ax.set_title(f"{ds}")
            _log_if_wide(ax, per[per["dataset"] == ds][metric])
            ax.set_xlabel({"imputation": "missing rate (%)", "noise": "noise level beta"}[task])
            ax.set_ylabel(f"{metric.upper()} (normalised)")
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    name = {"imputation": "imputation_rmse_vs_missing_rate", "noise": "noise_robustness"}[task]
    paths = _save(fig, out_dir / name)
    plt.close(fig)
    return paths


def label_efficiency(frame: pd.DataFrame, out_dir: Path) -> list[Path]:
    rows = frame[(frame["task"] == "classification") & (frame["status"] == "ok")]
    budgets = conditions(rows, "classification")
    if len(budgets) < 2:
        return []
    plt = _plt()
    datasets = list(dict.fromkeys(rows["dataset"]))
    fig, axes = plt.subplots(2, len(datasets), figsize=(4.2 * len(datasets), 6.4), squeeze=False)
    for j, ds in enumerate(datasets):
        for i, (metric, label) in enumerate((("macro_f1", "Macro-F1"), ("macro_auroc", "Macro-AUROC"))):
            ax = axes[i][j]
            for model, g in rows[rows["dataset"] == ds].groupby("model", sort=False):
                stats = g.groupby("condition")[metric].agg(["mean", "std"]).reset_index()
                stats["x"] = stats["condition"].map(_condition_value)
                stats = stats.sort_values("x")
                ax.errorbar(stats["x"], 100 * stats["mean"], yerr=100 * stats["std"].fillna(0), marker="o",
                            ms=3, capsize=2, label=model)
            ax.set_xscale("log")
            ax.set_title(ds)
            ax.set_xlabel("training labels used (%)")
            ax.set_ylabel(f"{label} (x100)")
            ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    paths = _save(fig, out_dir / "label_efficiency")
    plt.close(fig)
    return paths


def task_figures(frame: pd.DataFrame, task: str, out_dir: Path) -> list[Path]:
    if task == "imputation":
        return error_curves(frame, task, out_dir, ("rmse",))
    if task == "noise":
        return error_curves(frame, task, out_dir, ("rmse", "mae"))
    if task == "classification":
        return label_efficiency(frame, out_dir)
    return []


__all__ = ["task_figures"]
