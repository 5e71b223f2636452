"""The command-line options of the stress tests (issue #31): masks, artefacts, physiological fidelity,
breakdowns and the artefact figure.  Kept here so that ``harness.cli`` only hooks them in."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from protocols.specs import (ARTEFACT_KINDS, BURST_DISTRIBUTIONS, MASK_CHANNELS, MASK_KINDS, PHYSIOLOGY_MEASURES,
                             PHYSIOLOGY_SOURCES, ArtefactSpec, MaskSpec, PhysiologySpec)

BREAKDOWNS = ("modality", "subject")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """``run``'s options of the named departures from the paper's protocols (defaults: the paper's)."""
    g = run.add_argument_group("stress tests (docs/protocols.md; defaults are the paper's protocols)")
    g.add_argument("--mask", choices=MASK_KINDS, default=MaskSpec.kind,
                   help="imputation, physiology: where points go missing: points (the paper's: each point alone) or "
                        "contiguous gaps (default: %(default)s)")
    g.add_argument("--mask-channels", choices=MASK_CHANNELS, default=MaskSpec.channels,
                   help="independent: each channel its own gaps (asynchronous sensors); shared: all channels "
                        "together (default: %(default)s)")
    g.add_argument("--burst-seconds", type=float, default=MaskSpec.burst_seconds, metavar="S",
                   help="contiguous mask: mean gap length in seconds (default: %(default)s)")
    g.add_argument("--burst-distribution", choices=BURST_DISTRIBUTIONS, default=MaskSpec.distribution,
                   help="contiguous mask: gap length law (default: %(default)s)")
    g.add_argument("--artefact", choices=ARTEFACT_KINDS, default=ArtefactSpec.kind,
                   help="noise: what corrupts the context: gaussian (the paper's) or a wearable artefact "
                        "(default: %(default)s); --levels is then its severity scale")
    g.add_argument("--mains-hz", type=float, default=ArtefactSpec.mains_hz, choices=(50.0, 60.0),
                   help="--artefact mains: interference frequency (default: %(default)s)")
    d = PhysiologySpec()
    g.add_argument("--physio-context", type=float, default=d.context_seconds, metavar="S",
                   help="physiology: forecast context in seconds (default: %(default)s)")
    g.add_argument("--physio-horizon", type=float, default=d.horizon_seconds, metavar="S",
                   help="physiology: forecast horizon in seconds, the span whose rate is scored (default: %(default)s)")
    g.add_argument("--physio-segment", type=float, default=d.segment_seconds, metavar="S",
                   help="physiology: imputed segment length in seconds (default: %(default)s)")
    g.add_argument("--physio-sources", nargs="+", choices=PHYSIOLOGY_SOURCES, default=list(d.sources),
                   help="physiology: forecasts and/or imputed segments (default: %(default)s)")
    g.add_argument("--physio-measures", nargs="+", choices=PHYSIOLOGY_MEASURES, default=list(d.measures),
                   help="physiology: heart rate from ECG, PPG; breathing rate from respiration (default: %(default)s)")


def run_options(args: argparse.Namespace) -> dict[str, Any]:
    """RunConfig fields from ``run``'s stress options."""
    return {
        "mask": MaskSpec(args.mask, args.mask_channels, args.burst_seconds, args.burst_distribution),
        "artefact": ArtefactSpec(args.artefact, args.mains_hz),
        "physiology": PhysiologySpec(context_seconds=args.physio_context, horizon_seconds=args.physio_horizon,
                                     segment_seconds=args.physio_segment, sources=tuple(args.physio_sources),
                                     measures=tuple(args.physio_measures)),
    }


def add_table_arguments(table: argparse.ArgumentParser) -> None:
    table.add_argument("--by", choices=BREAKDOWNS, default=None,
                       help="break the task's tables down by signal modality or by subject (text, Markdown, LaTeX "
                            "and a figure; docs/protocols.md, Breakdowns)")


def add_parsers(sub) -> None:
    art = sub.add_parser("artefacts", help="draw one window of a dataset under every artefact at every severity "
                                           "(the figure of docs/protocols.md)")
    art.add_argument("--dataset", default=None, metavar="NAME|PATH", help="default: the embedded cohort")
    art.add_argument("--data-root", type=Path, default=None, help="folder holding downloaded datasets")
    art.add_argument("--channel", default=None, help="the channel drawn (default: the first)")
    art.add_argument("--setting", default="96/48", metavar="C/H", help="the window's context/horizon (default: %(default)s)")
    art.add_argument("--seed", type=int, default=0)
    art.add_argument("--mains-hz", type=float, default=50.0, choices=(50.0, 60.0))
    art.add_argument("--out", type=Path, default=Path("results/runs/default/figures"))


def run_artefacts(args: argparse.Namespace) -> int:
    from harness.artefact_figure import artefact_figure
    from harness.runner import default_datasets
    from protocols.datasets import load_dataset
    from protocols.specs import Setting

    dataset = load_dataset(args.dataset or default_datasets()[0], data_root=args.data_root)
    for path in artefact_figure(dataset, Setting.parse(args.setting), args.out, channel=args.channel, seed=args.seed,
                                mains_hz=args.mains_hz):
        print(path)
    return 0


def publish_breakdown(frame, task: str, out: Path, by: str, style: str) -> None:
    """Print the breakdown tables of ``task`` and write them (txt, md, tex) with their figure under ``out``."""
    from harness.breakdown import breakdown_figures, breakdown_tables

    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    for stem, table in breakdown_tables(frame, task, out, by):
        print(table.render(style))
        for fmt, ext in (("text", "txt"), ("markdown", "md"), ("latex", "tex")):
            (folder / f"{stem}.{ext}").write_text(table.render(fmt))
    for path in breakdown_figures(frame, task, out, by):
        if path.suffix == ".png":
            print(f"figure: {path}")
