"""The calibration task's figure: per dataset, the PIT histogram of each quantile model (density per bin of its
levels: 1 everywhere for a calibrated forecast) and the reliability diagram (share of the truth at or below
each level's forecast against the level: the diagonal for a calibrated forecast), from the pooled counts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.reporting.figures import model_index, model_style, pyplot, save_png_pdf
from protocols.calibration import CalibrationCounts, bin_widths


def calibration_figure(counts: dict[tuple[str, str], CalibrationCounts], path: Path) -> list[Path]:
    """``counts``: (dataset, model) -> its counts pooled over folds, settings and seeds."""
    datasets = list(dict.fromkeys(ds for ds, _ in counts))
    plt = pyplot()
    fig, axes = plt.subplots(len(datasets), 2, figsize=(9.0, 3.3 * len(datasets)), squeeze=False)
    for (pit_ax, rel_ax), ds in zip(axes, datasets):
        for (d, model), c in counts.items():
            if d != ds or not c.n:
                continue
            style = model_style(model_index(model))
            edges = np.concatenate([[0.0], c.levels, [1.0]])
            density = np.asarray(c.pit) / c.n / bin_widths(c.levels)
            pit_ax.stairs(density, edges, baseline=None, color=style["color"], ls=style["ls"], lw=1.4, label=model)
            rel_ax.plot(c.levels, c.below(), color=style["color"], ls=style["ls"], marker=style["marker"],
                        mfc="none", ms=5, lw=1.2, label=model)
        pit_ax.axhline(1.0, color="0.4", lw=0.8, ls=":")
        pit_ax.set(title=f"{ds}: PIT histogram", xlabel="PIT (bins between the model's quantile levels)",
                   ylabel="density (1: calibrated)", xlim=(0, 1))
        rel_ax.plot([0, 1], [0, 1], color="0.4", lw=0.8, ls=":")
        rel_ax.set(title=f"{ds}: reliability", xlabel="quantile level", ylabel="share of truth at or below",
                   xlim=(0, 1), ylim=(0, 1))
        for ax in (pit_ax, rel_ax):
            ax.grid(alpha=0.3)
    fig.tight_layout()
    handles: dict[str, object] = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    fig.legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
               title="model", title_fontsize=8)
    paths = save_png_pdf(fig, path)
    plt.close(fig)
    return paths
