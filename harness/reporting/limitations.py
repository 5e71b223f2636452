"""Rows that explain themselves (issue #51): a table row whose numbers come from a model's documented limitation
(``models.registry.Limitation``, declared on its registry entry) is marked, and the limitation's note, which names
the option that lifts it, is printed under the table. The one place tables learn of limitations: a table without
such a row is unchanged. Other row notes join the same marks (:func:`add_row_notes`): the input-sensitivity probe's
verdicts (``run --probe-input``, :func:`probe_row_notes`) mark a model whose forecasts did not change with its input."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

MARK = "§"  # the rows' mark; several notes in one table: §1, §2, ...


def limitation_marks(rows: pd.DataFrame, models) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """(each affected table row's mark, the (mark, note) pairs) for the table rows ``models`` drawn from ``rows``
    (records of one table: their ``task``, ``protocol``, ``model_info`` and ``model_name``)."""
    from harness.records.configurations import parse_info
    from models.registry import UnknownModelError, get_spec

    found: dict[str, list[str]] = {}  # table row -> its notes, in first-seen order
    wanted = set(models)
    if rows.empty or "model_info" not in rows:
        return {}, ()
    names = rows["model_name"] if "model_name" in rows else rows["model"]
    conditions = rows["condition"] if "condition" in rows else [""] * len(rows)
    for label, name, task, protocol, info, condition in zip(rows["model"], names, rows["task"], rows["protocol"],
                                                            rows["model_info"], conditions):
        if label not in wanted:
            continue
        try:
            limitations = get_spec(name).limitations
        except UnknownModelError:
            continue
        described = parse_info(info)
        for limitation in limitations:
            if limitation.applies(str(task), str(protocol), described, str(condition)):
                notes = found.setdefault(label, [])
                if limitation.note not in notes:
                    notes.append(limitation.note)
    return _numbered(found, models)


def _numbered(found: Mapping[str, Sequence[str]], models) -> tuple[dict[str, str], tuple[tuple[str, str], ...]]:
    """Marks for ``found`` (table row -> its notes): one note is ``§``, several are ``§1``, ``§2``, ... in row order."""
    ordered = list(dict.fromkeys(n for label in models for n in found.get(label, ())))
    if not ordered:
        return {}, ()
    mark_of = {n: MARK if len(ordered) == 1 else f"{MARK}{i + 1}" for i, n in enumerate(ordered)}
    marks = {label: "".join(mark_of[n] for n in notes) for label, notes in found.items()}
    return marks, tuple((mark_of[n], n) for n in ordered)


def add_row_notes(table, found: Mapping[str, Sequence[str]]):
    """``table`` (``harness.reporting.tables.Table``) with more rows marked: ``found`` (table row -> notes) joins
    the notes its rows already carry, and every note is numbered again (a table without ``found`` rows is unchanged)."""
    found = {label: list(notes) for label, notes in found.items() if label in table.models and notes}
    if not found:
        return table
    note_of = dict(table.limitation_notes)
    merged: dict[str, list[str]] = {label: [note_of[MARK + part] for part in marks.split(MARK)[1:]]
                                    for label, marks in table.limited}
    for label, notes in found.items():
        merged.setdefault(label, []).extend(n for n in notes if n not in merged[label])
    marks, notes = _numbered(merged, table.models)
    return dataclasses.replace(table, limited=tuple(marks.items()), limitation_notes=notes)


def probe_row_notes(rows: pd.DataFrame, verdicts: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Table row -> the notes of its flagged input-sensitivity verdicts (``harness.records.input_sensitivity``),
    for the records ``rows`` of one table: a verdict applies to the rows of its dataset, model and configuration."""
    from harness.records.configurations import records_name, row_identity

    flagged = {(str(v["dataset"]), str(v["model"]), str(v["model_id"])): v for v in verdicts if v.get("flagged")}
    if not flagged or rows.empty:
        return {}
    names = rows["model_name"] if "model_name" in rows else rows["model"]
    infos = rows["model_info"] if "model_info" in rows else [""] * len(rows)
    out: dict[str, list[str]] = {}
    for label, name, dataset, info in zip(rows["model"], names, rows["dataset"], infos):
        key = (records_name(str(dataset)), str(name), str((row_identity(info) or {}).get("model_id", "")))
        verdict = flagged.get(key)
        if verdict is None:
            continue
        note = (f"{name} on {key[0]}, input-sensitivity probe (fold {verdict['fold']}, setting "
                f"{verdict.get('setting', '?')}; docs/protocols.md): {verdict['note']}")
        notes = out.setdefault(str(label), [])
        if note not in notes:
            notes.append(note)
    return out


def with_probe_marks(table, rows: pd.DataFrame, verdicts: Sequence[Mapping[str, Any]]):
    """``table`` with the rows the probe flagged marked and its note under the table."""
    return add_row_notes(table, probe_row_notes(rows, verdicts)) if verdicts else table
