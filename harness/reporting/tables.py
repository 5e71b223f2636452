"""Tables from records: pure functions from a records frame to text, Markdown and LaTeX.

The generic parts: :class:`Table` and its entries, :func:`render`, and the tables of error tasks
(``harness.tasks.ErrorTask``: forecasting, noise, imputation), which take the task by name and read
its replicates and captions from the task registry.  A task's own layout is its ``tables`` method
(``harness.tasks``): classification's tables, for one, are built in ``harness/tasks/classification.py``.

Error metrics: the folds of one replicate are pooled exactly (RMSE = sqrt(sum SSE / sum N),
MAE = sum SAE / sum N over every scored point of every fold); a table cell is the mean and sample
std over replicates, x 100.  Replicates are the task's ``replicates`` (the settings, context/horizon,
for forecasting, as the paper; settings x seeds for noise; the seeds for imputation).

What a cell must hold is read from the records themselves: every fold, seed and replicate that any
model has a row for on that dataset and condition (their product).  A replicate counts only when
every one of its folds (and seeds) finished ``ok``; a cell that lacks any, whose rows come from
several versions of the code, or from code or default weights that changed since ("mixed", "stale":
``harness.records.configurations``) is marked (a dagger in every format), never bold or underlined, and a
note says what is missing or wrong.  Each configuration of a model (``--model-option``, ``--weights``)
is a row of its own (``harness.records.configurations``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product

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
    problem: str = ""  # why the number is no plain result although shown: "mixed", "stale" (notes say more)
    overlap: str = ""  # pre-training overlap of the model on this dataset (harness.reporting.pretraining_marks): a mark, not a rank

    @property
    def partial(self) -> bool:
        return self.status == "ok" and self.replicates < self.requested

    @property
    def marked(self) -> bool:
        """Shown with a dagger and a note, never ranked: partial, mixed or stale."""
        return self.status == "ok" and (self.partial or bool(self.problem))


@dataclass(frozen=True)
class Column:
    group: str  # e.g. the dataset
    label: str  # e.g. "RMSE"
    higher_is_better: bool = False
    ranked: bool = True  # False: no best or second (a coverage is good near its nominal, neither high nor low)


@dataclass(frozen=True)
class Table:
    caption: str
    columns: tuple[Column, ...]
    models: tuple[str, ...]
    entries: dict[tuple[str, Column], Entry]
    notes: tuple[str, ...] = ()
    model_notes: tuple[str, ...] = ()  # how a model was run (registry notes): printed once per run by the CLI
    overlap_notes: tuple[tuple[str, str], ...] = ()  # (mark, text): pre-training overlap (harness.reporting.pretraining_marks)
    # rows whose numbers come from a model's documented limitation (harness.reporting.limitations): (row, mark)
    # pairs, and the (mark, note) pairs printed under the table, each naming the option that lifts it
    limited: tuple[tuple[str, str], ...] = ()
    limitation_notes: tuple[tuple[str, str], ...] = ()
    # rows of models trained on each fold's training subjects: drawn in their own group below the others and
    # ranked apart from them (never the best of a zero-shot comparison); empty: one group, as before
    supervised: tuple[str, ...] = ()
    # rows scored from a predictions file (harness score): made outside the harness, trained on what is not
    # recorded, so drawn and ranked in a group of their own too
    scored: tuple[str, ...] = ()
    # rows of pretrained models adapted to each fold's training subjects (``--adapt``, family ``adapted``): a group
    # of their own between the zero-shot and the supervised rows, ranked apart from both
    adapted: tuple[str, ...] = ()

    def all_notes(self, with_model_notes: bool = True) -> tuple[str, ...]:
        return self.notes + (self.model_notes if with_model_notes else ())

    def groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """(label, rows) in drawing order: the zero-shot rows (label ""), the adapted ones, the supervised ones, the
        scored ones."""
        own = tuple(m for m in self.models if m not in self.supervised and m not in self.scored
                    and m not in self.adapted)
        adapted = tuple(m for m in self.models if m in self.adapted)
        apart = tuple(m for m in self.models if m in self.supervised)
        scored = tuple(m for m in self.models if m in self.scored and m not in self.supervised)
        return [(label, rows) for label, rows in (("", own), (ADAPTED_GROUP, adapted), (SUPERVISED_GROUP, apart),
                                                  (SCORED_GROUP, scored)) if rows]


SUPERVISED_GROUP = "supervised (trained on the fold's training subjects)"
SUPERVISED_NOTE = ("supervised (trained on the fold's training subjects): trained in every cell on the other "
                   "subjects, not zero-shot; ranked among themselves, apart from the zero-shot rows")
SCORED_GROUP = "scored from a predictions file (made outside the harness)"
SCORED_NOTE = ("scored from a predictions file (made outside the harness): how those forecasts were made, and on "
               "what their model was trained, is not recorded; ranked among themselves, apart from the zero-shot rows")
ADAPTED_GROUP = "adapted (fine-tuned on the fold's training subjects)"
ADAPTED_NOTE = ("adapted (fine-tuned on the fold's training subjects): a pretrained model's shipped weights "
                "fine-tuned in every cell on the other subjects (NAME@head: its output head, NAME@full: every "
                "parameter; the budget in each row's model_info), not zero-shot; ranked among themselves")
ZERO_SHOT = "zero-shot"  # the group of every other row (statistics: its name in the leaderboard's group column)
# a group's short name, as a caption names the groups a table holds ("" is Table.groups()'s label of the zero-shot rows)
GROUP_NAMES = {"": ZERO_SHOT, ADAPTED_GROUP: "adapted", SUPERVISED_GROUP: "supervised",
               SCORED_GROUP: "scored from a file"}


def supervised_rows(frame: pd.DataFrame, models) -> tuple[str, ...]:
    """The table rows whose model is trained on each fold's training subjects (``ModelSpec.supervised``)."""
    from models.registry import all_specs

    specs = all_specs()
    names = dict(zip(frame["model"], frame["model_name"])) if "model_name" in frame else {}
    return tuple(m for m in models if (spec := specs.get(names.get(m, m))) is not None and spec.supervised)


