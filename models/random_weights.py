"""Random-weight checkpoints: how they are marked, so that no table ever mistakes them for results.

A checkpoint folder built with random weights at a released model's size (``--random-weights``,
``baselines/published.py``) holds :data:`RANDOM_WEIGHTS_FILE`, written by its builder. Every record made
with such weights carries ``"random_weights": RANDOM_WEIGHTS_NOTE`` in its ``model_info``
(``harness/run/cells.py``), and :func:`is_random_info` is what the readers of records for tables, the
leaderboard and the paper comparison use to leave those rows out (``harness/records/store.py: read_records``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RANDOM_WEIGHTS_FILE = "RANDOM_WEIGHTS.json"  # baselines/workers/build_random.py writes it (MARKER there)
RANDOM_WEIGHTS_NOTE = "random weights (speed and shape only)"


def random_weights_marker(weights: str | Path | None) -> dict[str, Any] | None:
    """The marker of a random-weight checkpoint folder (or of the folder of a checkpoint file); None for
    anything else (real weights, a hub id, no weights)."""
    if weights is None:
        return None
    path = Path(str(weights)).expanduser()
    folder = path.parent if path.is_file() else path
    marker = folder / RANDOM_WEIGHTS_FILE
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text())
    except (OSError, ValueError):
        data = {}
    return data if isinstance(data, dict) else {}


def is_random_info(model_info: object) -> bool:
    """Whether a record's ``model_info`` (its JSON text, or the parsed dict) says random weights."""
    if isinstance(model_info, str):
        if "random_weights" not in model_info:
            return False
        try:
            model_info = json.loads(model_info)
        except ValueError:
            return False
    return isinstance(model_info, dict) and bool(model_info.get("random_weights"))
