"""Errors by signal-quality band (``table TASK --by quality``): each test window's quality index
(``protocols.signal_quality``: spectral SNR of the clean window, every channel), windows grouped into tertiles per
(dataset, setting) (the same windows for every model), and each model's RMSE per band from the stored per-window
sums, with a 95 % bootstrap interval over subjects (``harness.reporting.stats.block_bootstrap_ci``: the fold is
the block, since a subject's windows are correlated).  No forecast is recomputed: only the windows' data is read.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.breakdown import Breakdown, _fmt
from harness.reporting.tables import SCALE
from harness.reporting.window_rows import load_datasets, window_frame
from protocols.signal_quality import BAND_NAMES, quality_bands, window_quality


def window_quality_frame(windows: pd.DataFrame, datasets: dict) -> pd.DataFrame:
    """The quality index and band of every distinct (dataset, setting, fold, recording, start) window."""
    from protocols.forecasting import windows_at
    from protocols.modality import channel_modalities
    from protocols.specs import Setting
    from protocols.splits import get_fold
    from protocols.windows import WindowRef

    distinct = windows[["dataset", "setting", "fold", "recording", "start"]].drop_duplicates()
    distinct = distinct[distinct["dataset"].isin(list(datasets))]
    parts = []
    for (ds, setting, fold), g in distinct.groupby(["dataset", "setting", "fold"], sort=False):
        dataset = datasets[ds]
        refs = tuple(WindowRef(int(r), int(s)) for r, s in zip(g["recording"], g["start"]))
        arrays = windows_at(dataset, get_fold(dataset, fold), Setting.parse(setting), refs)
        values = np.concatenate([arrays.context, arrays.target], axis=2)
        parts.append(g.assign(quality=window_quality(values, float(dataset.sampling_rate or 1.0),
                                                    channel_modalities(dataset))))
    if not parts:
        return pd.DataFrame(columns=[*distinct.columns, "quality", "band"])
    found = pd.concat(parts, ignore_index=True)
    found["band"] = "none"
    for _, g in found.groupby(["dataset", "setting"], sort=False):
        found.loc[g.index, "band"] = quality_bands(g["quality"].to_numpy())
    return found


def by_quality(frame: pd.DataFrame, task: str, out: Path, data_root: Path | None = None,
               loaded: dict | None = None) -> tuple[Breakdown, pd.DataFrame]:
    from harness.reporting.stats import block_bootstrap_ci

    windows, notes = window_frame(frame, task, out)
    caption = (f"{task} by signal-quality band: windows in tertiles of their spectral SNR (dB) per dataset and "
               "setting; RMSE x100 per band, folds pooled, [95 % bootstrap interval over subjects]; the SNR range "
               "of each band in the header's rows.")
    header = ("condition", "dataset", "model", "setting", *[f"{b} quality" for b in BAND_NAMES])
    if windows.empty:
        return Breakdown(caption, header, (), tuple(notes or [f"no {task} rows"])), pd.DataFrame()
    datasets, more = (loaded, []) if loaded is not None else load_datasets(windows["dataset"], data_root)
    notes += more
    quality = window_quality_frame(windows, datasets)
    scored = windows.merge(quality, on=["dataset", "setting", "fold", "recording", "start"], how="inner")
    rows = []
    for (cond, ds, model, setting), g in scored.groupby(["condition", "dataset", "model", "setting"], sort=False):
        cells = []
        for band in BAND_NAMES:
            b = g[(g["band"] == band) & (g["n"] > 0)]
            if b.empty:
                cells.append("-")
                continue
            ci = block_bootstrap_ci(b["sse"].to_numpy(), b["sae"].to_numpy(), b["n"].to_numpy(), b["fold"].to_numpy())
            cells.append(f"{_fmt(ci.rmse * SCALE)} [{_fmt(ci.rmse_low * SCALE)}, {_fmt(ci.rmse_high * SCALE)}] "
                         f"({len(b)})")
        rows.append((cond, ds, model, setting, *cells))
    for (ds, setting), g in quality.groupby(["dataset", "setting"], sort=False):
        ranges = [f"{band} {g[g['band'] == band]['quality'].min():.1f}..{g[g['band'] == band]['quality'].max():.1f} dB"
                  for band in BAND_NAMES if (g["band"] == band).any()]
        notes.append(f"{ds} {setting}: {len(g)} windows; " + ", ".join(ranges)
                     + (f"; {int((g['band'] == 'none').sum())} without an index" if (g["band"] == "none").any() else ""))
    return Breakdown(caption, header, tuple(rows), tuple(notes)), scored


def quality_figure(scored: pd.DataFrame, path: Path) -> list[Path]:
    """Per (dataset, setting): each model's RMSE per band (x100), low to high quality."""
    from harness.reporting.figures import model_index, model_style, pyplot, save_png_pdf

    if scored.empty:
        return []
    plt = pyplot()
    groups = list(scored.groupby(["dataset", "setting"], sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.4), squeeze=False)
    for ax, ((ds, setting), g) in zip(axes[0], groups):
        for model, m in g.groupby("model", sort=False):
            sums = m.groupby("band")[["sse", "n"]].sum().reindex(list(BAND_NAMES))
            style = {k: v for k, v in model_style(model_index(model)).items() if k != "capsize"}
            ax.plot(range(len(BAND_NAMES)), np.sqrt(sums["sse"] / sums["n"]) * SCALE, label=model, **style)
        ax.set_xticks(range(len(BAND_NAMES)))
        ax.set_xticklabels([f"{b} quality" for b in BAND_NAMES], fontsize=8)
        ax.set_title(f"{ds} {setting}", fontsize=9)
        ax.set_ylabel("RMSE x100")
        ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 0.95), fontsize=7)
    fig.tight_layout()
    files = save_png_pdf(fig, path)
    plt.close(fig)
    return files
