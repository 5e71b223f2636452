"""The System Overhead appendix in the report: our measurements beside the paper's, and accuracy against cost.

``benchmarks/system_overhead.py`` measures every paper model at its published size (parameters, seconds per
sample at batch 1 and at a larger batch, peak memory) into ``system_overhead.csv``; the paper's own numbers
are in ``results/paper/system_overhead.csv`` (transcribed from its appendix). :func:`write_overhead`, called
by ``harness report``, renders ``tables/system_overhead.md`` (ours beside the paper's, each side's hardware
named) and ``figures/accuracy_vs_cost.{png,pdf}`` for the models whose accuracy is real (weights trained,
not random) and that have forecasting records in this report, and lists the random-weight rows that no
table shows.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from harness.reporting import paper

OVERHEAD_FILE = "system_overhead.csv"
PAPER_FILE = "system_overhead.csv"
# where benchmarks/system_overhead.py writes by default (its --out takes this very path): the report's fallback
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "results" / "benchmarks" / OVERHEAD_FILE
PAPER_HARDWARE = "the paper: \"the same hardware\" for all models; its experiments ran on a single NVIDIA RTX 4090 GPU"
HOW = "python benchmarks/system_overhead.py (docs/published-sizes.md)"


def find_overhead(results: Path, out: Path, default: Path = DEFAULT_FILE) -> Path | None:
    """The newest ``system_overhead.csv`` under ``results`` (never under ``out``), else ``default`` (the
    benchmark's default output, :data:`DEFAULT_FILE`)."""
    root = results if results.is_dir() else results.parent
    found = [f for f in root.glob(f"**/{OVERHEAD_FILE}") if f.is_file()
             and not f.resolve().is_relative_to(out.resolve())]
    if not found and Path(default).is_file():
        found = [Path(default)]
    return max(found, key=lambda f: f.stat().st_mtime) if found else None


def read_overhead(path: Path) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype={"model": str, "weights": str, "status": str, "reason": str})
    for col in ("parameters", "active_parameters", "seconds_per_sample", "seconds_per_sample_batched",
                "peak_rss_gib", "batch", "load_seconds"):
        if col in frame.columns:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    frame["reason"] = frame["reason"].fillna("")
    return frame.drop_duplicates(["model", "weights", "setting"], keep="last").reset_index(drop=True)


def read_paper(paper_dir: Path = paper.PAPER_DIR) -> pd.DataFrame:
    file = Path(paper_dir) / PAPER_FILE
    return pd.read_csv(file, dtype=str) if file.is_file() else pd.DataFrame(
        columns=["model", "method", "parameters", "parameters_meaning", "seconds_per_sample", "quote"])


def _millions(n: float) -> str:
    return "" if n is None or (isinstance(n, float) and math.isnan(n)) else f"{n / 1e6:.2f}M"


def _seconds(s: float) -> str:
    if s is None or (isinstance(s, float) and math.isnan(s)):
        return ""
    return f"{s:.3g} s" if s >= 0.01 else f"{s * 1e3:.3g} ms"


