"""Plan cells, skip finished ones, run the rest through an executor, record every result."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tqdm import tqdm

from harness.cells import Cell, run_cell
from harness.executor import make_executor
from harness.store import RecordStore, row_key
from models.registry import all_specs, get_spec
from protocols.classification import RANDOM_BASELINE, check_classifiable
from protocols.data import dataset_fingerprint
from protocols.datasets import all_datasets, is_path_like, load_dataset, resolve_data_root
from protocols.specs import (
    LABEL_BUDGETS, MISSING_RATES, NOISE_LEVELS, PAPER_WINDOWS, RUN_SEEDS, ClassificationSpec, ForecastingSpec,
    ImputationSpec, NoiseSpec, SamplingSpec, WindowSpec,
)
from protocols.splits import loso_folds

TASKS = ("forecasting", "imputation", "noise", "classification")
DEFAULT_OUT = Path("results/runs/default")
RECORDS_FILE = "records.csv"
DEFAULT_SEEDS = {"forecasting": (0,), "noise": (0,), "imputation": RUN_SEEDS, "classification": RUN_SEEDS}


@dataclass(frozen=True)
class RunConfig:
    """Everything a run depends on; CLI flags map one-to-one onto these fields.

    Task parameters left as None take the task's defaults from ``protocols.specs``.
    """

    task: str = "forecasting"
    datasets: tuple[str, ...] = ()  # empty: the default datasets
    models: tuple[str, ...] = ()  # empty: every default model of the task
    windows: tuple[WindowSpec, ...] | None = None  # forecasting: the paper's four; noise: 96/48
    out: Path = DEFAULT_OUT
    jobs: int = 1
    seeds: tuple[int, ...] | None = None  # forecasting/noise: (0,); imputation/classification: (0, 1, 2)
    max_windows_per_subject: int | None = None
    segment_length: int | None = None  # imputation and classification segments (samples)
    noise_levels: tuple[float, ...] = NOISE_LEVELS
    missing_rates: tuple[float, ...] = MISSING_RATES
    budgets: tuple[float, ...] = LABEL_BUDGETS
    rerun: bool = False  # recompute rows that are already finished
    weights: tuple[tuple[str, str], ...] = ()  # (model, directory)
    trust_remote_code: tuple[str, ...] = ()  # models allowed to run the Python code of their checkpoint
    progress: bool = True
    data_root: Path | None = None  # --data-root; else $SOTER_BENCH_DATA

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; known tasks: {', '.join(TASKS)}")
        if self.jobs < 1:
            raise ValueError("--jobs must be >= 1")
        if self.seeds is not None and (not self.seeds or min(self.seeds) < 0):
            raise ValueError("--seeds must be non-negative integers")
        self.specs(0)  # validate every task parameter now

    @property
    def run_seeds(self) -> tuple[int, ...]:
        return self.seeds if self.seeds is not None else DEFAULT_SEEDS[self.task]

    def specs(self, seed: int) -> ForecastingSpec | NoiseSpec | ImputationSpec | ClassificationSpec:
        """The task's spec for one seed (the seed draws the windows of forecasting and noise)."""
        maxw = {} if self.max_windows_per_subject is None else {"max_windows_per_subject": self.max_windows_per_subject}
        if self.task == "forecasting":
            return ForecastingSpec(windows=self.windows or PAPER_WINDOWS, sampling=SamplingSpec(seed=seed, **maxw))
        if self.task == "noise":
            return NoiseSpec(levels=self.noise_levels, windows=self.windows or NoiseSpec.windows,
                             sampling=SamplingSpec(seed=seed, **maxw))
        length = {} if self.segment_length is None else {"length": self.segment_length}
        if self.task == "imputation":
            return ImputationSpec(rates=self.missing_rates, **maxw, **length)
        return ClassificationSpec(budgets=self.budgets, **maxw, **length)

    @property
    def records_path(self) -> Path:
        return Path(self.out) / RECORDS_FILE


@dataclass
class RunSummary:
    records_path: Path
    planned: int = 0
    skipped_done: int = 0
    ran: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    dataset_labels: dict[str, str] = field(default_factory=dict)  # ref -> label
    protocols: dict[str, set[str]] = field(default_factory=dict)  # label -> protocol fingerprints
    keys: list[str] = field(default_factory=list)  # every planned row's key


def default_models(task: str = "forecasting") -> tuple[str, ...]:
    names = tuple(name for name, spec in all_specs().items() if spec.default and task in spec.tasks)
    return names + ((RANDOM_BASELINE,) if task == "classification" else ())


def default_datasets() -> tuple[str, ...]:
    return tuple(name for name, spec in all_datasets().items() if spec.default)


def code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("soter-bench")
    except PackageNotFoundError:
        v = "0+unknown"
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{v}+g{sha}" if sha else v


def _model_options(config: RunConfig, model: str) -> tuple[tuple[str, Any], ...]:
    opts: dict[str, Any] = {"seed": 0}  # model seed: fixed, so that seeds vary the protocol only
    for name, directory in config.weights:
        if name == model:
            opts["weights"] = directory
    if model in config.trust_remote_code:
        opts["trust_remote_code"] = True
    return tuple(sorted(opts.items()))


