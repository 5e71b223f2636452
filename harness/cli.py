"""`python -m harness ...`: run tasks, list what exists, re-render tables."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
from pathlib import Path

from harness.commands import shards, stress
from harness.run.executor import EXECUTORS
from harness.registry.tasks import all_options, all_tasks
from harness.run.shards import parse_shard
from harness.run.runner import (
    DEFAULT_OUT, RECORDS_FILE, RunConfig, default_models, execute, parse_model_option,
)
from protocols.adaptation import BUDGETS, DEFAULT_BUDGET, MODES
from protocols.specs import Setting, SpecError

EXIT_NOTHING_SCORED = 1  # the command worked but produced no result: a script must not take it for success
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM (sent by `kill`, Slurm and Ray before they kill a job): stop as on Ctrl-C."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def _install_stop_handlers() -> dict[int, object]:
    """SIGINT and SIGTERM stop the run cleanly, whatever dispositions the caller passed down.

    A background job of a non-interactive shell (`cmd &`, `nohup`) starts with SIGINT ignored;
    without this, `kill -INT` on such a run would do nothing. Returns the previous handlers.
    """
    previous = {}
    for signum, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, _raise_terminated)):
        previous[signum] = signal.signal(signum, handler)
    return previous


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a task and record every result")
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
    shards.add_parsers(sub, run)  # plan (run's own flags) and merge

    lst = sub.add_parser("list", help="list datasets, models and tasks")
    lst.add_argument("what", nargs="?", choices=("datasets", "models", "tasks", "all"), default="all")
    lst.add_argument("--overlap", nargs="+", default=None, metavar="DATASET",
                     help="with `models`: the pre-training overlap matrix, every model on DATASET ('all': every "
                          "evaluation dataset), with the reasons (the same as `data overlap`)")

    from harness.commands import data

    data.add_parser(sub)
    from harness.external import cli as external_cli

    external_cli.add_parsers(sub)  # windows export, score: forecasts made outside the harness (docs/external.md)
    stress.add_parsers(sub)

    ex = sub.add_parser("examples", help="plot one forecasting window with every model's forecast (PNG, PDF, CSV)")
    ex.add_argument("--dataset", default=None, metavar="NAME|PATH", help="default: the embedded cohort")
    ex.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")
    ex.add_argument("--models", nargs="+", default=[], metavar="NAME", help="default: the forecasting defaults")
    ex.add_argument("--setting", default="128/64", metavar="C/H",
                    help="the context/horizon setting of the window (default: %(default)s)")
    ex.add_argument("--channels", nargs="+", default=None, metavar="NAME",
                    help="keep these channels only (one channel gives a single-channel example)")
    ex.add_argument("--seed", type=int, default=0, help="window-selection seed")
    ex.add_argument("--weights", nargs="+", default=[], metavar="MODEL=DIR")
    ex.add_argument("--out", type=Path, default=DEFAULT_OUT / "figures")

    rep = sub.add_parser("report", help="every paper table and figure the records support, beside the paper's numbers")
    rep.add_argument("--results", type=Path, default=DEFAULT_OUT, help="folder holding records.csv (default: %(default)s)")
    rep.add_argument("--out", type=Path, default=Path("results/report"), help="report folder (default: %(default)s)")
    rep.add_argument("--studies", type=Path, default=None, metavar="DIR",
                     help="where the study runners wrote their files (default: searched under --results)")
    rep.add_argument("--reference", default=None, metavar="MODEL",
                     help="significance marks against MODEL instead of each cell's best model")

    fix = sub.add_parser("repair", help="keep the valid rows of a damaged records.csv and move the rest aside "
                                        "(deletes nothing)")
    fix.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder holding records.csv (default: %(default)s)")

    table = sub.add_parser("table", help="re-render a task's table from recorded results")
    table.add_argument("task", choices=list(all_tasks()))
    table.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder holding records.csv")
    table.add_argument("--format", choices=("text", "markdown", "latex"), default="text")
    table.add_argument("--stats", action="store_true",
                       help="also the statistics (forecasting, noise): leaderboard, significance marks with bootstrap "
                            "intervals, critical-difference diagram (written under OUT/statistics)")
    table.add_argument("--reference", default=None, metavar="MODEL",
                       help="with --stats: test every model against MODEL instead of each cell's best")
    stress.add_table_arguments(table)
    return p


def _add_task_options(run: argparse._ArgumentGroup) -> None:
    """The registered tasks' options (``Task.options``) as flags of ``run``, each once, its help naming the tasks
    that read it; a flag given stays None unless given, so a run passes exactly the options given."""
    for option, tasks in all_options().items():
        try:
            run.add_argument(option.flag, dest=option.name, nargs="+" if option.many else None,
                             default=None, metavar=option.metavar, help=f"{', '.join(tasks)}: {option.help}")
        except argparse.ArgumentError as exc:
            raise ValueError(f"task {tasks[0]!r} declares the option {option.flag}, which `run` has already: "
                             f"{exc.message}") from None


def main(argv: list[str] | None = None) -> int:
    try:
        parser = _parser()  # loads the plugins: the tasks they register are commands' choices
    except (ValueError, KeyError, RuntimeError, ImportError) as exc:  # a plugin that fails: one line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    previous = _install_stop_handlers()
    try:
        return _dispatch(args)
    except Terminated:
        print("\nterminated: every finished row is kept; rerun the same command to resume", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print("\ninterrupted: every finished row is kept; rerun the same command to resume",
              file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "plan":
            return shards.run_plan(args, _config(args))
        if args.command == "merge":
            _output_folder(args.out, "OUT")
            return shards.run_merge(args, lambda frame, task, out: _publish(frame, task, out, None, None))
        if args.command == "list":
            if args.overlap is not None:
                if args.what != "models":
                    raise ValueError("--overlap lists models: use `list models --overlap DATASET`")
                from harness.reporting.pretraining_marks import matrix_text

                print(matrix_text(None, None if args.overlap == ["all"] else args.overlap))
                return 0
            return _list(args.what)
        if args.command == "data":
            from harness.commands import data

            return data.run(args)
        if args.command in ("windows", "score"):
            from harness.external import cli as external_cli

            return external_cli.run(args)
        if args.command == "examples":
            return _examples(args)
        if args.command == "artefacts":
            return stress.run_artefacts(args)
        if args.command == "report":
            from harness.reporting.report import write_report

            _output_folder(args.out, "--out", create=False)
            if not Path(args.results).exists():  # as `table` does: no report of nothing, with exit 0
                raise SpecError(f"--results {args.results} does not exist; run `python -m harness run ...` first, "
                                "or name the folder that holds records.csv")
            _output_folder(args.out, "--out")
            print(write_report(args.results, args.out, studies=args.studies, reference=args.reference))
            return 0
        if args.command == "repair":
            _output_folder(args.out, "--out", create=False)
            return _repair(Path(args.out) / RECORDS_FILE)
        _output_folder(args.out, "--out", create=False)
        return _table(args)
    except BrokenPipeError:  # output piped into e.g. `head`
        return 0
    except (ValueError, KeyError, FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a read-only folder, a full disk: one line, never a traceback
        print(f"error: {_os_error(exc)}", file=sys.stderr)
        return 2


def _os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else "could not write the output: "
    full = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
    return f"{where}{exc.strerror or exc}" + (" (the disk, or a file-size limit, is full; every finished record "
                                              "row is kept)" if full else "")


def _output_folder(path: Path, flag: str, create: bool = True) -> None:
    """``--out`` must name a folder (or nothing yet, when the command creates it)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SpecError(f"{flag} {path} is a file, not a folder")
    if create and not path.exists():
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecError(f"{flag} {path}: cannot create the folder ({exc.strerror or exc})") from None


