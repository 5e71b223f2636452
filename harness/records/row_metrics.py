"""Metrics without a record column of their own (a plugin task's, ``Task.metrics``): kept in the row's
``details`` JSON under ``metrics``, so that a records file keeps one header whatever tasks write into it,
and given a column of their name in every frame read from the records (docs/records.md)."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    import pandas as pd

KEY = "metrics"  # the entry of ``details`` that holds them


def _registered() -> dict[str, Any]:
    from harness.registry.tasks import all_metrics

    return all_metrics()


def into_details(row: Mapping[str, object], columns: Iterable[str]) -> dict[str, object]:
    """``row`` with every entry that is no record column moved into ``details`` (under :data:`KEY`); each must
    be a registered metric (a ValueError names those that are not)."""
    columns = set(columns)
    extra = {k: v for k, v in row.items() if k not in columns}
    if not extra:
        return dict(row)
    known = _registered()
    unknown = sorted(k for k in extra if k not in known)
    if unknown:
        raise ValueError(f"unknown record columns {unknown} (a task's own metric is declared in Task.metrics)")
    details = _object(row.get("details"))
    details[KEY] = {**details.get(KEY, {}), **{k: None if v is None else float(v) for k, v in extra.items()}}
    return {**{k: v for k, v in row.items() if k in columns}, "details": json.dumps(details)}


def _object(text: object) -> dict[str, Any]:
    """``details`` as a dict: empty, or the JSON object a task wrote (anything else cannot take metrics)."""
    if text in (None, ""):
        return {}
    value = json.loads(str(text)) if isinstance(text, str) else None
    if not isinstance(value, dict):
        raise ValueError(f"details must be a JSON object to hold a task's own metrics, got {str(text)[:60]!r}")
    return value


def in_details(text: str) -> dict[str, Any]:
    """The metrics a row's ``details`` holds ({} for none, or when ``details`` is no JSON object)."""
    if not text or f'"{KEY}"' not in text:  # most rows: no JSON to parse
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    found = value.get(KEY) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def problem(row: Mapping[str, str]) -> str | None:
    """Why the metrics in a row's ``details`` make it no valid row (None: they do not): each is a number; in an
    ``ok`` row never infinite, and NaN only for a metric registered as possibly undefined (an unregistered one,
    of a plugin this process has not loaded, is checked for being a number only)."""
    values = in_details(row.get("details", ""))
    if not values:
        return None
    known = _registered()
    for name, value in values.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"details metric {name} {str(value)[:40]!r} is not a number"
        if row.get("status") == "ok" and value is not None and (
                math.isinf(value) or (math.isnan(value) and name in known and not known[name].nan_when_ok)):
            return f"an ok row with details metric {name} {value!r}: a metric that is not finite is no result"
    return None


def add_columns(frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """``frame`` with a float column for every registered metric that is no record column (NaN where a row has
    none)."""
    columns = set(columns)
    names = [name for name in _registered() if name not in columns]
    for name in names:
        frame[name] = [float(v) if (v := in_details(d).get(name)) is not None else math.nan
                       for d in frame["details"].fillna("")]
    return frame
