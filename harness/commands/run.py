"""`python -m harness run TASK ...` (and `plan`, which takes the same flags): the flags, the RunConfig they make,
and the run itself with its tables. The runner and the registries' heavy parts are imported on use."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands import shards
from harness.commands.publish import (
    EXIT_NOTHING_SCORED, output_folder, print_statistics, publish, read_only, stat_tasks,
)
from harness.run.names import DEFAULT_OUT, EXECUTORS, RECORDS_FILE
from protocols.specs import SpecError

if TYPE_CHECKING:
    from harness.run.runner import RunConfig


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``run``'s flags, the registered tasks' options among them (which loads the task and model registries)."""
    from harness.registry.tasks import all_tasks
    from protocols.adaptation import BUDGETS, DEFAULT_BUDGET, MODES

    run.add_argument("task", choices=list(all_tasks()))
    run.add_argument("--dataset", nargs="+", default=[], metavar="NAME|PATH",
                     help="registered dataset name(s) or dataset folder path(s); default: the embedded cohort")
    run.add_argument("--data-root", type=Path, default=None,
                     help="folder holding downloaded datasets (default: $SOTER_BENCH_DATA)")
    run.add_argument("--models", nargs="+", default=[], metavar="NAME",
                     help="model names (see `python -m harness list models`); default: the task's default models")
    run.add_argument("--seeds", nargs="+", type=int, default=None,
                     help="seeds (default: 0 for forecasting and noise, 0 1 2 for imputation and classification)")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    run.add_argument("--jobs", type=int, default=1,
                     help="parallel worker processes (default: 1); with --executor ray: CPUs of a local Ray instance")
    run.add_argument("--executor", choices=EXECUTORS, default="local",
                     help="local: this machine's processes (default); ray: cells as Ray tasks (pip install "
                          "'soter-bench[ray]'), on the cluster at --ray-address or $RAY_ADDRESS, else a local instance; "
                          "submitit: cells as Slurm jobs, submitit's local processes without Slurm "
                          "('soter-bench[submitit]', docs/cluster.md)")
    run.add_argument("--ray-address", default=None, metavar="ADDRESS",
                     help="Ray cluster to join, e.g. auto or ray://HEAD:10001 (with --executor ray)")
    run.add_argument("--weights", nargs="+", default=[], metavar="MODEL=DIR",
                     help="local weights directory for a model, e.g. soter=checkpoints/soter-small")
    run.add_argument("--trust-remote-code", nargs="+", default=[], metavar="MODEL",
                     help="allow these models (Timer, Sundial, TimeMoE, MIRA, Aurora) to run the Python code that "
                          "ships with their checkpoint; review that code first")
    run.add_argument("--random-weights", nargs="+", default=[], metavar="MODEL",
                     help="run these models (also named in --models) at their published size with RANDOM weights, "
                          "for speed and shapes only: their rows say so and no table shows them "
                          "(docs/published-sizes.md)")
    run.add_argument("--device", default="auto", metavar="auto|cpu|cuda|cuda:N",
                     help="where models that can use a GPU run (default: auto, CUDA when available); "
                          "statistical baselines always run on the CPU")
    run.add_argument("--model-option", nargs="+", action="extend", default=[], metavar="NAME.KEY=VALUE",
                     help="an option for one model's factory, e.g. soter.batch_size=64 or soter.device=cuda "
                          "(repeatable; VALUE is a Python literal or a string; options are part of the record key)")
    run.add_argument("--supervised-training", choices=("fixed", "tuned"), default="fixed",
                     help="how the supervised models (ridge, dlinear, patchtst, deepar, mlp) train in each cell: fixed "
                          "(default: the fixed budget) or tuned (validation subjects, early stopping, a grid over "
                          "look-back and learning rate; the option training=tuned of each, so part of the record key; "
                          "docs/supervised.md)")
    run.add_argument("--adapt", nargs="+", default=[], metavar="MODE", choices=MODES,
                     help="adaptation modes of the models that can be adapted: zero-shot (their frozen rows), head, full "
                          "(fine-tuned on each fold's training subjects, rows NAME@MODE); default: zero-shot only")
    run.add_argument("--adapt-budget", default=None, metavar="NAME", choices=tuple(BUDGETS),
                     help=f"the adaptation budget (steps, learning rate, windows): {', '.join(BUDGETS)} (default: "
                          f"{DEFAULT_BUDGET}; part of the adapted rows' keys)")
    run.add_argument("--rerun", action="store_true", help="recompute rows that are already finished")
    run.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    run.add_argument("--probe-input", action="store_true",
                     help="also run the input-sensitivity probe once per model and dataset (forecasting, noise): "
                          "its verdicts go to OUT/input_sensitivity.json and the tables mark a model whose forecasts "
                          "did not change with its input (docs/protocols.md)")
    run.add_argument("--shard", default=None, metavar="K/N",
                     help="compute part K of N (0 <= K < N) of the cells, balanced by their estimated cost, into "
                          "this --out; `merge` joins the parts (docs/cluster.md)")
    _add_task_options(run.add_argument_group("task options (each names the tasks that read it; a flag the task "
                                              "does not read is an error)"))


def _add_task_options(run: argparse._ArgumentGroup) -> None:
    """The registered tasks' options (``Task.options``) as flags of ``run``, each once, its help naming the tasks
    that read it; a flag given stays None unless given, so a run passes exactly the options given."""
    from harness.registry.tasks import all_options

    for option, tasks in all_options().items():
        try:
            run.add_argument(option.flag, dest=option.name, nargs="+" if option.many else None,
                             default=None, metavar=option.metavar, help=f"{', '.join(tasks)}: {option.help}")
        except argparse.ArgumentError as exc:
            raise ValueError(f"task {tasks[0]!r} declares the option {option.flag}, which `run` has already: "
                             f"{exc.message}") from None


