"""Errors broken down by a per-subject metadata field (``table TASK --by subject-field:FIELD``): age, sex, rhythm.

Why: one pooled score hides whether a model fails for one group of people.  A group's score is the task table's
RMSE restricted to its subjects' rows (sums pooled over their folds, mean over the task's replicates), in
normalised space x100.  Its 95 % interval is a percentile bootstrap: subjects are resampled (the unit of
replication: windows of one person are correlated), each replicate pooled exactly as the point estimate; a group of
a single subject has nobody to resample, so its windows are resampled instead (from the per-window errors kept
beside the rows) and the note says that interval is within one person.  The fields come from the dataset itself
(``protocols.subjects``), loaded at table time and matched to the rows by the data fingerprint of their protocol.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.records.store import data_of
from harness.records.window_store import read_window_errors
from harness.reporting.breakdown import Breakdown, _current, _fmt, _ordered, _task, code_notes
from harness.reporting.tables import SCALE
from protocols.datasets import BLOCKS_SUFFIX

N_BOOT = 2000
LEVEL = 0.95


def _units(out: Path, row: pd.Series) -> tuple[np.ndarray, np.ndarray, bool]:
    """A row's resampling units (sse, n): its windows when kept, else the row's own sums as one unit."""
    windows = read_window_errors(out, row["key"])
    if windows is not None and len(windows["n"]):
        return np.asarray(windows["sse"], float), np.asarray(windows["n"], float), True
    return np.array([float(row["sse"])]), np.array([float(row["n_points"])]), False


def _bootstrap(per_rep: list[dict[str, tuple[np.ndarray, np.ndarray]]], rng: np.random.Generator
               ) -> tuple[float, float, float, str]:
    """(estimate, low, high, how) of the mean over replicates of pooled RMSE; ``per_rep``: replicate -> subject ->
    its units' (sse, n)."""
    est = float(np.mean([np.sqrt(sum(s.sum() for s, _ in d.values()) / sum(n.sum() for _, n in d.values()))
                         for d in per_rep]))
    subjects = sorted(set().union(*per_rep))
    if len(subjects) >= 2:
        counts = rng.multinomial(len(subjects), np.full(len(subjects), 1 / len(subjects)), size=N_BOOT)
        reps = []
        for d in per_rep:
            sse = np.array([d[s][0].sum() if s in d else 0.0 for s in subjects])
            n = np.array([d[s][1].sum() if s in d else 0.0 for s in subjects])
            reps.append(np.sqrt((counts @ sse) / np.maximum(counts @ n, 1e-300)))
        how = "subjects"
    else:
        reps = []
        for d in per_rep:
            sse, n = d[subjects[0]]
            if sse.size < 2:
                return est, np.nan, np.nan, "none"
            counts = rng.multinomial(sse.size, np.full(sse.size, 1 / sse.size), size=N_BOOT)
            reps.append(np.sqrt((counts @ sse) / np.maximum(counts @ n, 1e-300)))
        how = "windows"
    boot = np.mean(reps, axis=0)
    low, high = np.percentile(boot, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return est, float(low), float(high), how


def _value_order(value: str) -> tuple:
    """Numbers by value (age 9 before 69), then text."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def by_subject_field(frame: pd.DataFrame, task: str, out: Path, field: str,
                     fields: dict[str, dict[str, str]], seed: int = 0) -> Breakdown:
    """``fields``: data fingerprint -> subject -> the field's value (text); rows of other data are left out (named)."""
    t = _task(task)
    if not hasattr(t, "replicates") or t.name == "physiology":
        raise ValueError(f"{task} has no breakdown by subject field: its score is not an error sum over windows")
    reps = list(t.replicates)
    rows = _current(frame, task)
    rows = rows[rows["status"] == "ok"]
    notes: list[str] = []
    found, folded, unmatched, without = [], 0, set(), set()
    for _, r in rows.iterrows():
        table = fields.get(data_of(r["protocol"]))
        if table is None:
            unmatched.add(r["dataset"])
            continue
        value = table.get(str(r["fold"]))
        if value is None:
            without.add((r["dataset"], str(r["fold"])))
            continue
        sse, n, windows = _units(out, r)
        folded += not windows
        found.append({"condition": r["condition"], "dataset": r["dataset"], "model": r["model"],
                      "rep": tuple(r[c] for c in reps), "subject": str(r["fold"]), "value": value, "sse": sse, "n": n})
    values = sorted({f["value"] for f in found}, key=_value_order)
    rng = np.random.default_rng(seed)
    out_rows, singles = [], set()
    groups = pd.DataFrame(found, columns=["condition", "dataset", "model", "rep", "subject", "value", "sse", "n"])
    for (cond, ds, model), g in _ordered(groups.groupby(["condition", "dataset", "model"], sort=False), task):
        cells = []
        for v in values:
            sub = g[g["value"] == v]
            if sub.empty:
                cells.append("")
                continue
            per_rep = []
            for _, rg in sub.groupby("rep", sort=False):
                per_rep.append({s: (np.concatenate(list(sg["sse"])), np.concatenate(list(sg["n"])))
                                for s, sg in rg.groupby("subject", sort=False)})
            est, low, high, how = _bootstrap(per_rep, rng)
            if how != "subjects":
                singles.add((ds, v, sub["subject"].iloc[0]))
            cells.append(f"{_fmt(est * SCALE)} [{_fmt(low * SCALE)}, {_fmt(high * SCALE)}] (n={sub['subject'].nunique()})")
        out_rows.append((cond, ds, model, *cells))
    for ds, v, subject in sorted(singles):
        notes.append(f"{ds}, {field}={v}: one subject ({subject}): the interval resamples its windows, so it is "
                     "the spread within that person, not across people")
    for ds in dict.fromkeys(groups["dataset"]):
        if BLOCKS_SUFFIX in str(ds):
            notes.append(f"{ds}: its subjects are blocks of recordings, and a person's blocks share their fields: "
                         "the intervals resample blocks, so they are within the people recorded")
    if folded:
        notes.append(f"{folded} row(s) have no per-window errors kept: each counts as one unit of its subject "
                     "(rerun them with --rerun for window intervals)")
    for ds in sorted(unmatched):
        notes.append(f"{ds}: its rows' data is not that of the dataset(s) given; left out (name it with --dataset)")
    missing = sorted({s for _, s in without})
    if missing:
        notes.append(f"subject(s) without a {field!r} field, left out: {', '.join(missing)}")
    if not found:
        notes.append(f"no {task} row of a subject with a {field!r} field")
    caption = (f"{t.title or task} by subject field {field!r}: RMSE in normalised space, x100, the group's subjects' "
               f"folds pooled, mean over {t.replicate_words}; [{LEVEL:.0%} bootstrap interval, {N_BOOT} resamples, over "
               "the group's subjects; over its windows where it holds one subject (noted)], n = subjects in the "
               "group.")
    return Breakdown(caption, ("condition", "dataset", "model", *[f"{field}={v}" for v in values]), tuple(out_rows),
                     tuple(notes + code_notes(frame, task)))
