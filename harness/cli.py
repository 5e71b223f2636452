"""`python -m harness ...`: run tasks, list what exists, re-render tables."""

from __future__ import annotations

import argparse
import errno
import signal
import sys

from harness.commands import data, examples, listing, shards, stress, tables
from harness.commands import run as run_cmd
from harness.commands.publish import EXIT_NOTHING_SCORED, output_folder, publish
from harness.external import cli as external_cli
from protocols.words import did_you_mean

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOTHING_SCORED", "EXIT_TERMINATED", "main"]

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
REGISTRY_COMMANDS = ("run", "plan", "table")  # their flags name the registered tasks: the registries load for them


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


class _Parser(argparse.ArgumentParser):
    """argparse's parser with usage errors of one line: the problem, the closest choice to a misspelt one, and
    where the usage is, instead of the whole usage (36 lines for `run`) above the problem."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is not None and value not in action.choices:
            raise argparse.ArgumentError(action, f"invalid choice {value!r}{did_you_mean(str(value), action.choices)}; "
                                                 f"choose from {', '.join(map(str, action.choices))}")

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"error: {message} (`{self.prog} --help` shows the usage)\n")


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``command`` (the one argv names, or "" for none), the flags that need the
    task and model registries are added for that command only, so that ``--help``, ``list`` and the other
    commands start without loading them. None: every command's every flag."""
    complete = command is None or command in REGISTRY_COMMANDS
    p = _Parser(prog="python -m harness", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a task and record every result")
    if complete:
        run_cmd.add_arguments(run)  # loads the plugins: the tasks they register are the choices
    shards.add_parsers(sub, run)  # plan (run's own flags) and merge

    listing.add_arguments(sub.add_parser("list", help="list datasets, models and tasks"))
    data.add_parser(sub)
    external_cli.add_parsers(sub)  # windows export, score: forecasts made outside the harness (docs/external.md)
    stress.add_parsers(sub)

    examples.add_arguments(sub.add_parser(
        "examples", help="plot one forecasting window with every model's forecast (PNG, PDF, CSV)"))
    tables.add_report_arguments(sub.add_parser(
        "report", help="every paper table and figure the records support, beside the paper's numbers"))
    tables.add_repair_arguments(sub.add_parser(
        "repair", help="keep the valid rows of a damaged records.csv and move the rest aside (deletes nothing)"))
    table = sub.add_parser("table", help="re-render a task's table from recorded results")
    if complete:
        tables.add_table_arguments(table)
    return p


def _command(argv: list[str]) -> str:
    """The command argv names: its first word that is no flag (the top level has no flag but --help)."""
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    try:
        parser = _parser(_command(sys.argv[1:] if argv is None else argv))
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
            return run_cmd.run_command(args)
        if args.command == "plan":
            return shards.run_plan(args, run_cmd.run_config(args))
        if args.command == "merge":
            output_folder(args.out, "OUT")
            return shards.run_merge(args, lambda frame, task, out: publish(frame, task, out, None, None))
        if args.command == "list":
            return listing.run(args)
        if args.command == "data":
            return data.run(args)
        if args.command in external_cli.COMMANDS:
            return external_cli.run(args)
        if args.command == "examples":
            return examples.run(args)
        if args.command == "artefacts":
            return stress.run_artefacts(args)
        if args.command == "report":
            return tables.report(args)
        if args.command == "repair":
            return tables.repair(args)
        return tables.table(args)
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
