"""Score forecasts made anywhere (issue #34; docs/external.md).

Two steps, as commands or from Python (a notebook):

1. :func:`export_windows` (``python -m harness windows export TASK ... --out DIR``) writes the exact inputs
   the harness would hand a model, for every fold, setting and condition, and no target;
2. :func:`score_predictions` (``python -m harness score TASK --export DIR --predictions FILE --model NAME
   --out OUT``) checks a predictions file against the export and appends its rows to ``OUT/records.csv``,
   computed by the task's own code, where ``table``, ``report`` and the statistics read them.

Between them, :func:`load_windows` reads an export and :func:`save_predictions` writes the file.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ExportFormatError", "PredictionsError", "ScoreSummary", "Windows", "export_windows", "load_windows",
           "save_predictions", "score_predictions"]


def __getattr__(name: str) -> Any:
    """The API, imported on first use: ``python -m harness --help`` builds this package's parsers without it."""
    if name in __all__:
        from harness.external import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
