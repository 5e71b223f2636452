"""Shards of a run for job arrays (``run --shard K/N``), their merge, and whether a store holds its whole plan.

A shard is a fixed part of the run's cells, the same on every node: the partition depends on the plan (the
cells and their keys, from the same code and data everywhere) and on the committed calibration only
(:mod:`harness.run.costs`), never on a node's own records, which differ between shards. Each shard writes its own
``--out``; beside its records it keeps the plan's manifest (``plan-TASK-DIGEST.json``: which shard of how many, and every
key of the full plan), so that ``merge`` and ``table`` can tell a store that lacks cells from a complete one.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import shutil
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from harness.records.cell_files import FOLDERS as CELL_FOLDERS
from harness.records.dataset_sources import SOURCES_FILE
from harness.records.store import COLUMNS, MEASURED, TIMING, RecordStore  # noqa: F401 (TIMING: re-exported)
from harness.records.window_store import FOLDER as WINDOW_FOLDER
from harness.run.executor import LOST_WORKER
from protocols.specs import SpecError

MANIFEST = "plan-{task}-{digest}.json"  # one per plan: two shard sets (e.g. other --models) keep a manifest each


def parse_shard(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N) with 0 <= K < N: the Slurm array index ``$SLURM_ARRAY_TASK_ID`` of ``--array=0-(N-1)``."""
    k, sep, n = str(text).partition("/")
    if not sep or not k.strip().isdigit() or not n.strip().isdigit() or int(n) < 1 or int(k) >= int(n):
        raise SpecError(f"--shard expects K/N with 0 <= K < N (e.g. 0/4 to 3/4 for four shards), got {text!r}")
    return int(k), int(n)


def check_shards(shards: int, cells: int) -> None:
    """More shards than cells would leave shards with nothing to do (and the partition's table of N loads would
    fill the memory for an N of 10^12): refused before anything is written."""
    if shards > cells:
        raise SpecError(f"--shard K/{shards}: the plan has {cells} cell(s), so N can be at most {cells}")


def partition(costs: Sequence[tuple[str, float | None]], shards: int) -> dict[str, int]:
    """Key -> shard: longest processing time first (the costliest cell to the least loaded shard), ties broken by
    the key, so that every node computes the same partition. A cell of unknown cost counts as the median known
    cell (1 s when none is known)."""
    known = [c for _, c in costs if c is not None]
    fill = statistics.median(known) if known else 1.0
    order = sorted(((fill if c is None else float(c), key) for key, c in costs), key=lambda t: (-t[0], t[1]))
    loads = [(0.0, i) for i in range(shards)]  # (load, shard): a heap, lowest load then lowest index first
    heapq.heapify(loads)
    out: dict[str, int] = {}
    for cost, key in order:
        load, shard = heapq.heappop(loads)
        out[key] = shard
        heapq.heappush(loads, (load + cost, shard))
    return out


def shard_cells(cells: Sequence[tuple[object, dict]], shard: int, shards: int,
                loaded: dict | None = None) -> list[tuple[object, dict]]:
    """The cells (with their key fields) of shard ``shard`` of ``shards``, in the plan's order, balanced by each
    cell's cost from the calibration (:mod:`harness.run.costs`; the same on every node)."""
    from harness.run.costs import cell_cost, cell_work, random_weights, read_calibration

    check_shards(shards, len(cells))
    rates = read_calibration()
    work = cell_work((cell for cell, _ in cells), loaded)

    def cost(cell) -> float | None:
        samples, calls = work[cell] or (None, 0)
        return cell_cost(cell.model, cell.setting, samples, rates, random_weights(cell), calls=calls).cpu

    costs = [(str(fields["key"]), cost(cell)) for cell, fields in cells]
    owner = partition(costs, shards)
    return [(cell, fields) for cell, fields in cells if owner[str(fields["key"])] == shard]


def plan_digest(planned: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(planned).encode()).hexdigest()[:12]


def manifest_path(out: Path, task: str, planned: Sequence[str]) -> Path:
    return Path(out) / MANIFEST.format(task=task, digest=plan_digest(planned))


def write_manifest(out: Path, task: str, planned: Sequence[str], shards: int, shard: int | None = None,
                   merged: Iterable[int] = (), folds: Mapping[str, Sequence[str]] | None = None) -> None:
    """The full plan's keys, and which shard(s) of how many this store holds (atomically replaced); ``folds``: each
    dataset's folds in the plan, so that a table of a shard's rows names the folds no row of the shard has."""
    path = manifest_path(out, task, planned)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"task": task, "shards": shards, "shard": shard, "merged": sorted(set(merged)),
            "cells": len(planned), "planned": list(planned)}
    if folds:
        body["folds"] = {dataset: list(values) for dataset, values in folds.items()}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(body, indent=1) + "\n")
    tmp.replace(path)


