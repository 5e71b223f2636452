"""Re-stamp a results folder: prove on a sample of its cells that nothing moved, then renew what identifies its rows.

The declared versions decide whether a row is current (``harness.registry.versions``); the code digest each row
records is provenance. After an edit that bumps nothing (a refactor, a comment, a faster solver within its declared
tolerance) a folder need not be regenerated: ``harness restamp`` plans the folder's cells from the flags of the run
that made it (the same flags as ``run``), recomputes a seeded sample of them (``--sample N`` per model, or every
cell), and compares every number with the row's within the model's declared tolerance
(``ModelSpec.numbers_tolerance``). When nothing moved, every planned row of the folder gets the current task-version
token, model revision and code digest (its numbers, times and finish stamps untouched), under the key the current
rule gives it (the cell files beside a re-keyed row move with it). When something moved, nothing is written and the
moved cells are listed: the change needs a version bump, and the folder a regeneration.

A re-stamp also fills the provenance columns (docs/records.md) that rows written before them lack, as far as they
derive from the cell without recomputing it (the data fingerprint, the consumed lengths and rate, the windows
planned); the measured ones (inference and training seconds) stay empty on such rows, and the report says so. An ok
row whose scored windows differ from the planned ones counts as moved. The rewritten file has the current header.
"""

from __future__ import annotations

import json
import math
import random
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from harness.records.cell_files import FOLDERS
from harness.records.configurations import parse_info, with_identity
from harness.records.keys import KEY_FIELDS, row_key
from harness.records.store import MEASURED, PROVENANCE, RecordStore, data_of, format_value
from harness.registry.versions import protocol_version, stamped, task_version
from harness.run.cells import WINDOW_ERRORS, run_cell
from harness.run.provenance import consumed, planned_problem
from harness.run.runner import RunConfig, check_arguments, code_version, plan
from harness.run.threads import single_thread_unless_set
from models.registry import get_spec

COMPARED = ("rmse", "mae", "sse", "sae", "n_points", "macro_f1", "macro_auroc", "n_windows", "skipped_missing",
            "short_recordings")
WINDOW_FOLDER = "window_errors"


@dataclass
class RestampReport:
    """What a re-stamp found and did."""

    folder: Path
    planned: int = 0
    found: int = 0  # planned cells with a row in the folder
    verified: int = 0  # cells recomputed and compared
    moved: list[str] = field(default_factory=list)  # one line per cell whose numbers differ beyond tolerance
    provenance: int = 0  # rows whose provenance columns the re-stamp filled (derived, not recomputed)
    unmeasured: int = 0  # of those, rows that predate the measured ones (inference, training seconds): left empty
    underived: list[str] = field(default_factory=list)  # models whose consumed lengths could not be derived
    restamped: int = 0
    rekeyed: int = 0
    older: int = 0  # rows of an older task version: out of date, never re-stamped
    seconds: float = 0.0

    def line(self) -> str:
        if self.moved:
            return (f"{self.folder}: {len(self.moved)} of {self.verified} verified cells MOVED; nothing re-stamped "
                    f"(bump the version that covers the change and regenerate the folder)")
        return (f"{self.folder}: {self.verified} of {self.found} cells verified, 0 moved; {self.restamped} rows "
                f"re-stamped ({self.rekeyed} re-keyed){f', {self.older} rows of older versions left' if self.older else ''}"
                f" in {self.seconds:.0f} s{self._provenance_line()}")

    def _provenance_line(self) -> str:
        if not self.provenance:
            return ""
        line = (f"; provenance filled on {self.provenance} rows (data fingerprint, consumed lengths and rate, "
                f"windows planned)")
        if self.unmeasured:
            line += (f"; inference and training seconds left empty on {self.unmeasured} rows that predate them "
                     "(only a run measures them)")
        if self.underived:
            line += f"; consumed lengths left empty for {', '.join(self.underived)} (the model did not load)"
        return line


