"""`python -m harness stale [FOLDER ...]` (which results folders hold rows of versions that changed) and
`python -m harness restamp TASK [run's flags]` (verify a sample of a folder's cells, then renew what identifies its
rows): docs/records.md, "Versions"."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_STALE = 4  # stale: some folder holds rows of versions that have changed
EXIT_MOVED = 5  # restamp: some verified cell moved (nothing was re-stamped)


def add_parsers(sub, run: argparse.ArgumentParser) -> None:
    """``stale``; ``restamp`` takes every flag of ``run`` (the same parser, so the same cells) and its own."""
    stale = sub.add_parser("stale", help="list the results folders whose rows were computed under task versions or "
                                         "model revisions that have changed since (no model is loaded)")
    stale.add_argument("folders", nargs="*", type=Path, default=[Path("results")], metavar="FOLDER",
                       help="folders holding records.csv, or folders of such folders (default: results)")
    restamp = sub.add_parser("restamp", parents=[run], add_help=False, conflict_handler="resolve",
                             help="recompute a sample of --out's cells (the flags of the run that made it), and when "
                                  "none moved beyond its model's tolerance, stamp its rows with the current versions")
    restamp.add_argument("--sample", default="2", metavar="N|all",
                         help="cells verified per model (default: %(default)s; all: every cell)")
    restamp.add_argument("--dry-run", action="store_true", help="verify only; write nothing")


def run_stale(args: argparse.Namespace) -> int:
    from harness.records.staleness import folder_staleness, results_folders

    folders = results_folders(args.folders)
    if not folders:
        raise ValueError(f"no records.csv in or under {', '.join(map(str, args.folders))}")
    found = [folder_staleness(folder) for folder in folders]
    for item in found:
        print(item.line())
    stale = [item for item in found if item.stale]
    print(f"{len(stale)} of {len(found)} folders out of date" + (
        ": rerun the command that made each (its finished rows of current versions are kept)" if stale else ""))
    return EXIT_STALE if stale else 0


def run_restamp(args: argparse.Namespace, config) -> int:
    from harness.run.restamp import restamp

    if not (Path(config.out) / "records.csv").is_file():
        raise ValueError(f"--out {config.out} holds no records.csv: nothing to re-stamp")
    sample = None if str(args.sample) == "all" else _count(args.sample)
    report = restamp(config, sample=sample, dry_run=args.dry_run, log=lambda m: print(m, file=sys.stderr))
    for line in report.moved:
        print(f"moved: {line}")
    print(report.line() + (" (dry run: nothing written)" if args.dry_run and not report.moved else ""))
    return EXIT_MOVED if report.moved else 0


def _count(text: str) -> int:
    if not str(text).isdigit() or int(text) < 1:
        raise ValueError(f"--sample {text!r}: a whole number >= 1, or all")
    return int(text)