def _examples(args: argparse.Namespace) -> int:
    from harness.commands.examples import forecast_example, plot_example
    from models.registry import get_spec
    from harness.run.runner import default_datasets
    from protocols.datasets import load_dataset

    name = args.dataset or default_datasets()[0]
    dataset = load_dataset(name, data_root=args.data_root)
    if args.channels:
        dataset = dataset.select_channels(tuple(args.channels))
    models = list(args.models) or list(default_models("forecasting"))
    options = {m: {"weights": d} for m, d in _parse_weights(args.weights)}
    unavailable = [m for m in models if get_spec(m).unavailable_reason(**options.get(m, {}))]
    for m in unavailable:
        print(f"skipped {m}: {get_spec(m).unavailable_reason(**options.get(m, {}))}", file=sys.stderr)
    setting = Setting.parse(args.setting)
    frame = forecast_example(dataset, [m for m in models if m not in unavailable], setting, args.seed, options)
    safe = "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in Path(name).name)  # e.g. mitbih:blocks=6
    stem = "-".join(["forecast-example", safe, f"{setting.context}x{setting.horizon}",
                     *(["_".join(args.channels)] if args.channels else [])])
    for f in plot_example(frame, args.out / stem):
        print(f)
    return 0


def _parse_weights(items: list[str]) -> tuple[tuple[str, str], ...]:
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


