"""What a cell costs before it runs: ``plan`` and ``run --shard`` balance and show sweeps by it.

A cell's cost is estimated, in this order, from
1. *measured* rows: the median ``seconds`` of the model's finished cells of the task in the records at hand
   (same setting when there are any), on this machine, through the task's own code (``plan`` only: a shard never
   reads another shard's records, so every shard computes the same partition);
2. the *calibration*: seconds per one-channel sample of the model, measured by ``benchmarks/system_overhead.py``
   into :data:`CALIBRATION` (at its published size or with the weights found here; per setting, per device), times
   the series the cell forecasts (:func:`window_work`), plus a fixed cost per model call where the row measured
   both a single sample and a batch (a call of a few windows costs SOTER nearly what a call of 32 does: its adaptive
   solve's steps are shared), plus, for a model trained in every cell (the supervised baselines, the adapted
   entries), its measured fit on the cohort's first fold once per cell, plus the model's load time once per process;
3. nothing: the estimate is ``unknown`` (never a guess).
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

REPO = Path(__file__).resolve().parents[2]
# written by benchmarks/system_overhead.py: at published sizes on random-walk inputs (its default --out;
# harness.reporting.overhead.DEFAULT_FILE names it too), then a batch alone (`--repeats 0`) for a model whose
# single-sample latency takes minutes (`--out .../batched_rates.csv`: the report keeps the latency, the plan the
# batch), then with `--inputs cohort` on the windows a run feeds the models (`--out .../cell_costs.csv`); a row of a
# later file supersedes an earlier one's for the same model, weights, setting and device
CALIBRATION: tuple[Path, ...] = (REPO / "results" / "benchmarks" / "system_overhead.csv",
                                 REPO / "results" / "benchmarks" / "batched_rates.csv",
                                 REPO / "results" / "benchmarks" / "cell_costs.csv")


@dataclass(frozen=True)
class Rate:
    """One calibration row: a model's seconds per one-channel sample on one device, and its load time (with its first
    forecast's set-up beyond a call's cost, where measured: a process pays both once)."""

    seconds_per_sample: float
    load_seconds: float
    weights: str  # random (published size) | trained (the weights found here)
    setting: str  # the setting it was measured at, "C/H"
    device: str  # cpu | cuda
    fit_seconds: float = 0.0  # a model trained in every cell: one fit on the cohort's first fold (0: never trained)
    clock: str = "cpu"  # cpu: measured in CPU seconds | wall: only the wall clock was measured (a busy machine inflates it)
    call_seconds: float = 0.0  # fixed cost of one model call, whatever its windows (0: not measured)

    def describe(self, setting: str) -> str:
        """Where an estimate for a cell of ``setting`` came from (the setting measured, when it is another)."""
        other = f", measured at {self.setting}" if self.setting != setting else ""
        fit = ", a cohort fit per cell" if self.fit_seconds else ""
        wall = ", wall clock" if self.clock == "wall" else ""
        return f"calibration ({self.weights} weights, {self.device}{other}{fit}{wall})"

    def cell_seconds(self, samples: int, calls: int = 0) -> float:
        """A cell forecasting ``samples`` one-channel series in ``calls`` model calls: the fit (when trained per
        cell), the calls' fixed cost and the forecasts."""
        return self.fit_seconds + self.call_seconds * calls + self.seconds_per_sample * samples


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text not in (None, "") else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) and value >= 0 else None


def read_calibration(paths: tuple[Path, ...] | None = None) -> dict[tuple[str, str, str, str], Rate]:
    """(model, weights, setting, device) -> :class:`Rate`, the last ok row of each (a rerun supersedes). Seconds per
    sample: the batched figure where measured (a run forecasts its windows in batches), else batch 1; in CPU seconds
    where measured (a busy machine inflates the wall clock by its load), else wall seconds. ``paths`` None:
    :data:`CALIBRATION`, a later file's rows superseding an earlier one's; a missing file adds nothing."""
    rates: dict[tuple[str, str, str, str], Rate] = {}
    for path in CALIBRATION if paths is None else paths:
        if Path(path).is_file():
            _read_rates(Path(path), rates)
    return rates


