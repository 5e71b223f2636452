"""Breakdowns of a task's scores by signal modality and by subject (``python -m harness table TASK --by ...``).

Why: one score per dataset averages ECG with EDA and the best subject with the worst.

- **By modality** (error tasks: forecasting, noise, imputation): each channel's errors are kept beside its row,
  with the channel's modality from ``protocols.modality`` (forecasting and noise: in the per-window errors,
  ``harness.records.window_store``; imputation: ``harness.records.cell_files``, folder ``channel_errors``; :func:`channel_arrays`).  Per replicate (the task's ``replicates``, as its table) a modality's sums are pooled
  over its channels and the folds, RMSE = sqrt(SSE / N); a cell is the mean over replicates.  The ``all``
  column pools every modality: the task table's number, since the modalities' sums add up to the records'.
- **By subject** (every task): a LOSO fold is a subject (a block with ``:blocks=K``); its score per replicate is
  its own row's (RMSE from its sums; the physiology task's rate MAE; classification's Macro-F1 on the subject's
  own segments, from the ``predictions`` kept beside the row), averaged over replicates.  A table row gives the
  pooled score (the task table's), the subjects' median, quartiles, best and worst, and names the worst subject.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.records.cell_files import read_cell_file
from harness.reporting.tables import SCALE, _render_text, _tex, md_escape, pooled


@dataclass(frozen=True)
class Breakdown:
    """A table of strings (numbers already formatted) with its caption and notes, in three styles."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()

    def render(self, style: str = "text") -> str:
        if style == "text":
            return _render_text(self.caption, list(self.header), [list(r) for r in self.rows], self.notes)
        if style == "markdown":  # names from the records escaped: no HTML, no broken row
            lines = [md_escape(self.caption), "", "| " + " | ".join(map(md_escape, self.header)) + " |",
                     "|" + "---|" * len(self.header)]
            lines += ["| " + " | ".join(map(md_escape, r)) + " |" for r in self.rows]
            return "\n".join(lines + ([""] + [f"† {md_escape(n)}" for n in self.notes] if self.notes else [])) + "\n"
        if style == "latex":
            lines = [r"\begin{table}[t]", r"\centering", rf"\caption{{{_tex(self.caption)}}}",
                     rf"\begin{{tabular}}{{{'l' * 3}{'r' * (len(self.header) - 3)}}}", r"\toprule",
                     " & ".join(_tex(h) for h in self.header) + r" \\", r"\midrule",
                     *[" & ".join(_tex(c) for c in r) + r" \\" for r in self.rows], r"\bottomrule", r"\end{tabular}"]
            lines += [rf"\par\footnotesize{{{_tex(n)}}}" for n in self.notes]
            return "\n".join(lines + [r"\end{table}"]) + "\n"
        raise ValueError(f"unknown table style {style!r}")


def _task(task: str):
    from harness.registry.tasks import get_task

    return get_task(task)


def _fmt(value: float) -> str:
    return f"{value:.2f}" if np.isfinite(value) else "-"