def adapted_rows(frame: pd.DataFrame, models) -> tuple[str, ...]:
    """The table rows whose model is adapted per fold (``models.adapted.ADAPTED``, ``run --adapt``)."""
    from models.adapted import ADAPTED
    from models.registry import all_specs

    specs = all_specs()
    names = dict(zip(frame["model"], frame["model_name"])) if "model_name" in frame else {}
    return tuple(m for m in models if (spec := specs.get(names.get(m, m))) is not None and spec.family == ADAPTED)


def scored_rows(frame: pd.DataFrame, models) -> tuple[str, ...]:
    """The table rows scored from a predictions file (``harness score``: their identity's source says so)."""
    from harness.records.configurations import SCORED, row_identity

    if "model_info" not in frame:
        return ()
    found = {m for m, info in zip(frame["model"], frame["model_info"])
             if (identity := row_identity(info)) is not None and identity.get("source") == SCORED}
    return tuple(m for m in models if m in found)


def model_groups(frame: pd.DataFrame, models) -> dict[str, str]:
    """Each model's group, ranked alone: :data:`ZERO_SHOT`, :data:`ADAPTED_GROUP`, :data:`SUPERVISED_GROUP` or
    :data:`SCORED_GROUP`."""
    apart, scored = set(supervised_rows(frame, models)), set(scored_rows(frame, models))
    adapted = set(adapted_rows(frame, models))
    return {m: SUPERVISED_GROUP if m in apart else SCORED_GROUP if m in scored else
            ADAPTED_GROUP if m in adapted else ZERO_SHOT for m in models}


