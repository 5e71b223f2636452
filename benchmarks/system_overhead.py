"""The paper's System Overhead appendix, measured here: parameters, seconds per sample, peak memory.

Usage (from the repository root; OMP_NUM_THREADS=1 keeps torch from oversubscribing a busy machine)::

    python benchmarks/system_overhead.py [--models NAME ...] [--setting 128/64] [--channels 1] [--batch 32]
        [--repeats 3] [--threads 2] [--device cpu|cuda] [--inputs random-walk|cohort] [--max-seconds 600]
        [--max-memory-gib 10]
        [--out results/benchmarks/system_overhead.csv (where `harness report` looks by default)] [--rerun]

Default models: every paper model at its published size (:data:`PAPER_MODELS`), built with RANDOM weights
(``baselines/published.py``; speed and shape only, never accuracy), SOTER at ``soter-paper`` with both
rollouts, and the models that have real weights here (SOTER's shipped ``soter-cpu-64``, the statistical
baselines) for the report's accuracy-versus-cost plot. Remote-code models are built from the upstream
code named by ``SOTER_BENCH_{TIMEMOE,TIMER,SUNDIAL,MIRA}_CODE`` (or ``../shared/code``), Lag-Llama from
``SOTER_BENCH_LAG_LLAMA_CODE``.

Each model is measured in a child process of its own (``--one``), so that its peak memory is its own:
the resident memory of the child and of every process it starts (an isolated model's worker), sampled
every 50 ms. The child loads the model (``load_seconds``), forecasts one sample once to warm up, then
times ``--repeats`` single-sample forecasts (``seconds_per_sample``: the median; the paper's single-sample
latency) and one forecast of ``--batch`` samples (``seconds_per_sample_batched``: its time / batch). A
sample is one window of ``--channels`` random-walk channels through the harness interface (per-channel
models see one series per channel). A model past ``--max-seconds`` or ``--max-memory-gib`` is stopped and
gets a ``not measured`` row saying so (one stopped during its batch keeps its single-sample latency: an ``ok``
row whose reason names the unfinished batch); so does one that cannot run here (the reason). ``--repeats 0``
times the batch alone (for a model whose single-sample latency takes minutes: SOTER's autoregressive rollout at
its published size, where the batch is what a run pays). A model trained in every cell (the supervised baselines,
the adapted entries) is first fitted on the cohort's first fold as a run fits it (``fit_seconds``; only with
``--inputs cohort``): ``harness plan`` charges that fit once per cell. The load, the single samples, the batch and the fit
are also timed in CPU seconds (``load_cpu_seconds``, ``cpu_seconds_per_sample``, ``cpu_seconds_per_sample_batched``,
``fit_cpu_seconds``: the child's and its workers'; ``warmup_cpu_seconds``: the first forecast, which a run's process
pays once per model too), which a busy machine hardly inflates: ``harness plan`` prefers them. Every finished row is appended to
``--out`` at once (a rerun skips the rows already there, unless ``--rerun``). Each row records
the load average before and after (``uptime``), the machine and the date: on a busy machine compare rows
as ratios. ``python -m harness report`` renders the table beside the paper's numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.reporting.overhead import DEFAULT_FILE  # noqa: E402 (the one default the report reads too)

# the paper's forecasting models, each measured at its published size (random weights where only the
# architecture is available here); SOTER in both rollouts (the paper's is autoregressive)
PAPER_MODELS = ("chronos-2-base", "timesfm-2.5", "tirex", "moment-large", "moirai-moe-base", "moirai-2.0-small", "ttm",
                "timesfm-1.0", "timesfm-2.0", "lag-llama", "timer-base", "sundial-base", "timemoe-base",
                "timemoe-large", "mira-large", "aurora", "soter-autoregressive", "soter")
# models with real weights here: their accuracy is real, so they can stand in the accuracy-versus-cost plot
TRAINED_MODELS = ("soter", "last-value", "seasonal-naive", "auto-ets", "auto-theta")
REMOTE_CODE = ("timer-base", "sundial-base", "timemoe-base", "timemoe-large", "mira-large", "aurora")
COLUMNS = ("model", "weights", "status", "reason", "parameters", "active_parameters", "load_seconds",
           "seconds_per_sample", "batch", "seconds_per_sample_batched", "peak_rss_gib", "peak_gpu_gib", "device",
           "threads", "setting", "channels", "repeats", "load_before", "load_after", "machine", "torch", "measured_at",
           "fit_seconds", "cpu_seconds_per_sample_batched", "fit_cpu_seconds", "load_cpu_seconds",
           "cpu_seconds_per_sample", "warmup_cpu_seconds")
STAGED = {"SOTER_BENCH_TIMEMOE_CODE": "time-moe", "SOTER_BENCH_MIRA_CODE": "mira",
          "SOTER_BENCH_TIMER_CODE": "timer-sktime-fork/sktime/libs/timer",
          "SOTER_BENCH_SUNDIAL_CODE": "sundial-sktime-fork/sktime/libs/sundial",
          "SOTER_BENCH_LAG_LLAMA_CODE": "lag-llama"}


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> str:
    """CPU model, cores and GPU: the same description SOTER's model cards give of their hardware."""
    from models.soter.training.ship import _hardware

    return _hardware()


