"""`python -m harness report`: every paper table and figure the records support, the paper's own
numbers beside ours, and a list of what could not be produced and why.

Pure functions turn records into "our cells" in the paper's names (:func:`our_cells`: the
``paper_cells`` of each registered task, ``harness.tasks``) and line them up with the transcribed
paper tables (:func:`compare`); :func:`write_report` renders our task tables and figures (the same
renderer as ``run``), one comparison file per paper table, and ``REPORT.md``, and returns a
:class:`Report` whose text is the summary ``harness report`` prints.  One unit everywhere: every
RMSE, MAE, Macro-F1 and Macro-AUROC is x100 (``tables.SCALE``), ours and the paper's alike (the
paper printed its per-setting and imputation tables unscaled; they are rescaled here), shown with two
decimals.  A cell this run lacks is listed as missing with the reason; it is never filled from the
paper.

The training studies' tables (ablation, sensitivity, pre-training exposure, corpus-matched) come from
the files their runners write (``harness.studies``; :data:`STUDY_OUTPUTS`), found
anywhere under ``--results`` (or under ``studies=`` of :func:`write_report`): this run's table of
each is rendered like the task tables and compared with the paper's.  Rows of ``soter-authors``
(the authors' released checkpoint) are compared with the paper's SOTER rows, labelled
``SOTER (authors' checkpoint)``, apart from our own ``soter``.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting import paper
from harness.reporting.tables import SCALE, Column, Entry, Table, md_escape, render, task_tables

DATASETS = {"heartrate": "HeartRate", "mitbih": "MIT-BIH", "scientisst-move": "ScientiSST MOVE",
            "ieee-ppg": "IEEE PPG", "mmash": "MMASH", "wdd": "WDD"}
SCALED_METRICS = ("RMSE", "MAE", "Macro-F1", "Macro-AUROC")  # shown x SCALE; others (NPE, seconds) as printed
COPIED_FIGURES = {  # made by other commands, copied in when found under --results: (file pattern, how to make it)
    "forecasting examples": ("forecast-example-*.png", "run `python -m harness examples` (and with `--channels NAME`)"),
    "gate similarity": ("gate-similarity-*.png", "run `python -m harness.gates --out RESULTS/figures` (the shipped "
                        "SOTER checkpoint by default, or --weights DIR), RESULTS being the --results folder"),
    "pre-training convergence": ("pretrain_log.png", "needs a pre-training run's `pretrain_log.png` under --results"),
}
STUDY = "python -m harness.studies"
STUDY_OUTPUTS = {  # paper table -> (file its study runner writes, what makes it): found anywhere under --results
    "tab:ablation": ("ablation_records.csv", f"needs the ablation study's records (`{STUDY} train --study ablation "
                     "--out OUT ...`, then `evaluate --study ablation --out OUT`), i.e. variants trained on a GPU"),
    "tab:corpus_matched": ("corpus_matched_records.csv", "needs SOTER and the Chronos-2 retrained from scratch on the "
                           f"same corpus (`{STUDY} train --study corpus-matched --out OUT ...`, then `evaluate --study "
                           "corpus-matched --out OUT`), trained on a GPU"),
    "tab:pretraining_exposure": ("exposure_records.csv", "needs the exposure checkpoints of a pre-training run "
                                 f"evaluated on the paper's datasets (`{STUDY} evaluate --study exposure --out RUN`)"),
    "tab:sensitivity": ("sensitivity.csv", f"needs the sensitivity study (`{STUDY} train --study sensitivity --out OUT "
                        "...`, then `evaluate --study sensitivity --out OUT --dataset mitbih`), trained on a GPU"),
}
WHY_NOT = {
    **{label: why for label, (_, why) in STUDY_OUTPUTS.items()},
    "tab:eval-stats": "comes from `python -m harness data stats`, not from records",
}
STUDY_CAPTIONS = {
    "tab:ablation": "Ablation (this run's study): zero-shot forecasting RMSE and MAE in normalised space, x100, mean "
                    "± std over settings (folds pooled); one row per variant, all trained with one recipe and budget.",
    "tab:corpus_matched": "Corpus-matched comparison (this run's study): SOTER and Chronos-2 trained from scratch on "
                          "the same corpus with the same budget, and the released Chronos2-Small; zero-shot "
                          "forecasting RMSE and MAE in normalised space, x100, mean ± std over settings (folds pooled).",
    "tab:pretraining_exposure": "Cumulative pre-training exposure (this run's study): the checkpoints kept at each "
                                "share of one pre-training run's steps; zero-shot forecasting RMSE and MAE in "
                                "normalised space, x100, mean ± std over settings (folds pooled).",
}
DFT_NAMES = {"fast": "Parallel Prefix", "loop": "For Loop"}  # our dft_impl -> the paper's row name
RK4_TOLERANCE = 1e-5  # rk4 ignores tolerances: our one rk4 run per DFT stands beside the paper's rk4 row at this one
COMPARISON_NOTES = {
    "tab:sensitivity": "rk4 is a fixed-step solver and ignores tolerances: the study trains it once per DFT "
                       "implementation, and that run stands beside the paper's rk4 row at 1e-5 (SOTER's tolerance); "
                       "the paper printed four rk4 rows per DFT. Seconds per step depend on the hardware and the "
                       "model size of the study.",
    "tab:corpus_matched": "The paper retrains MIRA-Large; this study retrains the Chronos-2 architecture (MIRA does "
                          "not install here), so its Chronos-2 rows have no paper counterpart; SOTER's row does.",
}
AUTHORS = "soter-authors"
AUTHORS_LABEL = "SOTER (authors' checkpoint)"
PAPER_ROW = {AUTHORS_LABEL: "SOTER"}  # our rows compared with a paper row of another name


def paper_model_names() -> dict[str, str]:
    from models.registry import all_specs

    names = {spec.name: spec.paper_name for spec in all_specs().values() if spec.paper_name}
    return {**names, "soter": "SOTER", AUTHORS: AUTHORS_LABEL, "random": "Random Baseline"}


OUR_CELL_COLUMNS = ["table", "model", "method", "dataset", "metric", "condition", "ours", "ours_std", "status",
                    "reason"]


def _paper_dataset(name: str) -> str:
    """The paper's name of a records dataset (itself when the paper has none)."""
    return DATASETS.get(name, name)