def overhead_table(ours: pd.DataFrame, theirs: pd.DataFrame, names: dict[str, str]) -> pd.DataFrame:
    """One row per model measured here (the paper's model names), the paper's figures beside ours."""
    from models.registry import all_specs

    specs = all_specs()
    rows = []
    paper_by_model = {r.model: r for r in theirs.itertuples()}
    for r in ours.itertuples():
        spec = specs.get(r.model)
        card = spec if spec is not None and spec.hub_weights else None  # a foundation model's card (ModelSpec fields)
        theirs_row = paper_by_model.get(r.model if r.model != "soter-autoregressive" else "soter")
        weights = ("random, published size (speed and shape only)" if r.weights == "random"
                   else "trained (this repository's checkpoint)" if str(r.model).startswith("soter")
                   else "none (statistical)" if card is None else "trained")
        params = _millions(r.parameters)
        if r.active_parameters == r.active_parameters and r.active_parameters != r.parameters:
            params += f" ({_millions(r.active_parameters)} active)"
        paper_params = theirs_row.parameters if theirs_row is not None else (card.paper_params if card else None)
        if theirs_row is not None and theirs_row.parameters_meaning != "parameters":
            paper_params = f"{paper_params} {theirs_row.parameters_meaning.split()[0]}"
        ok = r.status == "ok"
        row = {
            "Model": names.get(r.model, r.model) + (" (autoregressive)" if r.model == "soter-autoregressive" else ""),
            "Weights": weights,
            "Parameters (ours)": params if ok or params else "",
            "Parameters (paper)": paper_params or "",
            "s/sample, batch 1 (ours)": _seconds(r.seconds_per_sample) if ok else "",
        }
        if ok and r.batch == r.batch:  # rows that measured no batch add no column of their own
            row[f"s/sample, batch {int(r.batch)} (ours)"] = _seconds(r.seconds_per_sample_batched)
        reason = str(r.reason)
        if reason.startswith(f"{r.status}: "):  # the benchmark's limit messages begin with the status already
            reason = reason[len(r.status) + 2:]
        rows.append({
            **row,
            "s/sample (paper)": f"{theirs_row.seconds_per_sample} s" if theirs_row is not None else "",
            "Peak memory (ours)": f"{r.peak_rss_gib:.2f} GiB" if ok and r.peak_rss_gib == r.peak_rss_gib else "",
            "Load average": f"{r.load_before} -> {r.load_after}",
            "Status": (f"ok ({reason})" if reason else "ok") if ok else f"{r.status}: {reason}",
        })
    table = pd.DataFrame(rows)
    # the batched column's header carries the batch size; rows measured at other sizes keep their own columns,
    # all beside the batch-1 column whichever row came first
    batched = sorted((c for c in table.columns if c.startswith("s/sample, batch ") and c != "s/sample, batch 1 (ours)"),
                     key=lambda c: int(c.split()[2]))
    rest = [c for c in table.columns if c not in batched]
    at = rest.index("s/sample, batch 1 (ours)") + 1
    return table[rest[:at] + batched + rest[at:]].fillna("")


def render_markdown(table: pd.DataFrame, ours: pd.DataFrame) -> str:
    machine = "; ".join(sorted(set(ours["machine"].dropna()))) or "not recorded"
    when = ", ".join(sorted({str(t)[:10] for t in ours["measured_at"].dropna()}))
    setting = ", ".join(sorted(set(ours["setting"].astype(str))))
    head = [
        "# System Overhead (the paper's appendix app:system_overhead)", "",
        f"Ours: {machine}, device {', '.join(sorted(set(ours['device'].astype(str))))}, "
        f"{', '.join(sorted(set(ours['threads'].astype(str))))} thread(s); measured {when}; one sample = "
        f"{setting} (context/horizon), {', '.join(sorted(set(ours['channels'].astype(str))))} channel(s), through "
        "the harness interface; seconds per sample = median of the single-sample repeats after a warm-up; peak "
        "memory = resident memory of the model's process and its workers. The load average (1, 5, 15 min) before "
        "and after each model is given: the machine was shared, so compare rows as ratios.",
        f"Paper: {PAPER_HARDWARE}.", "",
        "Rows with random weights are the released architectures at their published size, built from the "
        "models' own libraries or upstream code: they time the architecture, never its accuracy.", "",
    ]
    cols = list(table.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v).replace("|", "/") for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(head + lines) + "\n"


CELL = ["dataset", "fold", "setting", "condition", "seed"]  # one forecasting row of a model


