"""Forecasting examples (the paper's example figures): one window of a dataset in one setting, its context, the
truth and every model's forecast, in the normalised space the protocol scores.

The window is the first one the protocol draws (seed as given) for the first LOSO fold's test
subject, normalised with that fold's training subjects; each model sees the context only.  The
arrays are saved beside the figure (tidy CSV), so the figure can be redrawn or checked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands.run import parse_weights
from harness.run.names import DEFAULT_OUT
from protocols.specs import Setting

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from protocols.data import Dataset


def add_arguments(ex: argparse.ArgumentParser) -> None:
    ex.add_argument("--dataset", default=None, metavar="NAME|PATH", help="default: the embedded cohort")
    ex.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")
    ex.add_argument("--models", nargs="+", default=[], metavar="NAME", help="default: the forecasting defaults")
    ex.add_argument("--setting", default="128/64", metavar="C/H",
                    help="the context/horizon setting of the window (default: %(default)s)")
    ex.add_argument("--channels", nargs="+", default=None, metavar="NAME",
                    help="keep these channels only (one channel gives a single-channel example)")
    ex.add_argument("--seed", type=int, default=0, help="window-selection seed")
    ex.add_argument("--weights", nargs="+", default=[], metavar="MODEL=DIR")
    ex.add_argument("--out", type=Path, default=DEFAULT_OUT / "figures")


def run(args: argparse.Namespace) -> int:
    """`python -m harness examples`: the figure and its CSV for the models that can run (the others: one line why)."""
    from harness.run.runner import default_datasets, default_models
    from models.registry import get_spec
    from protocols.datasets import load_dataset

    name = args.dataset or default_datasets()[0]
    dataset = load_dataset(name, data_root=args.data_root)
    if args.channels:
        dataset = dataset.select_channels(tuple(args.channels))
    models = list(args.models) or list(default_models("forecasting"))
    options = {m: {"weights": d} for m, d in parse_weights(args.weights)}
    unavailable = [m for m in models if get_spec(m).unavailable_reason(**options.get(m, {}))]
    for m in unavailable:
        print(f"skipped {m}: {get_spec(m).unavailable_reason(**options.get(m, {}))}", file=sys.stderr)
    setting = Setting.parse(args.setting)
    frame = forecast_example(dataset, [m for m in models if m not in unavailable], setting, args.seed, options)
    safe = "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in Path(name).name)  # e.g. mitbih:blocks=6
    stem = "-".join(["forecast-example", safe, f"{setting.context}x{setting.horizon}",
                     *(["_".join(args.channels)] if args.channels else [])])
    for f in plot_example(frame, args.out / stem):
        print(f)
    return 0


def forecast_example(dataset: Dataset, models: list[str], setting: Setting, seed: int = 0,
                     options: dict[str, dict] | None = None) -> pd.DataFrame:
    """Tidy rows (series = context | truth | <model>, channel, time, value) for one window of ``setting``."""
    import pandas as pd

    from models.registry import get_spec
    from protocols.forecasting import fit_for_fold, fold_windows, predict_windows
    from protocols.specs import ForecastingSpec, SamplingSpec
    from protocols.splits import loso_folds

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
        fit_for_fold(model, dataset, fold, setting, spec)  # a supervised model: on this fold's training subjects
        first = type(arrays)(arrays.context[:1], arrays.context_times[:1], arrays.target[:1], arrays.target_times[:1])
        add(name, predict_windows(model, first, 1)[0], arrays.target_times[0])
    frame = pd.DataFrame(rows)
    frame.attrs.update(dataset=dataset.name, subject=fold.test_subject, setting=setting.name)
    return frame


def coinciding_forecasts(frame: pd.DataFrame) -> list[str]:
    """"CHANNEL: a = b" for models whose forecasts agree at every point (last value and a flat AutoTheta
    forecast do): drawn on top of each other, only a note tells the reader."""
    import numpy as np

    from harness.reporting.figures import EXACT

    notes = []
    models = [s for s in dict.fromkeys(frame["series"]) if s not in ("context", "truth")]
    for channel, part in frame.groupby("channel", sort=False):
        groups: list[list[str]] = []
        values = {m: part.loc[part["series"] == m, "value"].to_numpy() for m in models}
        for m in models:
            for g in groups:
                if np.allclose(values[g[0]], values[m], rtol=EXACT, atol=0.0):
                    g.append(m)
                    break
            else:
                groups.append([m])
        notes += [f"{channel}: {' = '.join(g)}" for g in groups if len(g) > 1]
    return notes


def plot_example(frame: pd.DataFrame, path: Path) -> list[Path]:
    """One panel per channel: context and truth in black, a line per model over the horizon, each model
    with the marker and dashes of the report's figures (so coinciding lines stay visible), the legend
    beside the panels (never over the signal) and a note naming forecasts that coincide."""
    from harness.reporting.figures import model_index, model_style, pyplot, save_png_pdf

    plt = pyplot()
    channels = list(dict.fromkeys(frame["channel"]))
    fig, axes = plt.subplots(len(channels), 1, figsize=(8, 2.2 * max(len(channels), 1.4)), sharex=True,
                             squeeze=False)
    models = [s for s in dict.fromkeys(frame["series"]) if s not in ("context", "truth")]
    styles = {m: {k: v for k, v in model_style(model_index(m)).items() if k != "capsize"} for m in models}
    for ax, channel in zip(axes[:, 0], channels):
        part = frame[frame["channel"] == channel]
        for series, style in (("context", dict(color="0.35", lw=1.0)), ("truth", dict(color="black", lw=1.4))):
            s = part[part["series"] == series]
            ax.plot(s["time"], s["value"], label=series, **style)
        for name in models:
            s = part[part["series"] == name]
            ax.plot(s["time"], s["value"], label=name, markevery=max(1, len(s) // 8), **styles[name])
        horizon_start = part[part["series"] == "truth"]["time"].min()
        ax.axvline(horizon_start, color="0.6", ls=":", lw=1)
        ax.set_ylabel(f"{channel}\n(normalised)")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    a = frame.attrs
    fig.suptitle(f"{a.get('dataset', '')}: subject {a.get('subject', '')}, setting {a.get('setting', '')}", fontsize=10)
    fig.tight_layout()
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=8)
    same = coinciding_forecasts(frame)
    if same:
        fig.text(0.01, 0.0, "\n".join(["Forecasts that coincide exactly (drawn on top of each other):", *same]),
                 ha="left", va="top", fontsize=8)
    files = save_png_pdf(fig, path)
    plt.close(fig)
    frame.to_csv(path.with_suffix(".csv"), index=False)
    return files + [path.with_suffix(".csv")]