def restamp(config: RunConfig, sample: int | None = 2, seed: int = 0, dry_run: bool = False,
            log: Callable[[str], None] = print) -> RestampReport:
    """Verify a sample of ``config.out``'s cells (``sample`` per model; None: every cell) and re-stamp the folder's
    planned rows when none moved. ``config``: the flags of the run that made the folder."""
    started = time.perf_counter()
    check_arguments(config)
    single_thread_unless_set()
    out = Path(config.out)
    report = RestampReport(out)
    _derivations.clear()  # a dataset or model may have changed since an earlier re-stamp in this process
    store = RecordStore(config.records_path)
    cells, _ = plan(config)
    report.planned = len(cells)
    rows = store.rows()
    by_new_key = {_new_key(row): key for key, row in rows.items()}
    found: list[tuple[Any, dict[str, object], str]] = []  # (cell, fields, the row's key in the folder)
    for cell, fields in cells:
        key = str(fields["key"])
        stored = key if key in rows else by_new_key.get(key)
        if stored is not None:
            found.append((cell, fields, stored))
    report.found = len(found)
    version = task_version(config.task_object)
    current = [(c, f, k) for c, f, k in found
               if protocol_version(config.task, rows[k]["protocol"]) == version]
    report.older = len(found) - len(current)
    chosen = _sample(current, sample, seed)
    for cell, fields, key in current:  # a count that differs from the plan is a moved cell (the row is no result)
        planned = _derived(config, cell, report).get("windows_planned")
        scored = rows[key]["n_windows"]
        problem = planned_problem({"status": rows[key]["status"], "n_windows": int(scored) if scored else None},
                                  planned if isinstance(planned, int) else None)
        if problem:
            report.moved.append(f"{_cell_name(fields)}: {problem}")
    with tempfile.TemporaryDirectory(prefix="restamp-") as cache:
        for cell, fields, key in chosen:
            result = run_cell(replace(cell, cache_dir=cache))
            result.pop(WINDOW_ERRORS, None)
            report.verified += 1
            problem = _moved(rows[key], result, _tolerance(cell.model, config.task_object))
            if problem:
                report.moved.append(f"{_cell_name(fields)}: {problem}")
            log(f"[restamp] {report.verified}/{len(chosen)} {fields['model']} {fields['fold']} {fields['setting']} "
                f"{fields['condition']}: {'MOVED ' + problem if problem else 'same'}")
    if not report.moved and not dry_run:
        changes = {}
        identities: dict[str, dict[str, Any]] = {}  # model -> its code digest and revision now
        for cell, fields, key in current:
            row = rows[key]
            identity = dict(parse_info(row["model_info"]).get("identity") or {})
            if cell.model not in identities:
                identities[cell.model] = _identity_now(config, cell.model)
            now = identities[cell.model]
            identity.update(code=now["code"], revision=now["revision"])
            new = {**row, "protocol": stamped(config.task, row["protocol"], version), "key": str(fields["key"]),
                   "model_info": with_identity(row["model_info"], identity), "code_version": code_version(),
                   **_provenance(config, cell, row, report)}
            if new["key"] != key:
                _move_cell_files(out, key, new["key"])
                report.rekeyed += 1
            changes[key] = new
        report.restamped = store.replace_rows(changes)
    report.seconds = time.perf_counter() - started
    return report


def _identity_now(config: RunConfig, model: str) -> dict[str, Any]:
    """The code digest and revision the model's rows of this task would record now."""
    from harness.records.code_identity import row_code

    revision = 1 if model in config.task_object.model_free else get_spec(model).revision
    return {"code": row_code(model, config.task), "revision": revision}


def _provenance(config: RunConfig, cell: Any, row: dict[str, str], report: RestampReport) -> dict[str, str]:
    """The provenance columns a row lacks that can be derived without recomputing it: the data fingerprint (its
    protocol's), the consumed lengths and rate (the cell, the dataset, the model's ``consumed``), the windows
    planned (the task's selection). The measured ones (inference, training seconds) stay as they are: empty on a
    row that predates them."""
    missing = [c for c in PROVENANCE if not row.get(c) and c not in MEASURED]
    if not missing:
        return {}
    derived = {"data_fingerprint": data_of(row["protocol"]), **_derived(config, cell, report)}
    filled = {c: format_value(derived.get(c)) for c in missing}
    report.provenance += 1
    report.unmeasured += not any(row.get(c) for c in MEASURED)
    return filled


