"""The commands of the stress tests (issue #31) beside ``run``: breakdowns (``table --by``) and the artefact
figure (``artefacts``).  Kept here so that ``harness.cli`` only hooks them in.  The options of ``run`` that
the stress tests add (masks, artefacts, physiological fidelity) are their tasks' options
(``harness.registry.options``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from protocols.specs import ARTEFACT_PLACEMENTS, SpecError  # no torch: the parser's choices


WINDOW_BREAKDOWNS = ("beats", "quality", "atlas")  # they read the windows again: --data-root
BREAKDOWNS = ("modality", "subject", "horizon-seconds", *WINDOW_BREAKDOWNS)
FIELD_PREFIX = "subject-field:"


def parse_by(text: str) -> str:
    """One of :data:`BREAKDOWNS`, or ``subject-field:FIELD`` (a field of the dataset's per-subject metadata)."""
    if text in BREAKDOWNS or (text.startswith(FIELD_PREFIX) and text[len(FIELD_PREFIX):]):
        return text
    raise argparse.ArgumentTypeError(f"unknown breakdown {text!r}; known: {', '.join(BREAKDOWNS)}, "
                                     f"{FIELD_PREFIX}FIELD (e.g. {FIELD_PREFIX}sex)")


def add_table_arguments(table: argparse.ArgumentParser) -> None:
    table.add_argument("--by", type=parse_by, default=None, metavar="|".join((*BREAKDOWNS, "subject-field:FIELD")),
                       help="break the task's tables down by signal modality, by subject, or by a per-subject "
                            "metadata field with bootstrap intervals (docs/protocols.md, Breakdowns); forecasting and "
                            "noise also by beats (peak timing, heart rate, HRV), by signal-quality band, or as the "
                            "failure atlas (docs/stress-tests.md); or list each model's settings on every dataset by "
                            "horizon in seconds (docs/commands.md)")
    table.add_argument("--dataset", action="append", default=None, metavar="NAME|PATH",
                       help="with --by subject-field: the dataset(s) whose per-subject fields are read (default: "
                            "the records' dataset names); matched to the rows by their data fingerprint")
    table.add_argument("--data-root", type=Path, default=None,
                       help="with --by subject-field|beats|quality|atlas: folder holding downloaded datasets (default: "
                            "$SOTER_BENCH_DATA), to read the dataset or its windows again")


def subject_fields(frame, task: str, field: str, refs: list[str] | None, data_root: Path | None
                   ) -> dict[str, dict[str, str]]:
    """Data fingerprint -> subject -> ``field``'s value, from each named dataset (default: the task rows' dataset
    names); a dataset none of whose subjects has the field is a usage error naming the fields it has."""
    from protocols.data import dataset_fingerprint
    from protocols.datasets import is_path_like, load_dataset
    from protocols.subjects import field_values, subject_table

    refs = refs or list(dict.fromkeys(frame.loc[frame["task"] == task, "dataset"]))
    found = {}
    for ref in refs:
        dataset = load_dataset(str(Path(ref).resolve()) if is_path_like(ref) else ref, data_root=data_root)
        values = field_values(dataset, field)
        if not values:
            have = sorted({k for f in subject_table(dataset).values() for k in f})
            raise SpecError(f"dataset {dataset.name!r} has no per-subject field {field!r}; its fields: "
                            f"{', '.join(have) or 'none (docs/datasets.md: [subjects.NAME] in the manifest)'}")
        found[dataset_fingerprint(dataset)] = values
    from harness.records.store import data_of

    scored = {data_of(p) for p in frame.loc[frame["task"] == task, "protocol"]}
    if not scored & set(found):
        raise SpecError(f"no {task} row was computed on the data of {', '.join(refs)} (the rows' data: "
                        f"{', '.join(sorted(str(s) for s in scored))}); name the dataset the rows were run on")
    return found


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


def publish_breakdown(frame, task: str, out: Path, by: str, style: str,
                      fields: dict[str, dict[str, str]] | None = None, data_root: Path | None = None) -> None:
    """Print the breakdown tables of ``task`` and write them (txt, md, tex) with their figure under ``out``;
    ``fields`` (``subject_fields``) for a breakdown by subject field, which has no figure; ``data_root`` for the
    breakdowns that read the windows again."""
    from harness.reporting.breakdown import breakdown_figures, breakdown_tables
    from harness.reporting.window_breakdowns import publish_window_breakdown

    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    if by.startswith(FIELD_PREFIX):
        from harness.reporting.subgroups import by_subject_field

        field = by[len(FIELD_PREFIX):]
        tables, figures = [(f"{task}_by_{field}", by_subject_field(frame, task, out, field, fields or {}))], []
    elif by in WINDOW_BREAKDOWNS:
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