def _task_points(config: RunConfig, spec) -> list[tuple[str, str, float | None]]:
    """(window, condition, level) combinations of the task."""
    if config.task == "forecasting":
        return [(w.name, "clean", None) for w in spec.windows]
    if config.task == "noise":
        return [(w.name, f"beta={b:g}", b) for w in spec.windows for b in spec.levels]
    if config.task == "imputation":
        return [(str(spec.length), f"missing={r * 100:g}%", r) for r in spec.rates]
    return [(str(spec.length), f"budget={b * 100:g}%", b) for b in spec.budgets]


def plan(config: RunConfig) -> tuple[list[tuple[Cell, dict[str, object]]], RunSummary]:
    """Resolve names (errors before any work starts) and list every cell with its key fields."""
    dataset_refs = config.datasets or default_datasets()
    model_names = config.models or default_models(config.task)
    for name in model_names:
        if name != RANDOM_BASELINE:
            get_spec(name)  # unknown model: a clear error now, not per cell
    for name, _ in config.weights:
        get_spec(name)
    for name in config.trust_remote_code:
        get_spec(name)
    summary = RunSummary(records_path=config.records_path)
    cells: list[tuple[Cell, dict[str, object]]] = []
    identities: dict[str, str] = {}  # model -> digest of its weights and options (part of the row key)
    root = resolve_data_root(config.data_root)
    for ref in dataset_refs:
        resolved = str(Path(ref).resolve()) if is_path_like(ref) else ref
        dataset = load_dataset(resolved, data_root=root)
        folds = [f.test_subject for f in loso_folds(dataset)]
        if config.task == "classification":
            check_classifiable(dataset)
            folds = ["all"]
        label = dataset.name
        summary.dataset_labels[resolved] = label
        data_fp = dataset_fingerprint(dataset)
        for seed in config.run_seeds:
            spec = config.specs(seed)
            protocol = f"{spec.fingerprint()};data={data_fp}"
            summary.protocols.setdefault(label, set()).add(protocol)
            for model in model_names:
                options = _model_options(config, model)
                if model not in identities:
                    identities[model] = "" if model == RANDOM_BASELINE else get_spec(model).identity(**dict(options))
                for window, condition, level in _task_points(config, spec):
                    for fold in folds:
                        cell = Cell(config.task, resolved, fold, window, model, seed, spec, condition, level,
                                    data_root=str(root) if root else None,
                                    cache_dir=str(Path(config.out).resolve() / "cache"), model_options=options)
                        fields = {"task": config.task, "dataset": label, "fold": fold, "window": window,
                                  "condition": condition, "model": model, "seed": seed, "protocol": protocol}
                        fields["key"] = row_key(identities[model], **fields)
                        cells.append((cell, fields))
    summary.planned = len(cells)
    return cells, summary


def execute(config: RunConfig, log=print) -> RunSummary:
    cells, summary = plan(config)
    store = RecordStore(config.records_path)
    version = code_version()
    pending: list[tuple[Cell, dict[str, object]]] = []
    unavailable: dict[str, str | None] = {}
    for cell, fields in cells:
        key = str(fields["key"])
        summary.keys.append(key)
        if not config.rerun and store.is_done(key):
            summary.skipped_done += 1
            continue
        if cell.model not in unavailable:
            unavailable[cell.model] = (None if cell.model == RANDOM_BASELINE else
                                       get_spec(cell.model).unavailable_reason(**dict(cell.model_options)))
        reason = unavailable[cell.model]
        if reason is not None:
            previous = store.get(key)
            if previous is None or previous["status"] != "unavailable" or previous["error"] != reason:
                store.write({**fields, "key": key, "status": "unavailable", "error": reason,
                             "code_version": version, "finished_at": _now()})
            continue
        pending.append((cell, fields))
    for model, reason in unavailable.items():
        if reason:
            log(f"[unavailable] {model}: {reason}")
    fields_of = {cell: fields for cell, fields in pending}
    executor = make_executor(config.jobs)
    bar = tqdm(total=len(pending), desc=f"{config.task}", unit="cell", disable=not config.progress or not pending,
               file=sys.stderr)

    def not_done_elsewhere():
        """Cells in order, minus those another run into the same --out finished meanwhile."""
        for cell, fields in pending:
            if not config.rerun:
                store.refresh()
                if store.is_done(str(fields["key"])):
                    summary.skipped_done += 1
                    bar.update(1)
                    continue
            yield cell

    try:
        for cell, result in executor.run(run_cell, not_done_elsewhere()):
            fields = fields_of[cell]
            store.write({**fields, **result, "code_version": version,
                         "finished_at": _now()})
            summary.ran += 1
            bar.update(1)
    finally:
        bar.close()
        executor.close()
    for key in summary.keys:
        row = store.get(key)
        status = row["status"] if row else "missing"
        summary.status_counts[status] = summary.status_counts.get(status, 0) + 1
    return summary


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