def read_manifests(out: Path) -> list[dict]:
    """Every plan manifest in ``out`` (one per plan run there in shards)."""
    found = []
    for path in sorted(Path(out).glob(MANIFEST.format(task="*", digest="*"))):
        try:
            body = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SpecError(f"{path}: unreadable plan manifest ({exc})") from None
        if not isinstance(body, dict) or not isinstance(body.get("planned"), list):
            raise SpecError(f"{path}: not a plan manifest (no 'planned' list)")
        if body.get("task") is None or not isinstance(body.get("shards"), int):
            raise SpecError(f"{path}: not a plan manifest (no task or shard count)")
        found.append(body)
    return found


def planned_folds(out: Path, task: str | None = None) -> dict[str, list[str]]:
    """Each dataset's folds in the plans of ``out``'s manifests (of ``task``; manifests written before they named
    their folds add none)."""
    folds: dict[str, list[str]] = {}
    for body in read_manifests(out):
        if task is None or body["task"] == task:
            for dataset, values in (body.get("folds") or {}).items():
                folds[dataset] = list(dict.fromkeys([*folds.get(dataset, []), *map(str, values)]))
    return folds


def partial_lines(out: Path, present: Mapping[str, Mapping[str, str]], task: str | None = None) -> list[str]:
    """One line per planned task in ``out`` whose plan has cells without a result: no row (a shard alone, a merge
    that missed a shard or a shard that stopped early) or the ``error`` row of a lost worker (the cell was never
    computed; a rerun of its shard retries it). Empty: every planned cell has its row (or nothing ran in shards)."""
    lines = []
    for body in read_manifests(out):
        if task is not None and body["task"] != task:
            continue
        missing = [k for k in body["planned"] if k not in present]
        lost = [k for k in body["planned"] if k in present and is_lost(present[k])]
        n = body["shards"]
        if missing:
            if body.get("shard") is not None:
                which = f"it is shard {body['shard']}/{n} alone"
            else:
                absent = sorted(set(range(n)) - set(body.get("merged", ())))
                which = (f"shard(s) {', '.join(f'{k}/{n}' for k in absent)} not merged" if absent
                         else "every shard merged, but some stopped before their last cell")
            lines.append(f"partial: {body['task']}: {len(missing)} of {len(body['planned'])} planned cells have no "
                         f"row in {out} ({which}); the tables cover the rest only")
        if lost:
            lines.append(f"partial: {body['task']}: {len(lost)} of {len(body['planned'])} planned cells have the "
                         f"error row of a lost worker in {out} (never computed): rerun their shard, then merge again")
    return lines


def is_lost(row: Mapping[str, str]) -> bool:
    """An ``error`` row written for a cell whose worker died under it: no result, retried by a rerun."""
    return row.get("status") == "error" and str(row.get("error", "")).startswith(LOST_WORKER)


@dataclass
class MergeReport:
    out: Path
    written: int = 0  # rows OUT did not hold (new keys, and lost-worker rows replaced by a finished row)
    already: int = 0  # rows OUT held already, equal
    replaced: int = 0  # of those written: keys whose error row in OUT a finished row superseded
    partial: list[str] = field(default_factory=list)


def _values(row: Mapping[str, str]) -> dict[str, str]:
    return {c: row[c] for c in COLUMNS if c not in TIMING}


