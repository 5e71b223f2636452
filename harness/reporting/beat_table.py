"""Beat-level fidelity of the forecasts (``table forecasting --by beats``): peak timing, heart rate and HRV of each
model's forecast against the target, on the ECG and PPG channels (``protocols.beats``).

Why here and not in the rows: the committed rows must not move, so the windows come from the rows' stored
per-window errors and only the forecasts are recomputed (``harness.reporting.window_rows``); a row none of whose
targets holds a detected beat in its horizon (the paper's settings on MIT-BIH hold less than one beat) costs no
forecast and is reported as such.  Each (window, cardiac channel) is one case; the counts of cases without a
target beat and of forecasts with no beat found stand beside the errors, never dropped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.breakdown import Breakdown, _fmt
from harness.reporting.window_rows import load_datasets, recompute_row, window_frame
from protocols.beats import NO_BEAT_FOUND, SCORED, beat_channels, score_windows, series_peaks

VALUES = ("timing_ms", "hr_error_bpm", "rmssd_error_ms", "sdnn_error_ms")


def beat_cases(frame: pd.DataFrame, task: str, out: Path, data_root: Path | None = None,
               loaded: dict | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One line per (row, window, cardiac channel) with its ``protocols.beats.BeatScore`` fields; and notes."""
    from protocols.modality import channel_modalities
    from protocols.windows import WindowRef
    from protocols.forecasting import windows_at
    from protocols.specs import Setting
    from protocols.splits import get_fold

    windows, notes = window_frame(frame, task, out)
    if windows.empty:
        return pd.DataFrame(), notes
    datasets, more = (loaded, []) if loaded is not None else load_datasets(windows["dataset"], data_root)
    notes += more
    by_key = frame.set_index("key")
    found = []
    for key, w in windows[windows["dataset"].isin(list(datasets))].groupby("key", sort=False):
        row = by_key.loc[key].rename(key)
        dataset = datasets[row["dataset"]]
        modalities = channel_modalities(dataset)
        fs = float(dataset.sampling_rate or 0.0)
        cardiac = [(c, m) for c, m in beat_channels(modalities) if fs >= m.min_sampling_rate]
        if len(cardiac) < len(beat_channels(modalities)):
            notes.append(f"{row['dataset']}: sampled at {fs:g} Hz, below what the ECG/PPG detectors need "
                         "(physiology's minimum rates): those channels are not scored")
        if not cardiac:
            continue
        rec, start = w["recording"].to_numpy(), w["start"].to_numpy()
        refs = tuple(WindowRef(int(r), int(s)) for r, s in zip(rec, start))
        arrays = windows_at(dataset, get_fold(dataset, row["fold"]), Setting.parse(row["setting"]), refs)
        has_beat = any(_target_beat(arrays.context[b, c], arrays.target[b, c], fs, m)
                       for b in range(len(refs)) for c, m in cardiac)
        if has_beat:  # only then is the model run
            arrays, forecast, note = recompute_row(dataset, row, out)
            if note:
                notes.append(note)
            scores = score_windows(arrays.context, arrays.target, forecast, fs, modalities)
        else:
            scores = [(b, c, None) for b in range(len(refs)) for c, _ in cardiac]
        for b, c, s in scores:
            found.append({"dataset": row["dataset"], "setting": row["setting"], "condition": row["condition"],
                          "model": row["model"], "fold": row["fold"], "window": b, "channel": dataset.channels[c],
                          "horizon_s": arrays.target.shape[2] / fs,
                          "status": s.status if s else "no beat in target",
                          **{v: getattr(s, v) if s else np.nan for v in VALUES}})
    return pd.DataFrame(found), notes


def _target_beat(context: np.ndarray, target: np.ndarray, fs: float, measure) -> bool:
    peaks = series_peaks(context, target, fs, measure)
    return peaks is not None and bool((peaks >= context.shape[-1]).any())


def by_beats(frame: pd.DataFrame, task: str, out: Path, data_root: Path | None = None) -> tuple[Breakdown, pd.DataFrame]:
    cases, notes = beat_cases(frame, task, out, data_root)
    rows = []
    if not cases.empty:
        for (ds, setting, cond, model), g in cases.groupby(["dataset", "setting", "condition", "model"], sort=False):
            with_beat = g[g["status"] != "no beat in target"]
            scored = g[g["status"] == SCORED]
            cells = []
            for v in VALUES:
                x = scored[v].dropna()
                cells.append(f"{_fmt(float(x.mean()))} ({len(x)})" if len(x) else "-")
            rows.append((cond, ds, model, setting, f"{g['horizon_s'].iloc[0]:.2f}", str(len(g)), str(len(with_beat)),
                         str(int((g["status"] == NO_BEAT_FOUND).sum())), *cells))
        if (cases["status"] == "no beat in target").all():
            notes.append("no target holds a detected beat in its horizon: the settings' horizons are shorter than "
                         "a beat (or than neurokit2's detectors need); run a longer setting, e.g. --settings 720/360")
    else:
        notes.append(f"no {task} row on a dataset with an ECG or PPG channel")
    caption = (f"Beat-level fidelity ({task}): per (window, ECG/PPG channel) case, mean absolute error of the "
               "forecast's beats against the target's in the horizon: peak timing (ms), heart rate (bpm), RMSSD and "
               "SDNN (ms), each with the cases it is over; 'no beat found': the target has a beat, the forecast none.")
    header = ("condition", "dataset", "model", "setting", "horizon s", "cases", "target beats", "no beat found",
              "timing ms", "HR bpm", "RMSSD ms", "SDNN ms")
    return Breakdown(caption, header, tuple(rows), tuple(dict.fromkeys(notes))), cases


def beat_figure(cases: pd.DataFrame, path: Path) -> list[Path]:
    """Per setting with scored cases: each model's peak-timing errors (box) and its share of 'no beat found'."""
    from harness.reporting.figures import pyplot, save_png_pdf

    if cases.empty or not (cases["status"] == SCORED).any():
        return []
    plt = pyplot()
    settings = [s for s in dict.fromkeys(cases["setting"]) if (cases[cases["setting"] == s]["status"] == SCORED).any()]
    fig, axes = plt.subplots(2, len(settings), figsize=(4.5 * len(settings), 5.5), squeeze=False)
    for j, s in enumerate(settings):
        part = cases[cases["setting"] == s]
        models = list(dict.fromkeys(part["model"]))
        timing = [part[(part["model"] == m) & (part["status"] == SCORED)]["timing_ms"].dropna() for m in models]
        axes[0, j].boxplot([t.to_numpy() if len(t) else [np.nan] for t in timing], showfliers=True)
        axes[0, j].set_title(f"{s}: peak-timing error", fontsize=9)
        axes[0, j].set_ylabel("ms")
        share = [float((part[(part["model"] == m)]["status"] == NO_BEAT_FOUND).sum())
                 / max(int((part[(part["model"] == m)]["status"] != "no beat in target").sum()), 1) for m in models]
        axes[1, j].bar(range(1, len(models) + 1), share, color="0.5")
        axes[1, j].set_ylabel("share 'no beat found'")
        axes[1, j].set_ylim(0, 1)
        for ax in axes[:, j]:
            ax.set_xticks(range(1, len(models) + 1))
            ax.set_xticklabels(models, rotation=45, ha="right", fontsize=7)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    files = save_png_pdf(fig, path)
    plt.close(fig)
    return files
