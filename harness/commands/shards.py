"""`python -m harness plan TASK ...` (what a run would compute and cost) and `merge OUT SHARD_DIR...` (shards
of `run --shard K/N` into one store): docs/cluster.md."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Callable

EXIT_PARTIAL = 3  # merge or table: the records lack planned cells (a shard missing or unfinished)


def add_parsers(sub, run: argparse.ArgumentParser) -> None:
    """``plan`` takes every flag of ``run`` (the same parser, so the same cells), and ``--json``; ``merge``."""
    plan = sub.add_parser("plan", parents=[run], add_help=False, conflict_handler="resolve",
                          help="the cells a run would compute (per model and dataset), their estimated CPU and GPU "
                               "time and the share already in --out; nothing runs")
    plan.add_argument("--json", action="store_true", help="the plan as JSON instead of a table")
    merge = sub.add_parser("merge", help="merge the --out folders of `run --shard K/N` into OUT (the records of one "
                                         "serial run); conflicting rows are refused")
    merge.add_argument("out", type=Path, metavar="OUT")
    merge.add_argument("shards", nargs="+", type=Path, metavar="SHARD_DIR")


def run_merge(args: argparse.Namespace, publish: Callable[[object, str, Path], None]) -> int:
    """Merge, then write OUT's tables as a run writes them; a plan with cells lacking rows is reported partial."""
    from harness.records.store import read_records
    from harness.run.shards import merge

    report = merge(args.out, args.shards)
    frame = with_plan(read_records(Path(args.out) / "records.csv"), Path(args.out))
    for task in sorted(set(frame["task"])):
        publish(frame, task, Path(args.out))
    replaced = f" ({report.replaced} of them replacing a lost worker's error row)" if report.replaced else ""
    print(f"merged {len(args.shards)} folder(s) into {args.out}: {report.written} rows written{replaced}, "
          f"{report.already} already there")
    for line in report.partial:
        print(line, file=sys.stderr)
    return EXIT_PARTIAL if report.partial else 0


def with_plan(frame, out: Path):
    """``frame`` knowing the folds its run planned where ``out`` holds a shard's plan (a shard lacks rows of whole
    folds): its tables then name every fold without a row (harness.reporting.tables.PLANNED_FOLDS)."""
    from harness.reporting.tables import PLANNED_FOLDS
    from harness.run.shards import planned_folds

    folds = planned_folds(out)
    if folds:
        frame.attrs[PLANNED_FOLDS] = folds
    return frame


def partial_table(out: Path, task: str) -> int:
    """After `table`: EXIT_PARTIAL, with one line each, when the plan in ``out`` has cells without a row."""
    from harness.records.store import RecordStore
    from harness.run.shards import partial_lines

    lines = partial_lines(out, RecordStore(Path(out) / "records.csv", readonly=True).rows(), task)
    for line in lines:
        print(line, file=sys.stderr)
    return EXIT_PARTIAL if lines else 0


def run_plan(args: argparse.Namespace, config) -> int:
    """Plan ``config`` as a run would, count each cell's samples, estimate, print."""
    from harness.run.plan_costs import estimate_plan, plan_text

    started = time.process_time()  # the setup in CPU seconds, as the calibration: a busy machine's wall is not the run's
    estimate = estimate_plan(config, started)
    print(json.dumps(estimate, indent=1) if args.json else plan_text(estimate))
    return 0