def our_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """This run's numbers in the paper's names, conditions and scales (one row per cell): the cells of
    each registered task with records (``Task.paper_cells``), in registration order, the models and
    datasets given the paper's names."""
    from harness.registry.tasks import all_tasks

    names = paper_model_names()
    rows = []
    for task in all_tasks().values():
        if not (frame["task"] == task.name).any():
            continue
        registry = dict(zip(frame["model"], frame["model_name"])) if "model_name" in frame else {}
        for cell in task.paper_cells(frame, _paper_dataset).to_dict("records"):
            rows.append({**cell, "method": _method(cell["model"], registry.get(cell["model"], cell["model"]), names),
                         "dataset": _paper_dataset(cell["dataset"])})
    return pd.DataFrame(rows, columns=OUR_CELL_COLUMNS)


def _method(label: str, name: str, names: dict[str, str]) -> str:
    """The paper's name of a table row: a configuration's row (``soter [weights=...]``) keeps its suffix."""
    if label != name and label.startswith(name + " ["):
        return names.get(name, name) + label[len(name):]
    return names.get(label, label)


def _tolerance(value) -> str:
    """A tolerance as the paper printed it: 1e-5 (not 1e-05)."""
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{float(value):.0e}")


def _row_labels(paper_table: pd.DataFrame) -> pd.Series:
    """The name of each paper row: its first label column (method, exposure, dataset ...), without the
    LaTeX indentation the transcription kept (``\\quad w/o CD Layer``); the sensitivity table's rows
    are named by all three of theirs (``Parallel Prefix, dopri5, 1e-5``)."""
    if {"dft", "solver", "tolerance"} <= set(paper_table.columns):
        return paper_table["dft"] + ", " + paper_table["solver"] + ", " + paper_table["tolerance"].map(_tolerance)
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


