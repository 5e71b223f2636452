"""``python -m harness windows export`` and ``python -m harness score``: the two commands of
:mod:`harness.external`. Every refusal is one line (exit 2) from the CLI's error handling."""

from __future__ import annotations

import argparse
from pathlib import Path

from protocols.specs import MISSING_RATES, NOISE_LEVELS, Setting

COMMANDS = ("windows", "score")
EXPORTABLE = ("forecasting", "noise", "imputation")


def add_parsers(subparsers) -> None:
    windows = subparsers.add_parser("windows", help="export the exact test windows, to forecast them elsewhere")
    sub = windows.add_subparsers(dest="windows_command", required=True)
    ex = sub.add_parser("export", help="write every fold's, setting's and condition's model inputs (no target) "
                                       "and a manifest (docs/external.md)")
    ex.add_argument("task", choices=EXPORTABLE)
    ex.add_argument("--dataset", nargs="+", default=[], metavar="NAME|PATH",
                    help="registered dataset name(s) or folder path(s); default: the embedded cohort")
    ex.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")
    ex.add_argument("--settings", nargs="+", default=None, metavar="C/H",
                    help="forecasting and noise: context/horizon settings (default: the task's)")
    ex.add_argument("--levels", nargs="+", type=float, default=list(NOISE_LEVELS), metavar="BETA",
                    help="noise: levels beta (default: %(default)s)")
    ex.add_argument("--rates", nargs="+", type=float, default=[100 * r for r in MISSING_RATES], metavar="PCT",
                    help="imputation: missing rates in percent (default: %(default)s)")
    ex.add_argument("--seeds", nargs="+", type=int, default=None, help="seeds (default: the task's)")
    ex.add_argument("--max-windows-per-subject", type=int, default=None,
                    help="windows (segments) drawn per subject; default: the task's")
    ex.add_argument("--segment-length", type=int, default=None, help="imputation: segment length in samples")
    ex.add_argument("--out", type=Path, required=True, help="a new (or empty) folder for the export")

    sc = subparsers.add_parser("score", help="score a predictions file made elsewhere against an export; append "
                                             "its rows to OUT/records.csv")
    sc.add_argument("task", choices=EXPORTABLE)
    sc.add_argument("--export", dest="windows", type=Path, required=True, metavar="DIR",
                    help="the folder `harness windows export` wrote")
    sc.add_argument("--predictions", type=Path, required=True, help="the predictions file (npz, docs/external.md)")
    sc.add_argument("--model", required=True, help="the name the model's rows get (not a registered model's)")
    sc.add_argument("--out", type=Path, required=True, help="folder holding records.csv (created if needed)")
    sc.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")


def run(args: argparse.Namespace) -> int:
    if args.command == "windows":
        return _export(args)
    return _score(args)


def _export(args: argparse.Namespace) -> int:
    from harness.external.export import export_windows
    from harness.external.units import task_options
    from harness.run.runner import RunConfig

    options = task_options(args.task, {
        "settings": tuple(Setting.parse(s) for s in args.settings) if args.settings else None,
        "max_windows_per_subject": args.max_windows_per_subject, "segment_length": args.segment_length,
        "levels": tuple(args.levels), "rates": tuple(r / 100 for r in args.rates)})
    config = RunConfig(task=args.task, datasets=tuple(args.dataset), options=options,
                       seeds=tuple(args.seeds) if args.seeds else None,
                       data_root=args.data_root, device="cpu", progress=False)
    manifest = export_windows(config, args.out)
    rows = sum(u.rows for u in manifest.units)
    what = "queries" if manifest.kind == "impute" else "windows"
    print(f"{len(manifest.units)} units, {rows} {what}: {args.out / 'manifest.json'}")
    print(f"fingerprint {manifest.fingerprint}")
    return 0


def _score(args: argparse.Namespace) -> int:
    from harness.external.layout import read_manifest
    from harness.external.score import PredictionsError, score_predictions

    manifest = read_manifest(args.windows)
    if manifest.task != args.task:
        raise PredictionsError(f"{args.windows} is an export of the {manifest.task} task, not {args.task}")
    summary = score_predictions(args.windows, args.predictions, args.model, args.out, args.data_root)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(summary.status_counts.items()))
    print(f"{summary.rows} rows of {args.model} (predictions sha256 {summary.identity[:16]}): {counts}")
    print(f"records: {summary.records_path}; tables: python -m harness table {args.task} --out {args.out}")
    return 0
