"""The commands of the stress tests (issue #31) beside ``run``: breakdowns (``table --by``) and the artefact
figure (``artefacts``).  Kept here so that ``harness.cli`` only hooks them in.  The options of ``run`` that
the stress tests add (masks, artefacts, physiological fidelity) are their tasks' options
(``harness.registry.options``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from protocols.specs import ARTEFACT_PLACEMENTS  # no torch: the parser's choices


WINDOW_BREAKDOWNS = ("beats", "quality", "atlas")  # they read the windows again: --data-root
BREAKDOWNS = ("modality", "subject", *WINDOW_BREAKDOWNS)


def add_table_arguments(table: argparse.ArgumentParser) -> None:
    table.add_argument("--by", choices=BREAKDOWNS, default=None,
                       help="break the task's tables down by signal modality or by subject (docs/protocols.md, "
                            "Breakdowns); forecasting and noise also by beats (peak timing, heart rate, HRV), by "
                            "signal-quality band, or as the failure atlas (docs/stress-tests.md); text, Markdown, "
                            "LaTeX and a figure")
    table.add_argument("--data-root", type=Path, default=None,
                       help="with --by beats|quality|atlas: folder holding downloaded datasets (default: "
                            "$SOTER_BENCH_DATA), to read the windows again")


def add_parsers(sub) -> None:
    art = sub.add_parser("artefacts", help="draw one window of a dataset under every artefact at every severity "
                                           "(the figure of docs/protocols.md)")
    art.add_argument("--dataset", default=None, metavar="NAME|PATH", help="default: the embedded cohort")
    art.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")
    art.add_argument("--channel", default=None, help="the channel drawn (default: the first)")
    art.add_argument("--setting", default="96/48", metavar="C/H", help="the window's context/horizon (default: %(default)s)")
    art.add_argument("--seed", type=int, default=0)
    art.add_argument("--mains-hz", type=float, default=50.0, choices=(50.0, 60.0))
    art.add_argument("--artefact-placement", default=ARTEFACT_PLACEMENTS[0], choices=ARTEFACT_PLACEMENTS,
                     help="where motion bursts and pops fall, as in `run noise` (default: %(default)s)")
    art.add_argument("--out", type=Path, default=Path("results/runs/default/figures"))


def run_artefacts(args: argparse.Namespace) -> int:
    from harness.reporting.artefact_figure import artefact_figure
    from harness.run.runner import default_datasets
    from protocols.datasets import load_dataset
    from protocols.specs import Setting

    dataset = load_dataset(args.dataset or default_datasets()[0], data_root=args.data_root)
    for path in artefact_figure(dataset, Setting.parse(args.setting), args.out, channel=args.channel, seed=args.seed,
                                mains_hz=args.mains_hz, placement=args.artefact_placement):
        print(path)
    return 0


def publish_breakdown(frame, task: str, out: Path, by: str, style: str, data_root: Path | None = None) -> None:
    """Print the breakdown tables of ``task`` and write them (txt, md, tex) with their figure under ``out``."""
    from harness.reporting.breakdown import breakdown_figures, breakdown_tables
    from harness.reporting.window_breakdowns import publish_window_breakdown

    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    if by in WINDOW_BREAKDOWNS:
        tables, figures = publish_window_breakdown(frame, task, out, by, data_root)
    else:
        tables, figures = breakdown_tables(frame, task, out, by), breakdown_figures(frame, task, out, by)
    for stem, table in tables:
        print(table.render(style))
        for fmt, ext in (("text", "txt"), ("markdown", "md"), ("latex", "tex")):
            (folder / f"{stem}.{ext}").write_text(table.render(fmt))
    for path in figures:
        if path.suffix == ".png":
            print(f"figure: {path}")