def grouped(table: Table, rows: pd.DataFrame) -> Table:
    """``table`` with its supervised and scored rows named (and a note saying what they are) when it has any, and
    its rows that come from a model's documented limitation marked (with the limitation's note)."""
    from dataclasses import replace

    from harness.reporting.limitations import limitation_marks

    marks, limitation_notes = limitation_marks(rows, table.models)
    if marks:
        table = replace(table, limited=tuple(marks.items()), limitation_notes=limitation_notes)
    apart = supervised_rows(rows, table.models)
    scored = tuple(m for m in scored_rows(rows, table.models) if m not in apart)
    adapted = tuple(m for m in adapted_rows(rows, table.models) if m not in apart and m not in scored)
    if not apart and not scored and not adapted:
        return table

    notes = (table.notes + ((ADAPTED_NOTE,) if adapted else ()) + ((SUPERVISED_NOTE,) if apart else ())
             + ((SCORED_NOTE,) if scored else ()))
    return replace(table, supervised=apart, scored=scored, adapted=adapted, notes=notes)


# -- error tables -----------------------------------------------------------------------
def _error_task(task: str):
    """The registered error task ``task`` (``harness.tasks.ErrorTask``): its replicates and captions."""
    from harness.registry.tasks import get_task

    return get_task(task)


PLANNED_FOLDS = "planned_folds"  # frame.attrs: dataset -> the folds its run planned (a shard's plan manifest)


