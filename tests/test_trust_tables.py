"""Issue #27, the tables side: a table row is one configuration; a cell that lacks folds, settings or seeds,
or mixes code versions, is marked in every format and never ranked; names cannot break a format; the
statistics say what their blocks are and why MASE ranks as it does; notes stay under their task."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch

from harness.reporting import stats_report
from harness.cli import main
from harness.reporting.report import write_report
from harness.records.store import RecordStore, read_records, row_key
from harness.reporting.tables import render, task_tables
from harness.tasks.forecasting import TASK as FORECASTING
from models.soter.config import preset
from models.soter.io import save_pretrained
from models.soter.model import SoterModel

REPO = Path(__file__).resolve().parents[1]


def _write(store: RecordStore, model: str, fold: str, setting: str, err: float, task: str = "forecasting",
           dataset: str = "d", seed: int = 0, condition: str = "clean", n: int = 4) -> None:
    fields = dict(task=task, dataset=dataset, fold=fold, setting=setting, condition=condition, model=model,
                  seed=seed, protocol="p")
    store.write({**fields, "key": row_key(**fields), "status": "ok", "sse": err ** 2 * n, "sae": err * n,
                 "n_points": n, "rmse": err, "mae": err, "n_windows": n, "finished_at": "2026-11-25T00:00:00+00:00"})


def _run(folder: Path, out: Path, *extra: str) -> str:
    argv = ["run", "forecasting", "--dataset", str(folder), "--max-windows-per-subject", "2", "--out", str(out),
            "--no-progress", *extra]
    assert main(argv) == 0
    return argv


def _md_row(text: str, model: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {model} |"))


# -- item 4: one configuration per table row ----------------------------------------------------------------
def test_two_option_values_are_two_table_rows_never_one(folder, tmp_path, capsys):
    out = tmp_path / "out"
    _run(folder, out, "--models", "test-ses", "--settings", "48/24", "72/36")
    _run(folder, out, "--models", "test-ses", "--settings", "72/36", "--model-option", "test-ses.alpha=0.9")
    _run(folder, tmp_path / "defaults", "--models", "test-ses", "--settings", "48/24", "72/36")
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    default, other = _md_row(text, "test-ses"), _md_row(text, r"test-ses \[alpha=0.9\]")
    assert "†" not in default and "**" not in default  # complete, the only one ranked: better than nothing here
    assert "†" in other and "**" not in other and "<u>" not in other  # 72/36 only: partial, never ranked
    assert r"test-ses \[alpha=0.9\] on toy: 1/2 settings complete (no row (48/24))" in text
    ours = FORECASTING.table(read_records(out / "records.csv"))
    alone = FORECASTING.table(read_records(tmp_path / "defaults" / "records.csv"))
    col = ours.columns[0]
    assert ours.entries[("test-ses", col)] == alone.entries[("test-ses", col)]  # nothing of alpha=0.9 pooled in
    report = write_report(out, tmp_path / "report")
    md = (report.path.parent / "tables" / "forecasting.md").read_text()
    assert _md_row(md, "test-ses") == default and _md_row(md, r"test-ses \[alpha=0.9\]") == other


def _checkpoint(path: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    return save_pretrained(SoterModel(preset("soter-tiny")), path)


def test_two_weights_are_two_table_rows_never_one(folder, tmp_path):
    a, b = _checkpoint(tmp_path / "A", 0), _checkpoint(tmp_path / "B", 1)
    out = tmp_path / "out"
    _run(folder, out, "--models", "soter", "--settings", "48/24", "72/36", "--weights", f"soter={a}")
    _run(folder, out, "--models", "soter", "--settings", "72/36", "--weights", f"soter={b}")
    frame = read_records(out / "records.csv")
    labels = sorted(set(frame["model"]))
    assert len(labels) == 2 and all(re.fullmatch(r"soter \[weights=[0-9a-f]{16}\]", m) for m in labels)
    table = FORECASTING.table(frame)
    partial = [m for m in labels if table.entries[(m, table.columns[0])].partial]
    assert len(partial) == 1 and set(frame.loc[frame["model"] == partial[0], "setting"]) == {"72/36"}


# -- item 5: partial cells ---------------------------------------------------------------------------------
def _holey(out: Path) -> Path:
    """good: every fold of both settings (error 1); holey: lower errors (0.5), but fold S2 of 72/36 has no row
    and it has no row at all for 96/48; lone: only fold S1 of 48/24, error 0.1 (a run stopped at once)."""
    store = RecordStore(out / "records.csv")
    for setting in ("48/24", "72/36", "96/48"):
        for fold in ("S1", "S2"):
            _write(store, "good", fold, setting, 1.0)
            if setting == "48/24" or (setting == "72/36" and fold == "S1"):
                _write(store, "holey", fold, setting, 0.5)
    _write(store, "lone", "S1", "48/24", 0.1)
    return out / "records.csv"


def test_partial_cells_are_marked_and_never_ranked_in_every_format(tmp_path):
    table = FORECASTING.table(read_records(_holey(tmp_path)))
    md = render(table, "markdown")
    # the only complete model: ranked alone, so better than no other (a mark needs a worse value beside it)
    assert "†" not in _md_row(md, "good") and "**" not in _md_row(md, "good")
    holey = _md_row(md, "holey")
    assert holey.count("†") == 2 and "**" not in holey and "<u>" not in holey
    assert _md_row(md, "lone") == "| lone | partial | partial |"  # no complete setting: no number at all
    assert "holey on d: 1/3 settings complete (no row for fold S2 (72/36); no row (96/48))" in md
    assert "lone on d: 0/3 settings complete (no row for fold S2 (48/24); no row (72/36, 96/48))" in md
    text, tex = render(table, "text"), render(table, "latex")
    assert re.search(r"holey\s+50\.00\+", text) and "no row for fold S2" in text
    assert r"holey & $50.00^{\dagger}$" in tex and "no row for fold S2" in tex and r"\mathbf" not in tex


def test_partial_cells_are_treated_so_by_the_report_and_the_statistics(tmp_path):
    path = _holey(tmp_path)
    frame = read_records(path)
    scores = stats_report.cell_scores(frame, "forecasting")
    assert scores.loc[("d", "72/36", "clean"), "good"] == 1.0
    assert math.isnan(scores.loc[("d", "72/36", "clean"), "holey"]) and math.isnan(scores.loc[("d", "48/24", "clean"), "lone"])
    board, _ = stats_report.leaderboard(frame, {}, "forecasting")
    assert board.loc["holey", "cells_completed"] == "1/3" and board.loc["lone", "cells_completed"] == "0/3"
    write_report(tmp_path, tmp_path / "report")
    md = (tmp_path / "report" / "tables" / "forecasting.md").read_text()
    assert "†" in _md_row(md, "holey") and "**" not in _md_row(md, "holey")


def test_a_cell_pooling_fewer_seeds_than_the_others_is_partial(tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    for seed in (0, 1):
        for fold in ("S1", "S2"):
            _write(store, "locf", fold, "96", 1.0, task="imputation", seed=seed, condition="missing=25%")
            if seed == 0:
                _write(store, "mean", fold, "96", 0.5, task="imputation", seed=seed, condition="missing=25%")
    (_, table), = task_tables(read_records(tmp_path / "records.csv"), "imputation")
    md = render(table, "markdown")
    assert "†" in _md_row(md, "mean") and "**" not in _md_row(md, "mean") and "†" not in _md_row(md, "locf")
    assert "mean on d: 1/2 seeds complete (no row (1))" in md


# -- item 10: names cannot break a format ----------------------------------------------------------------------
def test_dataset_and_model_names_are_escaped(tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    for model in ("a|b", "m$x{y}_%"):
        for fold in ("S1", "S2"):
            _write(store, model, fold, "48/24", 1.0 if model == "a|b" else 2.0, dataset="set\nwith|bar")
    table = FORECASTING.table(read_records(tmp_path / "records.csv"))
    lines = render(table, "markdown").splitlines()
    rows = [line for line in lines if line.startswith("|")]
    assert len(rows) == 4 and {len(re.findall(r"(?<!\\)\|", r)) for r in rows} == {4}  # 3 columns everywhere
    tex = render(table, "latex")
    assert r"m\$x\{y\}\_\%" in tex and r"set with|bar" in tex
    unescaped = re.sub(r"\\[{}$%_&#]", "", tex)
    assert unescaped.count("{") == unescaped.count("}") and "\n\\end{table}" in tex
    header = next(line for line in render(table, "text").splitlines() if line.startswith("Model"))
    assert "set with|bar RMSE" in header


# -- item 11: every file under --out describes every current row -----------------------------------------------
def test_a_second_run_keeps_tables_and_statistics_of_every_current_row(folder, tmp_path, capsys):
    out = tmp_path / "out"
    _run(folder, out, "--models", "last-value", "--settings", "48/24")
    assert main(["table", "forecasting", "--out", str(out), "--stats"]) == 0
    _run(folder, out, "--models", "window-mean", "--settings", "48/24")
    md = (out / "tables" / "forecasting.md").read_text()
    assert "| last-value |" in md and "| window-mean |" in md
    board = (out / "statistics" / "leaderboard_forecasting.csv").read_text()
    assert "last-value" in board and "window-mean" in board


# -- item 13: the rank tests' blocks ---------------------------------------------------------------------------
def test_rank_tests_use_datasets_as_blocks_not_their_settings(tmp_path, capsys):
    store = RecordStore(tmp_path / "records.csv")
    for d, dataset in enumerate(("d1", "d2")):
        for setting in ("48/24", "72/36", "96/48", "128/64"):
            for m, model in enumerate(("m1", "m2", "m3")):
                for fold in ("S1", "S2"):
                    _write(store, model, fold, setting, 1.0 + m + 0.1 * d, dataset=dataset)
    assert main(["table", "forecasting", "--out", str(tmp_path), "--stats"]) == 0
    out = capsys.readouterr().out
    assert "over 2 complete blocks; blocks: 2 datasets (each the mean over its settings)" in out
    blocks, word, _ = stats_report.rank_blocks(read_records(tmp_path / "records.csv"), "forecasting")
    assert word == "datasets" and list(blocks.index) == ["d1", "d2"]


def test_one_datasets_rank_blocks_are_its_test_subjects(tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    for setting in ("48/24", "72/36"):
        for m, model in enumerate(("m1", "m2", "m3")):
            for f, fold in enumerate(("S1", "S2", "S3")):
                _write(store, model, fold, setting, 1.0 + m + f)
    blocks, word, what = stats_report.rank_blocks(read_records(tmp_path / "records.csv"), "forecasting")
    assert word == "test subjects" and sorted(blocks.index) == ["S1", "S2", "S3"]
    assert what.startswith("3 test subjects of d") and blocks.loc["S2", "m3"] == 4.0


# -- item 14: MASE by channel -------------------------------------------------------------------------------
def test_mase_is_broken_down_by_channel_in_the_statistics(folder, tmp_path, capsys):
    out = tmp_path / "out"
    _run(folder, out, "--models", "last-value", "window-mean", "--settings", "48/24")
    assert main(["table", "forecasting", "--out", str(out), "--stats"]) == 0
    assert "MASE, MAE and MASE scale by channel" in capsys.readouterr().out
    text = (out / "statistics" / "mase_by_channel_forecasting.txt").read_text()
    assert "toy a" in text and "toy b" in text and "scale" in text and "EDA or respiration" in text
    long = (out / "statistics" / "mase_by_channel_forecasting.csv").read_text().splitlines()
    assert long[0] == "dataset,channel,model,mase,mae,scale" and len(long) == 1 + 2 * 2
    assert "mase_by_channel" in (REPO / "docs" / "report.md").read_text()


# -- item 15: notes under their own task, the gate figure's reason ----------------------------------------------
def test_a_models_note_appears_only_under_the_tasks_it_concerns(tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    for fold in ("S1", "S2"):
        _write(store, "soter", fold, "48/24", 1.0)
        _write(store, "soter", fold, "96", 1.0, task="imputation", condition="missing=25%")
    frame = read_records(tmp_path / "records.csv")
    (_, forecasting), = task_tables(frame, "forecasting")
    (_, imputation), = task_tables(frame, "imputation")
    assert any("decoded per query" in n for n in forecasting.model_notes)
    assert not any("decoded per query" in n for n in imputation.all_notes())


def test_the_reports_reason_for_a_missing_gate_figure_is_current(tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    _write(store, "last-value", "S1", "48/24", 1.0)
    report = write_report(tmp_path, tmp_path / "report")
    reason = dict(report.missing)["figure: gate similarity"]
    assert "needs a trained SOTER" not in reason and "python -m harness.studies.gates --out" in reason
