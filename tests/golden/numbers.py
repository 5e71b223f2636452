"""Compute, compare and write the golden numbers of a task version or a model revision.

A golden file holds what one version gave: ``tests/golden/<task>-v<N>.json`` (every row of a small run of the task:
its key fields, status, numbers, details and per-window sums) and ``tests/golden/model-<name>-r<R>.json`` (a
numeric fingerprint of the model's forecasts of fixed windows). The numbers of now must equal those of the file of
the current version within the row's model's declared tolerance (``ModelSpec.numbers_tolerance``), compared as
``harness restamp`` compares a folder's cells (``harness.run.restamp``). A change that moves them bumps the version
and writes a new file; a file once committed is never edited (:func:`edited_since_added`).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from tests.golden.cases import MODEL_CASES, TASK_CASES

DIRECTORY = Path(__file__).resolve().parent
ROOT = DIRECTORY.parents[1]
MODEL_PREFIX = "model-"
ROW_KEY = ("dataset", "fold", "setting", "condition", "model", "seed")
FINGERPRINT = ("size", "sum", "abs_sum", "sq_sum", "min", "max")
FLAT = "_flat"  # in memory only (never written): the forecasts now, read at a golden file's indices
N_VALUES = 8  # values kept of each fingerprinted array, among those far from zero (relative tolerances hold there)


# -- names, versions and files ------------------------------------------------------------------------------------
def names() -> list[str]:
    """Every golden: the built-in tasks, then ``model-<name>`` of every model case."""
    return [*TASK_CASES, *(MODEL_PREFIX + model for model in MODEL_CASES)]


def canonical(name: str) -> str:
    """``forecasting`` or ``model-soter`` (a bare model name is taken as its model golden)."""
    if name in names():
        return name
    if name in MODEL_CASES:
        return MODEL_PREFIX + name
    raise KeyError(f"no golden called {name!r}; known: {', '.join(names())}")


def is_model(name: str) -> bool:
    return name.startswith(MODEL_PREFIX) and name not in TASK_CASES


def version(name: str) -> int:
    """The task's declared version, or the model's declared revision."""
    if is_model(name):
        from models.registry import get_spec

        return get_spec(name.removeprefix(MODEL_PREFIX)).revision
    from harness.registry.versions import task_version

    return task_version(name)


def stem(name: str) -> str:
    """``forecasting-v1`` / ``model-soter-r1``: the file name without ``.json``, and how messages name a version."""
    return f"{name}-{'r' if is_model(name) else 'v'}{version(name)}"


def path_of(name: str, directory: Path = DIRECTORY) -> Path:
    return Path(directory) / f"{stem(name)}.json"


def shown(path: Path) -> str:
    """``path`` as messages name it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def bump_hint(name: str) -> str:
    if is_model(name):
        return f"bump the revision of {name.removeprefix(MODEL_PREFIX)!r} (ModelSpec.revision)"
    return f"bump TASK_VERSIONS[{name!r}] (or the model's revision)"


def missing_message(name: str, directory: Path = DIRECTORY) -> str:
    return (f"no golden file for {stem(name)} ({shown(path_of(name, directory))}): write it with `python -m tests.golden "
            f"write {name}` and commit it with the change that declared the version")


