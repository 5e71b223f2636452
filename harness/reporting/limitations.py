"""Rows that explain themselves (issue #51): a table row whose numbers come from a model's documented limitation
(``models.registry.Limitation``, declared on its registry entry) is marked, and the limitation's note, which names
the option that lifts it, is printed under the table. The one place tables learn of limitations: a table without
such a row is unchanged."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    for label, name, task, protocol, info in zip(rows["model"], names, rows["task"], rows["protocol"],
                                                 rows["model_info"]):
        if label not in wanted:
            continue
        try:
            limitations = get_spec(name).limitations
        except UnknownModelError:
            continue
        described = parse_info(info)
        for limitation in limitations:
            if limitation.applies(str(task), str(protocol), described):
                notes = found.setdefault(label, [])
                if limitation.note not in notes:
                    notes.append(limitation.note)
    ordered = list(dict.fromkeys(n for label in models for n in found.get(label, ())))
    if not ordered:
        return {}, ()
    mark_of = {n: MARK if len(ordered) == 1 else f"{MARK}{i + 1}" for i, n in enumerate(ordered)}
    marks = {label: "".join(mark_of[n] for n in notes) for label, notes in found.items()}
    return marks, tuple((mark_of[n], n) for n in ordered)
