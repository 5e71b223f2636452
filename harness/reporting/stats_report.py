"""The statistics part of the report: leaderboard, significance marks, bootstrap intervals,
critical-difference diagram and error-by-horizon curves, from records and their per-window errors.

Cells are (dataset, setting, condition) for the error tasks that score windows (forecasting, noise).
A cell's score is the table's: folds pooled exactly, averaged over seeds; a model that did not finish
every fold of a cell has no score there (counted in ``cells_completed``, never ranked on it).
Paired tests and intervals need the per-window errors (``harness.records.window_store``); records written
before they existed still give the leaderboard and the diagram, and the rest says it cannot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting import stats
from harness.reporting.tables import SCALE, SCORED_GROUP, SUPERVISED_GROUP, ZERO_SHOT, md_escape, plain, pooled
from harness.records.window_store import read_window_errors



def stat_tasks() -> tuple[str, ...]:
    """The registered tasks that score windows (``Task.scores_windows``): the statistics apply to them."""
    from harness.registry.tasks import all_tasks

    return tuple(name for name, task in all_tasks().items() if task.scores_windows)


def _unique(values: pd.Series) -> list:
    return list(dict.fromkeys(values.tolist()))


BASELINE = "seasonal-naive"
GROUP_STEMS = {ZERO_SHOT: "", SUPERVISED_GROUP: "supervised", SCORED_GROUP: "scored"}  # a group's file-name suffix
METRICS = {"rmse": "RMSE", "mae": "MAE"}
CELL = ["dataset", "setting", "condition"]  # setting: context/horizon, e.g. 96/48


@dataclass
class Statistics:
    """What was written (one line each) and what could not be, with why."""

    produced: list[str] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)


# -- scores per cell ------------------------------------------------------------------------
def cell_scores(frame: pd.DataFrame, task: str, metric: str = "rmse") -> pd.DataFrame:
    """Rows (dataset, setting, condition), one column per model: the pooled metric, mean over seeds;
    NaN where the model did not complete every fold of every seed."""
    per = pooled(frame, task)
    if per.empty:
        return pd.DataFrame()
    values = per.groupby([*CELL, "model"])[metric].agg(lambda v: v.mean() if v.notna().all() else np.nan)
    return values.unstack("model").sort_index()


@dataclass(frozen=True)
class CellWindows:
    """One model's windows in one cell, over its folds and seeds (the order defines the pairing)."""

    ids: np.ndarray  # [W, 4] seed, fold index, recording, start
    sse: np.ndarray
    sae: np.ndarray
    n: np.ndarray
    mase: np.ndarray
    blocks: np.ndarray  # the test subject (fold) of each window: bootstrap blocks
    step_sse: np.ndarray
    step_n: np.ndarray
    quantile_loss: np.ndarray | None = None  # models that forecast quantiles (CRPS, weighted quantile loss)
    abs_target: np.ndarray | None = None
    channel_mae: np.ndarray | None = None  # [W, C] per channel (files written since the breakdown was kept)
    channel_scale: np.ndarray | None = None
    channels: tuple[str, ...] = ()
    step_sae: np.ndarray | None = None  # [H] (files written since MAE by step was kept)