# -- computing ----------------------------------------------------------------------------------------------------
def compute(name: str, models: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The golden content of ``name`` now (``models``: only these models' rows of a task, for a cheaper look)."""
    name = canonical(name)
    body = _model_numbers(name.removeprefix(MODEL_PREFIX)) if is_model(name) else _task_numbers(name, models)
    return {"name": name, "kind": "model" if is_model(name) else "task",
            ("revision" if is_model(name) else "version"): version(name), "stem": stem(name), **body}


def _task_numbers(task: str, models: tuple[str, ...] | None) -> dict[str, Any]:
    from harness.records.window_store import read_window_errors
    from harness.run.runner import RunConfig, execute
    from protocols.datasets.folder import write_folder_dataset

    case = TASK_CASES[task]
    fields = dict(case.fields)
    if models is not None:
        fields["models"] = tuple(m for m in fields["models"] if m in models)
    with tempfile.TemporaryDirectory(prefix=f"golden-{task}-") as tmp, _cache_in(Path(tmp) / "cache"):
        dataset = case.dataset()
        folder = Path(tmp) / dataset.name
        write_folder_dataset(dataset, folder)
        out = Path(tmp) / "out"
        execute(RunConfig(task=task, datasets=(str(folder),), out=out, options=case.options, progress=False, **fields),
                log=lambda message: None)
        with open(out / "records.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        found = []
        for row in rows:
            arrays = read_window_errors(out, row["key"]) if row["status"] == "ok" else None
            found.append(_golden_row(row, arrays or {}))
    if len({_row_id(row) for row in found}) != len(found):
        raise ValueError(f"{task}: two rows share their key fields {ROW_KEY}: the golden file could not tell them apart")
    return {"case": {"models": list(fields["models"]), "seeds": list(fields.get("seeds") or []),
                     "options": {k: _plain(v) for k, v in sorted(case.options.items())}},
            "rows": sorted(found, key=_row_id)}


def _golden_row(row: dict[str, str], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    from harness.run.restamp import COMPARED, _details, _number

    numbers = {name: _number(row.get(name)) for name in COMPARED}
    kept = {name: _sums(array) for name, array in sorted(arrays.items()) if np.asarray(array).dtype.kind in "fiub"}
    return {**{f: row[f] for f in ROW_KEY}, "status": row["status"], **numbers, "details": _details(row["details"]),
            "window_sums": kept}


def _sums(array: np.ndarray) -> float:
    return float(np.sum(np.asarray(array, dtype=np.float64)))


def _model_numbers(model: str) -> dict[str, Any]:
    from baselines.testing import series
    from models.registry import load_model
    from protocols import interface

    case = MODEL_CASES[model]
    loaded = load_model(model, **case.options)
    forecasts, flat = {}, {}
    for number, setting in enumerate(case.settings):
        sines = series(case.batch, case.channels, setting.context, seed=number)  # its values, timed at the rate
        times = np.arange(setting.context + setting.horizon, dtype=np.float64) / case.rate
        batch = interface.SeriesBatch(sines.values, np.tile(times[:setting.context], (case.batch, 1)))
        query = np.tile(times[setting.context:], (case.batch, 1))
        prediction = np.asarray(interface.forecast(loaded, batch, query), dtype=np.float64)
        forecasts[setting.name], flat[setting.name] = fingerprint(prediction), prediction.ravel()
    return {"case": {"batch": case.batch, "channels": case.channels, "rate": case.rate, "options": case.options,
                     "windows": "the values of baselines.testing.series(batch, channels, context, seed=i) for the "
                                "i-th setting, at the rate"},
            "forecasts": forecasts, FLAT: flat}


def fingerprint(array: np.ndarray) -> dict[str, Any]:
    """Sums, extremes and a few values of ``array``: its values far from zero (>= a quarter of its largest
    magnitude), evenly spread, so that a relative tolerance means the same for each."""
    flat = np.asarray(array, dtype=np.float64).ravel()
    big = np.flatnonzero(np.abs(flat) >= 0.25 * np.max(np.abs(flat))) if flat.size else np.array([], dtype=int)
    chosen = big[np.linspace(0, big.size - 1, min(N_VALUES, big.size)).astype(int)] if big.size else big
    return {"shape": list(np.shape(array)), "size": int(flat.size), "sum": float(flat.sum()),
            "abs_sum": float(np.abs(flat).sum()), "sq_sum": float((flat ** 2).sum()),
            "min": float(flat.min()) if flat.size else None, "max": float(flat.max()) if flat.size else None,
            "values": {str(int(i)): float(flat[i]) for i in chosen}}


@contextmanager
def _cache_in(folder: Path) -> Iterator[None]:
    """``$SOTER_BENCH_CACHE`` set to an empty folder for the block: nothing computed before is served."""
    from protocols.cache import CACHE_ENV

    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = before


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    name = getattr(value, "name", None)
    return name if isinstance(name, str) and not isinstance(value, (str, int, float)) else value


def _row_id(row: dict[str, Any]) -> str:
    return "|".join(str(row[f]) for f in ROW_KEY)


# -- comparing ----------------------------------------------------------------------------------------------------
def moved(golden: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """One line per number of ``now`` that differs from ``golden`` beyond its model's declared tolerance."""
    if golden.get("kind") == "model":
        from models.registry import get_spec

        tolerance = get_spec(golden["name"].removeprefix(MODEL_PREFIX)).numbers_tolerance()
        problems = []
        for setting in sorted(set(golden["forecasts"]) | set(now["forecasts"])):
            before, after = golden["forecasts"].get(setting), now["forecasts"].get(setting)
            if before is None or after is None:
                problems.append(f"{setting}: {'no forecast now' if after is None else 'not in the golden file'}")
                continue
            flat = now.get(FLAT, {}).get(setting)
            problems += [f"{setting} {line}" for line in _fingerprint_moved(before, after, flat, tolerance)]
        return problems
    return _rows_moved(golden, now)


def _rows_moved(golden: dict[str, Any], now: dict[str, Any]) -> list[str]:
    from harness.registry.tasks import get_task
    from harness.run.restamp import _moved, _tolerance

    task = get_task(golden["name"])
    before = {_row_id(r): r for r in golden["rows"]}
    after = {_row_id(r): r for r in now["rows"]}
    problems = [f"{key}: not computed now" for key in sorted(set(before) - set(after))]
    problems += [f"{key}: not in the golden file" for key in sorted(set(after) - set(before))]
    for key in sorted(set(before) & set(after)):
        row, result = before[key], after[key]
        tolerance = _tolerance(row["model"], task)
        problem = _moved(row, result, tolerance) or _leaves_moved(row["details"], result["details"], tolerance,
                                                                  "details") \
            or _leaves_moved(row["window_sums"], result["window_sums"], tolerance, "window sums")
        if problem:
            problems.append(f"{key}: {problem}")
    return problems


def _fingerprint_moved(before: dict[str, Any], after: dict[str, Any], flat: np.ndarray | None,
                      tolerance: float) -> list[str]:
    """How a forecast's fingerprint moved; ``flat``: the forecast now, read at the golden file's chosen indices."""
    if before["shape"] != after["shape"]:
        return [f"shape {before['shape']} -> {after['shape']}"]
    problem = _leaves_moved({k: before[k] for k in FINGERPRINT}, {k: after[k] for k in FINGERPRINT}, tolerance, "")
    if not problem and flat is not None:
        now = {i: float(flat[int(i)]) for i in before["values"]}
        problem = _leaves_moved(before["values"], now, tolerance, "value at")
    return [problem] if problem else []


def _leaves_moved(before: Any, after: Any, tolerance: float, where: str) -> str:
    """Where two JSON values differ: numbers beyond ``tolerance`` (relative; 0: exactly), anything else at all."""
    from harness.run.restamp import _close

    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            if key not in before or key not in after:
                return f"{where} {key}: {'missing now' if key not in after else 'new'}"
            problem = _leaves_moved(before[key], after[key], tolerance, f"{where} {key}".strip())
            if problem:
                return problem
        return ""
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (a, b) in enumerate(zip(before, after)):
            problem = _leaves_moved(a, b, tolerance, f"{where}[{i}]")
            if problem:
                return problem
        return ""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (before, after))
    if numeric and _close(float(before), float(after), tolerance):
        return ""
    if not numeric and before == after:
        return ""
    return f"{where} {before!r} -> {after!r}"


def moved_message(name: str, lines: list[str], shown: int = 12) -> str:
    more = f"\n  ... and {len(lines) - shown} more" if len(lines) > shown else ""
    return (f"numbers of {stem(name)} moved: {bump_hint(name)} and regenerate the golden file, or undo the change\n  "
            + "\n  ".join(lines[:shown]) + more)


def read(name: str, directory: Path = DIRECTORY) -> dict[str, Any] | None:
    path = path_of(name, directory)
    return json.loads(path.read_text()) if path.is_file() else None


def check(name: str, now: dict[str, Any], directory: Path = DIRECTORY, models: tuple[str, ...] | None = None) -> str:
    """Why the numbers of now fail the golden file of the current version ("" when they hold); ``models``: compare
    these models' rows only (``now`` computed for them alone)."""
    golden = read(name, directory)
    if golden is None:
        return missing_message(name, directory)
    if models is not None and "rows" in golden:
        golden = {**golden, "rows": [row for row in golden["rows"] if row["model"] in models]}
    lines = moved(golden, now)
    return moved_message(name, lines) if lines else ""


def dumps(content: dict[str, Any]) -> str:
    """A golden file's text: what was computed, less what is kept in memory only; the same bytes for the same
    numbers (keys sorted, floats written as Python reads them back)."""
    return json.dumps({k: v for k, v in content.items() if not k.startswith("_")}, indent=1, sort_keys=True) + "\n"


def write(name: str, now: dict[str, Any], directory: Path = DIRECTORY) -> tuple[bool, str]:
    """Write the golden file of the current version when it has none; (False, why) when one exists whose numbers
    differ (an existing file is never rewritten: bump the version first)."""
    path = path_of(name, directory)
    golden = read(name, directory)
    if golden is not None:
        lines = moved(golden, now)
        if lines:
            return False, (f"{shown(path)} holds other numbers for {stem(name)}: bump the version first ({bump_hint(name)}); "
                           f"a golden file is never rewritten\n  " + "\n  ".join(lines[:12]))
        return True, f"{shown(path)}: up to date (left as it is)"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(now))
    return True, f"wrote {shown(path)}"


# -- history ------------------------------------------------------------------------------------------------------
def edited_since_added(root: Path = ROOT, folder: str = "tests/golden") -> tuple[str | None, list[str]]:
    """(why the history cannot be read, or None; one line per tracked golden file whose content is not the one
    the commit that added it gave it). A golden file records what a version gave: editing it would hide a move."""
    import shutil

    if shutil.which("git") is None:
        return "git is not installed", []

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=root, capture_output=True)

    inside = git("rev-parse", "--is-inside-work-tree")
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return f"{root} is not a git work tree", []
    if git("rev-parse", "--is-shallow-repository").stdout.strip() != b"false":
        return "a shallow clone: the commits that added the golden files may be missing", []
    problems = []
    for path in git("ls-files", "-z", "--", f"{folder}/*.json").stdout.decode().split("\0"):
        if not path:
            continue
        added = git("log", "--diff-filter=A", "--format=%H", "--", path).stdout.decode().split()
        if not added:
            continue  # staged, not yet committed: nothing to compare with
        first = git("show", f"{added[0]}:{path}")
        if first.returncode != 0:
            return f"git show {added[0][:12]}:{path} failed: {first.stderr.decode().strip()}", []
        file = Path(root) / path
        if not file.is_file() or file.read_bytes() != first.stdout:
            problems.append(f"{path} {'was removed' if not file.is_file() else 'was edited'} since {added[0][:12]} "
                            f"added it: a golden file is never edited; bump the version and write a new file "
                            f"(python -m tests.golden write), or restore it (git checkout {added[0][:12]} -- {path})")
    return None, problems
