"""Forecasting examples (the paper's example figures): one window of a dataset in one setting, its context, the
truth and every model's forecast, in the normalised space the protocol scores.

The window is the first one the protocol draws (seed as given) for the first LOSO fold's test
subject, normalised with that fold's training subjects; each model sees the context only.  The
arrays are saved beside the figure (tidy CSV), so the figure can be redrawn or checked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.figures import pyplot, save_png_pdf
from models.registry import get_spec
from protocols.data import Dataset
from protocols.forecasting import fold_windows, predict_windows
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds


def forecast_example(dataset: Dataset, models: list[str], setting: Setting, seed: int = 0,
                     options: dict[str, dict] | None = None) -> pd.DataFrame:
    """Tidy rows (series = context | truth | <model>, channel, time, value) for one window of ``setting``."""
    fold = loso_folds(dataset)[0]
    spec = ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=1, seed=seed))
    arrays, _ = fold_windows(dataset, fold, setting, spec)
    if arrays.context.shape[0] == 0:
        raise ValueError(f"{dataset.name}: no gap-free {setting.context}/{setting.horizon} window for "
                         f"{fold.test_subject}")
    rows = []

    def add(series: str, values: np.ndarray, times: np.ndarray) -> None:
        for c, channel in enumerate(dataset.channels):
            rows.extend({"series": series, "channel": channel, "time": float(t), "value": float(v)}
                        for t, v in zip(times, values[c]))

    add("context", arrays.context[0], arrays.context_times[0])
    add("truth", arrays.target[0], arrays.target_times[0])
    for name in models:
        spec_ = get_spec(name)
        reason = spec_.unavailable_reason(**(options or {}).get(name, {}))
        if reason is not None:
            raise ValueError(f"{name}: {reason}")
        model = spec_.load(**(options or {}).get(name, {}))
        first = type(arrays)(arrays.context[:1], arrays.context_times[:1], arrays.target[:1], arrays.target_times[:1])
        add(name, predict_windows(model, first, 1)[0], arrays.target_times[0])
    frame = pd.DataFrame(rows)
    frame.attrs.update(dataset=dataset.name, subject=fold.test_subject, setting=setting.name)
    return frame


def plot_example(frame: pd.DataFrame, path: Path) -> list[Path]:
    """One panel per channel: context and truth in black, a line per model over the horizon."""
    plt = pyplot()
    channels = list(dict.fromkeys(frame["channel"]))
    fig, axes = plt.subplots(len(channels), 1, figsize=(8, 2.2 * len(channels)), sharex=True, squeeze=False)
    models = [s for s in dict.fromkeys(frame["series"]) if s not in ("context", "truth")]
    for ax, channel in zip(axes[:, 0], channels):
        part = frame[frame["channel"] == channel]
        for series, style in (("context", dict(color="0.35", lw=1.0)), ("truth", dict(color="black", lw=1.4))):
            s = part[part["series"] == series]
            ax.plot(s["time"], s["value"], label=series, **style)
        for name in models:
            s = part[part["series"] == name]
            ax.plot(s["time"], s["value"], lw=1.2, label=name)
        horizon_start = part[part["series"] == "truth"]["time"].min()
        ax.axvline(horizon_start, color="0.6", ls=":", lw=1)
        ax.set_ylabel(f"{channel}\n(normalised)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    axes[0, 0].legend(fontsize=7, ncol=min(4, len(models) + 2), loc="upper left")
    a = frame.attrs
    fig.suptitle(f"{a.get('dataset', '')}: subject {a.get('subject', '')}, setting {a.get('setting', '')}", fontsize=10)
    fig.tight_layout()
    files = save_png_pdf(fig, path)
    plt.close(fig)
    frame.to_csv(path.with_suffix(".csv"), index=False)
    return files + [path.with_suffix(".csv")]