def cell_windows(frame: pd.DataFrame, results: Path, task: str) -> tuple[dict[tuple, dict[str, CellWindows]], int]:
    """Per cell and model, the concatenated per-window errors; and how many ok rows had none on disk.
    A model-cell with any ok row lacking its file (or any fold not ok) is left out."""
    rows = frame[frame["task"] == task]
    out: dict[tuple, dict[str, CellWindows]] = {}
    lacking = 0
    # every fold and seed any model has a row for on a dataset: a model-cell lacking one is left out
    expected = {ds: set(product(_unique(d["seed"]), _unique(d["fold"]))) for ds, d in rows.groupby("dataset", sort=False)}
    for keys, g in rows.groupby([*CELL, "model"], sort=True):
        if not (g["status"] == "ok").all() or set(zip(g["seed"].tolist(), g["fold"].tolist())) != expected[keys[0]]:
            continue
        parts = []
        for _, r in g.sort_values(["seed", "fold"]).iterrows():
            arrays = read_window_errors(results, str(r["key"]))
            if arrays is None:
                lacking += 1
                parts = None
                break
            parts.append((r, arrays))
        if not parts:
            continue
        folds = sorted(g["fold"].unique())
        ids = np.concatenate([np.column_stack([np.full(len(a["sse"]), int(r["seed"])),
                                               np.full(len(a["sse"]), folds.index(r["fold"])),
                                               a["recording"], a["start"]]) for r, a in parts])
        cat = {k: np.concatenate([a[k] for _, a in parts]) for k in ("sse", "sae", "n", "mase")}
        blocks = np.concatenate([np.full(len(a["sse"]), str(r["fold"]), dtype=object) for r, a in parts])
        step_sse = sum(a["step_sse"] for _, a in parts)
        step_n = sum(a["step_n"] for _, a in parts)
        probabilistic = all("quantile_loss" in a for _, a in parts)
        ql, absy = ((np.concatenate([a["quantile_loss"] for _, a in parts]),
                     np.concatenate([a["abs_target"] for _, a in parts])) if probabilistic else (None, None))
        by_channel = all("channel_mae" in a for _, a in parts) and len({tuple(a["channels"]) for _, a in parts}) == 1
        channel = ((np.concatenate([a["channel_mae"] for _, a in parts]),
                    np.concatenate([a["channel_scale"] for _, a in parts]), tuple(parts[0][1]["channels"]))
                   if by_channel else (None, None, ()))
        step_sae = sum(a["step_sae"] for _, a in parts) if all("step_sae" in a for _, a in parts) else None
        out.setdefault(tuple(keys[:3]), {})[keys[3]] = CellWindows(ids, cat["sse"], cat["sae"], cat["n"], cat["mase"],
                                                                  blocks, step_sse, step_n, ql, absy, *channel,
                                                                  step_sae=step_sae)
    return out, lacking


def per_window(w: CellWindows, metric: str) -> np.ndarray:
    return np.sqrt(w.sse / w.n) if metric == "rmse" else w.sae / w.n


# -- significance and intervals ------------------------------------------------------------------
def significance(frame: pd.DataFrame, windows: dict[tuple, dict[str, CellWindows]], task: str, metric: str = "rmse",
                 reference: str | None = None, alpha: float = 0.05, n_boot: int = 2000) -> pd.DataFrame:
    """One row per (cell, model): the cell score, its block-bootstrap interval over subjects, and the
    Holm-corrected Wilcoxon test against the cell's best model (or ``reference``) on the same windows."""
    scores = cell_scores(frame, task, metric)
    rows = []
    for cell, models in windows.items():
        score = scores.loc[cell] if cell in scores.index else pd.Series(dtype=float)
        ranked = [m for m in score.sort_values().index if m in models and np.isfinite(score[m])]
        ref = reference if reference in models else (ranked[0] if ranked else None)
        if ref is None:
            continue
        aligned = {m: w for m, w in models.items() if np.array_equal(w.ids, models[ref].ids)}
        tests = stats.paired_tests({m: per_window(w, metric) for m, w in aligned.items()}, reference=ref, alpha=alpha)
        for model, w in models.items():
            ci = stats.block_bootstrap_ci(w.sse, w.sae, w.n, w.blocks, n_boot=n_boot)
            t = tests.get(model)
            rows.append({**dict(zip(CELL, cell)), "model": model, "metric": metric,
                         "value": float(score.get(model, np.nan)), "ci_low": getattr(ci, f"{metric}_low"),
                         "ci_high": getattr(ci, f"{metric}_high"), "reference": ref,
                         "p_value": t.p_value if t else np.nan, "p_holm": t.p_holm if t else np.nan,
                         "not_worse": bool(t.not_worse) if t else None,
                         # significant, and lower both in the paired windows' mean and in the cell score shown
                         # (a few large errors can make them disagree: then no "+")
                         "better": bool(t is not None and model != ref and t.p_holm < alpha
                                        and t.mean_error < tests[ref].mean_error
                                        and score.get(model, np.nan) < score.get(ref, np.nan)),
                         "n_windows": int(len(w.sse)), "n_subjects": int(ci.n_blocks),
                         "note": (t.note if t else "its windows differ from the reference's: not tested")
                         or ci.note})
    return pd.DataFrame(rows)