_derivations: dict[Any, dict[str, object]] = {}


def _derived(config: RunConfig, cell: Any, report: RestampReport) -> dict[str, object]:
    """The consumed lengths and rate and the windows planned of a cell (each computed once)."""
    if cell not in _derivations:
        from harness.run.cells import cached_dataset, cached_model

        task = config.task_object
        dataset = cached_dataset(cell.dataset, cell.data_root)
        out: dict[str, object] = {"windows_planned": task.planned_windows(cell, dataset)}
        model = None
        if cell.model not in task.model_free:
            try:
                model = cached_model(cell.model, cell.model_options, cell.model_id)
            except Exception:  # a model that does not load here: its lengths stay empty, and the line says so
                if cell.model not in report.underived:
                    report.underived.append(cell.model)
                _derivations[cell] = out
                return out
        _derivations[cell] = {**out, **consumed(task, cell, dataset, model)}
    return _derivations[cell]


def _cell_name(fields: dict[str, object]) -> str:
    """A cell as the report lines name it."""
    return (f"{fields['model']} {fields['dataset']} {fields['fold']} {fields['setting']} {fields['condition']} "
            f"seed {fields['seed']}")


def _new_key(row: dict[str, str]) -> str:
    """The key the current rule gives a stored row (its fields and identity digest)."""
    identity = parse_info(row.get("model_info")).get("identity") or {}
    return row_key(str(identity.get("model_id", "")) if isinstance(identity, dict) else "",
                   **{f: row[f] for f in KEY_FIELDS})


def _sample(found: list, per_model: int | None, seed: int) -> list:
    """``per_model`` cells of each model with a row (its status is compared too), drawn with a seeded generator
    (None: every cell)."""
    if per_model is None:
        return list(found)
    by_model: dict[str, list] = {}
    for item in found:
        by_model.setdefault(item[0].model, []).append(item)
    rng = random.Random(seed)
    chosen = []
    for model in by_model:
        items = sorted(by_model[model], key=lambda item: item[2])
        chosen += rng.sample(items, min(per_model, len(items)))
    return chosen


def _tolerance(model: str, task: Any) -> float:
    if model in task.model_free:
        return 0.0
    return get_spec(model).numbers_tolerance()


def _moved(row: dict[str, str], result: dict[str, object], tolerance: float) -> str:
    """Why ``result`` differs from the stored ``row`` beyond ``tolerance`` (relative; 0: exactly), or ""."""
    if str(result.get("status")) != row["status"]:
        return f"status {row['status']} -> {result.get('status')}"
    for name in COMPARED:
        before, now = _number(row.get(name)), _number(result.get(name))
        if before is None and now is None:
            continue
        if before is None or now is None or not _close(before, now, tolerance):
            return f"{name} {row.get(name)!r} -> {result.get(name)!r}"
    if tolerance == 0.0 and _details(row.get("details")) != _details(result.get("details")):
        return "details differ"
    return ""


def _number(value: object) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _close(a: float, b: float, tolerance: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if tolerance == 0.0:
        return repr(a) == repr(b) or a == b
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1e-12)


def _details(value: object) -> object:
    if isinstance(value, dict):
        return json.loads(json.dumps(value, sort_keys=True, default=str))
    try:
        return json.loads(str(value)) if value else {}
    except ValueError:
        return str(value)


def _move_cell_files(out: Path, old: str, new: str) -> None:
    for folder in (WINDOW_FOLDER, *FOLDERS):
        path = out / folder / f"{old}.npz"
        if path.is_file():
            path.replace(out / folder / f"{new}.npz")
