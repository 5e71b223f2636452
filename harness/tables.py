"""Tables from records: pure functions from a records frame to text, Markdown and LaTeX.

The generic parts: :class:`Table` and its entries, :func:`render`, and the tables of error tasks
(``harness.tasks.ErrorTask``: forecasting, noise, imputation), which take the task by name and read
its replicates and captions from the task registry.  A task's own layout is its ``tables`` method
(``harness.tasks``): classification's tables, for one, are built in ``harness/tasks/classification.py``.

Error metrics: the folds of one replicate are pooled exactly (RMSE = sqrt(sum SSE / sum N),
MAE = sum SAE / sum N over every scored point of every fold); a table cell is the mean and sample
std over replicates, x 100.  Replicates are the task's ``replicates`` (the settings, context/horizon,
for forecasting, as the paper; settings x seeds for noise; the seeds for imputation).  A replicate counts only when
every one of its folds finished ``ok``; a cell built from fewer replicates than were requested
carries a dagger and a note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from protocols.metrics import mean_std

SCALE = 100.0


@dataclass(frozen=True)
class Entry:
    mean: float
    std: float
    replicates: int
    requested: int
    status: str  # "ok" | "unavailable" | "error"

    @property
    def partial(self) -> bool:
        return self.status == "ok" and self.replicates < self.requested


@dataclass(frozen=True)
class Column:
    group: str  # e.g. the dataset
    label: str  # e.g. "RMSE"
    higher_is_better: bool = False


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[Column, ...]
    models: tuple[str, ...]
    entries: dict[tuple[str, Column], Entry]
    notes: tuple[str, ...] = ()
    model_notes: tuple[str, ...] = ()  # how a model was run (registry notes): printed once per run by the CLI

    def all_notes(self, with_model_notes: bool = True) -> tuple[str, ...]:
        return self.notes + (self.model_notes if with_model_notes else ())


# -- error tables -----------------------------------------------------------------------
def _error_task(task: str):
    """The registered error task ``task`` (``harness.tasks.ErrorTask``): its replicates and captions."""
    from harness.task_registry import get_task

    return get_task(task)


def pooled(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """One row per (dataset, model, condition, replicate): folds pooled, completeness kept."""
    rows = frame[frame["task"] == task]
    # a task plugin written before issue #17 may still name the setting column "window"
    reps = ["setting" if r == "window" else r for r in _error_task(task).replicates]
    out = []
    for keys, g in rows.groupby(["dataset", "model", "condition", *reps], sort=False):
        ok = g[g["status"] == "ok"]
        n = float(ok["n_points"].sum()) if len(ok) else 0.0
        complete = len(ok) == len(g) and n > 0
        statuses = set(g["status"])
        errors = sorted({e for e in g.loc[g["status"] != "ok", "error"] if isinstance(e, str) and e})
        out.append({
            **dict(zip(["dataset", "model", "condition", *reps], keys)),
            "rmse": float(np.sqrt(ok["sse"].sum() / n)) if complete else np.nan,
            "mae": float(ok["sae"].sum() / n) if complete else np.nan,
            "n_points": int(n), "folds_ok": len(ok), "folds": len(g), "complete": complete,
            "status": "ok" if complete else ("unavailable" if statuses == {"unavailable"} else "error"),
            "reason": errors[0] if errors else "",
        })
    return pd.DataFrame(out)


def summary_entry(values: np.ndarray, statuses: set[str], requested: int) -> Entry:
    if values.size:
        mean, std = mean_std(values * SCALE)
        return Entry(mean, std, int(values.size), requested, "ok")
    return Entry(np.nan, np.nan, 0, requested, "unavailable" if statuses == {"unavailable"} else "error")


def error_table(frame: pd.DataFrame, task: str, condition: str | None = None, models: list[str] | None = None,
                datasets: list[str] | None = None, caption: str = "") -> Table:
    per = pooled(frame, task)
    if condition is not None and not per.empty:
        per = per[per["condition"] == condition]
    if per.empty:
        return Table(caption, (), (), {}, (f"no {task} records",))
    datasets = datasets or list(dict.fromkeys(per["dataset"]))
    models = models or list(dict.fromkeys(per["model"]))
    columns = tuple(Column(ds, m) for ds in datasets for m in ("RMSE", "MAE"))
    entries: dict[tuple[str, Column], Entry] = {}
    notes: list[str] = []
    for ds in datasets:
        for model in models:
            g = per[(per["dataset"] == ds) & (per["model"] == model)]
            if g.empty:
                continue
            ok = g[g["complete"]]
            for col in (Column(ds, "RMSE"), Column(ds, "MAE")):
                entries[(model, col)] = summary_entry(ok[col.label.lower()].to_numpy(), set(g["status"]), len(g))
            if len(ok) < len(g):
                reason = next((r for r in g.loc[~g["complete"], "reason"] if r), "")
                notes.append(f"{model} on {ds}: {len(ok)}/{len(g)} {_error_task(task).replicate_words} complete"
                             + (f" ({reason})" if reason else ""))
    measured = [m for m in models if any(e.status == "ok" for (name, _), e in entries.items() if name == m)]
    return Table(caption, columns, tuple(models), entries, tuple(notes), model_notes(measured))


def model_notes(models) -> tuple[str, ...]:
    """The registry's note of each model given (how it was run, where that differs from the paper):
    callers pass the models with numbers in the table; models no longer registered have none."""
    from models.registry import UnknownModelError, get_spec

    notes = []
    for model in models:
        try:
            note = get_spec(model).note
        except UnknownModelError:
            continue
        if note:
            notes.append(note)
    return tuple(notes)


def measured_models(entries: dict[tuple[str, Column], Entry]) -> list[str]:
    """Models with at least one number in the table, in first-seen order."""
    return list(dict.fromkeys(m for (m, _), e in entries.items() if e.status == "ok"))


def conditions(frame: pd.DataFrame, task: str) -> list[str]:
    """The task's conditions in numeric order (beta=0.05 < beta=0.1, 25% < 50%)."""
    found = frame.loc[frame["task"] == task, "condition"].unique().tolist()
    return sorted(found, key=condition_value)