def merge(out: Path, shard_dirs: Sequence[Path]) -> MergeReport:
    """Merge the stores of a run's shards into ``out``: every key once (an ``ok`` row supersedes an ``error`` row of
    its key, as a rerun of the shard does), with its per-window and cell files. Refused, with
    nothing written, when two ``ok`` rows of one key differ beyond :data:`TIMING`, or when the folders hold shards
    of different plans. OUT's records are rewritten (current rows only) in the order of a serial run's records
    (:func:`serial_order`), whatever the order of the folders and of earlier merges into OUT."""
    out = Path(out)
    sources: list[tuple[Path, RecordStore, list[dict]]] = []
    for folder in shard_dirs:
        folder = Path(folder)
        records = folder / "records.csv"
        if not records.is_file():
            raise SpecError(f"{folder}: no records.csv (not a shard's --out, or the shard has not started)")
        manifests = read_manifests(folder)
        if not manifests:
            raise SpecError(f"{folder}: no plan manifest (plan-TASK-*.json): not written by `run --shard K/N`")
        sources.append((folder, RecordStore(records, readonly=True), manifests))
    plans: dict[tuple[str, str], dict] = {}  # (task, plan digest) -> manifest: shard sets of several plans merge
    merged: dict[tuple[str, str], set[int]] = {}
    for folder, _, manifests in sources:
        for body in manifests:
            plan = (body["task"], plan_digest(body["planned"]))
            first = plans.setdefault(plan, body)
            if body["shards"] != first["shards"]:
                raise SpecError(f"{folder}: its {body['task']} plan was cut into {body['shards']} shards, another "
                                f"folder's into {first['shards']}; merge the shards of one command only")
            merged.setdefault(plan, set()).update(
                [body["shard"]] if body.get("shard") is not None else body.get("merged", ()))
    target = RecordStore(out / "records.csv", readonly=True) if (out / "records.csv").is_file() else None
    held = target.rows() if target is not None else {}
    rows: dict[str, tuple[dict[str, str], Path]] = {key: (row, out) for key, row in held.items()}
    for folder, store, _ in sources:
        for key, row in store.rows().items():
            _agree(rows, key, row, folder)
    current = {key: row for key, (row, _) in rows.items()}
    order = [k for body in plans.values() for k in serial_order(body["planned"], current)]
    order += [k for k in held if k not in set(order)]
    order += sorted(set(rows) - set(order))
    order = list(dict.fromkeys(order))
    report = MergeReport(out)
    for key in order:
        row, _ = rows[key]
        if key in held and _values(held[key]) == _values(row):
            report.already += 1
        else:
            report.written += 1
            report.replaced += key in held
    for key in order:
        row, folder = rows[key]
        if folder != out:
            _copy_files(folder, out, key)
    if report.written:  # every row again, so that the file's order is the serial run's after any merge
        _rewrite(out / "records.csv", [rows[k][0] for k in order])
    _copy_sources([f for f, _, _ in sources], out)
    for plan, body in plans.items():
        write_manifest(out, body["task"], body["planned"], body["shards"], merged=merged[plan], folds=body.get("folds"))
    report.partial = partial_lines(out, RecordStore(out / "records.csv", readonly=True).rows())
    return report


def serial_order(planned: Sequence[str], rows: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The planned keys that have a row, in the order a serial run (``--jobs 1``, into a new folder) writes them:
    its ``unavailable`` rows first, while it plans, then its cells with two of each model first
    (:func:`harness.run.progress.cost_probes_first`, nothing measured yet)."""
    from harness.run.progress import cost_probes_first

    present = [k for k in planned if k in rows]
    unavailable = [k for k in present if rows[k]["status"] == "unavailable"]
    cells = [k for k in present if rows[k]["status"] != "unavailable"]
    return unavailable + cost_probes_first(cells, lambda key: rows[key]["model"], {})


def _rewrite(path: Path, rows: Sequence[Mapping[str, str]]) -> None:
    """``path`` holding ``rows`` only, in their order: written beside it, then moved over it (a reader sees the old
    file or the new one, never a mix)."""
    fresh = path.with_name(f".{path.name}.merging")
    fresh.unlink(missing_ok=True)
    try:
        store = RecordStore(fresh)
        for row in rows:
            store.write(dict(row))
        fresh.replace(path)
    finally:
        fresh.unlink(missing_ok=True)


def _agree(rows: dict[str, tuple[dict[str, str], Path]], key: str, row: dict[str, str], folder: Path) -> None:
    """Keep one row of ``key``: an ``ok`` row supersedes any other status (a rerun retried the cell); of two rows
    that are not ``ok`` the later one is kept (as the store keeps it); two ``ok`` rows must agree."""
    if key not in rows:
        rows[key] = (row, folder)
        return
    other, where = rows[key]
    if _values(other) == _values(row):
        return
    if other["status"] == "ok" and row["status"] == "ok":
        raise SpecError(f"conflicting rows for key {key} ({row['model']}, {row['dataset']}, fold {row['fold']}, "
                        f"{row['setting']}): {where} and {folder} differ in {_differing(other, row)}; nothing merged")
    if row["status"] == "ok" or (other["status"] != "ok" and row["finished_at"] > other["finished_at"]):
        rows[key] = (row, folder)


def _differing(a: dict[str, str], b: dict[str, str]) -> str:
    return ", ".join(c for c in COLUMNS if c not in TIMING and a[c] != b[c])


def _copy_files(source: Path, out: Path, key: str) -> None:
    """A row's per-window errors and cell files, before its row (as a run writes them)."""
    for folder in (WINDOW_FOLDER, *CELL_FOLDERS):
        src = source / folder / f"{key}.npz"
        if src.is_file():
            (out / folder).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, out / folder / src.name)


def _copy_sources(folders: Sequence[Path], out: Path) -> None:
    """The user datasets' declared source databases (``dataset_sources.json``), the union of the shards'."""
    known: dict[str, list[str]] = {}
    for folder in [out, *folders]:
        path = folder / SOURCES_FILE
        if path.is_file():
            known.update(json.loads(path.read_text()))
    if known:
        (out / SOURCES_FILE).write_text(json.dumps(dict(sorted(known.items())), indent=1) + "\n")
