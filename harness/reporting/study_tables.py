"""The training studies' tables (ablation, sensitivity, pre-training exposure, corpus-matched), drawn
from the files their runners write (:mod:`harness.studies.runners`; :data:`STUDY_OUTPUTS`) and found
anywhere under the report's ``--results``: each is rendered like the task tables and its cells are
compared with the paper's by the report.  Drawing them is reporting's job: the report reads the
files, and the studies, which run the runner, sit above reporting (issue #28)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.reporting.paper_cells import DATASETS, our_cells, paper_tolerance
from harness.reporting.tables import SCALE, Column, Entry, Table, render

STUDY = "python -m harness.studies"
STUDY_OUTPUTS = {  # paper table -> (file its study runner writes, what makes it): found anywhere under --results
    "tab:ablation": ("ablation_records.csv", f"needs the ablation study's records (`{STUDY} train --study ablation "
                     "--out OUT ...`, then `evaluate --study ablation --out OUT`): variants the study runner trains "
                     "(on a CPU or a GPU)"),
    "tab:corpus_matched": ("corpus_matched_records.csv", "needs SOTER and the Chronos-2 retrained from scratch on the "
                           f"same corpus (`{STUDY} train --study corpus-matched --out OUT ...`, then `evaluate --study "
                           "corpus-matched --out OUT`): models the study runner trains (on a CPU or a GPU)"),
    "tab:pretraining_exposure": ("exposure_records.csv", "needs the exposure checkpoints of a pre-training run "
                                 f"evaluated on the paper's datasets (`{STUDY} evaluate --study exposure --out RUN`)"),
    "tab:sensitivity": ("sensitivity.csv", f"needs the sensitivity study (`{STUDY} train --study sensitivity --out OUT "
                        "...`, then `evaluate --study sensitivity --out OUT --dataset mitbih`): runs the study "
                        "runner trains (on a CPU or a GPU)"),
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
    return f"{dft}, {row['solver']}, {paper_tolerance(tol)}"


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


def write_study_tables(root: Path, out: Path) -> tuple[list[str], dict[str, str], pd.DataFrame]:
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