def pooled(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """One row per (dataset, model, condition, replicate): folds pooled, completeness kept.

    What a replicate must hold is every fold and seed any model has a row for on its dataset (their
    product; the folds of ``frame.attrs[PLANNED_FOLDS]`` too: a shard's rows lack folds its plan has), and the
    replicates are the product of every replicate value seen on the dataset and
    condition: a fold or replicate with no row at all is missing (``missing``), not forgotten."""
    rows = frame[frame["task"] == task]
    reps = reps_of(task)
    inner = ["fold"] + ([] if "seed" in reps else ["seed"])
    planned = frame.attrs.get(PLANNED_FOLDS, {})
    out = []
    for dataset, drows in rows.groupby("dataset", sort=False):
        units = set(product(*[_unique(drows[c]) + [f for f in planned.get(dataset, ()) if f not in set(drows[c])]
                              if c == "fold" else _unique(drows[c]) for c in inner]))
        for condition, block in drows.groupby("condition", sort=False):
            replicates = list(product(*[_unique(block[c]) for c in reps]))
            for model, mrows in block.groupby("model", sort=False):
                index = {k if isinstance(k, tuple) else (k,): g for k, g in mrows.groupby(reps, sort=False)}
                for rep in replicates:
                    out.append(_replicate(dataset, model, condition, dict(zip(reps, rep)),
                                          index.get(rep, mrows.iloc[:0]), inner, units))
    columns = ["dataset", "model", "condition", *reps, "rmse", "mae", "n_points", "folds_ok", "folds", "complete",
               "status", "reason", "errors", "absent"]
    return pd.DataFrame(out, columns=columns)


def _unique(values: pd.Series) -> list:
    return list(dict.fromkeys(values.tolist()))


def _replicate(dataset, model, condition, rep: dict, g: pd.DataFrame, inner: list[str], units: set) -> dict:
    """One replicate of one model: pooled when every expected fold (and seed) finished ok."""
    ok = g[g["status"] == "ok"]
    n = float(ok["n_points"].sum()) if len(ok) else 0.0
    present = set(map(tuple, g[inner].itertuples(index=False, name=None))) if len(g) else set()
    finished = set(map(tuple, ok[inner].itertuples(index=False, name=None))) if len(ok) else set()
    complete = units <= finished and len(ok) == len(g) and n > 0
    statuses = set(g["status"])
    errors = sorted({e for e in g.loc[g["status"] != "ok", "error"] if isinstance(e, str) and e})
    missing = sorted(units - present, key=str)
    status = "ok" if complete else ("unavailable" if statuses == {"unavailable"} else "missing" if not len(g) else
                                    "partial" if statuses == {"ok"} else "error")
    absent = "" if not missing or status == "unavailable" else (
        "no row" if not present else "no row for " + _units_text(missing, inner, units))
    where = " ".join(str(v) for v in rep.values())
    return {"dataset": dataset, "model": model, "condition": condition, **rep,
            "rmse": float(np.sqrt(ok["sse"].sum() / n)) if complete else np.nan,
            "mae": float(ok["sae"].sum() / n) if complete else np.nan,
            "n_points": int(n), "folds_ok": len(ok), "folds": len(units), "complete": complete,
            "status": status, "reason": "; ".join(errors + ([f"{where}: {absent}"] if absent else [])),
            "errors": "; ".join(errors), "absent": absent}


def _units_text(missing: list[tuple], inner: list[str], units: set, shown: int = 6) -> str:
    """The missing folds (and seeds, when there are several) in words."""
    several = [i for i, _ in enumerate(inner) if len({u[i] for u in units}) > 1 or inner[i] == "fold"]
    names = list(dict.fromkeys(" ".join(f"{inner[i]} {u[i]}" for i in several) for u in missing))
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def summary_entry(values: np.ndarray, statuses: set[str], requested: int, problem: str = "") -> Entry:
    if values.size:
        mean, std = mean_std(values * SCALE)
        return Entry(mean, std, int(values.size), requested, "ok", problem)
    known = statuses - {"missing"}
    return Entry(np.nan, np.nan, 0, requested, "unavailable" if known == {"unavailable"} else
                 "partial" if known <= {"partial", "ok"} else "error")


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
    rows = frame[frame["task"] == task]
    if condition is not None:
        rows = rows[rows["condition"] == condition]
    for ds in datasets:
        for model in models:
            g = per[(per["dataset"] == ds) & (per["model"] == model)]
            if g.empty:
                continue
            ok = g[g["complete"]]
            problem = ""
            if len(ok):
                from harness.records.configurations import code_problem

                problem = code_problem(rows[(rows["dataset"] == ds) & (rows["model"] == model)], task)
            for col in (Column(ds, "RMSE"), Column(ds, "MAE")):
                entries[(model, col)] = summary_entry(ok[col.label.lower()].to_numpy(), set(g["status"]), len(g),
                                                      problem.split(":")[0])
            if len(ok) < len(g):
                reasons = _incomplete_reasons(g[~g["complete"]], reps_of(task))
                notes.append(f"{model} on {ds}: {len(ok)}/{len(g)} {_error_task(task).replicate_words} complete"
                             + (f" ({reasons})" if reasons else ""))
            if problem:
                notes.append(f"{model} on {ds}: {problem}")
    measured = [m for m in models if any(e.status == "ok" for (name, _), e in entries.items() if name == m)]
    from harness.records.configurations import scored_notes
    from harness.reporting.setting_times import settings_note

    return grouped(Table(caption, columns, tuple(models), entries, tuple(notes),
                         model_notes(registry_names(rows, measured), task) + scored_notes(rows, measured)
                         + settings_note(rows) + provenance_notes(rows)), rows)


# -- tables of per-row metrics ------------------------------------------------------------
def seed_entry(rows: pd.DataFrame, model: str, dataset: str, condition: str, metric: str,
               task: str) -> tuple[Entry | None, str]:
    """(the table entry of one model, dataset, condition and metric: mean and std over seeds of its rows'
    values, or None when the model has no rows there; why it is marked, "" when it is not). Every seed any
    model has a row for on that dataset and condition is expected: a seed without a finished row makes the
    entry partial; rows of mixed or changed code or weights make it mixed or stale (``code_problem``)."""
    from harness.records.configurations import code_problem

    cell = rows[(rows["dataset"] == dataset) & (rows["condition"] == condition)]
    g = cell[cell["model"] == model]
    if g.empty:
        return None, ""
    expected = list(dict.fromkeys(cell["seed"].tolist()))
    ok = g[(g["status"] == "ok") & np.isfinite(g[metric])]
    missing = [s for s in expected if s not in set(ok["seed"].tolist())]
    problem = code_problem(g, task) if len(ok) else ""
    entry = summary_entry(ok[metric].to_numpy(), set(g["status"]), len(expected), problem.split(":")[0])
    why = []
    if missing and len(ok):
        errors = sorted({e for e in g.loc[g["status"] != "ok", "error"] if isinstance(e, str) and e})
        why.append(f"{model} on {dataset}, {condition}: {len(ok)}/{len(expected)} seeds complete (no finished row "
                   f"for seed {', '.join(map(str, missing))}{'; ' + '; '.join(errors) if errors else ''})")
    if problem:
        why.append(f"{model} on {dataset}, {condition}: {problem}")
    return entry, "; ".join(why)


def metric_columns(rows: pd.DataFrame, task: str, models: list[str], groups: list[tuple[str, str, str]],
                   metrics) -> tuple[list[Column], dict[tuple[str, Column], Entry], list[str]]:
    """A column per (group, dataset, condition) of ``groups`` and per metric (``harness.registry.metrics``:
    label and direction), each model's :func:`seed_entry` in it: (columns, entries, notes on marked ones)."""
    columns: list[Column] = []
    entries: dict[tuple[str, Column], Entry] = {}
    notes: list[str] = []
    for group, dataset, condition in groups:
        for metric in metrics:
            col = Column(group, metric.label, metric.higher_is_better)
            columns.append(col)
            for model in models:
                entry, why = seed_entry(rows, model, dataset, condition, metric.name, task)
                if entry is not None:
                    entries[(model, col)] = entry
                    notes += [why] if why else []
    return columns, entries, notes


def metric_table(frame: pd.DataFrame, task: str, condition: str, metrics, models: list[str] | None = None,
                 datasets: list[str] | None = None, caption: str = "") -> Table:
    """A task's metrics (one number per row) at one condition: a column per dataset and metric, each entry the
    mean ± std over seeds x ``SCALE`` (:func:`seed_entry`). Classification's tables are built so; so can a
    plugin's (docs/adding-a-task.md)."""
    rows = frame[frame["task"] == task]
    if rows.empty:
        return Table(caption, (), (), {}, (f"no {task} records",))
    datasets = datasets or list(dict.fromkeys(rows["dataset"]))
    models = models or list(dict.fromkeys(rows["model"]))
    columns, entries, notes = metric_columns(rows, task, models, [(ds, ds, condition) for ds in datasets], metrics)
    notes = list(dict.fromkeys(notes))
    return grouped(Table(caption, tuple(columns), tuple(models), entries, tuple(notes),
                         model_notes(registry_names(rows, measured_models(entries)), task) + provenance_notes(rows)),
                   rows)


def reps_of(task: str) -> list[str]:
    """The record columns of a task's replicates."""
    return list(_error_task(task).replicates)


def _incomplete_reasons(g: pd.DataFrame, reps: list[str]) -> str:
    """Why replicates are incomplete, each reason once: the errors, then what has no row, and where."""
    reasons = list(dict.fromkeys(e for errors in g["errors"] for e in errors.split("; ") if e))
    absent: dict[str, list[str]] = {}
    for _, r in g.iterrows():
        if r["absent"]:
            absent.setdefault(r["absent"], []).append(" ".join(str(r[c]) for c in reps))
    reasons += [f"{what} ({', '.join(where)})" for what, where in absent.items()]
    return "; ".join(reasons)


def table_models(frame: pd.DataFrame, task: str) -> list[str] | None:
    """The task's table rows in registry order (then the rest by name), a model's configurations together."""
    from models.registry import all_specs

    rows = frame[frame["task"] == task]
    names = rows["model_name"] if "model_name" in rows else rows["model"]
    present = list(dict.fromkeys(zip(names, rows["model"])))
    rank = {m: i for i, m in enumerate([*all_specs(), "random"])}
    ordered = sorted(present, key=lambda p: (rank.get(p[0], len(rank)), "" if p[0] in rank else p[0]))
    return [label for _, label in ordered] or None


def registry_names(frame: pd.DataFrame, models) -> list[str]:
    """The registry names of table rows (a configuration's row is named ``model [option=value]``)."""
    if "model_name" not in frame:
        return list(models)
    names = dict(zip(frame["model"], frame["model_name"]))
    return list(dict.fromkeys(names.get(m, m) for m in models))


def provenance_notes(rows: pd.DataFrame) -> tuple[str, ...]:
    """The provenance of the rows: the task versions they were computed under and the code digests that computed
    them (the versions decide whether a row is current; the digests only say by what code, docs/records.md)."""
    from harness.records.configurations import recorded_code

    if rows.empty or "protocol" not in rows:
        return ()
    tokens = version_tokens(rows)
    codes: dict[str, int] = {}
    for info in rows["model_info"] if "model_info" in rows else ():
        code = recorded_code(info) or "not recorded"
        codes[code] = codes.get(code, 0) + 1
    shown = ", ".join(f"{code} ({n} rows)" for code, n in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
    more = f" and {len(codes) - 4} more" if len(codes) > 4 else ""
    return (f"provenance: {', '.join(tokens)}; code digests {shown}{more}",)


def version_tokens(rows: pd.DataFrame) -> list[str]:
    """The task versions the rows were computed under (``forecasting-v1``), sorted."""
    from harness.registry.versions import protocol_version, version_token

    return sorted({version_token(str(t), protocol_version(str(t), str(p))) for t, p in zip(rows["task"], rows["protocol"])})


def model_notes(models, task: str | None = None) -> tuple[str, ...]:
    """The registry's note of each model given (how it was run, where that differs from the paper):
    callers pass the models with numbers in the table; models no longer registered have none. A note
    that concerns some tasks only (``ModelSpec.note_tasks``) is left out of the others' tables."""
    from models.registry import UnknownModelError, get_spec

    notes = []
    for model in models:
        try:
            spec = get_spec(model)
        except UnknownModelError:
            continue
        if spec.note and (task is None or not spec.note_tasks or task in spec.note_tasks):
            notes.append(spec.note)
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
    """1 for the best value of each column, 2 for the second, compared as shown (two decimals): entries that
    show the same number share its rank, whatever their row order; each group of rows (zero-shot, supervised,
    scored from a file) is ranked alone; marked entries (partial, mixed, stale) are not ranked. A mark says
    better than another: best needs a worse value beside it, second a worse one too (of two values the other is
    the worst, not the second; of equal values none is the best)."""
    ranks: dict[tuple[str, Column], int] = {}
    apart = bool(table.supervised or table.scored or table.adapted)
    for col in (c for c in table.columns if c.ranked):
        for _, rows in table.groups() or [("", ())]:  # each group ranked alone: supervised and scored rows apart
            shown = {m: round(float(e.mean), 2) for (m, c), e in table.entries.items()
                     if c == col and e.status == "ok" and not e.marked and np.isfinite(e.mean)
                     and (m in rows or not apart)}
            ordered = sorted(set(shown.values()), reverse=col.higher_is_better)
            best = ordered[: min(2, len(ordered) - 1)]  # the worst value is never marked
            ranks.update({(m, col): best.index(v) + 1 for m, v in shown.items() if v in best})
    return ranks


def _cell(entry: Entry | None, style: str, rank: int | None) -> str:
    if entry is None:
        return "-"
    if entry.status != "ok":
        return entry.status
    mean = f"{entry.mean:.2f}"
    # a spread needs two samples: one setting or one seed has none, and "±0.00" would claim zero variance
    std = f"{entry.std:.2f}" if entry.replicates > 1 and np.isfinite(entry.std) else None
    dagger = {"text": "+", "markdown": "†", "latex": r"^{\dagger}"}[style] if entry.marked else ""
    dagger += _overlap_mark(entry.overlap, style)
    if style == "text":  # a terminal has no bold: superscript ranks, as the caption says
        mark = TEXT_RANKS.get(rank, "") if rank else ""
        return f"{mean}±{std}{dagger}{mark}" if std else f"{mean}{dagger}{mark}"
    if style == "markdown":
        mean = f"**{mean}**" if rank == 1 else f"<u>{mean}</u>" if rank == 2 else mean
        return (f"{mean} ± {std}" if std else mean) + dagger
    mean = rf"\mathbf{{{mean}}}" if rank == 1 else rf"\underline{{{mean}}}" if rank == 2 else mean
    return rf"${mean}_{{\pm {std}}}{dagger}$" if std else rf"${mean}{dagger}$"


_TEX_MARKS = {"‡": r"$^{\ddagger}$ ", "?": "$^{?}$ ", "": ""}  # the overlap notes' marks in LaTeX


# pre-training overlap marks (harness.reporting.pretraining_marks): may have seen the dataset; corpus not documented
OVERLAP_MARKS = {"yes": "‡", "partial": "‡", "unknown": "?", "no": ""}


def _overlap_mark(status: str, style: str) -> str:
    """The pre-training overlap mark of a cell: ‡ may have seen the dataset, ? corpus not documented."""
    mark = OVERLAP_MARKS.get(status, "")
    return {"‡": r"^{\ddagger}", "?": "^{?}"}.get(mark, "") if style == "latex" else mark


# the label row of the supervised (or scored) group, per format (text: short, the notes say the rest; LaTeX: a
# full-width row)
GROUP_ROW = {"text": lambda label, n: f"-- {label.split(' (')[0]} --", "markdown": lambda label, n: f"*{md_escape(label)}*",
             "latex": lambda label, n: rf"\midrule \multicolumn{{{n + 1}}}{{l}}{{\emph{{{_tex(label)}}}}}"}
TEXT_RANKS = {1: "¹", 2: "²"}  # best and second best in text tables
TEXT_WIDTH = 100  # text tables (terminal, .txt) fit this many columns; Markdown and LaTeX stay wide


def render(table: Table, style: str = "text", with_model_notes: bool = True) -> str:
    """The table as text, Markdown or LaTeX. ``with_model_notes=False`` leaves out the registry's model
    notes (the CLI prints them once per run instead of under each of a task's tables). Names from the
    records (models, datasets) are escaped for the format: a newline, ``|``, ``$`` or ``{`` in a name
    cannot break the table."""
    if style not in ("text", "markdown", "latex"):
        raise ValueError(f"unknown table style {style!r}")
    ranks = _ranks(table)
    notes = table.notes  # the marked cells' notes (†); how a model was run is a plain note: no cell carries its mark
    run_notes = table.model_notes if with_model_notes else ()
    name = {"text": plain, "markdown": md_escape, "latex": _tex}[style]
    limited = dict(table.limited)  # a row from a documented limitation: its mark beside its name

    def row_name(model: str) -> str:
        mark = limited.get(model, "")
        return name(model) + ((" $^{\\S" + mark[1:] + "}$" if style == "latex" else " " + mark) if mark else "")

    header = ["Model"] + [f"{name(c.group)} {name(c.label)}" for c in table.columns]
    body = []
    for label, rows in table.groups() if (table.supervised or table.scored or table.adapted) else [("", table.models)]:
        if label:  # the group's label row: a reader never takes these rows for zero-shot ones
            body.append([GROUP_ROW[style](label, len(table.columns))] + [""] * len(table.columns))
        body += [[row_name(model)] + [_cell(table.entries.get((model, c)), style, ranks.get((model, c)))
                                      for c in table.columns] for model in rows]
    overlap = [(mark, name(text)) for mark, text in table.overlap_notes]
    if style == "text":
        caption = plain(table.caption) + (" Best ¹, second ²." if ranks else "")
        return _render_text(caption, header, body, tuple(plain(n) for n in notes),
                            [*[(m, plain(n)) for m, n in table.limitation_notes], *overlap],
                            run_notes=tuple(plain(n) for n in run_notes))
    if style == "markdown":
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r).rstrip() + " |" if r[0].startswith("*") else "| " + " | ".join(r) + " |"
                  for r in body]
        out = [md_escape(table.caption) + " Best **bold**, second <u>underlined</u>.", "", *lines]
        if notes or run_notes or table.limitation_notes:
            out += ["", *[f"† {md_escape(n)}" for n in notes], *[f"{m} {md_escape(n)}" for m, n in table.limitation_notes],
                    *[f"Note: {md_escape(n)}" for n in run_notes]]
        if overlap:
            out += ["", *[f"{mark or '·'} {text}" for mark, text in overlap]]
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
        *[r[0] + r" \\" if r[0].startswith(r"\midrule") else " & ".join(r) + r" \\" for r in body],
        r"\bottomrule", r"\end{tabular}",
        *[rf"\par\footnotesize $^{{\dagger}}$ {_tex(n)}" for n in notes],
        *[rf"\par\footnotesize $^{{\S{m[1:]}}}$ {_tex(n)}" for m, n in table.limitation_notes],
        *[rf"\par\footnotesize Note: {_tex(n)}" for n in run_notes],
        *[rf"\par\footnotesize {_TEX_MARKS[m]}{text}" for m, text in overlap],
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def _render_text(caption: str, header: list[str], body: list[list[str]], notes: tuple[str, ...],
                 overlap: list[tuple[str, str]] = (), width: int = TEXT_WIDTH, run_notes: tuple[str, ...] = ()) -> str:
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
    for note in run_notes:
        out += textwrap.wrap(note, width, initial_indent="note: ", subsequent_indent="  ")
    for mark, note in overlap:
        out += textwrap.wrap(note, width, initial_indent=f"{mark or '-'} ", subsequent_indent="  ")
    return "\n".join(out) + "\n"


