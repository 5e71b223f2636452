"""A cell: the unit of work (one task, dataset, fold, setting, condition, model, seed).

``run_cell`` is a top-level function of a picklable cell, so any executor can run it.  The
in-process caches below only avoid reloading the same dataset or model twice in one worker;
results never depend on them.  Tasks that reuse work across cells on disk do it in modules of their
own (classification's embeddings: :mod:`harness.run.embeddings`), so data flows one way: a cell calls
its task, never the reverse.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.run.provenance import consumed, counted, measured
from harness.run.threads import limit_loaded_torch
from models.random_weights import RANDOM_WEIGHTS_NOTE, random_weights_marker
from models.registry import ModelUnavailableError, get_spec
from protocols.data import Dataset
from protocols.datasets import load_dataset
from protocols.interface import CLOCK, Model, ModelDivergedError

WINDOW_ERRORS = "window_errors"  # a result's per-window arrays; not a record column (harness.records.window_store)
# A diverged cell's error starts with this (the text such rows have always had). The solve is deterministic: the same
# weights diverge on the same windows again, so a rerun keeps the row like a finished one (``--rerun`` recomputes it).
DIVERGED = "protocols.interface.ModelDivergedError:"


def is_diverged(row) -> bool:
    """An error row of a forecast or imputation whose numerical solve diverged (final, not retried)."""
    return row.get("status") == "error" and str(row.get("error", "")).startswith(DIVERGED)


@dataclass(frozen=True)
class Cell:
    task: str  # a registered task's name (harness.tasks)
    dataset: str  # registered name or folder path
    fold: str  # test subject ("all" for pooled classification)
    setting: str  # "C/H" (context/horizon) for forecasting and noise, the segment length otherwise
    model: str
    seed: int
    spec: Any  # the task's spec (Task.spec)
    condition: str = "clean"
    level: float | None = None  # noise beta, missing rate or label budget
    data_root: str | None = None  # where downloaded datasets live (--data-root)
    cache_dir: str | None = None  # on-disk embedding cache (classification)
    model_options: tuple[tuple[str, Any], ...] = field(default=())
    model_id: str = ""  # the model's identity (its weights' digest and options): a loaded model is reused only for it
    code: str = ""  # the digest of the code that computes the cell's row (harness.records.code_identity): on-disk caches key by it
    # the setting as the task's points() gave it, typed (a protocols.specs.Setting, a segment length ...), so that
    # the task reads it back without parsing ``setting``, its name in the records; given none, the name itself
    point: Any = None

    def __post_init__(self) -> None:
        if self.point is None:
            object.__setattr__(self, "point", self.setting)


def setting_name(point: Any) -> str:
    """A point's name in the records' ``setting`` column: a ``Setting``'s ``name`` ("96/48"), else ``str()``
    (a segment length: "96"; a string stays itself)."""
    return point if isinstance(point, str) else str(getattr(point, "name", point))


@lru_cache(maxsize=4)
def cached_dataset(name: str, data_root: str | None = None) -> Dataset:
    return load_dataset(name, data_root=data_root)


def cached_model(name: str, options: tuple[tuple[str, Any], ...], model_id: str = "") -> Model:
    """A loaded model, reused across cells of one configuration: ``model_id`` (the digest of its weights)
    keeps a model loaded from a path from serving cells after the weights at that path changed. A load that
    failed fails again at once for the configuration's other cells in this process (a refused oversized
    checkpoint costs its check once, not once a cell); every cell's row still says why."""
    key = (name, options, model_id)
    failed = _LOAD_FAILURES.get(key)
    if failed is not None:
        raise failed
    try:
        return _loaded_model(name, options, model_id)
    except Exception as exc:
        _LOAD_FAILURES[key] = exc
        raise


_LOAD_FAILURES: dict[tuple[str, tuple[tuple[str, Any], ...], str], Exception] = {}


@lru_cache(maxsize=2)
def _loaded_model(name: str, options: tuple[tuple[str, Any], ...], model_id: str = "") -> Model:
    model = get_spec(name).load(**dict(options))
    limit_loaded_torch()  # the run's one thread, for a torch this model imported (harness.run.threads)
    return model


def run_cell(cell: Cell) -> dict[str, object]:
    """Evaluate one cell; never raises for a model failure (the row says what happened)."""
    from harness.registry.tasks import get_task

    started = time.perf_counter()
    row: dict[str, object]
    try:
        task = get_task(cell.task)
        row = evaluate_cell(task, cell, cached_dataset(cell.dataset, cell.data_root))
    except ModelUnavailableError as exc:
        row = {"status": "unavailable", "error": str(exc)}
    except ModelDivergedError as exc:  # deterministic: the same weights diverge on the same windows again
        row = {"status": "error", "error": f"{DIVERGED} {exc}"[:2000]}
    except Exception as exc:  # recorded, so that one failing cell never stops a sweep
        tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
        row = {"status": "error", "error": tail[:2000]}
    row["seconds"] = time.perf_counter() - started
    return row


def evaluate_cell(task, cell: Cell, dataset: Dataset) -> dict[str, object]:
    """Load the cell's model (none for the task's model-free pseudo-models), check it can take part,
    let the task evaluate the cell, add what it consumed (a scored count that differs from the plan makes it an
    error row), and name the model's description and device in ``model_info``."""
    model = None if cell.model in task.model_free else cached_model(cell.model, cell.model_options, cell.model_id)
    if model is not None:
        reason = task.capable(model, cell)
        if reason is not None:
            return {"status": "unavailable", "error": reason}
    before = CLOCK.reading()
    row = task.evaluate(cell, dataset, model)
    row = {**counted(row, task.planned_windows(cell, dataset)), **measured(before, model, row),
           **consumed(task, cell, dataset, model)}  # what the row consumed (harness.run.provenance)
    if model is not None:
        row["model_info"] = model_info(model, cell)
    return row


def model_info(model: Model, cell: Cell) -> str:
    """The model's ``describe()`` and the device it ran on (``--device``; cpu unless a device was passed),
    without absolute paths (:func:`shareable`): records travel, home folders should not. With weights from
    a random-weight folder also ``random_weights`` (such rows never reach a table)."""
    options = dict(cell.model_options)
    info = {"device": options.get("device", "cpu"), **model.describe()}
    if random_weights_marker(options.get("weights")) is not None:
        info["random_weights"] = RANDOM_WEIGHTS_NOTE
    return json.dumps(shareable(info), sort_keys=True, default=str)


REPO = Path(__file__).resolve().parents[2]
_ABSOLUTE = re.compile(r"(?<![\w.:/~])/[^\s\"'(),;]+")


def shareable(value: Any) -> Any:
    """``value`` (a describe() dict) with every absolute path made relative to this repository when it
    lies inside it (``models/soter/checkpoints/soter-cpu-64``), else cut to its last part: the weights
    are named by their digest (the row's identity), not by where they sat on one machine."""
    if isinstance(value, dict):
        return {k: shareable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shareable(v) for v in value]
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str):
        return _ABSOLUTE.sub(lambda m: _display_path(m.group(0)), value)
    return value


def _display_path(text: str) -> str:
    path = Path(text)
    try:
        return path.resolve().relative_to(REPO).as_posix() or "."
    except (ValueError, OSError):
        return path.name or text
