"""The source databases a user dataset's manifest declares (``source_database``), kept beside the records in
``<out>/dataset_sources.json``: the runner writes them, the pre-training overlap marks read them
(``harness.reporting.pretraining_marks``, issue #35)."""

from __future__ import annotations

import json
from pathlib import Path

SOURCES_FILE = "dataset_sources.json"


def read_declared_sources(out: Path | None) -> dict[str, tuple[str, ...]]:
    """``<out>/dataset_sources.json`` (dataset name -> source databases); {} when absent."""
    path = Path(out) / SOURCES_FILE if out is not None else None
    if path is None or not path.is_file():
        return {}
    try:
        raw = json.loads(path.read_text())
    except ValueError:
        return {}
    return {str(k): tuple(str(s) for s in v) for k, v in raw.items() if isinstance(v, list)}


def record_declared_sources(out: Path, dataset: str, sources: tuple[str, ...]) -> None:
    """Remember the source databases a user dataset's manifest declares (tables read them back)."""
    if not sources:
        return
    known = read_declared_sources(out)
    if known.get(dataset) == tuple(sources):
        return
    known[dataset] = tuple(sources)
    Path(out).mkdir(parents=True, exist_ok=True)
    (Path(out) / SOURCES_FILE).write_text(json.dumps({k: list(v) for k, v in sorted(known.items())}, indent=1) + "\n")