_TEX = {"\\": r"\textbackslash{}", "_": r"\_", "%": r"\%", "&": r"\&", "#": r"\#", "$": r"\$", "{": r"\{",
        "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "±": r"$\pm$", "\n": " ", "\r": " "}
_TEX_CHARS = re.compile("|".join(re.escape(k) for k in _TEX))


def _tex(text: str) -> str:
    """``text`` as LaTeX source that prints it (one pass: an escape is never escaped again)."""
    return _TEX_CHARS.sub(lambda m: _TEX[m.group(0)], str(text))


_MD_CHARS = re.compile(r"([\\`*_\[\]<>|#])")


def md_escape(text: str) -> str:
    """``text`` inside a Markdown table cell or line: on one line, with Markdown's characters escaped."""
    return _MD_CHARS.sub(r"\\\1", plain(str(text)))


def plain(text: str) -> str:
    """``text`` on one line (a newline in a name would break every format's rows)."""
    return " ".join(str(text).splitlines()) if ("\n" in str(text) or "\r" in str(text)) else str(text)


def task_tables(frame: pd.DataFrame, task: str, models: list[str] | None = None,
                datasets: list[str] | None = None) -> list[tuple[str, Table]]:
    """Every table of a task as (file stem, table): the task's ``tables`` (``harness.tasks``), each with a note
    naming the rows of older versions the records hold and no table shows (``read_records``'s
    ``attrs["older_versions"]``)."""
    from dataclasses import replace

    from harness.registry.tasks import get_task

    older = (frame.attrs.get("older_versions") or {}).get(task, "")
    tables = get_task(task).tables(frame, models if models is not None else table_models(frame, task), datasets)
    return [(stem, replace(table, notes=(*table.notes, older))) if older and isinstance(table, Table) else (stem, table)
            for stem, table in tables]


def file_stem(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text.split("=")[-1].rstrip("%"))
