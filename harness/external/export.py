"""``harness windows export``: write, for every unit of a run configuration, the exact inputs a model gets.

Each unit is evaluated by its task's own ``evaluate`` (the path of a normal run) with
:class:`~harness.external.replay.Capture` in the model's place; what the capture was handed is the export.
The cell's metrics (of the capture's zeros) are thrown away, and no target is written: a unit holds the
contexts as handed over (normalised with the fold's scaler; unobserved values NaN, beside their mask),
their timestamps, the query times, which window (or query) each row is, and the scaler's parameters.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.run.cells import WINDOW_ERRORS, Cell, cached_dataset
from harness.external.layout import KINDS, Manifest, Unit, write_unit
from harness.external.replay import Calls, Capture
from harness.external.units import config_fields, plan_units
from harness.run.runner import RunConfig
from protocols.data import Dataset
from protocols.imputation import build_task, impute_queries
from protocols.interface import QUANTILE_LEVELS
from protocols.scaling import fit_fold_scaler
from protocols.specs import SpecError
from protocols.splits import get_fold


def export_windows(config: RunConfig, out: Path) -> Manifest:
    """Export every unit of ``config`` into the folder ``out`` (new or empty); returns the manifest."""
    kind = KINDS.get(config.task)
    if kind is None:
        raise SpecError(f"the {config.task} task cannot be exported (exportable: {', '.join(KINDS)}); its models "
                        "are scored inside the harness")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SpecError(f"--out {out} exists and is not an empty folder: an export goes into a new folder")
    planned = plan_units(config)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _write_export(config, out, planned, kind)
    except OSError as exc:  # a full disk, a file-size limit: nothing half-written is left to block the rerun
        for path in out.iterdir():
            path.unlink(missing_ok=True)
        if created:
            out.rmdir()
        raise ExportWriteError(f"{exc.filename or out}: could not write the export ({exc.strerror or exc}); nothing "
                               f"of it was kept in {out}: free space and export again") from None


class ExportWriteError(RuntimeError):
    """The export could not be written (a full disk): one line, after removing what was written."""


def _write_export(config: RunConfig, out: Path, planned, kind: str) -> Manifest:
    """Every unit's file, then the manifest (written last: an export without one is no export)."""
    task = config.task_object
    units = []
    for n, (cell, fields) in enumerate(planned):
        dataset = cached_dataset(cell.dataset, cell.data_root)
        arrays = unit_arrays(task, cell, dataset, kind)
        rows = int(arrays["context"].shape[0])
        c = len(dataset.channels)
        shape = (rows, c, int(arrays["query_times"].shape[1])) if kind == "forecast" else (rows, c)
        name = f"u{n:05d}"
        digest = write_unit(out, f"{name}.npz", arrays)
        units.append(Unit(name, str(fields["dataset"]), cell.fold, cell.setting, cell.condition, cell.seed,
                          str(fields["protocol"]), cell.level, f"{name}.npz", rows, tuple(dataset.channels),
                          shape, digest))
    refs = list(dict.fromkeys(cell.dataset for cell, _ in planned))
    manifest = Manifest(config.task, kind, config_fields(config, refs), tuple(units),
                        QUANTILE_LEVELS).with_fingerprint()
    (out / "manifest.json").write_text(manifest.to_json())
    return manifest


def unit_arrays(task, cell: Cell, dataset: Dataset, kind: str) -> dict[str, np.ndarray]:
    """A unit's arrays: what the task's ``evaluate`` hands a model, in the order it asks, and which window
    (recording, start; imputation: the segment and the query's position) each row is."""
    capture = Capture()
    row = task.evaluate(cell, dataset, capture)  # the run's own path; its metrics (of zeros) are dropped
    arrays = _stack(capture.calls, dataset)
    fold = get_fold(dataset, cell.fold)
    if kind == "forecast":
        windows = row.get(WINDOW_ERRORS) or {}
        recording = np.asarray(windows.get("recording", np.zeros(0)), dtype=np.int64)
        start = np.asarray(windows.get("start", np.zeros(0)), dtype=np.int64)
        ids = {"recording": recording, "start": start}
    else:
        ids = _query_ids(dataset, fold, cell)
    if any(len(v) != arrays["context"].shape[0] for v in ids.values()):
        raise RuntimeError(f"{cell.dataset} fold {cell.fold} {cell.setting}: the windows scored and the model "
                           "calls disagree")
    scaler = fit_fold_scaler(dataset, fold)
    recs = dataset.recordings
    return {**arrays, **ids,
            "recording_name": np.array([recs[int(r)].name for r in ids["recording"]], dtype=str),
            "scaler_minimum": scaler.minimum, "scaler_maximum": scaler.maximum, "scaler_scale": scaler.scale,
            "channels": np.array(dataset.channels, dtype=str)}


def _stack(calls: Calls, dataset: Dataset) -> dict[str, np.ndarray]:
    """The calls' rows in one array each, contexts padded to the longest (imputation prefixes differ in
    length: ``prefix_length`` says how much of each row is its context); unobserved values are NaN."""
    c = len(dataset.channels)
    if not calls.values:
        return {"context": np.zeros((0, c, 0)), "mask": np.zeros((0, c, 0), dtype=bool),
                "context_times": np.zeros((0, 0)), "query_times": np.zeros((0, 0)),
                "prefix_length": np.zeros(0, dtype=np.int64)}
    length = max(v.shape[2] for v in calls.values)
    context, mask, times, lengths = [], [], [], []
    for v, m, t in zip(calls.values, calls.mask, calls.times):
        pad = length - v.shape[2]
        context.append(np.pad(np.where(m, v, np.nan), ((0, 0), (0, 0), (0, pad)), constant_values=np.nan))
        mask.append(np.pad(m, ((0, 0), (0, 0), (0, pad)), constant_values=False))
        times.append(np.pad(t, ((0, 0), (0, pad)), constant_values=np.nan))
        lengths.append(np.full(v.shape[0], v.shape[2], dtype=np.int64))
    return {"context": np.concatenate(context), "mask": np.concatenate(mask), "context_times": np.concatenate(times),
            "query_times": np.concatenate(calls.query_times), "prefix_length": np.concatenate(lengths)}


def _query_ids(dataset: Dataset, fold, cell: Cell) -> dict[str, np.ndarray]:
    """Segment (recording, start) and position of every imputation query, in the order of the model calls:
    the protocol's own task and query loop, with the capture answering each row with its call order."""
    task, selection = build_task(dataset, fold, cell.spec, cell.level, cell.seed)
    order = impute_queries(Capture(), task)[:, 0].astype(np.int64) if task.queries else np.zeros(0, dtype=np.int64)
    by_call = np.empty(len(order), dtype=np.int64)
    by_call[order] = np.arange(len(order))
    segments = [task.queries[q] for q in by_call]
    return {"recording": np.array([selection.windows[b].recording for b, _ in segments], dtype=np.int64),
            "start": np.array([selection.windows[b].start for b, _ in segments], dtype=np.int64),
            "position": np.array([i for _, i in segments], dtype=np.int64)}