def significance_grid(sig: pd.DataFrame) -> pd.DataFrame:
    """Models x cells: "12.34 [11.9, 13.1]" (x100) with "*" for the reference (the cell's best model unless
    one was named), "+" for a model significantly better than it and "=" for one not significantly worse."""
    if sig.empty:
        return pd.DataFrame()
    def text(r) -> str:
        better = bool(r.get("better", False))  # absent from significance tables written before it existed
        mark = "*" if r["model"] == r["reference"] else ("+" if better else "=" if r["not_worse"] else "")
        return f"{r['value'] * SCALE:.2f} [{r['ci_low'] * SCALE:.2f}, {r['ci_high'] * SCALE:.2f}]{mark}"
    sig = sig.assign(cell=sig["dataset"] + " " + sig["setting"] + _condition_suffix(sig), text=sig.apply(text, axis=1))
    grid = sig.pivot(index="model", columns="cell", values="text").fillna("")
    datasets = list(dict.fromkeys(sig["dataset"]))
    order = sig.drop_duplicates("cell").assign(
        ds=lambda f: f["dataset"].map(datasets.index), length=lambda f: f["setting"].map(_setting_order))
    return grid[list(order.sort_values(["ds", "length", "cell"], kind="stable")["cell"])]  # 48/24 before 128/64


def _setting_order(setting: str) -> tuple:
    """Settings by their lengths (C/H as numbers), anything else after them as text."""
    from protocols.specs import Setting, SpecError

    try:
        s = Setting.parse(setting)
        return (0, s.context, s.horizon, "")
    except SpecError:
        return (1, 0, 0, str(setting))


def _condition_suffix(frame: pd.DataFrame) -> pd.Series:
    return frame["condition"].map(lambda c: "" if c == "clean" else f" {c}")


# -- the blocks of Friedman, Nemenyi and the critical-difference diagram ----------------------------
def rank_blocks(frame: pd.DataFrame, task: str, metric: str = "rmse") -> tuple[pd.DataFrame, str, str]:
    """Blocks x models for the rank tests, what the blocks are called and what a block is. The settings (and conditions) of one
    dataset share its subjects and windows, so they are no independent blocks: with two or more
    datasets a block is a dataset (its score the mean over its settings and conditions); with one,
    a block is one of its test subjects (the mean of that subject's fold scores over the settings,
    conditions and seeds). A model lacking any part of a block has no score there."""
    scores = cell_scores(frame, task, metric)
    if scores.empty:
        return scores, "datasets", "datasets"
    datasets = list(dict.fromkeys(scores.index.get_level_values("dataset")))
    over = "settings and conditions" if scores.index.get_level_values("condition").nunique() > 1 else "settings"
    if len(datasets) > 1:
        blocks = scores.groupby(level="dataset", sort=False).agg(lambda v: v.mean() if v.notna().all() else np.nan)
        return blocks, "datasets", f"{len(blocks)} datasets (each the mean over its {over})"
    rows = frame[(frame["task"] == task) & (frame["dataset"] == datasets[0])]
    parts = ["setting", "condition", "seed"]
    expected = set(product(*[_unique(rows[c]) for c in parts]))
    data = {}
    for (fold, model), g in rows.groupby(["fold", "model"], sort=False):
        ok = g[g["status"] == "ok"]
        complete = set(zip(*[ok[c].tolist() for c in parts])) >= expected and len(ok) == len(g)
        data.setdefault(fold, {})[model] = float(ok[metric].mean()) if complete else np.nan
    blocks = pd.DataFrame.from_dict(data, orient="index")[list(scores.columns)]
    return blocks, "test subjects", f"{len(blocks)} test subjects of {datasets[0]} (each the mean of its fold's {metric.upper()} over the {over}{' and seeds' if rows['seed'].nunique() > 1 else ''}; one dataset: its settings are no independent blocks)"


