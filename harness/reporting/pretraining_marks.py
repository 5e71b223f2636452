"""Pre-training overlap marks on result tables and the leaderboard (issue #35).

Why: a zero-shot cell whose model may have been pre-trained on that dataset (registry status
``yes`` or ``partial``, ``models.pretraining``) is no plain zero-shot result, and a cell whose model's
corpus is undocumented (``unknown``) cannot be called one either.  Every such cell gets a mark and
the table a note with the reason and where it was read; ``no`` is listed once per table, so all four
states are visible.  Numbers, ranks and record keys are never changed: the marks sit beside them.

The model a table row ran is read from the records (registry name in ``model_name``; SOTER's
checkpoint in ``model_info``); a user dataset's source databases come from its manifest
(``source_database``), which the runner records in ``<out>/dataset_sources.json``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from harness.records.configurations import records_name
from models.pretraining import Overlap, dataset_base, model_overlap

from harness.records.dataset_sources import SOURCES_FILE, read_declared_sources, record_declared_sources  # noqa: F401
from harness.reporting.tables import OVERLAP_MARKS as MARKS
from harness.reporting.tables import file_stem, md_escape, task_tables

SEEN, UNKNOWN = MARKS["yes"], MARKS["unknown"]  # may have seen the dataset in pre-training; corpus not documented
SHIPPED_PREFIX = "models/soter/checkpoints/"


# -- which model and checkpoint a table row ran ---------------------------------------------------
def row_models(frame: pd.DataFrame) -> dict[str, tuple[str, str | None, bool, str | None]]:
    """Table label -> (registry name, SOTER checkpoint folder or None, weights given by the user, the
    weights digest the row names)."""
    from harness.records.configurations import parse_info, row_identity

    out: dict[str, tuple[str, str | None, bool, str | None]] = {}
    if frame.empty:
        return out
    names = frame["model_name"] if "model_name" in frame else frame["model"]
    infos = frame["model_info"] if "model_info" in frame else pd.Series([""] * len(frame), index=frame.index)
    for label, name, info in dict.fromkeys(zip(frame["model"], names, infos.fillna(""))):  # each once
        if label in out and out[label][1] is not None:
            continue
        parsed = parse_info(info)
        identity = row_identity(info) or {}
        checkpoint = parsed.get("checkpoint") if isinstance(parsed.get("checkpoint"), str) else None
        source = str(parsed.get("source", ""))
        user_weights = identity.get("weights_default") is False and SHIPPED_PREFIX not in source
        digest = identity.get("weights") or parsed.get("checkpoint_sha256")
        name = name if isinstance(name, str) and name else label  # rows written before model_name existed
        out[str(label)] = (str(name), checkpoint, user_weights, str(digest) if digest else None)
    return out


def overlap_of(label: str, dataset: str, models: Mapping[str, tuple[str, str | None, bool, str | None]],
               declared: Mapping[str, tuple[str, ...]]) -> Overlap:
    name, checkpoint, user_weights, digest = models.get(label, (label, None, False, None))
    if user_weights and checkpoint is not None:
        return Overlap("unknown", "weights given with --weights: their pre-training data are not recorded", "", "")
    dataset = records_name(dataset)  # "toy [maxw=4]": one sampling of toy (harness.records.configurations)
    return model_overlap(name, dataset, checkpoint, declared.get(dataset_base(dataset), ()), digest)


# -- tables -------------------------------------------------------------------------------------
def mark_table(table, frame: pd.DataFrame, task: str, stem: str = "",
               declared: Mapping[str, tuple[str, ...]] | None = None):
    """``table`` with every measured cell marked by its model's overlap on the column's dataset, and
    one note per reason (``harness.reporting.tables.Table.overlap_notes``)."""
    rows = frame[frame["task"] == task] if "task" in frame else frame
    datasets = list(dict.fromkeys(str(d) for d in rows["dataset"])) if len(rows) else []
    # a table of one dataset (label efficiency) names it in its file stem; the longest match wins
    by_stem = sorted((d for d in datasets if stem and stem.endswith("_" + file_stem(d))), key=len, reverse=True)[:1]
    models = row_models(rows)
    declared = declared or {}
    entries, seen, unknown, absent = dict(table.entries), {}, {}, {}
    # notes that differ only in where they were read (each checkpoint's own CORPUS.json) are one note: one line for
    # all SOTER entries, not one paragraph each
    for (label, col), entry in table.entries.items():
        dataset = col.group if col.group in datasets else (by_stem[0] if len(by_stem) == 1 else
                                                           datasets[0] if len(datasets) == 1 else None)
        if dataset is None or entry.status != "ok":
            continue
        o = overlap_of(label, dataset, models, declared)
        entries[(label, col)] = dataclasses.replace(entry, overlap=o.status)
        # where the status was read, and when it was checked (a model with no registry entry has no date)
        where = f" ({o.cite}" + (f"; checked {o.checked}" if o.checked else "") + ")" if o.cite else ""
        if o.may_have_seen:
            group = seen.setdefault((o.status, o.reason), {"labels": [], "datasets": [], "where": []})
            for key, value in (("labels", label), ("datasets", dataset), ("where", where.strip(" ()"))):
                if value and value not in group[key]:
                    group[key].append(value)
        elif o.status == "unknown":
            unknown.setdefault((label, o.reason + where), []).append(dataset)
        else:  # one line for every model that was not pre-trained, one per other reason
            why = "not pre-trained" if o.reason.startswith("not pre-trained") else o.reason
            absent.setdefault(why, {}).setdefault(label, []).append(dataset)
    notes = [(SEEN, f"{', '.join(g['labels'])} on {', '.join(g['datasets'])}: pre-training overlap {status}: {reason}"
                    + (f" ({'; '.join(g['where'])})" if g["where"] else "")) for (status, reason), g in seen.items()]
    notes += [(UNKNOWN, f"{label}: pre-training overlap unknown on {', '.join(dict.fromkeys(ds))}: {why}")
              for (label, why), ds in unknown.items()]
    if absent:
        notes.append(("", "pre-training overlap no: " + "; ".join(
            f"{', '.join(cells)} on {', '.join(dict.fromkeys(d for ds in cells.values() for d in ds))} ({why})"
            for why, cells in absent.items())))
    return dataclasses.replace(table, entries=entries, overlap_notes=tuple(notes))


def marked_task_tables(frame: pd.DataFrame, task: str, models: list[str] | None = None,
                       datasets: list[str] | None = None,
                       declared: Mapping[str, tuple[str, ...]] | None = None,
                       verdicts: list | None = None) -> list[tuple[str, object]]:
    """The task's tables (``harness.reporting.tables.task_tables``), each cell marked with its model's overlap, and
    each row the input-sensitivity probe flagged (``verdicts``, ``harness.records.input_sensitivity``) with its
    note: what `run`, `table` and `report` write."""
    from harness.reporting.limitations import with_probe_marks

    from harness.registry.tasks import get_task

    rows = frame[frame["task"] == task] if "task" in frame else frame
    relabel = getattr(get_task(task), "table_rows", None)  # a task whose table rows are not its records' models
    marks = relabel(frame) if relabel is not None and len(rows) else frame
    return [(stem, with_probe_marks(mark_table(table, marks, task, stem, declared), rows, verdicts or ()))
            for stem, table in task_tables(frame, task, models, datasets)]


# -- the leaderboard ----------------------------------------------------------------------------
def leaderboard_column(labels, frame: pd.DataFrame, task: str,
                       declared: Mapping[str, tuple[str, ...]] | None = None) -> list[str]:
    """Per leaderboard row (a model's table label): its overlap on the datasets it was ranked on, with
    the reason where it may have seen one (``yes``/``partial``) or where its corpus is not documented."""
    rows = frame[frame["task"] == task] if "task" in frame else frame
    models = row_models(rows)
    declared = declared or {}
    out = []
    for label in labels:
        datasets = list(dict.fromkeys(str(d) for d in rows.loc[rows["model"] == label, "dataset"]))
        parts: dict[str, list[str]] = {}
        for ds in datasets:
            o = overlap_of(str(label), ds, models, declared)
            text = f"{ds}: {o.reason}" if o.status != "no" else ds
            parts.setdefault(o.status, []).append(text)
        shown = [f"{MARKS[s]}{s}: " + "; ".join(parts[s]) if s != "no" else "no: " + ", ".join(parts[s])
                 for s in ("yes", "partial", "unknown", "no") if s in parts]
        out.append(" | ".join(shown))
    return out


# -- the model x dataset matrix (`harness data overlap`, `harness list models --overlap`, the report) ----
def overlap_matrix(models: list[str] | None = None,
                   datasets: list[str] | None = None) -> tuple[list[str], list[str], dict[tuple[str, str], Overlap]]:
    """(models, datasets, (model, dataset) -> Overlap): every registered model (or ``models``) on every
    evaluation dataset the registry describes (or ``datasets``, each may carry options such as
    ``heartrate:channels=PLETH``: the options never change the status)."""
    from models.pretraining import registry
    from models.registry import all_specs, get_spec

    reg = registry()
    datasets = list(datasets or reg.datasets)
    unknown = [d for d in datasets if dataset_base(d) not in reg.datasets]
    if unknown:
        from protocols.words import did_you_mean

        hint = did_you_mean(dataset_base(unknown[0]), reg.datasets)
        raise ValueError(f"no pre-training overlap is recorded for dataset {', '.join(map(repr, unknown))}{hint}; the "
                         f"registry describes {', '.join(reg.datasets)} (a folder dataset is marked in the tables "
                         "of `run`, `table` and `report` from its manifest's source_database)")
    models = list(models) if models else sorted(all_specs())
    for model in models:
        get_spec(model)  # an unknown model name is one clear error, with the closest names
    return models, datasets, {(m, d): model_overlap(m, d) for m in models for d in datasets}


def _reason_groups(models: list[str], datasets: list[str], cells: Mapping[tuple[str, str], Overlap]) -> list[str]:
    """One line per status and reason: which models on which datasets, why, and where it was read."""
    groups: dict[tuple[str, str, str, str], tuple[dict[str, None], dict[str, None]]] = {}
    for (model, dataset), o in cells.items():
        ms, ds = groups.setdefault((o.status, o.reason, o.cite, o.checked), ({}, {}))
        ms[model], ds[dataset] = None, None
    order = {s: i for i, s in enumerate(("yes", "partial", "unknown", "no"))}
    lines = []
    for (status, reason, cite, checked), (ms, ds) in sorted(groups.items(), key=lambda g: order[g[0][0]]):
        where = f" [{cite}; checked {checked}]" if cite and checked else f" [{cite}]" if cite else ""
        on = "every dataset" if len(ds) == len(datasets) > 1 else ", ".join(ds)
        lines.append(f"{status}{MARKS[status]}: {', '.join(ms)} on {on}: {reason}{where}")
    return lines


def matrix_text(models: list[str] | None = None, datasets: list[str] | None = None) -> str:
    """The matrix as `harness data overlap` prints it: a status per model and dataset, then the reasons."""
    models, datasets, cells = overlap_matrix(models, datasets)
    width = max(len(m) for m in models) + 2
    cols = [max(len(d), 8) + 2 for d in datasets]
    lines = [f"Pre-training overlap: {SEEN} may have seen the dataset (yes or partial), {UNKNOWN} corpus not documented "
             "(models/pretraining_overlap.toml; docs/pretraining-overlap.md)", "",
             ("model".ljust(width) + "".join(d.ljust(c) for d, c in zip(datasets, cols))).rstrip()]
    for m in models:
        row = "".join(f"{cells[(m, d)].status}{MARKS[cells[(m, d)].status]}".ljust(c) for d, c in zip(datasets, cols))
        lines.append(m.ljust(width) + row.rstrip())
    return "\n".join(lines + ["", "Reasons:"] + [f"  {line}" for line in _reason_groups(models, datasets, cells)])


def matrix_markdown(models: list[str] | None = None, datasets: list[str] | None = None) -> list[str]:
    """The same matrix as a Markdown table and a list of reasons (the report's overlap section)."""
    models, datasets, cells = overlap_matrix(models, datasets)
    lines = ["| model | " + " | ".join(md_escape(d) for d in datasets) + " |", "|" + "---|" * (len(datasets) + 1)]
    for m in models:
        lines.append(f"| {md_escape(m)} | " + " | ".join(
            f"{cells[(m, d)].status}{MARKS[cells[(m, d)].status]}" for d in datasets) + " |")
    return lines + [""] + [f"- {md_escape(line)}" for line in _reason_groups(models, datasets, cells)]


# -- the report ---------------------------------------------------------------------------------
def registry_markdown() -> list[str]:
    """The registry as a Markdown section: one row per entry, the evaluation datasets as columns."""
    from models.pretraining import overlap, registry

    reg = registry()
    datasets = list(reg.datasets)
    lines = ["## Pre-training overlap", "",
             "Which model may have seen which evaluation dataset in pre-training (models/pretraining_overlap.toml; "
             f"SOTER's checkpoints from their CORPUS.json; docs/pretraining-overlap.md). Table cells: {SEEN} may "
             f"have seen it (yes or partial), {UNKNOWN} corpus not documented.", "",
             "| entry | models | pre-training data | " + " | ".join(datasets) + " | source | checked |",
             "|" + "---|" * (len(datasets) + 5)]
    rows = [(e, ", ".join(e.models)) for e in reg.entries.values() if not e.generated]
    soter = next((e for e in reg.entries.values() if e.generated), None)
    rows += [(e, f"{', '.join(soter.models)} with checkpoint {k}" if soter else k) for k, e in reg.checkpoints.items()]
    for entry, models in rows:
        cells = []
        for ds in datasets:
            o = overlap(entry, ds, reg=reg)
            cells.append(f"{o.status}{MARKS[o.status]}")
        lines.append(f"| {md_escape(entry.key)} | {md_escape(models)} | {md_escape(entry.data)} | "
                     + " | ".join(cells) + f" | {md_escape(entry.cite)} | {md_escape(entry.checked)} |")
    reasons = []
    for entry, _ in rows:
        for ds in datasets:
            o = overlap(entry, ds, reg=reg)
            if o.may_have_seen:
                reasons.append(f"- {md_escape(entry.key)} on {ds}: {o.status}: {md_escape(o.reason)}")
    lines += [""] + reasons if reasons else []
    return lines + ["", "### Every model on every evaluation dataset", "",
                    "The matrix `python -m harness data overlap` prints: the status of each registered model (SOTER "
                    "models with their default checkpoint) and why, with the source read.", ""] + matrix_markdown() + [""]