def _current(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    return frame[frame["task"] == task]


def _ordered(groups, task) -> list:
    """(condition, dataset, model) groups in table order: the paper's conditions first, then each named option's,
    by level; datasets and models as first seen."""
    from harness.reporting.breakdown_figure import condition_order

    groups = list(groups)
    rank = {c: i for i, c in enumerate(condition_order((k[0] for k, _ in groups), _task(task)))}
    first = {k: i for i, k in enumerate(dict.fromkeys(k[1:] for k, _ in groups))}
    return sorted(groups, key=lambda kg: (rank[kg[0][0]], first[kg[0][1:]]))


def code_notes(frame: pd.DataFrame, task: str) -> list[str]:
    """What the task's tables mark (``harness.records.configurations.code_problem``): a model whose rows on a dataset
    come from several versions of the code, or from code or default weights changed since, is named, so a
    breakdown never passes such rows off as one result."""
    from harness.records.configurations import code_problem

    rows = _current(frame, task)
    rows = rows[rows["status"] == "ok"]
    notes = []
    for (ds, model), g in rows.groupby(["dataset", "model"], sort=False):
        problem = code_problem(g, task)
        if problem:
            notes.append(f"{model} on {ds}: {problem}")
    return notes


# -- by modality ---------------------------------------------------------------------------------
def channel_arrays(out: Path, key: str) -> dict[str, np.ndarray] | None:
    """A row's error sums per channel (``sse``, ``sae``, ``n``, ``modalities``): from its per-window errors
    (forecasting, noise), else from its ``channel_errors`` file (imputation, and forecasting rows written before
    the window errors kept each channel's); None when it has neither."""
    from harness.records.window_store import read_window_errors
    from protocols.channel_errors import from_window_arrays

    windows = read_window_errors(out, key)
    sums = from_window_arrays(windows) if windows is not None else None
    return sums.arrays() if sums is not None else read_cell_file(out, "channel_errors", key)


def modality_sums(frame: pd.DataFrame, task: str, out: Path) -> tuple[pd.DataFrame, list[str]]:
    """Error sums per (dataset, model, condition, replicate, modality), folds and channels pooled, from the
    ``channel_errors`` of every ok row; and notes on rows that have none."""
    reps = list(_task(task).replicates)
    rows = _current(frame, task)
    rows = rows[rows["status"] == "ok"]
    out_rows, missing = [], 0
    for _, r in rows.iterrows():
        arrays = channel_arrays(out, r["key"])
        if arrays is None:
            missing += 1
            continue
        for modality in dict.fromkeys(arrays["modalities"].tolist()):
            k = arrays["modalities"] == modality
            out_rows.append({"dataset": r["dataset"], "model": r["model"], "condition": r["condition"],
                             **{c: r[c] for c in reps}, "modality": modality, "sse": float(arrays["sse"][k].sum()),
                             "sae": float(arrays["sae"][k].sum()), "n": int(arrays["n"][k].sum())})
    notes = [f"{missing} ok row(s) have no per-channel errors (computed before they were kept): left out; "
             "rerun them with --rerun"] if missing else []
    sums = pd.DataFrame(out_rows)
    if sums.empty:
        return sums, notes
    keys = ["dataset", "model", "condition", *reps, "modality"]
    return sums.groupby(keys, sort=False, as_index=False)[["sse", "sae", "n"]].sum(), notes


def by_modality(frame: pd.DataFrame, task: str, out: Path) -> Breakdown:
    t = _task(task)
    if not hasattr(t, "replicates") or t.name == "physiology":
        raise ValueError(f"{task} has no breakdown by modality: "
                         + ("each of its measures reads one modality already" if t.name == "physiology"
                            else "its score is not a sum over channels (classification probes embed every channel)"))
    sums, notes = modality_sums(frame, task, out)
    if sums.empty:
        return Breakdown(f"{task} by modality", ("condition", "dataset", "model"), (), tuple(notes or [f"no {task} rows"]))
    reps = list(t.replicates)
    sums["rmse"] = np.sqrt(sums["sse"] / sums["n"].where(sums["n"] > 0))
    modalities = list(dict.fromkeys(sums["modality"]))
    table = pooled(frame, task)
    rows = []
    for (cond, ds, model), g in _ordered(sums.groupby(["condition", "dataset", "model"], sort=False), task):
        cells = []
        for m in modalities:
            v = g.loc[g["modality"] == m, "rmse"].to_numpy()
            cells.append(_fmt(float(np.mean(v)) * SCALE) if len(v) else "")
        full = table[(table["condition"] == cond) & (table["dataset"] == ds) & (table["model"] == model) & table["complete"]]
        total = g.groupby(reps)[["sse", "n"]].sum()
        cells.append(_fmt(float(np.mean(np.sqrt(total["sse"] / total["n"]))) * SCALE))
        if len(full) != len(total):
            notes.append(f"{model} on {ds}, {cond}: {len(total)} replicate(s) with per-channel errors, "
                         f"{len(full)} complete in the table")
        rows.append((cond, ds, model, *cells))
    caption = (f"{t.title or task} by signal modality: RMSE in normalised space, x100, each modality's channels and "
               f"the folds pooled, mean over {t.replicate_words}; 'all' pools every "
               "modality (the task table's RMSE).")
    return Breakdown(caption, ("condition", "dataset", "model", *modalities, "all"), tuple(rows),
                     tuple(notes + code_notes(frame, task)))


# -- by subject ----------------------------------------------------------------------------------
def subject_scores(frame: pd.DataFrame, task: str, out: Path) -> tuple[pd.DataFrame, str, bool]:
    """Per (condition, dataset, model, subject) the subject's score averaged over replicates; the metric's name
    and whether higher is better."""
    t = _task(task)
    rows = _current(frame, task)
    rows = rows[rows["status"] == "ok"]
    if t.name == "classification":
        return _classification_subjects(rows, out), "Macro-F1", True
    reps = list(getattr(t, "replicates", ("seed",)))
    metric = "mae" if t.name == "physiology" else "rmse"
    n = rows["n_points"].where(rows["n_points"] > 0)
    value = rows["sae"] / n if metric == "mae" else np.sqrt(rows["sse"] / n)
    scale = getattr(t, "scale", SCALE)
    value = pd.to_numeric(value * scale, errors="coerce")  # a row with no scored point has no score
    per = rows.assign(value=value)[["condition", "dataset", "model", "fold", *reps, "value"]].dropna(subset=["value"])
    per = per.groupby(["condition", "dataset", "model", "fold"], sort=False, as_index=False)["value"].mean()
    return per.rename(columns={"fold": "subject"}), metric.upper(), False


def unscored_notes(frame: pd.DataFrame, task: str, per: pd.DataFrame) -> list[str]:
    """The (condition, dataset, model)s with ok rows but no subject scored (physiology: no predicted rate on any
    subject, e.g. a flat forecast), named so that leaving them out of the table is never silent."""
    rows = _current(frame, task)
    rows = rows[rows["status"] == "ok"]
    scored = set(zip(per["condition"], per["dataset"], per["model"]))
    missing = [k for k in dict.fromkeys(zip(rows["condition"], rows["dataset"], rows["model"])) if k not in scored]
    why = ("no pair with a rate in both truth and prediction on any subject (the task table's 'no rate')"
           if task == "physiology" else "no subject scored")
    return [f"{model} on {ds}, {cond}: {why}; not in this table" for cond, ds, model in missing]


def _classification_subjects(rows: pd.DataFrame, out: Path) -> pd.DataFrame:
    from sklearn.metrics import f1_score

    found = []
    for _, r in rows.iterrows():
        arrays = read_cell_file(out, "predictions", r["key"])
        if arrays is None:
            continue
        for subject in dict.fromkeys(arrays["subject"].tolist()):
            k = arrays["subject"] == subject
            f1 = f1_score(arrays["y_true"][k], arrays["y_pred"][k], average="macro", zero_division=0)
            found.append({"condition": r["condition"], "dataset": r["dataset"], "model": r["model"],
                          "seed": r["seed"], "subject": subject, "value": 100.0 * f1})
    frame = pd.DataFrame(found)
    if frame.empty:
        return pd.DataFrame(columns=["condition", "dataset", "model", "subject", "value"])
    return frame.groupby(["condition", "dataset", "model", "subject"], sort=False, as_index=False)["value"].mean()


def by_subject(frame: pd.DataFrame, task: str, out: Path) -> Breakdown:
    t = _task(task)
    per, metric, higher = subject_scores(frame, task, out)
    pooled_scores = _pooled_scores(frame, task)
    rows, notes = [], []
    for (cond, ds, model), g in _ordered(per.groupby(["condition", "dataset", "model"], sort=False), task):
        v = g["value"].to_numpy()
        order = np.argsort(v)
        worst = g["subject"].iloc[order[0] if higher else order[-1]]
        best = g["subject"].iloc[order[-1] if higher else order[0]]
        q25, med, q75 = np.nanpercentile(v, [25, 50, 75])
        rows.append((cond, ds, model, _fmt(pooled_scores.get((cond, ds, model), np.nan)), str(len(v)), _fmt(med),
                     f"{_fmt(q25)}-{_fmt(q75)}", f"{_fmt(float(g['value'].iloc[order[-1] if higher else order[0]]))} ({best})",
                     f"{_fmt(float(g['value'].iloc[order[0] if higher else order[-1]]))} ({worst})"))
    notes += unscored_notes(frame, task, per)
    if per.empty:
        notes.append(f"no {task} row with a per-subject score"
                     + (" (classification keeps its per-segment predictions since this version: rerun with --rerun)"
                        if t.name == "classification" else ""))
    unit = {"RMSE": "RMSE in normalised space, x100", "MAE": "rate MAE per minute", "Macro-F1": "Macro-F1 x100"}[metric]
    caption = (f"{getattr(t, 'title', '') or task} by subject: {unit}. 'pooled' is the task table's score; the subjects' "
               "(LOSO test folds') own scores, averaged over replicates: median, interquartile range, best and worst "
               "(named).")
    return Breakdown(caption, ("condition", "dataset", "model", "pooled", "subjects", "median", "IQR", "best", "worst"),
                     tuple(rows), tuple(notes + code_notes(frame, task)))


def _pooled_scores(frame: pd.DataFrame, task: str) -> dict[tuple[str, str, str], float]:
    """The task table's score of every (condition, dataset, model) (mean over complete replicates)."""
    t = _task(task)
    if t.name == "classification":
        rows = _current(frame, task)
        rows = rows[rows["status"] == "ok"]
        return {k: 100.0 * float(g["macro_f1"].mean()) for k, g in rows.groupby(["condition", "dataset", "model"])}
    per = t.pooled(frame) if t.name == "physiology" else pooled(frame, task)
    if per.empty:
        return {}
    metric = "mae" if t.name == "physiology" else "rmse"
    scale = getattr(t, "scale", SCALE)
    ok = per[per["complete"]]
    return {k: float(g[metric].mean()) * scale for k, g in ok.groupby(["condition", "dataset", "model"])}


# -- outputs -------------------------------------------------------------------------------------
def breakdown_tables(frame: pd.DataFrame, task: str, out: Path, by: str) -> list[tuple[str, Breakdown]]:
    if by == "modality":
        return [(f"{task}_by_modality", by_modality(frame, task, out))]
    if by == "subject":
        return [(f"{task}_by_subject", by_subject(frame, task, out))]
    raise ValueError(f"unknown breakdown {by!r}; known: modality, subject")


def breakdown_figures(frame: pd.DataFrame, task: str, out: Path, by: str) -> list[Path]:
    from harness.reporting.breakdown_figure import modality_figure, subject_figure

    folder = Path(out) / "figures"
    if by == "modality":
        sums, _ = modality_sums(frame, task, out)
        return modality_figure(sums, _task(task), folder / f"{task}_by_modality")
    per, metric, higher = subject_scores(frame, task, out)
    return subject_figure(per, metric, higher, _task(task), folder / f"{task}_by_subject")