# -- MASE by channel -----------------------------------------------------------------------------
def channel_breakdown(windows: dict[tuple, dict[str, CellWindows]]) -> pd.DataFrame:
    """Per dataset, channel and model: the mean MASE of the channel (its MAE over its scale, over the
    windows whose scale is usable), its MAE and its scale (the in-sample seasonal-naive MAE), each
    averaged over the cells (settings, conditions) with the breakdown; MAE and scale x100."""
    rows = []
    for (dataset, setting, condition), models in windows.items():
        for model, w in models.items():
            if w.channel_mae is None:
                continue
            for j, channel in enumerate(w.channels):
                mae, scale = w.channel_mae[:, j], w.channel_scale[:, j]
                usable = np.isfinite(scale) & (scale > 0)
                rows.append({"dataset": dataset, "channel": channel, "model": model,
                             "mase": float(np.mean(mae[usable] / scale[usable])) if usable.any() else np.nan,
                             "mae": float(mae.mean()) * SCALE,
                             "scale": float(np.mean(scale[usable])) * SCALE if usable.any() else np.nan})
    if not rows:
        return pd.DataFrame(columns=["dataset", "channel", "model", "mase", "mae", "scale"])
    long = pd.DataFrame(rows)
    return long.groupby(["dataset", "channel", "model"], sort=False)[["mase", "mae", "scale"]].mean().reset_index()


def _channel_grid(long: pd.DataFrame, value: str) -> pd.DataFrame:
    grid = long.assign(column=long["dataset"] + " " + long["channel"]).pivot_table(
        index="model", columns="column", values=value, sort=False)
    return grid


# -- leaderboard -------------------------------------------------------------------------------
def mase_scores(windows: dict[tuple, dict[str, CellWindows]]) -> pd.DataFrame:
    """Cells x models: the mean MASE of the cell's windows (NaN windows, a constant context, skipped)."""
    data = {cell: {m: float(np.nanmean(w.mase)) if np.isfinite(w.mase).any() else np.nan for m, w in models.items()}
            for cell, models in windows.items()}
    return pd.DataFrame.from_dict(data, orient="index")