def _config(args: argparse.Namespace) -> RunConfig:
    """The RunConfig of `run`'s flags (`plan` takes the same)."""
    options = {o.name: o.read(getattr(args, o.name)) for o in all_options() if getattr(args, o.name) is not None}
    return RunConfig(
        task=args.task, datasets=tuple(args.dataset), models=tuple(args.models), options=options,
        out=args.out, jobs=args.jobs, executor=args.executor, ray_address=args.ray_address, seeds=tuple(args.seeds) if args.seeds else None,
        rerun=args.rerun, weights=_parse_weights(args.weights) + _random_weights(args),
        trust_remote_code=tuple(args.trust_remote_code), progress=not args.no_progress,
        data_root=args.data_root, device=args.device,
        model_options=_supervised_training(args, tuple(parse_model_option(o) for o in args.model_option)),
        shard=parse_shard(args.shard) if args.shard is not None else None,
        probe_input=getattr(args, "probe_input", False),
        adapt=tuple(args.adapt), adapt_budget=args.adapt_budget,
    )


def _run(args: argparse.Namespace) -> int:
    from harness.records.store import read_records  # pandas: imported on use, so that --help and list start fast

    config = _config(args)
    _output_folder(config.out, "--out", create=False)
    _check_writable(Path(config.out), "--out")
    summary = execute(config, log=lambda m: print(m, file=sys.stderr))
    frame = read_records(summary.records_path)
    out = Path(config.out)
    _publish(frame, config.task, out, None, None)  # every current row, not this run's only
    if (out / "statistics").is_dir() and config.task in _stat_tasks():  # written before: kept current
        _print_statistics(frame, config.task, out, None, quiet=True)
        print(f"statistics: {out / 'statistics'} rewritten for every current {config.task} row")
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.status_counts.items()))
    again = f" ({summary.recomputed} of them recomputed: their code changed)" if summary.recomputed else ""
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


def _stat_tasks() -> tuple[str, ...]:
    from harness.reporting.stats_report import stat_tasks

    return stat_tasks()


def _publish(frame, task: str, out: Path, models: list[str] | None, datasets: list[str] | None,
             style: str = "text") -> None:
    """Print the task's tables and write them (txt, md, tex) and its figures under ``out``."""
    from harness.reporting.figures import task_figures
    from harness.records.input_sensitivity import read_verdicts
    from harness.reporting.pretraining_marks import marked_task_tables, read_declared_sources
    from harness.reporting.tables import render

    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    model_notes: dict[str, None] = {}  # printed once per run, after every table (each file keeps its own)
    verdicts = read_verdicts(out)
    for stem, table in marked_task_tables(frame, task, models, datasets, read_declared_sources(out), verdicts):
        print(render(table, style, with_model_notes=False))
        model_notes.update(dict.fromkeys(table.model_notes))
        for fmt, ext in (("text", "txt"), ("markdown", "md"), ("latex", "tex")):
            (folder / f"{stem}.{ext}").write_text(render(table, fmt))
    for note in model_notes:
        print(f"note: {note}")
    if verdicts:  # run --probe-input: the probe's verdicts (harness.reporting.input_sensitivity)
        from harness.reporting.input_sensitivity import verdict_table

        print(verdict_table(verdicts, "markdown" if style == "markdown" else "text"))
        for fmt, ext in (("text", "txt"), ("markdown", "md")):
            (folder / f"input_sensitivity.{ext}").write_text(verdict_table(verdicts, fmt))
    for path in task_figures(frame, task, out / "figures"):
        if path.suffix == ".png":
            print(f"figure: {path}")


def _repair(path: Path) -> int:
    from harness.records.store import repair_store

    report = repair_store(path)
    if report.backup is None:
        print(f"{path}: {report.kept} rows, all valid; nothing to repair")
        return 0
    print(f"{path}: kept {report.kept} rows; {report.rejected} lines moved aside to {report.rejected_file}; "
          f"the damaged file is kept unchanged as {report.backup}")
    return 0