# ------------------------------------------------------------------------------------------- the child

def _cohort_fold(context: int, horizon: int):
    """The embedded cohort, its first LOSO fold, the setting and its spec: what a run's first cell works on."""
    from protocols.datasets import load_dataset
    from protocols.specs import ForecastingSpec, Setting
    from protocols.splits import loso_folds

    dataset = load_dataset("synthetic-cohort")
    setting = Setting(context, horizon)
    return dataset, loso_folds(dataset)[0], setting, ForecastingSpec(settings=(setting,))


def cohort_windows(context: int, horizon: int, channels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``--inputs cohort``: the embedded cohort's test windows of its first LOSO fold in this setting, MinMax-normalised
    on the training subjects as a run normalises them (values [N, channels, context], context and target times):
    what a model sees in a run, so that adaptive models (SOTER's ODE solver) take the steps they take there."""
    from protocols.forecasting import fold_windows

    dataset, fold, setting, spec = _cohort_fold(context, horizon)
    arrays, _ = fold_windows(dataset, fold, setting, spec)
    if arrays.context.shape[1] < channels:
        raise ValueError(f"--channels {channels}: the cohort has {arrays.context.shape[1]} channels")
    return arrays.context[:, :channels], arrays.context_times, arrays.target_times


def cpu_seconds() -> float:
    """CPU seconds this process and the processes it started (an isolated model's worker) have used so far: on a
    machine shared with other jobs a forecast's wall time grows with the load, its CPU time hardly."""
    import psutil

    total = time.process_time()
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def cohort_fit_seconds(model, context: int, horizon: int) -> tuple[float, float]:
    """A model trained per fold (``capabilities.fit``: the supervised baselines, the adapted entries) fitted once on
    the cohort's first fold as a run fits it in each cell (the same training series, seed 0): (wall, CPU) seconds."""
    from protocols.forecasting import fit_for_fold

    dataset, fold, setting, spec = _cohort_fold(context, horizon)
    started, cpu = time.perf_counter(), cpu_seconds()
    fit_for_fold(model, dataset, fold, setting, spec)
    return time.perf_counter() - started, cpu_seconds() - cpu


def measure_one(name: str, weights_kind: str, context: int, horizon: int, channels: int, batch: int, repeats: int,
                device: str, inputs: str = "random-walk") -> Iterator[dict]:
    """Load ``name`` (``weights_kind``: ``random`` = its published size with random weights, ``trained`` = the
    weights it finds here) and time its forecasts; runs inside the child process. Yields the row after the
    single-sample latency and again, completed, after the batch (the parent keeps the last it got)."""
    import torch

    from models.random_weights import random_weights_marker
    from models.registry import ModelUnavailableError, get_spec
    from protocols.interface import SeriesBatch, forecast

    spec = get_spec(name)
    options: dict = {}
    if weights_kind == "random":
        from baselines.published import random_checkpoint

        try:
            options["weights"] = str(random_checkpoint(name, log=lambda m: print(m, file=sys.stderr)))
        except ModelUnavailableError as exc:  # no published configuration or no code here: say why
            yield {"status": "not measured", "reason": str(exc).splitlines()[0]}
            return
    if name in REMOTE_CODE:
        options["trust_remote_code"] = True
    if device != "cpu" and "device" in spec.option_names():
        options["device"] = device
    reason = spec.unavailable_reason(**options)
    if reason is not None:
        yield {"status": "not measured", "reason": str(reason)}
        return
    started, cpu = time.perf_counter(), cpu_seconds()
    model = spec.load(**options)
    load_seconds, load_cpu = time.perf_counter() - started, cpu_seconds() - cpu
    fit_seconds = fit_cpu = None
    if model.capabilities.fit:  # trained in every cell before it forecasts: that time is the cell's too
        if inputs != "cohort":
            yield {"status": "not measured", "reason": f"{name} is trained per fold: measure it with --inputs cohort"}
            return
        fit_seconds, fit_cpu = cohort_fit_seconds(model, context, horizon)
    rng = np.random.default_rng(0)
    real = cohort_windows(context, horizon, channels) if inputs == "cohort" else None

    def sample(n: int) -> tuple[SeriesBatch, np.ndarray]:
        if real is not None:  # the cohort's windows, repeated when a batch wants more than there are
            pick = np.arange(n) % real[0].shape[0]
            return SeriesBatch(values=real[0][pick], timestamps=real[1][pick]), real[2][pick]
        values = np.cumsum(rng.normal(size=(n, channels, context)), axis=2)
        times = np.tile(np.arange(context, dtype=np.float64) / 64.0, (n, 1))
        query = np.tile((context + np.arange(horizon, dtype=np.float64)) / 64.0, (n, 1))
        return SeriesBatch(values=values, timestamps=times), query

    one, query = sample(1)
    cpu = cpu_seconds()
    out = forecast(model, one, query)  # warm-up: compilation, caches, lazy imports (once per process in a run too)
    warmup_cpu = cpu_seconds() - cpu
    seconds, cpus = [], []
    for _ in range(repeats):  # none with --repeats 0: a slow model's batch alone (its single latency is not the rate)
        t0, cpu = time.perf_counter(), cpu_seconds()
        out = forecast(model, one, query)
        seconds.append(time.perf_counter() - t0)
        cpus.append(cpu_seconds() - cpu)
    if not np.isfinite(out).all():
        yield {"status": "error", "reason": "non-finite forecast"}
        return
    row = {"status": "ok", "reason": f"batch of {batch}: not finished within the time limit",
           "load_seconds": load_seconds, "seconds_per_sample": statistics.median(seconds) if seconds else None,
           "cpu_seconds_per_sample": statistics.median(cpus) if cpus else None, "warmup_cpu_seconds": warmup_cpu,
           "batch": batch, "fit_seconds": fit_seconds, "fit_cpu_seconds": fit_cpu, "load_cpu_seconds": load_cpu}
    marker = random_weights_marker(options.get("weights"))
    if marker is not None:
        row.update(parameters=marker.get("parameters"), active_parameters=marker.get("active_parameters"))
    else:
        row.update(zip(("parameters", "active_parameters"), _count(model)))
    yield dict(row)
    many, query = sample(batch)
    t0, cpu = time.perf_counter(), cpu_seconds()
    forecast(model, many, query)
    row.update(reason="", seconds_per_sample_batched=(time.perf_counter() - t0) / batch,
               cpu_seconds_per_sample_batched=(cpu_seconds() - cpu) / batch)
    if device.startswith("cuda") and torch.cuda.is_available():
        row["peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
    yield row


def _count(model: object) -> tuple[int | None, int | None]:
    """Parameters of the torch modules an in-process adapter holds (SOTER: its active count too)."""
    import torch

    from models.soter.model import SoterModel, count_parameters

    seen, found, todo = set(), [], [(model, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 4 or isinstance(obj, (str, bytes, int, float, np.ndarray)) or obj is None:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.nn.Module):
            found.append(obj)
            continue
        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else \
            getattr(obj, "__dict__", {}).values()
        todo.extend((v, depth + 1) for v in values)
    if not found:
        return None, None
    total = sum({id(p): p.numel() for m in found for p in m.parameters()}.values())
    soter = [m for m in found if isinstance(m, SoterModel)]
    return total, count_parameters(soter[0])[1] if soter else total


# ------------------------------------------------------------------------------------------- the parent

def run_child(args: argparse.Namespace, name: str, kind: str) -> dict:
    """One model in its own process, watched: peak memory of its process tree, the time and memory limits."""
    import psutil

    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", name, "--weights-kind", kind,
           "--setting", args.setting, "--channels", str(args.channels), "--batch", str(args.batch),
           "--repeats", str(args.repeats), "--threads", str(args.threads), "--device", args.device,
           "--inputs", args.inputs]
    # numba's pool too (SOTER's routing kernel, statsforecast): OMP_NUM_THREADS does not reach it, and two numba threads
    # on a busy machine stalled SOTER's forecasts 4x here (harness.run.threads, which a run applies, says why)
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "NUMBA_NUM_THREADS": str(args.threads)}
    for var, folder in STAGED.items():  # the upstream code, when the user named none
        staged = ROOT.parent / "shared" / "code" / folder
        if var not in env and staged.is_dir():
            env[var] = str(staged)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    peak, stop = [0], threading.Event()
    killed: list[str] = []

    def watch() -> None:
        parent = psutil.Process(proc.pid)
        while not stop.is_set():
            try:
                rss = sum(p.memory_info().rss for p in [parent, *parent.children(recursive=True)])
            except psutil.Error:
                rss = 0
            peak[0] = max(peak[0], rss)
            if rss > args.max_memory_gib * 2**30 and not killed:
                killed.append(f"not measured: over {args.max_memory_gib:g} GiB of memory ({rss / 2**30:.1f} GiB)")
                _kill_tree(proc.pid)
            stop.wait(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=args.max_seconds)
    except subprocess.TimeoutExpired:
        killed.append(f"not measured: over {args.max_seconds:g} s (load, warm-up, {args.repeats} samples and a "
                      f"batch of {args.batch})")
        _kill_tree(proc.pid)
        out, err = proc.communicate()
    stop.set()
    watcher.join()
    return {**outcome(out or "", err or "", proc.returncode, killed[0] if killed else None, args.batch),
            "peak_rss_gib": peak[0] / 2**30}


def outcome(out: str, err: str, returncode: int | None, killed: str | None, batch: int) -> dict:
    """The row a child's output makes. A child stopped by a limit after its single-sample latency keeps that
    latency (status ok, the reason naming the unfinished batch): a slow model's batch of 32 must not cost it
    the paper's figure."""
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if killed is not None:
        partial = json.loads(lines[-1]) if lines else {}
        if partial.get("status") == "ok":
            return {**partial, "reason": f"batch of {batch}: {killed}"}
        return {"status": "not measured", "reason": killed}
    if returncode != 0 or not lines:
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        return {"status": "error", "reason": f"exit {returncode}: {tail[0][:500]}"}
    return json.loads(lines[-1])


def _kill_tree(pid: int) -> None:
    """Stop a measurement child and the workers it started (only those: by process id)."""
    import psutil

    try:
        parent = psutil.Process(pid)
        for p in [*parent.children(recursive=True), parent]:
            p.kill()
    except psutil.Error:
        pass


def _done(out: Path) -> set[tuple[str, str, str]]:
    import pandas as pd

    if not out.is_file():
        return set()
    frame = pd.read_csv(out, dtype=str).fillna("")
    return set(zip(frame["model"], frame["weights"], frame["setting"]))


def _append(out: Path, row: dict) -> None:
    import csv

    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    if not new:
        with open(out, newline="") as handle:
            header = next(csv.reader(handle), [])
        if header != list(COLUMNS):  # a table written before a column was added: rewritten with it (empty)
            with open(out, newline="") as handle:
                old = list(csv.DictReader(handle))
            with open(out, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
                writer.writeheader()
                writer.writerows(old)
    with open(out, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore", lineterminator="\n")
        if new:
            writer.writeheader()
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})
        handle.flush()
        os.fsync(handle.fileno())


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", default=None, help="default: the paper's models, then the trained ones")
    p.add_argument("--weights-kind", choices=("random", "trained"), default=None,
                   help="with --models: random (published size) or trained (the weights found here); default: "
                        "random for the paper's models, trained for the others")
    p.add_argument("--setting", default="128/64", help="context/horizon of a sample (default: %(default)s)")
    p.add_argument("--channels", type=int, default=1)
    p.add_argument("--inputs", choices=("random-walk", "cohort"), default="random-walk",
                   help="random-walk series (default), or the embedded cohort's normalised test windows as a run feeds "
                        "them (for `harness plan`'s calibration: results/benchmarks/cell_costs.csv)")
    p.add_argument("--batch", type=int, default=32, help="samples in the batched measurement")
    p.add_argument("--repeats", type=int, default=3,
                   help="single-sample forecasts timed (0: none, the batch only, for a model whose single latency "
                        "takes minutes)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--max-seconds", type=float, default=600.0)
    p.add_argument("--max-memory-gib", type=float, default=10.0)
    p.add_argument("--out", type=Path, default=DEFAULT_FILE,
                   help="default: %(default)s, where `python -m harness report` finds it without --results")
    p.add_argument("--rerun", action="store_true", help="measure again the rows already in --out")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)  # the child: one model, one JSON line out
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        context, horizon = (int(x) for x in args.setting.split("/"))
    except ValueError:
        print(f"--setting expects CONTEXT/HORIZON, got {args.setting!r}", file=sys.stderr)
        return 2
    if args.one is not None:
        import torch

        torch.set_num_threads(args.threads)
        try:
            for row in measure_one(args.one, args.weights_kind, context, horizon, args.channels, args.batch,
                                   args.repeats, args.device, args.inputs):
                print(json.dumps(row, default=float), flush=True)
        except Exception as exc:  # reported as the model's row, the sweep goes on
            first = str(exc).splitlines()[0][:400] if str(exc) else ""
            print(json.dumps({"status": "error", "reason": f"{type(exc).__name__}: {first}"}), flush=True)
        return 0
    if args.models:
        plan = [(m, args.weights_kind or ("random" if m in PAPER_MODELS else "trained")) for m in args.models]
    else:
        plan = [*((m, "random") for m in PAPER_MODELS), *((m, "trained") for m in TRAINED_MODELS)]
    done = set() if args.rerun else _done(args.out)
    for name, kind in plan:
        if (name, kind, args.setting) in done:
            print(f"{name} ({kind}): already in {args.out}", flush=True)
            continue
        before, started = load_average(), time.perf_counter()
        row = run_child(args, name, kind)
        import torch

        row.update(model=name, weights=kind, device=args.device, threads=args.threads, setting=args.setting,
                   channels=args.channels, repeats=args.repeats, load_before=before, load_after=load_average(),
                   machine=machine(), torch=torch.__version__, measured_at=datetime.now(timezone.utc).isoformat(
                       timespec="seconds"))
        _append(args.out, row)
        print(f"{name} ({kind}): {row['status']} in {time.perf_counter() - started:.0f} s; "
              + (f"{row.get('seconds_per_sample') or 0:.3f} s/sample, "
                 f"{row.get('seconds_per_sample_batched') or 0:.3f} s/sample batched, {row.get('peak_rss_gib', 0):.2f} GiB"
                 if row["status"] == "ok" else row.get("reason", "")), flush=True)
    print(f"table: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
