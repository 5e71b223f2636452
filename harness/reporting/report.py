"""`python -m harness report`: every paper table and figure the records support, the paper's own
numbers beside ours, and a list of what could not be produced and why.

Pure functions turn records into "our cells" in the paper's names (:func:`harness.reporting.paper_cells.our_cells`:
the ``paper_cells`` of each registered task, ``harness.tasks``) and line them up with the transcribed
paper tables (:func:`compare`); :func:`write_report` renders our task tables and figures (the same
renderer as ``run``), one comparison file per paper table, and ``REPORT.md``, and returns a
:class:`Report` whose text is the summary ``harness report`` prints.  One unit everywhere: every
RMSE, MAE, Macro-F1 and Macro-AUROC is x100 (``tables.SCALE``), ours and the paper's alike (the
paper printed its per-setting and imputation tables unscaled; they are rescaled here), shown with two
decimals.  A cell this run lacks is listed as missing with the reason; it is never filled from the
paper.

The training studies' tables (ablation, sensitivity, pre-training exposure, corpus-matched) come from
the files their runners write (``harness.studies``; drawn by :mod:`harness.reporting.study_tables`), found
anywhere under ``--results`` (or under ``studies=`` of :func:`write_report`): this run's table of
each is rendered like the task tables and compared with the paper's.  Rows of ``soter-authors``
(the authors' released checkpoint) are compared with the paper's SOTER rows, labelled
``SOTER (authors' checkpoint)``, apart from our own ``soter``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting import paper
from harness.reporting.paper_cells import AUTHORS, AUTHORS_LABEL, our_cells, paper_model_names, paper_tolerance
from harness.reporting.study_tables import STUDY_OUTPUTS, write_study_tables
from harness.reporting.tables import SCALE, md_escape, render

SCALED_METRICS = ("RMSE", "MAE", "Macro-F1", "Macro-AUROC")  # shown x SCALE; others (NPE, seconds) as printed
COPIED_FIGURES = {  # made by other commands, copied in when found under --results: (file pattern, how to make it)
    "forecasting examples": ("forecast-example-*.png", "run `python -m harness examples` (and with `--channels NAME`)"),
    "gate similarity": ("gate-similarity-*.png", "run `python -m harness.studies.gates --out RESULTS/figures` (the shipped "
                        "SOTER checkpoint by default, or --weights DIR), RESULTS being the --results folder"),
    "pre-training convergence": ("pretrain_log.png", "needs a pre-training run's `pretrain_log.png` under --results"),
}
WHY_NOT = {
    **{label: why for label, (_, why) in STUDY_OUTPUTS.items()},
    "tab:eval-stats": "comes from `python -m harness data stats`, not from records",
}
COMPARISON_NOTES = {
    "tab:sensitivity": "rk4 is a fixed-step solver and ignores tolerances: the study trains it once per DFT "
                       "implementation, and that run stands beside the paper's rk4 row at 1e-5 (SOTER's tolerance); "
                       "the paper printed four rk4 rows per DFT. Seconds per step depend on the hardware and the "
                       "model size of the study.",
    "tab:corpus_matched": "The paper retrains MIRA-Large; this study retrains the Chronos-2 architecture (MIRA does "
                          "not install here), so its Chronos-2 rows have no paper counterpart; SOTER's row does.",
}
PAPER_ROW = {AUTHORS_LABEL: "SOTER"}  # our rows compared with a paper row of another name


def _row_labels(paper_table: pd.DataFrame) -> pd.Series:
    """The name of each paper row: its first label column (method, exposure, dataset ...), without the
    LaTeX indentation the transcription kept (``\\quad w/o CD Layer``); the sensitivity table's rows
    are named by all three of theirs (``Parallel Prefix, dopri5, 1e-5``)."""
    if {"dft", "solver", "tolerance"} <= set(paper_table.columns):
        return paper_table["dft"] + ", " + paper_table["solver"] + ", " + paper_table["tolerance"].map(paper_tolerance)
    first = paper_table.columns[1]
    return paper_table[first].astype(str).str.replace(r"^(\\quad\s*)+", "", regex=True).str.strip()


def compare(paper_table: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Every cell of one paper table with ours beside it (NaN where this run has none); the paper's
    RMSE, MAE, Macro-F1 and Macro-AUROC rescaled to x100 whatever scale it printed them in.  Rows of
    ours named in :data:`PAPER_ROW` (the authors' checkpoint) get a copy of that paper row beside them;
    ``paper_row`` names the paper's row each line belongs to."""
    label = paper_table["table"].iloc[0]
    mine = ours[ours["table"] == label]
    key = ["method", "dataset", "metric", "condition"]
    base = paper_table.assign(method=_row_labels(paper_table), dataset=paper_table["dataset"].fillna(""),
                              condition=paper_table["condition"].fillna(""))
    base = base.assign(paper_row=base["method"])
    copies = [base[base["method"] == row].assign(method=alias) for alias, row in PAPER_ROW.items()
              if (mine["method"] == alias).any()]
    merged = pd.concat([base, *copies], ignore_index=True).merge(
        mine[key + ["ours", "ours_std", "status", "reason"]], on=key, how="left")
    factor = np.where(merged["metric"].isin(SCALED_METRICS), SCALE / pd.to_numeric(merged["scale"]), 1.0)
    merged["paper"] = pd.to_numeric(merged["value"], errors="coerce") * factor
    merged["paper_std"] = pd.to_numeric(merged["std"], errors="coerce") * factor
    merged["diff"] = merged["ours"] - merged["paper"]
    return merged