def accuracy_points(ours: pd.DataFrame, frame: pd.DataFrame, names: dict[str, str],
                    left_out: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Models with real weights (never random), measured here, with forecasting rows in the records: their
    seconds per sample and mean RMSE x100 over the forecasting cells (dataset, fold, setting, condition, seed)
    that every plotted model finished ok, so that no model's mean is over easier or fewer cells than another's.
    A model that shares no cell with the others is left out (the one with the fewest cells first), as is one
    whose rows come from an older task version, model revision or default weights; each is appended to
    ``left_out`` with why."""
    from harness.records.configurations import code_problem

    real = ours[(ours["weights"] != "random") & (ours["status"] == "ok")]
    fc = frame[(frame["task"] == "forecasting") & (frame["status"] == "ok")] if len(frame) else frame
    rows_of: dict[str, tuple[object, pd.DataFrame]] = {}
    for r in real.itertuples():
        rows = fc[fc["model"] == r.model] if len(fc) else fc
        problem = code_problem(rows, "forecasting") if len(rows) else ""
        if problem:
            if left_out is not None:
                left_out.append((f"accuracy against cost: {names.get(r.model, r.model)}", problem))
            continue
        if len(rows) and r.seconds_per_sample == r.seconds_per_sample:
            rows_of[r.model] = (r, rows.set_index(CELL))
    shared = _shared_cells(rows_of, names, left_out)
    points = [{"model": names.get(model, model), "seconds_per_sample": r.seconds_per_sample,
               "rmse_x100": 100 * float(rows.loc[shared, "rmse"].mean()), "cells": len(shared)}
              for model, (r, rows) in rows_of.items()]
    return pd.DataFrame(points, columns=["model", "seconds_per_sample", "rmse_x100", "cells"])


def _shared_cells(rows_of: dict[str, tuple[object, pd.DataFrame]], names: dict[str, str],
                  left_out: list[tuple[str, str]] | None) -> list:
    """The cells every model of ``rows_of`` has; models are dropped from it (fewest cells first) until the
    rest share one, each named in ``left_out``."""
    while rows_of:
        cells = [set(rows.index) for _, rows in rows_of.values()]
        common = set.intersection(*cells)
        if common or len(rows_of) == 1:
            return sorted(common, key=str)
        fewest = min(rows_of, key=lambda m: (len(rows_of[m][1]), m))
        rows_of.pop(fewest)
        if left_out is not None:
            left_out.append((f"accuracy against cost: {names.get(fewest, fewest)}",
                             "shares no forecasting cell (dataset, fold, setting, seed) with the other plotted models"))
    return []


def plot_accuracy_vs_cost(points: pd.DataFrame, path: Path) -> list[Path]:
    from harness.reporting.figures import plain_log_labels, pyplot, save_png_pdf

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.scatter(points["seconds_per_sample"], points["rmse_x100"], marker="o", facecolors="none", edgecolors="C0")
    for p in points.itertuples():
        ax.annotate(p.model, (p.seconds_per_sample, p.rmse_x100), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    ax.set_xscale("log")
    plain_log_labels(ax.xaxis)
    ax.set_xlabel("seconds per sample (batch 1, this machine)")
    ax.set_ylabel(f"RMSE (x100, normalised), mean over the {int(points['cells'].max())} forecasting\n"
                  "cells every plotted model finished")
    ax.set_title("Accuracy against cost (models with trained weights only)")
    files = save_png_pdf(fig, path)
    plt.close(fig)
    return files


def write_overhead(results: Path, out: Path, frame: pd.DataFrame, names: dict[str, str],
                   records_file: Path | None = None, paper_dir: Path = paper.PAPER_DIR,
                   default: Path = DEFAULT_FILE) -> tuple[list[str], list[tuple[str, str]]]:
    """The report's System Overhead table and accuracy-versus-cost figure, and the random-weight rows no
    table shows: (produced, not produced with why). ``names``: registry name -> the paper's name; ``default``:
    the measurements used when none lie under ``results`` (the benchmark's default output)."""
    produced: list[str] = []
    missing: list[tuple[str, str]] = []
    if records_file is not None and Path(records_file).is_file():
        from harness.records.store import random_weight_rows

        rows = random_weight_rows(Path(records_file))
        if len(rows):
            models = ", ".join(f"{m} ({n})" for m, n in rows["model"].value_counts().sort_index().items())
            missing.append(("random-weight rows", f"made with random weights (speed and shape only), shown in no "
                                                  f"table, leaderboard or comparison: {models}"))
    found = find_overhead(Path(results), Path(out), default)
    if found is None:
        missing.append(("table: System Overhead (app:system_overhead)",
                        f"no {OVERHEAD_FILE} under {results} nor at {default}: {HOW}"))
        missing.append(("figure: accuracy against cost", f"needs {OVERHEAD_FILE}"))
        return produced, missing
    ours = read_overhead(found)
    table = overhead_table(ours, read_paper(paper_dir), names)
    target = Path(out) / "tables" / "system_overhead.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_markdown(table, ours) + f"\nMeasurements: {found}\n")
    produced.append(f"table: System Overhead ({target.relative_to(out).as_posix()}, from {found})")
    points = accuracy_points(ours, frame, names, missing)
    if len(points) < 2:
        missing.append(("figure: accuracy against cost",
                        "fewer than two models with trained weights have both an overhead measurement and "
                        "forecasting records here"))
    else:
        files = plot_accuracy_vs_cost(points, Path(out) / "figures" / "accuracy_vs_cost.png")
        produced.append(f"figure: accuracy against cost ({files[0].relative_to(out).as_posix()}, and .pdf; "
                        f"{len(points)} models with trained weights, each its mean RMSE over the "
                        f"{int(points['cells'].max())} forecasting cells all of them finished)")
    return produced, missing
