"""The failure atlas: per model, the windows where it does worst against last value on the same window.

Why: a pooled RMSE hides a forecast that climbs to its bound for a whole horizon on one window of a thousand.
Each window's RMSE (sqrt(sse / n), from the stored per-window errors) is divided by last value's RMSE on the
same window (same dataset, setting, condition, seed, fold, recording and start), so a hard window (an R peak in
the horizon) that is hard for every model does not rank first; a model's worst ratios are its atlas.  A window
where last value is exact (RMSE 0) has no ratio and is counted.  The table flags a model whose worst window passes
``FLAG_RATIO``; the figure draws each atlas window's context, target, the model's forecast and last value's,
recomputed from the models (``harness.reporting.window_rows``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.breakdown import Breakdown, _fmt
from harness.reporting.window_rows import KEYS, load_datasets, recompute_row, window_frame

REFERENCE = "last-value"  # the naive forecast every window's error is divided by
# A window 3x worse than repeating the last sample is a forecast that left the signal (a climb to a bound, a sign
# flip).  The ratio is read beside last value's own RMSE (the table shows both): where last value is nearly exact
# (a flat stretch) a small error passes it too, so the flag says "look at this window", not "this model failed".
FLAG_RATIO = 3.0
WORST = 3  # atlas windows per model
PAIR = [*KEYS, "recording", "start"]


def ratio_frame(windows: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Every non-reference model's windows with ``ratio`` = its RMSE / last value's on the same window."""
    if windows.empty or REFERENCE not in set(windows["model"]):
        return pd.DataFrame(), [f"no per-window errors of {REFERENCE} (the atlas's reference): recompute them with the "
                                f"folder's own command and --models {REFERENCE} --rerun"]
    ref = windows[windows["model"] == REFERENCE][[*PAIR, "rmse", "key", "index"]]
    ref = ref.rename(columns={"rmse": "reference_rmse", "key": "reference_key", "index": "reference_index"})
    merged = windows[windows["model"] != REFERENCE].merge(ref, on=PAIR, how="left")
    notes = []
    unpaired = merged["reference_rmse"].isna()
    exact = merged["reference_rmse"] == 0
    if unpaired.any():
        notes.append(f"{int(unpaired.sum())} window(s) without a {REFERENCE} window to pair with: no ratio")
    if exact.any():
        notes.append(f"{int(exact.sum())} window(s) where {REFERENCE} is exact (RMSE 0): no ratio")
    merged["ratio"] = merged["rmse"] / merged["reference_rmse"].where(merged["reference_rmse"] > 0)
    return merged, notes


def atlas(windows: pd.DataFrame, worst: int = WORST) -> tuple[pd.DataFrame, list[str]]:
    """Each model's ``worst`` windows by ratio (highest first), models in the order first seen."""
    ratios, notes = ratio_frame(windows)
    if ratios.empty:
        return ratios, notes
    scored = ratios.dropna(subset=["ratio"]).sort_values("ratio", ascending=False, kind="stable")
    order = {m: i for i, m in enumerate(dict.fromkeys(ratios["model"]))}
    top = scored.groupby("model", sort=False).head(worst)
    top = top.assign(rank=top.groupby("model").cumcount() + 1, _m=top["model"].map(order))
    return top.sort_values(["_m", "rank"]).drop(columns="_m").reset_index(drop=True), notes


def flagged(top: pd.DataFrame, ratio: float = FLAG_RATIO) -> list[str]:
    """The models whose worst window passes ``ratio``."""
    first = top[top["rank"] == 1] if not top.empty else top
    return [m for m, r in zip(first.get("model", []), first.get("ratio", [])) if r > ratio]


def atlas_table(frame: pd.DataFrame, task: str, out: Path) -> tuple[Breakdown, pd.DataFrame]:
    windows, notes = window_frame(frame, task, out)
    top, more = atlas(windows)
    rows = tuple((r["model"], r["dataset"], r["setting"], str(r["rank"]), f"{r['ratio']:.2f}",
                  _fmt(r["rmse"] * 100), _fmt(r["reference_rmse"] * 100),
                  f"{r['fold']} rec {r['recording']} @ {r['start']}" + (f" ({r['condition']})" if r["condition"] != "clean" else ""),
                  f"> {FLAG_RATIO:g}x" if r["rank"] == 1 and r["ratio"] > FLAG_RATIO else "")
                 for _, r in top.iterrows())
    marked = flagged(top)
    notes = notes + more + ([f"flagged (worst window above {FLAG_RATIO:g}x {REFERENCE}'s error): {', '.join(marked)}"]
                            if marked else [f"no model's worst window passes {FLAG_RATIO:g}x {REFERENCE}'s error"]
                            if not top.empty else [])
    caption = (f"Failure atlas ({task}): each model's {WORST} worst windows by the ratio of its window RMSE to "
               f"{REFERENCE}'s on the same window (RMSE x100); flagged when the worst passes {FLAG_RATIO:g}x.")
    return Breakdown(caption, ("model", "dataset", "setting", "rank", "ratio", "RMSE", REFERENCE, "window", "flag"),
                     rows, tuple(notes)), top