def parse_weights(items: list[str]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for item in items:
        model, sep, directory = item.partition("=")
        if not sep or not model or not directory:
            raise SpecError(f"--weights expects MODEL=DIR, got {item!r}")
        pairs.append((model, directory))
    return tuple(pairs)


def _supervised_training(args: argparse.Namespace, options: tuple) -> tuple:
    """``--supervised-training tuned``: the option ``training=tuned`` for every supervised model of the run (one
    given ``--model-option NAME.training`` keeps its own); ``fixed`` adds nothing, so fixed rows keep their keys."""
    mode = getattr(args, "supervised_training", "fixed")
    if mode == "fixed":
        return options
    from models.registry import get_spec

    supervised = [m for m in args.models if get_spec(m).supervised] if args.models else []
    if not supervised:
        raise SpecError(f"--supervised-training {mode}: no supervised model among --models "
                        "(ridge, dlinear, patchtst, deepar, mlp)")
    given = {(m, k) for m, k, _ in options}
    return options + tuple((m, "training", mode) for m in supervised if (m, "training") not in given)


def run_config(args: argparse.Namespace) -> RunConfig:
    """The RunConfig of `run`'s flags (`plan` takes the same)."""
    from harness.registry.tasks import all_options
    from harness.run.runner import RunConfig, parse_model_option
    from harness.run.shards import parse_shard

    options = {o.name: o.read(getattr(args, o.name)) for o in all_options() if getattr(args, o.name) is not None}
    return RunConfig(
        task=args.task, datasets=tuple(args.dataset), models=tuple(args.models), options=options,
        out=args.out, jobs=args.jobs, executor=args.executor, ray_address=args.ray_address, seeds=tuple(args.seeds) if args.seeds else None,
        rerun=args.rerun, weights=parse_weights(args.weights) + _random_weights(args),
        trust_remote_code=tuple(args.trust_remote_code), progress=not args.no_progress,
        data_root=args.data_root, device=args.device,
        model_options=_supervised_training(args, tuple(parse_model_option(o) for o in args.model_option)),
        shard=parse_shard(args.shard) if args.shard is not None else None,
        probe_input=getattr(args, "probe_input", False),
        adapt=tuple(args.adapt), adapt_budget=args.adapt_budget,
    )


def run_command(args: argparse.Namespace) -> int:
    from harness.records.store import read_records  # pandas: imported on use, so that --help and list start fast
    from harness.run.runner import execute

    config = run_config(args)
    output_folder(config.out, "--out", create=False)
    check_writable(Path(config.out), "--out")
    summary = execute(config, log=lambda m: print(m, file=sys.stderr))
    frame = shards.with_plan(read_records(summary.records_path), Path(config.out))
    out = Path(config.out)
    publish(frame, config.task, out, None, None)  # every current row, not this run's only
    if (out / "statistics").is_dir() and config.task in stat_tasks():  # written before: kept current
        print_statistics(frame, config.task, out, None, quiet=True)
        print(f"statistics: {out / 'statistics'} rewritten for every current {config.task} row")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.status_counts.items()))
    again = (f" ({summary.recomputed} of them recomputed: their task's version or model's revision changed)"
             if summary.recomputed else "")
    print(f"{summary.planned} cells: {summary.skipped_done} already done, {summary.ran} run now{again}; rows: {counts}")
    _note_random_weights(summary.records_path, set(summary.keys))
    print(f"records: {summary.records_path}; tables: {out / 'tables'}")
    if not summary.status_counts.get("ok"):
        print(f"error: nothing was scored: none of the {summary.planned} cells finished ok ({counts}); "
              "the table's notes and the records' error column say why", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    return 0


def _random_weights(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    """``--random-weights MODEL``: the folder of MODEL's published architecture with random weights (built
    once, cached), passed as its weights. The model must be among ``--models`` and have no ``--weights``."""
    if not args.random_weights:
        return ()
    from baselines.published import random_checkpoint

    given = {item.partition("=")[0] for item in args.weights}
    pairs = []
    for model in dict.fromkeys(args.random_weights):
        if model not in args.models:
            raise SpecError(f"--random-weights {model}: name it in --models too")
        if model in given:
            raise SpecError(f"--random-weights {model}: it also has --weights; give one or the other")
        pairs.append((model, str(random_checkpoint(model))))
    return tuple(pairs)


def _note_random_weights(records_path: Path, keys: set[str]) -> None:
    """Say which of this run's rows were made with random weights: no table shows them."""
    from harness.records.store import random_weight_rows

    rows = random_weight_rows(records_path)
    rows = rows[rows["key"].isin(keys)]
    for model, group in rows.groupby("model", sort=False):
        counts = ", ".join(f"{k} {v}" for k, v in sorted(group["status"].value_counts().items()))
        print(f"{model}: random weights (speed and shape only), in no table: {len(group)} rows ({counts})")


def check_writable(folder: Path, flag: str) -> None:
    """A run appends to ``folder``'s records: a read-only folder is a usage error before any work."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    records = folder / RECORDS_FILE
    for target in (existing, *([records] if records.exists() else [])):
        if read_only(target) or not os.access(target, os.W_OK):
            raise SpecError(f"{flag} {folder} is read-only: a run writes its records there (use another {flag}; "
                            f"`python -m harness report --results {folder} --out ELSEWHERE` reads archived results)")
