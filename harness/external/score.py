"""``harness score``: check a predictions file against an export, score it with the task's own code, and
append its rows to ``OUT/records.csv`` like any model's.

Every unit is evaluated by its task's ``evaluate`` (the path of a normal run) with
:class:`~harness.external.replay.Replay` in the model's place, which answers each call with the file's rows
after checking the call's inputs are exactly the exported ones. The rows are appended only when the whole
file checked and scored: a refused file appends nothing.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.run.cells import WINDOW_ERRORS, cached_dataset
from harness.records.code_identity import code_digest
from harness.registry.versions import stamped
from harness.records.configurations import SCORED, with_identity
from harness.external.layout import (
    FINGERPRINT, QUANTILES, ExportFormatError, Manifest, Unit, file_digest, read_manifest, read_unit,
)
from harness.external.npz_reader import ArrayHeader, NpzError, npz_headers, read_array
from harness.external.replay import Replay
from harness.external.units import plan_units, run_config
from harness.run.runner import RECORDS_FILE, _now, code_version
from harness.records.store import RecordStore, row_key
from harness.records.window_store import write_window_errors
from harness.records.cell_files import CELL_FILES, write_cell_files
from protocols.interface import QUANTILE_LEVELS

SOURCE = SCORED  # model_info's mark of a row scored from a file (and its identity's)
SCORER = "harness.external.score"  # with the task's module, the code that computes a scored row


class PredictionsError(ValueError):
    """A predictions file does not answer its export: one line naming the first problem."""


@dataclass(frozen=True)
class ScoreSummary:
    records_path: Path
    rows: int
    status_counts: dict[str, int]
    identity: str  # the predictions file's digest (the rows' model id)


def score_predictions(windows: Path, predictions: Path, model: str, out: Path,
                      data_root: Path | None = None) -> ScoreSummary:
    """Score ``predictions`` (npz: one array per unit id, and the export's ``fingerprint``) against the export
    in ``windows``; append the rows of model ``model`` to ``out``/records.csv (nothing when anything fails)."""
    check_model_name(model)
    manifest = read_manifest(Path(windows))
    predictions = Path(predictions)
    point, quantiles = read_predictions(predictions, manifest, Path(windows))
    digest = file_digest(predictions)
    planned = plan_units(run_config(manifest.config, data_root))
    _check_units(planned, manifest)
    task_name = manifest.task
    identity = {"model_id": digest[:16], "options": {"predictions": digest[:16]}, "source": SOURCE,
                "modules": [_task_module(task_name), SCORER], "code": ""}
    identity["code"] = code_digest(tuple(identity["modules"]))
    info = json.dumps({"source": SOURCE, "predictions": predictions.name, "sha256": digest,
                       "export": manifest.fingerprint, "device": "elsewhere"}, sort_keys=True)
    version = code_version()
    results = []
    for (cell, fields), unit in zip(planned, manifest.units):
        cell = dataclasses.replace(cell, model=model, model_id=identity["model_id"])
        replay = Replay(read_unit(Path(windows), unit), point[unit.id], quantiles.get(unit.id), where=unit.describe())
        started = time.perf_counter()
        task = cell_task(task_name)
        reason = task.capable(replay, cell)
        if reason is not None:
            raise PredictionsError(f"{unit.describe()}: {reason}")
        result = task.evaluate(cell, cached_dataset(cell.dataset, cell.data_root), replay)
        if replay.cursor != unit.rows:
            raise ExportFormatError(f"{unit.describe()}: the harness asked for {replay.cursor} of the {unit.rows} "
                                    "exported rows; the data or the protocol code changed since the export")
        row_fields = {**fields, "model": model}
        key = row_key(identity["model_id"], **row_fields)
        results.append((key, {**row_fields, "key": key, **result, "seconds": time.perf_counter() - started,
                              "model_info": with_identity(info, identity), "code_version": version,
                              "finished_at": _now()}))
    store = RecordStore(Path(out) / RECORDS_FILE)
    counts: dict[str, int] = {}
    for key, row in results:
        write_window_errors(Path(out), key, row.pop(WINDOW_ERRORS, None))  # before its row, as a run does
        write_cell_files(Path(out), key, row.pop(CELL_FILES, None))  # a task's other arrays (harness.records.cell_files)
        store.write(row)
        counts[str(row["status"])] = counts.get(str(row["status"]), 0) + 1
    return ScoreSummary(store.path, len(results), counts, digest)


def cell_task(name: str):
    from harness.registry.tasks import get_task

    return get_task(name)


def _task_module(name: str) -> str:
    return type(cell_task(name)).__module__


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+\-]{0,79}")


def check_model_name(model: str) -> None:
    """A scored model needs a name of its own: not a registered model's (its rows would pass for that
    model's), letters, digits and ``._+-`` only."""
    from models.registry import UnknownModelError, get_spec

    if not _NAME.fullmatch(model or ""):
        raise PredictionsError(f"--model {model!r}: a model name is 1-80 letters, digits or ._+- (starting with a "
                               "letter or digit)")
    try:
        get_spec(model)
    except UnknownModelError:
        return
    raise PredictionsError(f"--model {model}: that is a registered model; name the model that made the file "
                           f"(e.g. {model}-external)")


def read_predictions(path: Path, manifest: Manifest, windows: Path) -> tuple[dict[str, np.ndarray],
                                                                           dict[str, np.ndarray]]:
    """(point predictions, quantile predictions) per unit id, checked against the export: the fingerprint,
    every unit and window answered, shapes, finite values. Names, dtypes and shapes are checked from the file's
    zip directory and ``.npy`` headers before any array is read (``harness.external.npz_reader``): a file that
    declares more than its export needs is refused without being inflated. The first problem is a
    PredictionsError."""
    if not path.is_file():
        raise PredictionsError(f"{path}: no such predictions file")
    try:
        headers = npz_headers(path)
    except NpzError as exc:
        raise PredictionsError(str(exc)) from None
    where = path.name
    if FINGERPRINT not in headers:
        raise PredictionsError(f"{where}: no '{FINGERPRINT}' entry; write the file with "
                               "harness.external.save_predictions, or add the manifest's fingerprint")
    ids = {u.id for u in manifest.units}
    unknown = sorted(k for k in headers if k != FINGERPRINT and k not in ids
                     and not (k.endswith(QUANTILES) and k[:-len(QUANTILES)] in ids))
    if unknown:
        raise PredictionsError(f"{where}: unknown entry {unknown[0]!r} (expected the export's unit ids, "
                               f"'<unit>{QUANTILES}' and '{FINGERPRINT}')")
    mark = headers[FINGERPRINT]
    if mark.shape != () or mark.dtype.kind not in "US" or mark.dtype.itemsize > 4 * len(manifest.fingerprint):
        raise PredictionsError(f"{where}: the '{FINGERPRINT}' entry is no string of the export's fingerprint")
    given = _read(path, mark)
    if str(given) != manifest.fingerprint:
        raise PredictionsError(f"{where}: fingerprint {str(given)[:16]}... does not match the export's "
                               f"{manifest.fingerprint[:16]}...: these predictions answer other windows")
    quantile_units = [u for u in manifest.units if u.id + QUANTILES in headers]
    if quantile_units and manifest.kind != "forecast":
        raise PredictionsError(f"{where}: {quantile_units[0].describe()}: quantiles are scored for forecasts only")
    for unit in manifest.units:  # every declared shape and dtype first: nothing is read before all are right
        _check_declared(headers.get(unit.id), unit, unit.prediction_shape, where, windows, "predictions")
        if unit in quantile_units:
            _check_declared(headers[unit.id + QUANTILES], unit, (*unit.prediction_shape, len(manifest.quantile_levels)),
                            where, windows, "quantiles")
    if quantile_units and tuple(manifest.quantile_levels) != tuple(QUANTILE_LEVELS):
        raise PredictionsError(f"{where}: the export asks for quantiles at {list(manifest.quantile_levels)}, the "
                               f"harness now scores {list(QUANTILE_LEVELS)}; export again")
    if quantile_units and len(quantile_units) != len(manifest.units):
        missing = next(u for u in manifest.units if u not in quantile_units)
        raise PredictionsError(f"{where}: quantiles for some units but not for {missing.describe()}: give them for "
                               "every unit or for none")
    point, quantiles = {}, {}
    for unit in manifest.units:
        header = headers.get(unit.id)
        point[unit.id] = _finite(np.zeros(unit.prediction_shape) if header is None else _read(path, header),
                                 unit, where, windows, "predictions")
        if unit in quantile_units:
            quantiles[unit.id] = _finite(_read(path, headers[unit.id + QUANTILES]), unit, where, windows, "quantiles")
    return point, quantiles


def _read(path: Path, header: ArrayHeader) -> np.ndarray:
    try:
        return read_array(path, header)
    except NpzError as exc:
        raise PredictionsError(str(exc)) from None


def _check_declared(header: ArrayHeader | None, unit: Unit, shape: tuple[int, ...], where: str, windows: Path,
                    what: str) -> None:
    """A unit's predictions (or quantiles) as the file declares them: present (unless the unit has no row),
    numbers, of the export's shape."""
    if header is None:
        if unit.rows == 0:
            return
        raise PredictionsError(f"{where}: no {what} for {unit.describe()}: {_window(windows, unit, 0)} is not answered")
    if header.dtype.kind not in "fiu":
        raise PredictionsError(f"{where}: {unit.describe()}: {what} of type {header.dtype}, expected numbers")
    given = header.shape
    if len(given) == len(shape) and given[0] < shape[0] and given[1:] == shape[1:]:
        raise PredictionsError(f"{where}: {unit.describe()} answers {given[0]} of {shape[0]} rows: "
                               f"{_window(windows, unit, given[0])} is missing")
    if given != shape:
        dims = "windows, channels, horizon" if len(unit.prediction_shape) == 3 else "queries, channels"
        raise PredictionsError(f"{where}: {unit.describe()}: {what} of shape {given}, expected {shape} "
                               f"[{dims}{', quantile levels' if what == 'quantiles' else ''}]")


def _finite(value: np.ndarray, unit: Unit, where: str, windows: Path, what: str) -> np.ndarray:
    value = value.astype(np.float64)
    bad = ~np.isfinite(value.reshape(value.shape[0], -1)).all(axis=1) if value.size else np.zeros(0, dtype=bool)
    if bad.any():
        raise PredictionsError(f"{where}: {unit.describe()}, {_window(windows, unit, int(np.argmax(bad)))}: "
                               f"NaN or infinite {what}")
    return value


def _window(windows: Path, unit: Unit, row: int) -> str:
    """Which window (or query) row ``row`` of a unit is, in words."""
    try:
        arrays = read_unit(windows, unit)
        name, start = arrays["recording_name"][row], arrays["start"][row]
        position = f", position {arrays['position'][row]}" if "position" in arrays else ""
        return f"{'query' if position else 'window'} {row} (recording {name}, start {start}{position})"
    except (ExportFormatError, KeyError, IndexError):
        return f"row {row}"


def _check_units(planned, manifest: Manifest) -> None:
    """The units the configuration plans now are the export's (same key fields, same data hash)."""
    if len(planned) != len(manifest.units):
        raise ExportFormatError(f"the export holds {len(manifest.units)} units, the configuration now plans "
                                f"{len(planned)}; export again")
    for (cell, fields), unit in zip(planned, manifest.units):
        now = (str(fields["dataset"]), cell.fold, cell.setting, cell.condition, cell.seed, str(fields["protocol"]))
        # an export written before versions were declared has no token: it was of version 1
        then = (unit.dataset, unit.fold, unit.setting, unit.condition, unit.seed, stamped(cell.task, unit.protocol))
        if now != then:
            raise ExportFormatError(f"{unit.describe()}: the dataset or protocol differs from the export's (protocol "
                                    f"{unit.protocol!r} then, {fields['protocol']!r} now); export again")
