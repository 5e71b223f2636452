"""The physiology task's figure: rate error per model, one panel per (dataset, measure), a group of bars per
source (forecast, imputed segments at each missing rate); the share of pairs without a predicted rate is
printed on each bar, so a model that forecasts no beats is not mistaken for one with a small error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.figures import pyplot, save_png_pdf


def bar_positions(here: pd.DataFrame, models: list[str], sources: list[str]) -> dict[tuple[str, str], tuple[float, float]]:
    """(model, source) -> (x, width): each source's group centred on its tick and shared by the models that have
    rows there only (forecasters and imputers rarely meet in one source), so no group is pushed aside by gaps."""
    out = {}
    for k, source in enumerate(sources):
        present = [m for m in models if ((here["model"] == m) & (here["source"] == source)).any()]
        width = 0.8 / max(len(present), 1)
        for j, model in enumerate(present):
            out[(model, source)] = (k - 0.4 + width * (j + 0.5), width)
    return out


def physiology_figure(per: pd.DataFrame, path: Path) -> list[Path]:
    """``per``: complete rows of ``Physiology.pooled`` with ``source`` and ``measure`` columns."""
    panels = list(dict.fromkeys(zip(per["dataset"], per["measure"])))
    if not panels:
        return []
    plt = pyplot()
    models = list(dict.fromkeys(per["model"]))
    fig, axes = plt.subplots(1, len(panels), figsize=(max(4.5, 1.2 * len(models) + 2.5) * len(panels), 3.8),
                             squeeze=False)
    labelled: set[str] = set()  # one legend entry per model, whichever panel and source it first appears in
    for ax, (ds, measure) in zip(axes.flat, panels):
        here = per[(per["dataset"] == ds) & (per["measure"] == measure)]
        sources = list(dict.fromkeys(here["source"]))
        for (model, source), (x, width) in bar_positions(here, models, sources).items():
            i = models.index(model)
            label = None if model in labelled else model
            labelled.add(model)
            g = here[(here["model"] == model) & (here["source"] == source)]
            mae = g["mae"].to_numpy()
            fail = float(np.nanmean(g["no_rate"]))
            if np.isfinite(mae).any():
                m = float(np.nanmean(mae))
                sd = float(np.nanstd(mae, ddof=1)) if np.isfinite(mae).sum() > 1 else 0.0
                ax.bar(x, m, width, yerr=sd, color=f"C{i % 10}", label=label, capsize=2)
                ax.text(x, m, f"{fail:.0f}%", ha="center", va="bottom", fontsize=6, rotation=90)
            else:
                ax.bar(x, 0, width, color=f"C{i % 10}", label=label)
                ax.text(x, 0, "no rate", ha="center", va="bottom", fontsize=6, rotation=90)
        unit = next((u for u in here["unit"] if u), "per minute")
        ax.set_xticks(range(len(sources)), [s.replace(" missing=", "\nmissing=") for s in sources], fontsize=7)
        ax.set_title(f"{ds}: {measure}")
        ax.set_ylabel(f"rate MAE ({unit})")
        ax.grid(axis="y", alpha=0.3)
    found = dict(pair[::-1] for ax in axes.flat for pair in zip(*ax.get_legend_handles_labels()))
    labels = [m for m in models if m in found]
    handles = [found[m] for m in labels]
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, title="model",
               title_fontsize=8)
    fig.text(0.01, -0.02, "Numbers on the bars: share of (span, channel) pairs whose prediction has no detectable rate "
                          "(not scored).", fontsize=7, ha="left", va="top")
    paths = save_png_pdf(fig, path)
    plt.close(fig)
    return paths