def _read_rates(path: Path, rates: dict[tuple[str, str, str, str], Rate]) -> None:
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            cpu = _number(row.get("cpu_seconds_per_sample_batched"))
            per = cpu or _number(row.get("seconds_per_sample_batched")) or _number(row.get("seconds_per_sample"))
            if row.get("status") != "ok" or per is None:
                continue
            load = (_number(row.get("load_cpu_seconds")) if cpu else None) or _number(row.get("load_seconds")) or 0.0
            if cpu:  # the first forecast's compilation and lazy set-up, beyond a call's own cost: once per process
                load += max(0.0, (_number(row.get("warmup_cpu_seconds")) or 0.0)
                            - (_number(row.get("cpu_seconds_per_sample")) or 0.0))
            fit = (_number(row.get("fit_cpu_seconds")) if cpu else None) or _number(row.get("fit_seconds")) or 0.0
            call, per = affine(_number(row.get("cpu_seconds_per_sample")), cpu, _number(row.get("batch"))) if cpu \
                else (0.0, per)
            channels = _number(row.get("channels")) or 1.0
            device = "cuda" if str(row.get("device", "cpu")).startswith("cuda") else "cpu"
            rates[(row["model"], row.get("weights", ""), row.get("setting", ""), device)] = Rate(
                per / channels, load, row.get("weights", ""), row.get("setting", ""), device, fit,
                "cpu" if cpu else "wall", call)


def affine(single: float | None, batched: float, batch: float | None) -> tuple[float, float]:
    """(seconds per call, seconds per sample) of a call costing ``call + per x samples``, through the two CPU
    measurements of a row: one sample per call (``single``) and ``batch`` samples per call (``batched`` each). Without
    the single figure, or when the two give no positive fixed cost (the batch no cheaper per sample), the batched rate
    alone."""
    if single is None or batch is None or batch < 2:
        return 0.0, batched
    per = (batch * batched - single) / (batch - 1)
    call = single - per
    return (call, per) if call > 0 and per > 0 else (0.0, batched)


def rate_for(rates: dict[tuple[str, str, str, str], Rate], model: str, setting: str, device: str,
             random_weights: bool) -> Rate | None:
    """The calibration row for a model's cell: its own setting where measured, else the longest setting measured
    (128/64 for the paper: an upper estimate for shorter ones); trained weights before the published size unless
    the run uses random weights (both are the same architecture at the published size)."""
    kinds = ("random",) if random_weights else ("trained", "random")
    for kind in kinds:
        found = [r for (m, w, _, d), r in rates.items() if m == model and w == kind and d == device]
        if not found:
            continue
        same = [r for r in found if r.setting == setting]
        return same[0] if same else max(found, key=lambda r: _length(r.setting))
    return None


def _length(setting: str) -> int:
    try:
        return sum(int(x) for x in setting.split("/"))
    except ValueError:
        return 0


@dataclass(frozen=True)
class CellCost:
    """A cell's estimated seconds on the CPU and on a GPU (None: unknown) and where each came from."""

    cpu: float | None
    gpu: float | None
    source: str


def median_seconds(rows: Iterable[tuple[str, str, float]]) -> dict[tuple[str, str], float]:
    """(model, setting) -> median seconds, and (model, "") -> over every setting, of measured cells."""
    by: dict[tuple[str, str], list[float]] = {}
    for model, setting, seconds in rows:
        by.setdefault((model, setting), []).append(seconds)
        by.setdefault((model, ""), []).append(seconds)
    return {k: statistics.median(v) for k, v in by.items()}