def condition_value(condition: str) -> float:
    text = condition.split("=", 1)[-1].rstrip("%")
    try:
        return float(text)
    except ValueError:
        return float("inf")


def condition_tables(frame: pd.DataFrame, task: str, models: list[str] | None = None,
                     datasets: list[str] | None = None) -> list[tuple[str, Table]]:
    """Error tasks with conditions (imputation, noise): one error table per condition (missing rate, noise level)."""
    what, over = _error_task(task).title, _error_task(task).over
    return [(c, error_table(frame, task, c, models, datasets,
                            f"{what}, {c}: RMSE and MAE in normalised space, x100, mean ± std over {over} "
                            "(folds pooled)."))
            for c in conditions(frame, task)]


# -- rendering --------------------------------------------------------------------------
def _ranks(table: Table) -> dict[tuple[str, Column], int]:
    """1 for the best entry of each column, 2 for the second."""
    ranks: dict[tuple[str, Column], int] = {}
    for col in table.columns:
        vals = [(e.mean, m) for (m, c), e in table.entries.items()
                if c == col and e.status == "ok" and np.isfinite(e.mean)]
        vals.sort(key=lambda v: -v[0] if col.higher_is_better else v[0])
        for rank, (_, m) in enumerate(vals[:2], start=1):
            ranks[(m, col)] = rank
    return ranks