def comparison_markdown(label: str, caption: str, merged: pd.DataFrame, extra_ours: pd.DataFrame,
                        note: str = "") -> str:
    own = merged["method"] == merged["paper_row"] if "paper_row" in merged else pd.Series(True, merged.index)
    both = merged[merged["ours"].notna()]
    common, borrowed = int((own & merged["ours"].notna()).sum()), int((~own & merged["ours"].notna()).sum())
    out = [f"# {label}", "", f"Paper: {caption}", "", _unit_line(merged), ""]
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
    return "\n".join(out) + "\n"


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
                 reference: str | None = None) -> Report:
    """Every table and figure the records under ``results`` support, written under ``out``; the study
    tables from the study runners' files found under ``studies`` (default: the ``results`` folder);
    the statistics (statistics/) test each model against ``reference`` (default: each cell's best)."""
    from harness.records.store import COLUMNS, read_records

    records_file = results / "records.csv" if results.is_dir() else results
    frame = read_records(records_file) if records_file.is_file() else pd.DataFrame(columns=list(COLUMNS))
    root = Path(studies) if studies is not None else results.parent if results.is_file() else results
    out.mkdir(parents=True, exist_ok=True)
    from harness.reporting.pretraining_marks import read_declared_sources, registry_markdown

    produced = _task_tables(frame, out, read_declared_sources(records_file.parent))
    made, missing = _task_figures(frame, out)
    produced += made
    made, not_found = _copied_figures(results.parent if results.is_file() else results, out)
    produced, missing = produced + made, missing + not_found
    made, why_not, cells = _study_tables(root, out)
    produced += made
    ours = our_cells(frame)
    if len(cells):
        ours = pd.concat([c for c in (ours, cells) if len(c)], ignore_index=True)
    made, not_compared = _comparisons(ours, paper.load(paper_dir), out, why_not)
    produced, missing = produced + made, missing + not_compared
    from harness.reporting.stats_report import write_statistics  # scipy, statsmodels: only when a report is written

    statistics = write_statistics(frame, results.parent if results.is_file() else results, out / "statistics",
                                  reference=reference)
    produced, missing = produced + statistics.produced, missing + statistics.missing
    from harness.reporting.overhead import write_overhead  # the System Overhead appendix (benchmarks/system_overhead.py)

    made, not_made = write_overhead(results, out, frame, paper_model_names(), records_file, paper_dir)
    produced, missing = produced + made, missing + not_made
    report = out / "REPORT.md"
    header = (f"Records: {records_file} ({len(frame)} rows). Paper tables: {paper_dir}. "
              f"Study outputs ({', '.join(f for f, _ in STUDY_OUTPUTS.values())}): searched under {root}.")
    report.write_text("\n".join([
        "# Report", "", header, "",
        "Units: every RMSE and MAE (normalised space), Macro-F1 and Macro-AUROC is x100, shown with two decimals, "
        "in tables, comparisons and figures alike.", "",
        "## Produced", "", *[f"- {p}" for p in produced], "", "## Not produced", "",
        *[f"- {what}: {why}" for what, why in missing], "", *registry_markdown()]))
    from harness.reporting.report_html import write_html

    page = write_html(out, header, produced, missing)
    return Report(report, tuple(produced), tuple(missing), page)


# -- the training studies' tables --------------------------------------------------------------------
# "window": the setting column of study files written before issue #17 (read_study renames it)
TEXT_COLUMNS = ("task", "dataset", "fold", "setting", "window", "condition", "model", "status", "error", "details",
                "variant", "variant_label")


def find_study_outputs(root: Path, out: Path | None = None) -> dict[str, list[Path]]:
    """Paper table -> the files of its study found under ``root`` (newest first; never under ``out``)."""
    found = {}
    for label, (name, _) in STUDY_OUTPUTS.items():
        files = [f for f in (Path(root).glob(f"**/{name}") if Path(root).is_dir() else [])
                 if f.is_file() and (out is None or not f.resolve().is_relative_to(Path(out).resolve()))]
        found[label] = sorted(files, key=lambda f: f.stat().st_mtime, reverse=True)
    return found