def atlas_figure(frame: pd.DataFrame, top: pd.DataFrame, out: Path, path: Path, data_root: Path | None = None,
                 loaded: dict | None = None) -> tuple[list[Path], list[str]]:
    """One panel per atlas window (a row per model, its worst first): context, target, the model's forecast and
    last value's, on the channel where the model's error is largest.  Returns the files and notes."""
    from harness.reporting.figures import pyplot, save_png_pdf

    if top.empty:
        return [], []
    datasets, notes = (loaded, []) if loaded is not None else load_datasets(top["dataset"], data_root)
    top = top[top["dataset"].isin(list(datasets))]
    if top.empty:
        return [], notes
    by_key = frame.set_index("key")
    rows: dict[str, tuple] = {}

    def computed(dataset, key: str) -> tuple:
        """A row's windows and forecasts, recomputed once per figure (a row often holds two atlas windows)."""
        if key not in rows:
            rows[key] = recompute_row(dataset, by_key.loc[key].rename(key), out)
        return rows[key]

    models = list(dict.fromkeys(top["model"]))
    cols = int(top["rank"].max())
    plt = pyplot()
    fig, axes = plt.subplots(len(models), cols, figsize=(3.2 * cols, 2.3 * len(models)), squeeze=False)
    for ax in axes.ravel():
        ax.set_visible(False)
    for _, w in top.iterrows():
        ax = axes[models.index(w["model"]), int(w["rank"]) - 1]
        ax.set_visible(True)
        dataset = datasets[w["dataset"]]
        arrays, forecast, note = computed(dataset, w["key"])
        _, last, note_last = computed(dataset, w["reference_key"])
        notes += [n for n in (note, note_last) if n]
        i, j = int(w["index"]), int(w["reference_index"])
        arrays = type(arrays)(arrays.context[i:i + 1], arrays.context_times[i:i + 1], arrays.target[i:i + 1],
                              arrays.target_times[i:i + 1])
        forecast, last = forecast[i:i + 1], last[j:j + 1]
        err = np.nansum((forecast[0] - arrays.target[0]) ** 2, axis=1)
        c = int(np.argmax(err))
        fs = dataset.sampling_rate or 1.0
        n_ctx, n_h = arrays.context.shape[2], arrays.target.shape[2]
        t_ctx, t_h = np.arange(-n_ctx, 0) / fs, np.arange(n_h) / fs
        ax.plot(t_ctx, arrays.context[0, c], color="0.45", lw=0.9, label="context")
        ax.plot(t_h, arrays.target[0, c], color="black", lw=1.3, label="target")
        ax.plot(t_h, forecast[0, c], color="tab:red", lw=1.2, label="forecast")
        ax.plot(t_h, last[0, c], color="tab:blue", lw=1.0, ls="--", label=REFERENCE)
        ax.axvline(0, color="0.6", ls=":", lw=1)
        ax.set_title(f"{w['model']} #{int(w['rank'])}: {w['ratio']:.1f}x ({w['setting']}, {w['fold']}, "
                     f"{dataset.channels[c]})", fontsize=7)
        ax.tick_params(labelsize=6)
    axes[0, 0].legend(fontsize=6, loc="best")
    fig.supxlabel("seconds from the horizon's start", fontsize=8)
    fig.tight_layout()
    files = save_png_pdf(fig, path)
    plt.close(fig)
    return files, list(dict.fromkeys(notes))


def write_atlas(frame: pd.DataFrame, results: Path, out: Path,
                data_root: Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """The report's failure atlas of every task that keeps per-window forecast errors: its table (Markdown,
    LaTeX) and figure under ``out``; (produced, not produced with why)."""
    from harness.registry.tasks import all_tasks

    produced, missing = [], []
    for task in all_tasks().values():
        if not getattr(task, "scores_windows", False) or not ((frame["task"] == task.name) & (frame["status"] == "ok")).any():
            continue
        table, top = atlas_table(frame, task.name, results)
        what = f"failure atlas ({task.name})"
        if top.empty:
            missing.append((what, "; ".join(table.notes)))
            continue
        files, notes = atlas_figure(frame, top, results, out / "figures" / f"{task.name}_atlas", data_root)
        table = dataclasses.replace(table, notes=tuple(dict.fromkeys(table.notes + tuple(notes))))
        for style, ext in (("markdown", "md"), ("latex", "tex")):
            path = out / "tables" / f"{task.name}_atlas.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(table.render(style))
        marked = flagged(top)
        drawn = f", figures/{task.name}_atlas.png" if files else " (no figure: " + "; ".join(notes) + ")"
        produced.append(f"{what}: tables/{task.name}_atlas.md{drawn}; "
                        + (f"flagged above {FLAG_RATIO:g}x {REFERENCE}: {', '.join(marked)}" if marked
                           else f"no model's worst window above {FLAG_RATIO:g}x {REFERENCE}"))
    return produced, missing