def _table(args: argparse.Namespace) -> int:
    from harness.records.store import read_records

    frame = read_records(Path(args.out) / RECORDS_FILE)
    out = Path(args.out)
    rows = frame[frame["task"] == args.task]
    if rows.empty:
        present = ", ".join(sorted(set(frame["task"]))) or "none"
        raise SpecError(f"{out / RECORDS_FILE} holds no {args.task} records (tasks recorded there: {present}); "
                        f"`python -m harness run {args.task} --out {out}` writes them")
    if not os.access(out, os.W_OK) or _read_only(out):
        raise SpecError(f"{out} is read-only: `table` writes its tables there; for archived results use "
                        f"`python -m harness report --results {out} --out ANOTHER_FOLDER`")
    if args.by:
        stress.publish_breakdown(frame, args.task, out, args.by, args.format)
        return 0
    _publish(frame, args.task, out, None, None, args.format)
    if args.stats:
        _print_statistics(frame, args.task, out, args.reference)
    if not (rows["status"] == "ok").any():
        print(f"error: nothing was scored: none of the {len(rows)} {args.task} rows finished ok; the table's notes "
              "and the records' error column say why", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    return shards.partial_table(out, args.task)  # shards: a plan with cells lacking rows is partial


def _check_writable(folder: Path, flag: str) -> None:
    """A run appends to ``folder``'s records: a read-only folder is a usage error before any work."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    records = folder / RECORDS_FILE
    for target in (existing, *([records] if records.exists() else [])):
        if _read_only(target) or not os.access(target, os.W_OK):
            raise SpecError(f"{flag} {folder} is read-only: a run writes its records there (use another {flag}; "
                            f"`python -m harness report --results {folder} --out ELSEWHERE` reads archived results)")


def _read_only(folder: Path) -> bool:
    """Whether ``folder`` sits on a read-only file system (``os.access`` says yes to root there too)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _print_statistics(frame, task: str, out: Path, reference: str | None, quiet: bool = False) -> None:
    from harness.reporting.stats_report import stat_tasks, write_statistics

    if task not in stat_tasks():
        raise ValueError(f"--stats covers the tasks that score windows ({', '.join(stat_tasks())}), not {task}")
    done = write_statistics(frame[frame["task"] == task], out, out / "statistics", reference=reference)
    if quiet:
        return
    folder = out / "statistics"
    for name in (f"leaderboard_{task}.txt", f"significance_rmse_{task}_grid.txt"):
        if (folder / name).exists():
            print((folder / name).read_text())
    for line in done.produced:
        print(f"statistics: {line}")
    for what, why in done.missing:
        print(f"not computed: {what}: {why}")


def _list(what: str) -> int:
    from models.pretraining import data_line
    from models.registry import FAMILY_LABELS, all_specs
    from protocols.datasets import all_datasets

    if what in ("datasets", "all"):
        print("Datasets (or pass a folder path, see docs/datasets.md):")
        for name, spec in sorted(all_datasets().items()):
            print(f"  {name:<22} {'[default] ' if spec.default else ''}{spec.description}")
    if what in ("models", "all"):
        print("Models (status: ready | needs weights | needs package | needs environment | needs flag | needs code):")
        for name, spec in sorted(all_specs().items()):
            status, reason = spec.status()
            print(f"  {name:<22} {status:<17} {spec.family:<12} licence: {spec.licence}"
                  f"{'  ' + spec.default_label() if spec.default_label() else ''}")
            print(f"  {'':<22} {spec.description}")
            if spec.family in FAMILY_LABELS:
                print(f"  {'':<22} {FAMILY_LABELS[spec.family]}")
            print(f"  {'':<22} capabilities: {_capabilities(spec)}; tasks: {', '.join(spec.tasks)}")
            print(f"  {'':<22} pre-training data: {data_line(name)}")
            if reason:
                print(f"  {'':<22} to run it: {reason}")
    if what in ("tasks", "all"):
        print("Tasks:")
        for name, task in all_tasks().items():
            print(f"  {name:<22} {task.description}")
            if task.options:
                print(f"  {'':<22} options: {' '.join(o.flag for o in task.options)}")
    return 0


def _capabilities(spec) -> str:
    """One line: what the model does (forecast, quantile forecasts, causal imputation, embedding), per
    channel or multivariate, context limits, native horizon."""
    caps = spec.model_capabilities()
    if caps is None:
        return "declared by the model when it loads"
    does = [k for k in ("forecast", "quantiles", "impute", "embed", "fit") if getattr(caps, k)]  # quantiles: CRPS/WQL
    parts = ["+".join(does) or "none", "multivariate" if caps.multivariate else "per channel"]
    if caps.min_context > 1 or caps.max_context is not None:
        parts.append(f"context {caps.min_context}..{caps.max_context if caps.max_context is not None else ''}")
    if caps.settings is not None:
        parts.append("settings " + " ".join(f"{c}/{h}" for c, h in caps.settings))
    if spec.native_horizon:
        parts.append(f"native horizon {spec.native_horizon}")
    return ", ".join(parts)
