"""The input-sensitivity probe's verdicts (``protocols.sensitivity``), kept beside the records in
``<out>/input_sensitivity.json``: ``run --probe-input`` writes one per (dataset, model), the tables read them back
and mark a flagged model's rows (``harness.reporting.limitations``). Row keys and records are never touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VERDICTS_FILE = "input_sensitivity.json"
_KEY = ("dataset", "model", "model_id")  # one verdict per dataset, model and configuration (identity digest)


def read_verdicts(out: Path | None) -> list[dict[str, Any]]:
    """``<out>/input_sensitivity.json``'s verdicts (each a dict: dataset, model, model_id, verdict, flagged,
    ignored, changes, rtol, n_windows, fold, setting, note); [] when absent or unreadable."""
    path = Path(out) / VERDICTS_FILE if out is not None else None
    if path is None or not path.is_file():
        return []
    try:
        raw = json.loads(path.read_text())
    except ValueError:
        return []
    return [v for v in raw if isinstance(v, dict) and all(k in v for k in _KEY)] if isinstance(raw, list) else []


def record_verdicts(out: Path, verdicts: list[dict[str, Any]]) -> Path:
    """Add ``verdicts`` to the file, each replacing an earlier one of its dataset, model and configuration."""
    kept = {tuple(v[k] for k in _KEY): v for v in read_verdicts(out)}
    kept.update({tuple(v[k] for k in _KEY): v for v in verdicts})
    Path(out).mkdir(parents=True, exist_ok=True)
    path = Path(out) / VERDICTS_FILE
    ordered = [kept[k] for k in sorted(kept, key=lambda k: tuple(map(str, k)))]
    path.write_text(json.dumps(ordered, indent=1, sort_keys=True) + "\n")
    return path
