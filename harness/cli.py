"""`python -m harness ...`: run tasks, list what exists, re-render tables."""

from __future__ import annotations

import argparse
import errno
import sys

from harness.commands import data, examples, listing, shards, stress, tables, versions
from harness.commands import run as run_cmd
from harness.commands.publish import EXIT_NOTHING_SCORED, output_folder, publish
from harness.external import cli as external_cli
from harness.run.stopping import (  # noqa: F401 (the exit statuses: part of this module's interface)
    EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated, exit_status, raise_if_stopped, stop_on_signals,
)
from protocols.words import did_you_mean

__all__ = ["EXIT_INTERRUPTED", "EXIT_NOTHING_SCORED", "EXIT_TERMINATED", "main"]

# their flags name the registered tasks: the registries load for them
REGISTRY_COMMANDS = ("run", "plan", "table", "restamp")


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
    versions.add_parsers(sub, run)  # stale, restamp (run's own flags)

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
    """The command's exit status; SIGINT or SIGTERM at any moment (an import, a cell, the tables) is 130 or 143,
    with every finished row kept, even where the code it landed in swallowed the interrupt (harness.run.stopping)."""
    with stop_on_signals():
        try:
            raise_if_stopped()  # one received during `python -m harness`'s imports
            try:
                parser = _parser(_command(sys.argv[1:] if argv is None else argv))
            except (ValueError, KeyError, RuntimeError, ImportError) as exc:  # a plugin that fails: one line
                print(f"error: {exc}", file=sys.stderr)
                return 2
            args = parser.parse_args(argv)
            status = _dispatch(args)
            raise_if_stopped()
            return status
        except KeyboardInterrupt as exc:
            what = "terminated" if isinstance(exc, Terminated) else "interrupted"
            print(f"\n{what}: every finished row is kept; rerun the same command to resume", file=sys.stderr)
            return exit_status(exc)


def _dispatch(args: argparse.Namespace) -> int:
    try:
        if args.command == "run":
            return run_cmd.run_command(args)
        if args.command == "plan":
            output_folder(args.out, "--out", create=False)  # as `run` does: a file is no --out
            return shards.run_plan(args, run_cmd.run_config(args))
        if args.command == "stale":
            return versions.run_stale(args)
        if args.command == "restamp":
            return versions.run_restamp(args, run_cmd.run_config(args))
        if args.command == "merge":
            output_folder(args.out, "OUT", create=False)  # a refused merge leaves no folder behind
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