def _cell(entry: Entry | None, style: str, rank: int | None) -> str:
    if entry is None:
        return "-"
    if entry.status != "ok":
        return entry.status
    mean = f"{entry.mean:.2f}"
    # a spread needs two samples: one setting or one seed has none, and "±0.00" would claim zero variance
    std = f"{entry.std:.2f}" if entry.replicates > 1 and np.isfinite(entry.std) else None
    dagger = {"text": "+", "markdown": "†", "latex": r"^{\dagger}"}[style] if entry.partial else ""
    if style == "text":
        return f"{mean}±{std}{dagger}" if std else f"{mean}{dagger}"
    if style == "markdown":
        mean = f"**{mean}**" if rank == 1 else f"<u>{mean}</u>" if rank == 2 else mean
        return (f"{mean} ± {std}" if std else mean) + dagger
    mean = rf"\mathbf{{{mean}}}" if rank == 1 else rf"\underline{{{mean}}}" if rank == 2 else mean
    return rf"${mean}_{{\pm {std}}}{dagger}$" if std else rf"${mean}{dagger}$"


TEXT_WIDTH = 100  # text tables (terminal, .txt) fit this many columns; Markdown and LaTeX stay wide


def render(table: Table, style: str = "text", with_model_notes: bool = True) -> str:
    """The table as text, Markdown or LaTeX. ``with_model_notes=False`` leaves out the registry's model
    notes (the CLI prints them once per run instead of under each of a task's tables)."""
    if style not in ("text", "markdown", "latex"):
        raise ValueError(f"unknown table style {style!r}")
    ranks = _ranks(table)
    notes = table.all_notes(with_model_notes)
    header = ["Model"] + [f"{c.group} {c.label}" for c in table.columns]
    body = [[model] + [_cell(table.entries.get((model, c)), style, ranks.get((model, c))) for c in table.columns]
            for model in table.models]
    if style == "text":
        return _render_text(table.caption, header, body, notes)
    if style == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in body]
        out = [table.caption + " Best **bold**, second <u>underlined</u>.", "", *lines]
        if notes:
            out += ["", *[f"† {n}" for n in notes]]
        return "\n".join(out) + "\n"
    groups: list[tuple[str, int]] = []
    for c in table.columns:
        if groups and groups[-1][0] == c.group:
            groups[-1] = (c.group, groups[-1][1] + 1)
        else:
            groups.append((c.group, 1))
    lines = [
        r"\begin{table}[t]", r"\centering", rf"\caption{{{_tex(table.caption)}}}",
        rf"\begin{{tabular}}{{l{'c' * len(table.columns)}}}", r"\toprule",
        "Model & " + " & ".join(rf"\multicolumn{{{n}}}{{c}}{{{_tex(g)}}}" for g, n in groups) + r" \\",
        " & ".join(["", *[_tex(c.label) for c in table.columns]]) + r" \\",
        r"\midrule",
        *[" & ".join([_tex(r[0]), *r[1:]]) + r" \\" for r in body],
        r"\bottomrule", r"\end{tabular}", r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _render_text(caption: str, header: list[str], body: list[list[str]], notes: tuple[str, ...],
                 width: int = TEXT_WIDTH) -> str:
    """Aligned columns no wider than ``width``: columns that do not fit go to a further block that
    repeats the model column; caption and notes are wrapped."""
    import textwrap

    rows = [header] + body
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for i in range(1, len(header)):
        if blocks[-1] and used + 2 + widths[i] > width:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(i)
        used += 2 + widths[i]
    out = textwrap.wrap(caption, width) if caption else []
    for n, block in enumerate(blocks):
        cols = [0, *block]
        lines = ["  ".join(row[i].ljust(widths[i]) for i in cols).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * widths[i] for i in cols))
        out += ([""] if n else []) + lines
    for note in notes:
        out += textwrap.wrap(note, width, initial_indent="+ ", subsequent_indent="  ")
    return "\n".join(out) + "\n"


def _tex(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"),
                 ("±", r"$\pm$")):
        text = text.replace(a, b)
    return text


def task_tables(frame: pd.DataFrame, task: str, models: list[str] | None = None,
                datasets: list[str] | None = None) -> list[tuple[str, Table]]:
    """Every table of a task as (file stem, table): the task's ``tables`` (``harness.tasks``)."""
    from harness.task_registry import get_task

    return get_task(task).tables(frame, models, datasets)


def file_stem(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text.split("=")[-1].rstrip("%"))
