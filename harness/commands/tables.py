"""`table` (a task's tables again from its records), `report` (every paper table and figure the records support)
and `repair` (a damaged records.csv): the commands that read a run's records. pandas is imported on use."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from harness.commands import shards, stress
from harness.commands.publish import EXIT_NOTHING_SCORED, output_folder, print_statistics, publish, read_only
from harness.run.names import DEFAULT_OUT, RECORDS_FILE
from protocols.specs import SpecError


def add_table_arguments(table: argparse.ArgumentParser) -> None:
    from harness.registry.tasks import all_tasks

    table.add_argument("task", choices=list(all_tasks()))
    table.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder holding records.csv")
    table.add_argument("--format", choices=("text", "markdown", "latex"), default="text")
    table.add_argument("--stats", action="store_true",
                       help="also the statistics (forecasting, noise): leaderboard, significance marks with bootstrap "
                            "intervals, critical-difference diagram (written under OUT/statistics)")
    table.add_argument("--reference", default=None, metavar="MODEL",
                       help="with --stats: test every model against MODEL instead of each cell's best")
    table.add_argument("--show", choices=("provenance",), default=None,
                       help="provenance: instead of the metrics, what each model consumed per dataset and setting "
                            "(context and horizon in samples and seconds, rate, windows scored/planned, inference "
                            "s/window, training s; written to OUT/tables/TASK_provenance.txt and .md)")
    stress.add_table_arguments(table)


def add_report_arguments(rep: argparse.ArgumentParser) -> None:
    rep.add_argument("--results", type=Path, default=DEFAULT_OUT, help="folder holding records.csv (default: %(default)s)")
    rep.add_argument("--out", type=Path, default=Path("results/report"), help="report folder (default: %(default)s)")
    rep.add_argument("--studies", type=Path, default=None, metavar="DIR",
                     help="where the study runners wrote their files (default: searched under --results)")
    rep.add_argument("--reference", default=None, metavar="MODEL",
                     help="significance marks against MODEL instead of each cell's best model")
    rep.add_argument("--data-root", type=Path, default=None,
                     help="folder holding downloaded datasets, to draw the failure atlas's windows (default: "
                          "$SOTER_BENCH_DATA)")


def add_repair_arguments(fix: argparse.ArgumentParser) -> None:
    fix.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder holding records.csv (default: %(default)s)")


def report(args: argparse.Namespace) -> int:
    from harness.reporting.report import write_report

    output_folder(args.out, "--out", create=False)
    if not Path(args.results).exists():  # as `table` does: no report of nothing, with exit 0
        raise SpecError(f"--results {args.results} does not exist; run `python -m harness run ...` first, "
                        "or name the folder that holds records.csv")
    output_folder(args.out, "--out")
    print(write_report(args.results, args.out, studies=args.studies, reference=args.reference,
                       data_root=args.data_root))
    return 0


def repair(args: argparse.Namespace) -> int:
    output_folder(args.out, "--out", create=False)
    return _repair(Path(args.out) / RECORDS_FILE)


def table(args: argparse.Namespace) -> int:
    output_folder(args.out, "--out", create=False)
    return _table(args)


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

    frame = shards.with_plan(read_records(Path(args.out) / RECORDS_FILE), Path(args.out))
    out = Path(args.out)
    rows = frame[frame["task"] == args.task]
    if rows.empty:
        present = ", ".join(sorted(set(frame["task"]))) or "none"
        raise SpecError(f"{out / RECORDS_FILE} holds no {args.task} records (tasks recorded there: {present}); "
                        f"`python -m harness run {args.task} --out {out}` writes them")
    if not os.access(out, os.W_OK) or read_only(out):
        raise SpecError(f"{out} is read-only: `table` writes its tables there; for archived results use "
                        f"`python -m harness report --results {out} --out ANOTHER_FOLDER`")
    if args.data_root is not None and not (args.by in stress.WINDOW_BREAKDOWNS
                                           or str(args.by or "").startswith(stress.FIELD_PREFIX)):
        raise SpecError("--data-root is read by --by subject-field:FIELD|beats|quality|atlas only (they read the "
                        "dataset or its windows again)")
    if args.by:
        fields = (stress.subject_fields(frame, args.task, args.by[len(stress.FIELD_PREFIX):], args.dataset,
                                        args.data_root) if args.by.startswith(stress.FIELD_PREFIX) else None)
        stress.publish_breakdown(frame, args.task, out, args.by, args.format, fields, args.data_root)
        return 0
    if args.show == "provenance":
        return _show_provenance(frame, args.task, out, args.format)
    publish(frame, args.task, out, None, None, args.format)
    if args.stats:
        print_statistics(frame, args.task, out, args.reference)
    if not (rows["status"] == "ok").any():
        print(f"error: nothing was scored: none of the {len(rows)} {args.task} rows finished ok; the table's notes "
              "and the records' error column say why", file=sys.stderr)
        return EXIT_NOTHING_SCORED
    return shards.partial_table(out, args.task)  # shards: a plan with cells lacking rows is partial


def _show_provenance(frame, task: str, out: Path, style: str) -> int:
    """``table TASK --show provenance``: print the provenance table and write it (txt, md) under ``out/tables``."""
    from harness.reporting.provenance_table import provenance_table

    print(provenance_table(frame, task, "markdown" if style == "markdown" else "text"))
    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    for fmt, ext in (("text", "txt"), ("markdown", "md")):
        (folder / f"{task}_provenance.{ext}").write_text(provenance_table(frame, task, fmt))
    return 0
