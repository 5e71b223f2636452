"""``harness table TASK --show provenance``: what a task's rows consumed, per model, dataset and setting.

The consumed context and horizon (samples and seconds, at the rate the model saw), the windows scored against the
windows the protocol planned (summed over folds, conditions and seeds), the inference seconds per window (weighted by
the windows scored) and the training seconds per cell (the supervised and adapted entries). A blank: rows that
predate the column (a re-stamped folder keeps the measured seconds of such rows empty) or a value the task does not
define.
"""

from __future__ import annotations

import math
import textwrap

import pandas as pd

from harness.reporting.tables import TEXT_WIDTH, md_escape, plain

HEADER = ["Model", "Dataset", "Setting", "Context", "Horizon", "Rate (Hz)", "Windows scored/planned",
          "Inference s/window", "Training s/cell"]
CAPTION = ("Provenance: what each model consumed per dataset and setting (context and horizon in samples and "
           "seconds, after any resampling of the model's), the windows scored of those the protocol planned, "
           "inference seconds per window and training seconds per cell.")


def provenance_rows(frame: pd.DataFrame, task: str) -> list[list[str]]:
    """One row of :data:`HEADER` per (model, dataset, setting) of ``task`` in a records frame."""
    rows = frame[frame["task"] == task]
    out = []
    for (model, dataset, setting), g in rows.groupby(["model", "dataset", "setting"], sort=False):
        scored, planned = _sum(g["n_windows"]), _sum(g["windows_planned"])
        weights = g["n_windows"].astype("Float64").fillna(0).astype(float)
        per_window = g["inference_seconds_per_window"].astype(float)
        known = per_window.notna() & (weights > 0)
        inference = (float((per_window[known] * weights[known]).sum() / weights[known].sum())
                     if known.any() else math.nan)
        out.append([str(model), str(dataset), str(setting),
                    _length(g["context_samples"], g["context_seconds"]), _length(g["horizon_samples"], g["horizon_seconds"]),
                    _values(g["sampling_rate"]), f"{_count(scored)}/{_count(planned)}",
                    _number(inference), _number(float(g["training_seconds"].astype(float).mean()))])
    return out


def provenance_table(frame: pd.DataFrame, task: str, style: str = "text") -> str:
    """The provenance of ``task``'s rows as a text or Markdown table."""
    body = provenance_rows(frame, task)
    if style == "markdown":
        lines = [md_escape(CAPTION), "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        lines += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in body]
        return "\n".join(lines) + "\n"
    rows = [HEADER, *body]
    widths = [max(len(plain(r[i])) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(plain(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*textwrap.wrap(CAPTION, TEXT_WIDTH), *lines]) + "\n"


def _sum(values: pd.Series) -> int | None:
    known = values.dropna()
    return int(known.sum()) if len(known) == len(values) and len(values) else None


def _count(value: int | None) -> str:
    return "?" if value is None else str(value)


def _length(samples: pd.Series, seconds: pd.Series) -> str:
    """``96 (1.5 s)``; several values joined by ``, `` (a model that resamples each rate on its own)."""
    pairs = dict.fromkeys((None if pd.isna(n) else int(n), None if pd.isna(s) else float(s))
                          for n, s in zip(samples, seconds))
    shown = [f"{n}" + (f" ({s:.4g} s)" if s is not None else "") for n, s in pairs if n is not None]
    return ", ".join(shown)


def _values(values: pd.Series) -> str:
    return ", ".join(f"{float(v):g}" for v in dict.fromkeys(values.dropna()))


def _number(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.3g}"