def quantile_scores(windows: dict[tuple, dict[str, CellWindows]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cells x models, for the models that forecast quantiles: the CRPS estimate (mean over points of the
    quantile loss) and the weighted quantile loss (its sum over the sum of |target|); NaN for point models."""
    crps, wql = {}, {}
    for cell, models in windows.items():
        crps[cell] = {m: float(w.quantile_loss.sum() / w.n.sum()) if w.quantile_loss is not None else np.nan
                      for m, w in models.items()}
        wql[cell] = {m: float(w.quantile_loss.sum() / w.abs_target.sum())
                     if w.quantile_loss is not None and w.abs_target.sum() > 0 else np.nan for m, w in models.items()}
    return pd.DataFrame.from_dict(crps, orient="index"), pd.DataFrame.from_dict(wql, orient="index")


def leaderboard(frame: pd.DataFrame, windows: dict[tuple, dict[str, CellWindows]], task: str,
                baseline: str = BASELINE) -> tuple[pd.DataFrame, str]:
    """The statistics leaderboard on RMSE, with MAE's skill and the mean MASE beside it; a note when
    the skill cannot be computed (no baseline in the records). Ranks, wins, ties and losses are counted
    within a group (zero-shot, supervised, scored from a predictions file: ``tables.model_groups``), as the
    tables rank them: a supervised model never takes a zero-shot model's rank. The skill is each model's ratio
    to the baseline alone, so it is comparable across groups; with more than one group, ``group`` names each
    row's and the rows are listed group by group."""
    from harness.reporting.tables import model_groups

    scores = cell_scores(frame, task, "rmse")
    note = ""
    groups = model_groups(frame, list(scores.columns))
    if baseline in scores.columns:
        skill = stats.skill_scores(scores, baseline)
        mae_skill = stats.skill_scores(cell_scores(frame, task, "mae"), baseline)
    else:
        note = f"no skill score: {baseline} (the reference of the skill score) has no rows for {task}"
        skill = mae_skill = None
    parts = []
    for group in dict.fromkeys(groups.values()):
        models = [m for m in scores.columns if groups[m] == group]
        part = _ranked(scores[models], skill)
        if mae_skill is not None:
            part["mae_skill"] = mae_skill.reindex(part.index)
        parts.append(part.assign(group=group))
    board = pd.concat(parts) if parts else pd.DataFrame(columns=["avg_rank", "cells_completed", "group"])
    board.index.name = "model"
    mase = mase_scores(windows)
    board["mase"] = mase.mean(axis=0) if not mase.empty else np.nan
    crps, wql = quantile_scores(windows)
    board["crps"] = crps.mean(axis=0) if not crps.empty else np.nan  # NaN: a point forecaster
    board["wql"] = wql.mean(axis=0) if not wql.empty else np.nan
    from harness.reporting.pretraining_marks import leaderboard_column

    board["pretraining_overlap"] = leaderboard_column(board.index, frame, task)  # a mark, not a score (#35)
    group_column = board.pop("group")
    if group_column.nunique() > 1:  # only then: a leaderboard of zero-shot models alone keeps its columns
        board["group"] = group_column
    return board, note


def _rank_groups(frame: pd.DataFrame, models: list[str]) -> list[tuple[str, list[str]]]:
    """(group, its models) in the tables' order: zero-shot, supervised, scored from a predictions file."""
    from harness.reporting.tables import model_groups

    groups = model_groups(frame, models)
    return [(g, [m for m in models if groups[m] == g]) for g in GROUP_STEMS if g in groups.values()]


def _ranked(scores: pd.DataFrame, skill: pd.Series | None) -> pd.DataFrame:
    """The leaderboard of one group: skill (when there is a baseline), average rank over the cells every model of
    the group completed, wins/ties/losses against the group's other models (with a skill, as
    ``stats.leaderboard``), cells completed; best skill first (then rank, then name)."""
    ranks = stats.rank_summary(scores)
    counts = stats.win_tie_loss_counts(scores)
    board = pd.DataFrame(index=pd.Index([str(m) for m in scores.columns], name="model"))
    if skill is not None:
        board["skill"] = skill.reindex(scores.columns).to_numpy()
    board["avg_rank"] = ranks.avg_rank.to_numpy()
    if skill is not None:
        board["wins"] = counts.wins.sum(axis=1).to_numpy()
        board["ties"] = counts.ties.sum(axis=1).to_numpy()
        board["losses"] = counts.losses.sum(axis=1).to_numpy()
    board["cells_completed"] = [f"{int(ranks.completed[m])}/{ranks.n_cells_total}" for m in scores.columns]
    if skill is None:
        return board
    return board.assign(_name=board.index).sort_values(["skill", "avg_rank", "_name"], ascending=[False, True, True],
                                                       na_position="last", kind="mergesort").drop(columns="_name")


def step_curve(w: CellWindows, metric: str) -> np.ndarray | None:
    """[H] the error at each horizon step over all windows and channels, x100 (None: MAE by step not kept)."""
    if metric == "rmse":
        return np.sqrt(w.step_sse / w.step_n) * SCALE
    return None if w.step_sae is None else w.step_sae / w.step_n * SCALE


def horizon_table(windows: dict[tuple, dict[str, CellWindows]], metric: str) -> pd.DataFrame:
    """One row per (dataset, setting, model) of the clean condition and one column per horizon step:
    the numbers behind the horizon figure (step 1 against last value's is a question users ask)."""
    rows = []
    for (dataset, setting, condition), models in sorted(windows.items()):
        if condition != "clean":
            continue
        for model, w in sorted(models.items()):
            curve = step_curve(w, metric)
            if curve is not None:
                rows.append({"dataset": dataset, "setting": setting, "model": model,
                             **{f"step {i}": float(v) for i, v in enumerate(curve, start=1)}})
    return pd.DataFrame(rows)


def horizon_figure(windows: dict[tuple, dict[str, CellWindows]], path_stem: Path, metric: str = "rmse") -> list[Path]:
    """RMSE (or MAE) against horizon step, one panel per (dataset, setting) of the clean condition."""
    from harness.reporting.figures import model_index, model_style, pyplot, save_png_pdf

    cells = sorted(c for c in windows if c[2] == "clean"
                   and any(step_curve(w, metric) is not None for w in windows[c].values()))
    if not cells:
        return []
    plt = pyplot()
    datasets = sorted({c[0] for c in cells})
    settings = sorted({c[1] for c in cells}, key=lambda w: tuple(int(x) for x in w.split("/")))
    fig, axes = plt.subplots(len(datasets), len(settings), figsize=(3.6 * len(settings), 2.8 * len(datasets)),
                             squeeze=False)
    models = sorted({m for c in cells for m in windows[c]})
    for i, dataset in enumerate(datasets):
        for j, setting in enumerate(settings):
            ax = axes[i][j]
            for model in models:
                w = windows.get((dataset, setting, "clean"), {}).get(model)
                curve = None if w is None else step_curve(w, metric)
                if curve is None:
                    continue
                style = {k: v for k, v in model_style(model_index(model)).items() if k != "capsize"}
                ax.plot(np.arange(1, len(curve) + 1), curve, label=model, markevery=max(1, len(curve) // 6), **style)
            ax.set_title(f"{dataset}, {setting}", fontsize=9)
            if i == len(datasets) - 1:
                ax.set_xlabel("horizon step")
            if j == 0:  # one y label per row, not one per panel
                ax.set_ylabel(f"{METRICS[metric]} (x100)")
    fig.tight_layout()  # the panels fill the figure: no gap before the legend beside them
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8)
    try:
        return save_png_pdf(fig, path_stem)
    finally:
        plt.close(fig)


# -- writing -----------------------------------------------------------------------------------
def _text(df: pd.DataFrame) -> str:
    df = df.rename(index=lambda v: plain(v) if isinstance(v, str) else v,
                   columns=lambda v: plain(v) if isinstance(v, str) else v)
    return df.to_string(float_format=lambda v: f"{v:.3f}", na_rep="") + "\n"  # empty, as in Markdown and the captions


def _markdown(df: pd.DataFrame) -> str:
    df = df.reset_index()
    cols = [md_escape(str(c)) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join("" if (isinstance(v, float) and np.isnan(v)) else
                                       (f"{v:.3f}" if isinstance(v, float) else md_escape(str(v))) for v in r) + " |")
    return "\n".join(lines) + "\n"


def _write(df: pd.DataFrame, stem: Path, caption: str) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(stem.with_suffix(".csv"))
    stem.with_suffix(".txt").write_text(caption + "\n\n" + _text(df))
    stem.with_suffix(".md").write_text(caption + "\n\n" + _markdown(df))


def _current_code_only(frame: pd.DataFrame, task: str, done: Statistics) -> pd.DataFrame:
    """``frame`` without the task's models whose rows mix code versions or come from changed code or default
    weights (``harness.records.configurations.code_problem``): each is named, with why, under what was not produced."""
    from harness.records.configurations import code_problem

    rows = frame[frame["task"] == task]
    drop = []
    for model, g in rows.groupby("model", sort=False):
        problem = code_problem(g, task)
        if problem:
            drop.append(model)
            done.missing.append((f"{task} statistics of {model}", problem))
    return frame[~((frame["task"] == task) & frame["model"].isin(drop))]


def write_statistics(frame: pd.DataFrame, results: Path, out: Path, reference: str | None = None,
                     alpha: float = 0.05, n_boot: int = 2000) -> Statistics:
    """Every statistic the records under ``results`` support, under ``out`` (the report's statistics/)."""
    done = Statistics()
    from harness.registry.tasks import get_task

    for task in stat_tasks():
        if not (frame["task"] == task).any():
            continue
        frame = _current_code_only(frame, task, done)
        windows, lacking = cell_windows(frame, results, task)  # read once: every statistic below uses them
        board, note = leaderboard(frame, windows, task)
        _write(board, out / f"leaderboard_{task}",
               f"Leaderboard, {task} (RMSE): skill = 1 - geometric mean of RMSE / {BASELINE}'s over the cells "
               "both completed; avg_rank over cells every model completed; wins/ties/losses summed over the "
               "other models; mase = mean over cells of the windows' mean MASE; crps and wql (models that forecast "
               "quantiles, at 0.1 .. 0.9; empty for point forecasters) = mean over cells of the CRPS estimate "
               "and the weighted quantile loss. " + note)
        done.produced.append(f"{task} leaderboard: statistics/leaderboard_{task}.(txt|md|csv)")
        if note:
            done.missing.append((f"{task} skill scores", note))
        for metric, label in METRICS.items():
            scores = cell_scores(frame, task, metric)
            wtl = stats.win_tie_loss(scores)
            _write(wtl, out / f"win_tie_loss_{metric}_{task}",
                   f"Wins/ties/losses on {label}, {task}: row model against column model, over the cells both completed.")
            blocks, word, what = rank_blocks(frame, task, metric)
            groups = _rank_groups(frame, list(blocks.columns))
            for group, models in groups:  # ranked within a group, as the tables and the leaderboard rank
                if len(models) < 2 and len(groups) > 1:
                    continue
                stem = f"cd_{metric}_{task}" + ("" if group == ZERO_SHOT else f"_{GROUP_STEMS[group]}")
                which = "" if len(groups) == 1 else f", {group} models"
                summary = stats.rank_summary(blocks[models], alpha=alpha)
                try:
                    stats.plot_cd_diagram(summary, out / stem, alpha=alpha, blocks=word)
                    done.produced.append(f"{task} critical-difference diagram ({label}{which}; Friedman p = "
                                         f"{summary.friedman_p:.3g} over {summary.n_cells_used} complete blocks; "
                                         f"blocks: {what}): statistics/{stem}.png")
                except ValueError as exc:
                    done.missing.append((f"{task} critical-difference diagram ({label}{which})",
                                         f"{exc} (blocks: {what})"))
        if lacking:
            done.missing.append((f"{task} per-window statistics for some cells",
                                 f"{lacking} finished rows have no per-window errors (written before they were kept, "
                                 f"or their files are gone): rerun those cells with --rerun"))
        if not windows:
            done.missing.append((f"{task} significance marks, bootstrap intervals, MASE, error-by-horizon curves",
                                 "no per-window errors under the results folder"))
            continue
        long = channel_breakdown(windows)
        if long.empty:
            done.missing.append((f"{task} MASE by channel", "the per-window files hold no per-channel errors (written "
                                 "before they were kept): rerun those cells with --rerun"))
        else:
            long.to_csv(out / f"mase_by_channel_{task}.csv", index=False)
            caption = (f"MASE by channel, {task}: each channel's MAE over the horizon divided by its scale, the in-sample "
                       "MAE of the seasonal-naive forecast on the window's context, averaged over windows and cells. "
                       "The leaderboard's mase is the mean over channels, so a channel with a small scale (a slow, "
                       "smooth signal such as EDA or respiration) weighs most in it, while RMSE and MAE weigh every "
                       "channel in its normalised units: the two can rank models differently.")
            grids = [("MASE", _channel_grid(long, "mase")), ("MAE (x100, normalised)", _channel_grid(long, "mae")),
                     ("scale: in-sample seasonal-naive MAE (x100)", _channel_grid(long, "scale").mean().to_frame().T
                      .rename(index={0: "scale"}))]
            (out / f"mase_by_channel_{task}.txt").write_text(
                caption + "\n\n" + "\n".join(f"{title}\n{_text(g)}" for title, g in grids))
            (out / f"mase_by_channel_{task}.md").write_text(
                md_escape(caption) + "\n\n" + "\n".join(f"{title}\n\n{_markdown(g)}" for title, g in grids))
            done.produced.append(f"{task} MASE, MAE and MASE scale by channel: statistics/mase_by_channel_{task}."
                                 "(txt|md|csv)")
        for metric, label in METRICS.items():
            sig = significance(frame, windows, task, metric, reference, alpha, n_boot)
            sig.to_csv(out / f"significance_{metric}_{task}.csv", index=False)
            grid = significance_grid(sig)
            _write(grid, out / f"significance_{metric}_{task}_grid",
                   f"{label} x100 [95% block-bootstrap interval over subjects]; * = "
                   + (f"the reference model, {reference}" if reference else "the cell's best model")
                   + ", + = significantly better than it, "
                   f"= = not significantly worse than it, no mark = significantly worse than it (Wilcoxon signed-rank over the same windows, Holm-corrected, "
                   f"alpha {alpha}).")
            done.produced.append(f"{task} {label} significance and intervals: statistics/significance_{metric}_{task}"
                                 "_grid.(txt|md) and .csv")
        if get_task(task).horizon_curves:
            for metric, label in METRICS.items():
                paths = horizon_figure(windows, out / f"horizon_{metric}_{task}", metric)
                if paths:
                    horizon_table(windows, metric).to_csv(out / f"horizon_{metric}_{task}.csv", index=False)
                    done.produced.append(f"{task} {label} by horizon step: statistics/horizon_{metric}_{task}.png "
                                         "and .csv")
    return done