def cell_cost(model: str, setting: str, samples: int | None, rates: dict[tuple[str, str, str, str], Rate],
              random_weights: bool, measured: dict[tuple[str, str], float] | None = None, calls: int = 0) -> CellCost:
    """One cell's estimate (the model's load time is not in it: :func:`load_seconds` counts it once per process);
    ``calls``: the model calls its ``samples`` take (:func:`window_work`)."""
    gpu_rate = rate_for(rates, model, setting, "cuda", random_weights)
    gpu = gpu_rate.cell_seconds(samples, calls) if gpu_rate is not None and samples is not None else None
    if measured:
        seconds = measured.get((model, setting), measured.get((model, "")))
        if seconds is not None:
            return CellCost(seconds, gpu, "measured (records in --out)")
    rate = rate_for(rates, model, setting, "cpu", random_weights)
    if rate is None or samples is None:
        why = "unknown: no calibration row" if rate is None else "unknown: the task cannot count its samples"
        return CellCost(None, gpu, why)
    return CellCost(rate.cell_seconds(samples, calls), gpu, rate.describe(setting))


def load_seconds(model: str, rates: dict[tuple[str, str, str, str], Rate], device: str,
                 random_weights: bool) -> float | None:
    """The model's measured load time (once per process that runs its cells), None when not calibrated."""
    rate = rate_for(rates, model, "", device, random_weights)
    return rate.load_seconds if rate is not None else None


# the tasks whose cells forecast the selected windows of their setting: a cell's samples are its windows x channels.
# Kept here, not as a hook on the tasks: a task's module is part of the code digest of its rows
# (harness.records.code_identity), and how a sweep is planned must not mark finished rows stale.
WINDOW_TASKS = frozenset({"forecasting", "noise", "calibration", "shift", "irregular"})


def window_work(cell, dataset) -> tuple[int, int]:
    """(one-channel series, model calls) of a window task's cell: its fold's windows in its setting x channels, and
    the calls they are forecast in (``batch_size`` windows each, the spec's; the windows are selected, never
    extracted: cheap)."""
    from protocols.splits import get_fold
    from protocols.windows import select_windows

    selection = select_windows(dataset, get_fold(dataset, cell.fold).test_subject, cell.point, cell.spec.sampling)
    windows = len(selection.windows)
    batch = getattr(cell.spec, "batch_size", None)
    return windows * len(dataset.channels), -(-windows // batch) if batch else 0


def cell_samples(cells: Iterable, loaded: dict | None = None) -> dict[object, int | None]:
    """Cell -> the one-channel series it forecasts (:func:`cell_work`'s first figure), None where it cannot say."""
    return {cell: None if work is None else work[0] for cell, work in cell_work(cells, loaded).items()}


def cell_work(cells: Iterable, loaded: dict | None = None) -> dict[object, tuple[int, int] | None]:
    """Cell -> (one-channel series it forecasts, model calls) (:func:`window_work`), None where the task is no window
    task (imputation, classification, physiology, a plugin's: their cost comes from measured rows only). Each
    (dataset, fold, setting, seed) is counted once, whatever the models; ``loaded``: datasets the plan loaded
    already, by the name the cells carry."""
    from protocols.datasets import load_dataset

    loaded = {} if loaded is None else loaded

    counted: dict[tuple, tuple[int, int] | None] = {}
    out: dict[object, tuple[int, int] | None] = {}
    for cell in cells:
        key = (cell.task, cell.dataset, cell.data_root, cell.fold, cell.setting, cell.seed)
        if key not in counted:
            if cell.task not in WINDOW_TASKS or not hasattr(cell.point, "horizon"):  # irregular's imputation cells
                counted[key] = None
            else:
                if cell.dataset not in loaded:
                    loaded[cell.dataset] = load_dataset(cell.dataset, data_root=cell.data_root)
                counted[key] = window_work(cell, loaded[cell.dataset])
        out[cell] = counted[key]
    return out


def random_weights(cell) -> bool:
    """Whether the cell's model runs with random weights (``--random-weights``): its calibration row is then the
    published size's, never that of the trained weights found here."""
    return _is_random(dict(cell.model_options).get("weights"))


@lru_cache(maxsize=256)
def _is_random(weights: str | None) -> bool:
    from models.random_weights import random_weights_marker

    return random_weights_marker(weights) is not None