def read_study(label: str, path: Path) -> pd.DataFrame:
    """One study runner's output file; ``ValueError`` naming the file when it holds nothing usable."""
    from harness.records.store import INTEGER, NUMERIC

    try:
        frame = pd.read_csv(path, dtype={c: str for c in TEXT_COLUMNS})
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not readable ({exc})") from exc
    if "window" in frame.columns and "setting" not in frame.columns:  # written before issue #17 renamed it
        frame = frame.rename(columns={"window": "setting"})
    needs = (("dft_impl", "solver", "tolerance", "rmse", "mae", "step_seconds", "dataset") if label == "tab:sensitivity"
             else ("variant_label", "task", "dataset", "setting", "condition", "status", "sse", "sae", "n_points"))
    lacking = [c for c in needs if c not in frame.columns]
    if frame.empty:
        raise ValueError(f"{path} has no rows (no variant had been trained when the study was evaluated)")
    if lacking:
        raise ValueError(f"{path} lacks the column(s) {', '.join(lacking)}")
    for c in TEXT_COLUMNS:
        if c in frame.columns:
            frame[c] = frame[c].fillna("")
    for c in (*NUMERIC, *INTEGER, "step_seconds", "tolerance", "context", "horizon", "samples", "steps"):
        if c in frame.columns:
            frame[c] = pd.to_numeric(frame[c], errors="coerce")
    return frame


def _by_variant(frame: pd.DataFrame) -> pd.DataFrame:
    """A study's records with each variant as the model (its label: the paper's row name)."""
    return frame.assign(model=frame["variant_label"])


def study_table(label: str, frame: pd.DataFrame) -> Table:
    """This run's table of one study, in the layout of the task tables (rendered by ``tables.render``)."""
    if label == "tab:sensitivity":
        return _sensitivity_table(frame)
    from harness.registry.tasks import get_task

    f = _by_variant(frame)
    f = f.assign(dataset=f["dataset"].map(lambda d: DATASETS.get(d, d)))
    # a training study is a forecasting study (its variants evaluated zero-shot in the forecasting
    # settings): its table is the forecasting table, one row per variant, under the study's caption
    return get_task("forecasting").table(f, list(dict.fromkeys(f["model"])), None, STUDY_CAPTIONS[label])


def _sensitivity_label(row, rk4_tolerance: bool = False) -> str:
    dft = DFT_NAMES.get(row["dft_impl"], row["dft_impl"])
    if row["solver"] == "rk4" and not rk4_tolerance:
        return f"{dft}, rk4"
    tol = RK4_TOLERANCE if row["solver"] == "rk4" else row["tolerance"]
    return f"{dft}, {row['solver']}, {_tolerance(tol)}"


def _sensitivity_setting(frame: pd.DataFrame) -> pd.Series:
    if {"context", "horizon"} <= set(frame.columns):
        return frame["context"].map(lambda c: f"{int(c)}") + "/" + frame["horizon"].map(lambda h: f"{int(h)}")
    return pd.Series("setting not recorded", index=frame.index)


def _dataset(name: str) -> str:
    """The paper's name of a harness dataset; a folder given by path by its folder name."""
    return DATASETS.get(name, Path(name).name if "/" in name else name)