def _markdown(rows: pd.DataFrame, columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for _, r in rows.iterrows():
        lines.append("| " + " | ".join(_show(r[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def _show(v) -> str:
    """Numbers with two decimals (the x100 values the paper prints), blanks for missing; names escaped."""
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{v:.2f}"
    return "" if v is None else md_escape(str(v))


NAIVE_HEADERS = {"paper_min": "paper's best (x100)", "paper_max": "paper's worst (x100)",
                 "paper_models": "paper models"}
UNIT_HEADERS = {"paper": "paper (x100)", "paper_std": "paper std (x100)", "ours": "ours (x100)",
                "ours_std": "ours std (x100)", "diff": "ours - paper (x100)"}


def _unit_line(merged: pd.DataFrame) -> str:
    """What the numbers are, and whether the paper's were rescaled to get there."""
    scaled = merged["metric"].isin(SCALED_METRICS)
    present = set(merged["metric"])
    others = list(dict.fromkeys(merged.loc[~scaled, "metric"]))
    units = [text for metrics, text in ((("RMSE", "MAE"), "RMSE and MAE in normalised space, x100"),
                                        (("Macro-F1", "Macro-AUROC"), "Macro-F1 and Macro-AUROC in % (x100)"))
             if present & set(metrics)]
    parts = [f"Numbers x100: {'; '.join(units)}."] if units else []
    if (scaled & (pd.to_numeric(merged["scale"]) != SCALE)).any():
        parts.append("The paper printed these unscaled; its values are shown x100 here.")
    if others:
        parts.append(f"{', '.join(others)}: as the paper printed them.")
    return " ".join(parts)


# conditions as the transcription names them (results/paper/) -> what they are: the paper's "windows" are our
# settings (context/horizon pairs), and its main table's number is their mean
CONDITION_WORDS = {"mean over 4 windows": "mean over the 4 settings (context/horizon)"}
OURS_HEAD = ("Ours, beside the paper's numbers (what this run measured, not the paper's setup: a gap, or a better "
             "cell, is no reproduction result unless checkpoint, subjects and windows are the paper's):")


NAIVE_HEAD = ("Naive rows on our protocol, beside the range of the paper's models on the same dataset, metric and "
              "condition (what copying the last sample, or a mean, scores here; why the paper's numbers can sit on "
              "another scale: docs/paper-datasets.md, The paper's numbers in context):")


def naive_models() -> set[str]:
    """The models of the naive family (last value, window mean, drift, LOCF, linear extrapolation, ...)."""
    from models.registry import all_specs

    return {spec.name for spec in all_specs().values() if spec.family == "baseline"}


def naive_rows(merged: pd.DataFrame, mine: pd.DataFrame) -> pd.DataFrame:
    """Our naive models' cells of one paper table, each with the paper's models' range (min, max, count; x100) on
    its dataset (the paper's name of its base dataset: ``mitbih:blocks=6`` is MIT-BIH), metric and condition."""
    from harness.records.configurations import records_name
    from harness.reporting.paper_cells import paper_dataset
    from protocols.datasets import dataset_base_name

    columns = ["method", "dataset", "metric", "condition", "ours", "paper_min", "paper_max", "paper_models"]
    naive = mine[mine["model"].isin(naive_models()) & mine["ours"].notna()]
    if naive.empty:
        return pd.DataFrame(columns=columns)
    own = merged[(merged["method"] == merged["paper_row"]) & merged["paper"].notna()]
    spread = own.groupby(["dataset", "metric", "condition"])["paper"].agg(["min", "max", "count"])
    rows = []
    for _, r in naive.iterrows():
        key = (paper_dataset(dataset_base_name(records_name(r["dataset"]))), r["metric"], r["condition"])
        low, high, k = spread.loc[key] if key in spread.index else (np.nan, np.nan, 0)
        rows.append([r["method"], r["dataset"], r["metric"], r["condition"], r["ours"], low, high, int(k)])
    return pd.DataFrame(rows, columns=columns)


def comparison_markdown(label: str, caption: str, merged: pd.DataFrame, extra_ours: pd.DataFrame,
                        note: str = "", ours: list[str] | tuple[str, ...] = (),
                        naive: pd.DataFrame | None = None) -> str:
    """One comparison file: the paper's caption (as plain text), what our numbers are (``ours``: one line per
    model and dataset, :func:`harness.reporting.ours.ours_lines`), the cells in common, our other cells."""
    own = merged["method"] == merged["paper_row"] if "paper_row" in merged else pd.Series(True, merged.index)
    merged = merged.assign(condition=merged["condition"].replace(CONDITION_WORDS))
    if len(extra_ours):
        extra_ours = extra_ours.assign(condition=extra_ours["condition"].replace(CONDITION_WORDS))
    both = merged[merged["ours"].notna()]
    common, borrowed = int((own & merged["ours"].notna()).sum()), int((~own & merged["ours"].notna()).sum())
    out = [f"# {label}", "", f"Paper: {paper.plain_caption(caption)}", "", _unit_line(merged), ""]
    if ours:
        out += [OURS_HEAD, "", *[f"- {md_escape(line)}" for line in ours], ""]
    if note:
        out += [note, ""]
    if both.empty:
        out.append(f"No cell in common with this run ({int(own.sum())} paper cells; this run has no records for "
                   "these datasets and models).")
    else:
        also = "" if not borrowed else (
            f"; {borrowed} more put the authors' released checkpoint (`{AUTHORS}`, \"{AUTHORS_LABEL}\") beside "
            "the paper's SOTER numbers, apart from our own `soter` (\"SOTER\")")
        out += [f"{common} of {int(own.sum())} paper cells have a number from this run{also}:", "",
                _markdown(both.rename(columns=UNIT_HEADERS),
                          ["method", "dataset", "metric", "condition", *UNIT_HEADERS.values(), "status"])]
    if not extra_ours.empty:
        out += ["", f"This run's cells with no paper counterpart ({len(extra_ours)}; e.g. our embedded cohort):", "",
                _markdown(extra_ours.rename(columns=UNIT_HEADERS),
                          ["method", "dataset", "metric", "condition", UNIT_HEADERS["ours"], UNIT_HEADERS["ours_std"],
                           "status"])]
    if naive is not None and not naive.empty:
        shown = naive.assign(condition=naive["condition"].replace(CONDITION_WORDS),
                             paper_models=naive["paper_models"].map(lambda k: str(k) if k else "none"))
        out += ["", NAIVE_HEAD, "", _markdown(shown.rename(columns={**UNIT_HEADERS, **NAIVE_HEADERS}),
                                              ["method", "dataset", "metric", "condition", UNIT_HEADERS["ours"],
                                               *NAIVE_HEADERS.values()])]
    return "\n".join(out) + "\n"


def _ours_lines(frame: pd.DataFrame | None, label: str, mine: pd.DataFrame) -> list[str]:
    """What our numbers in one comparison are: the models and datasets of its cells with a number."""
    from harness.reporting.ours import ours_lines
    from harness.reporting.paper_cells import paper_dataset
    from harness.records.configurations import records_name

    task = paper.SPECS[label].task if label in paper.SPECS else ""
    numbered = mine[mine["ours"].notna()]
    if frame is None or frame.empty or numbered.empty:
        return []
    wanted = set(numbered["dataset"])
    datasets = [d for d in dict.fromkeys(frame.loc[frame["task"] == task, "dataset"])
                if paper_dataset(records_name(d)) in wanted or d in wanted]
    return ours_lines(frame, task, numbered["model"], datasets)


@dataclass(frozen=True)
class Report:
    """What ``harness report`` wrote: ``REPORT.md`` and one line per thing produced and per thing not
    produced (with why). Its text is the summary the command prints, so a user sees the outcome
    without opening the file."""

    path: Path
    produced: tuple[str, ...]
    missing: tuple[tuple[str, str], ...]  # (what, why)
    html: Path | None = None  # the same report as one self-contained HTML file (harness.reporting.report_html)

    def summary(self) -> str:
        """One line per thing produced; one line per reason for what was not, naming what it holds back."""
        why: dict[str, list[str]] = {}
        for what, reason in self.missing:
            why.setdefault(reason, []).append(what)
        return "\n".join([f"Produced ({len(self.produced)}):", *[f"  {p}" for p in self.produced],
                          f"Not produced ({len(self.missing)}):",
                          *[f"  {', '.join(whats)}: {reason}" for reason, whats in why.items()],
                          *([f"In a browser: {self.html} (one self-contained file)"] if self.html else []),
                          f"Report: {self.path} (paths above are relative to {self.path.parent})"])

    def __str__(self) -> str:  # `python -m harness report` prints what write_report returns
        return self.summary()


def write_report(results: Path, out: Path, paper_dir: Path = paper.PAPER_DIR, studies: Path | None = None,
                 reference: str | None = None, data_root: Path | None = None) -> Report:
    """Every table and figure the records under ``results`` support, written under ``out``; the study
    tables from the study runners' files found under ``studies`` (default: the ``results`` folder);
    the statistics (statistics/) test each model against ``reference`` (default: each cell's best); the failure
    atlas draws its windows from the datasets under ``data_root`` (default: $SOTER_BENCH_DATA)."""
    from harness.records.store import COLUMNS, read_records

    records_file = results / "records.csv" if results.is_dir() else results
    frame = read_records(records_file) if records_file.is_file() else pd.DataFrame(columns=list(COLUMNS))
    root = Path(studies) if studies is not None else results.parent if results.is_file() else results
    out.mkdir(parents=True, exist_ok=True)
    from harness.reporting.pretraining_marks import read_declared_sources, registry_markdown

    from harness.records.input_sensitivity import read_verdicts

    produced = _task_tables(frame, out, read_declared_sources(records_file.parent), read_verdicts(records_file.parent))
    made, missing = _task_figures(frame, out)
    produced += made
    from harness.reporting.methods import methods_markdown

    (out / "METHODS.md").write_text(methods_markdown(frame, read_declared_sources(records_file.parent)))
    produced.append("METHODS.md: the methods section (settings in samples and seconds, protocol versions, seeds, "
                    "datasets, subjects, windows, models, real-time factors, the flags that change a number)")
    made, not_found = _copied_figures(results.parent if results.is_file() else results, out)
    produced, missing = produced + made, missing + not_found
    made, why_not, cells = write_study_tables(root, out)
    produced += made
    ours = our_cells(frame)
    if len(cells):
        ours = pd.concat([c for c in (ours, cells) if len(c)], ignore_index=True)
    made, not_compared = _comparisons(ours, paper.load(paper_dir), out, why_not, frame)
    produced, missing = produced + made, missing + not_compared
    from harness.reporting.stats_report import write_statistics  # scipy, statsmodels: only when a report is written

    statistics = write_statistics(frame, results.parent if results.is_file() else results, out / "statistics",
                                  reference=reference)
    produced, missing = produced + statistics.produced, missing + statistics.missing
    from harness.reporting.overhead import write_overhead  # the System Overhead appendix (benchmarks/system_overhead.py)

    made, not_made = write_overhead(results, out, frame, paper_model_names(), records_file, paper_dir)
    produced, missing = produced + made, missing + not_made
    from harness.reporting.atlas import write_atlas

    made, not_made = write_atlas(frame, records_file.parent, out, data_root)
    produced, missing = produced + made, missing + not_made
    report = out / "REPORT.md"
    header = (f"Records: {shown_path(records_file)} ({len(frame)} rows). Paper tables: {shown_path(paper_dir)}. "
              f"Study outputs ({', '.join(f for f, _ in STUDY_OUTPUTS.values())}): searched under {shown_path(root)}.")
    appendix = "\n".join(registry_markdown())
    report.write_text("\n".join([
        "# Report", "", no_html(header), "",
        "Units: every RMSE and MAE (normalised space), Macro-F1 and Macro-AUROC is x100, shown with two decimals, "
        "in tables, comparisons and figures alike.", "",
        "## Produced", "", *[f"- {no_html(p)}" for p in produced], "", "## Not produced", "",
        *[f"- {no_html(what)}: {no_html(why)}" for what, why in missing], "", appendix]))
    from harness.reporting.report_html import write_html

    page = write_html(out, header, produced, missing, appendix)
    return Report(report, tuple(produced), tuple(missing), page)


def no_html(text: str) -> str:
    """A line of REPORT.md with ``<`` escaped (what opens a tag; ``>=`` stays as written): a dataset named
    ``<b>x</b>`` is shown, never rendered as HTML by a Markdown viewer (the lines keep their `code` marks)."""
    return str(text).replace("<", "\\<")


def shown_path(path: Path) -> str:
    """A path as a report shows it: relative to the working folder, else to this repository (the paper's
    tables), else its last part: a report that travels names no home folder."""
    path = Path(path)
    for base in (Path.cwd(), paper.PAPER_DIR.parents[1]):
        try:
            return path.resolve().relative_to(base.resolve()).as_posix() or "."
        except ValueError:
            continue
    return path.as_posix() if not path.is_absolute() else f".../{path.name}"


def _tasks(frame: pd.DataFrame) -> list[str]:
    """The registered tasks with records, in registration order (harness.tasks)."""
    from harness.registry.tasks import all_tasks

    return [t for t in all_tasks() if (frame["task"] == t).any()]


def _task_tables(frame: pd.DataFrame, out: Path, declared: dict | None = None, verdicts: list | None = None) -> list[str]:
    """This run's tables (Markdown and LaTeX), one line per task; ``declared``: the source databases
    user datasets declare (pre-training overlap marks); ``verdicts``: the input-sensitivity probe's."""
    from harness.reporting.pretraining_marks import marked_task_tables

    lines = []
    for task in _tasks(frame):
        stems = []
        for stem, table in marked_task_tables(frame, task, declared=declared, verdicts=verdicts):
            for style, ext in (("markdown", "md"), ("latex", "tex")):
                path = out / "tables" / f"{stem}.{ext}"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(render(table, style))
            stems.append(stem)
        lines.append(f"this run's {task} tables: {', '.join(stems)} (tables/<name>.md and .tex)")
    return lines


def _task_figures(frame: pd.DataFrame, out: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """The figures drawn from the records, each listed once: (produced, not produced with why)."""
    from harness.registry.tasks import all_tasks

    produced, missing = [], []
    for task in all_tasks().values():
        if not task.figure:
            continue
        present = (frame["task"] == task.name).any()
        files = task.figures(frame, out / "figures") if present else []
        png = [f.relative_to(out).as_posix() for f in files if f.suffix == ".png"]
        if png:
            produced.append(f"figure: {task.figure} ({', '.join(png)}, and .pdf)")
        elif not present:
            missing.append((f"figure: {task.figure}", f"no {task.name} records"))
        else:
            missing.append((f"figure: {task.figure}", task.figure_missing(frame)))
    return produced, missing


def _copied_figures(root: Path, out: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """Figures other commands made, copied in from under ``root`` (never from ``out`` itself)."""
    produced, missing = [], []
    for figure, (pattern, how) in COPIED_FIGURES.items():
        found = {f.name: f for f in sorted(root.glob(f"**/{pattern}"))
                 if not f.resolve().is_relative_to(out.resolve())}
        for name, f in found.items():
            target = out / "figures" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target)
        if found:
            produced.append(f"figure: {figure} ({', '.join(f'figures/{n}' for n in found)})")
        else:
            missing.append((f"figure: {figure}", how))
    return produced, missing


def _comparisons(ours: pd.DataFrame, tables: dict[str, pd.DataFrame], out: Path,
                 why_not: dict[str, str] | None = None,
                 frame: pd.DataFrame | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """One comparison file per paper table: (tables compared, tables not compared with why).
    ``why_not``: the study tables that could not be rendered, with why (the others were); ``frame``: the
    records behind ``ours``, which each comparison describes beside its numbers."""
    why_not = {} if why_not is None else why_not
    produced, missing = [], []
    for label, ptable in tables.items():
        merged = compare(ptable, ours)
        mine = ours[ours["table"] == label]
        extra = mine.merge(merged[["method", "dataset", "metric", "condition"]], how="left", indicator=True,
                           on=["method", "dataset", "metric", "condition"])
        extra = extra[extra["_merge"] == "left_only"]
        name = label.split(":", 1)[1]
        path = out / "comparison" / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(comparison_markdown(label, ptable.attrs["caption"], merged, extra,
                                            COMPARISON_NOTES.get(label, ""), _ours_lines(frame, label, mine),
                                            naive_rows(merged, mine)))
        own = merged["method"] == merged["paper_row"]
        common, cells = int(merged.loc[own, "ours"].notna().sum()), int(own.sum())
        authors = int(merged.loc[~own, "ours"].notna().sum())
        if common or authors:
            also = f", and {authors} of the authors' checkpoint beside the paper's SOTER" if authors else ""
            produced.append(f"{label}: {common} of {cells} cells compared{also} (comparison/{name}.md)")
        elif label in STUDY_OUTPUTS and label not in why_not:
            produced.append(f"{label}: 0 of {cells} cells in common with the paper's (this run's study has "
                            f"{len(mine)} cells, of other datasets or variants: comparison/{name}.md)")
        else:
            why = why_not.get(label) or WHY_NOT.get(label, "this run has no records for the paper's datasets and "
                                                    "models in it" + (" (this run's own cells are under comparison/)"
                                                                      if len(mine) else ""))
            missing.append((label, why))
    return produced, missing