def _sensitivity_table(frame: pd.DataFrame) -> Table:
    datasets = list(dict.fromkeys(frame["dataset"].map(_dataset)))
    group = ", ".join(datasets)
    columns = (Column(group, "RMSE"), Column(group, "MAE"), Column("training", "s/step"))
    entries, models = {}, []
    for _, r in frame.iterrows():
        name = _sensitivity_label(r)
        models.append(name)
        for col, value in zip(columns, (r["rmse"] * SCALE, r["mae"] * SCALE, r["step_seconds"])):
            ok = np.isfinite(value)
            entries[(name, col)] = Entry(float(value), np.nan, int(ok), 1, "ok" if ok else "error")
    first = frame.iloc[0]
    how = (f"{int(first['samples'])} windows of {_sensitivity_setting(frame).iloc[0]}, seed {int(first['seed'])}, "
           if {"samples", "seed", "context", "horizon"} <= set(frame.columns) else "")
    steps = " or ".join(str(int(s)) for s in dict.fromkeys(frame["steps"])) if "steps" in frame.columns else "?"
    caption = (f"Sensitivity (this run's study): DFT implementation x solver x tolerance, zero-shot forecasting on "
               f"{group} ({how}{first.get('rollout', '')} rollout), RMSE and MAE in normalised space, x100; "
               f"seconds per training step from each run's log (runs of {steps} steps).")
    notes = ("rk4 ignores tolerances: one rk4 run per DFT implementation",) if (frame["solver"] == "rk4").any() else ()
    return Table(caption, columns, tuple(models), entries, notes)


def study_cells(label: str, frame: pd.DataFrame) -> pd.DataFrame:
    """A study's cells in the paper's names, conditions and scales (the rows of :func:`our_cells`)."""
    if label != "tab:sensitivity":
        cells = our_cells(_by_variant(frame))
        return cells[cells["table"] == "tab:main_results"].assign(table=label)
    rows = []
    settings = _sensitivity_setting(frame)
    for i, r in frame.iterrows():
        base = {"table": label, "model": r.get("variant", ""), "method": _sensitivity_label(r, rk4_tolerance=True),
                "dataset": _dataset(r["dataset"]), "ours_std": np.nan, "reason": ""}
        for metric, condition, value in (("RMSE", settings[i], r["rmse"] * SCALE), ("MAE", settings[i], r["mae"] * SCALE),
                                         ("latency_s_per_step", "", r["step_seconds"])):
            rows.append({**base, "metric": metric, "condition": condition, "ours": float(value),
                         "status": "ok" if np.isfinite(value) else "error"})
    return pd.DataFrame(rows)


def _study_tables(root: Path, out: Path) -> tuple[list[str], dict[str, str], pd.DataFrame]:
    """Each study's table from its runner's file under ``root`` (Markdown and LaTeX, like the task
    tables): (what was produced, why each study not rendered was not, the studies' cells)."""
    produced, why_not, cells = [], {}, []
    for label, files in find_study_outputs(root, out).items():
        name, how = STUDY_OUTPUTS[label]
        if not files:
            why_not[label] = f"{how}; no {name} found under {root}"
            continue
        try:
            frame = read_study(label, files[0])
        except ValueError as exc:
            why_not[label] = f"{exc}; {how}"
            continue
        table = study_table(label, frame)
        stem = label.split(":", 1)[1]
        for style, ext in (("markdown", "md"), ("latex", "tex")):
            path = out / "tables" / f"{stem}.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(table, style))
        older = f"; {len(files) - 1} older {name} ignored ({', '.join(map(str, files[1:]))})" if len(files) > 1 else ""
        produced.append(f"{label}: this run's study table from {files[0]} (tables/{stem}.md and .tex){older}")
        cells.append(study_cells(label, frame))
    return produced, why_not, pd.concat(cells, ignore_index=True) if cells else pd.DataFrame()


def _tasks(frame: pd.DataFrame) -> list[str]:
    """The registered tasks with records, in registration order (harness.tasks)."""
    from harness.registry.tasks import all_tasks

    return [t for t in all_tasks() if (frame["task"] == t).any()]


def _task_tables(frame: pd.DataFrame, out: Path, declared: dict | None = None) -> list[str]:
    """This run's tables (Markdown and LaTeX), one line per task; ``declared``: the source databases
    user datasets declare (pre-training overlap marks)."""
    from harness.reporting.pretraining_marks import marked_task_tables

    lines = []
    for task in _tasks(frame):
        stems = []
        for stem, table in marked_task_tables(frame, task, declared=declared):
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
                 why_not: dict[str, str] | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """One comparison file per paper table: (tables compared, tables not compared with why).
    ``why_not``: the study tables that could not be rendered, with why (the others were)."""
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
                                            COMPARISON_NOTES.get(label, "")))
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
