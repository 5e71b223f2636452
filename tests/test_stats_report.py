"""The report's statistics on a small constructed record set, against values computed by hand.

Cells: dataset d, settings 48/24, 72/36, 96/48 (clean); folds S1, S2 with 4 windows each, one
point per window (so a window's RMSE is its absolute error). Errors per window, folds in order:
  A   1 1 1 1 | 1 1 1 1          pooled RMSE 1
  B   4 1 1 1 | 1 1 1 1          sqrt((16 + 7) / 8) = sqrt(23/8)
  SN  2 3 4 5 | 6 7 8 9          sqrt(284 / 8)        (seasonal-naive: the skill's reference)
  E   same as SN                 ties SN in every cell
  C   10 .. 17                   sqrt(1500 / 8); fold S2 of 96/48 failed: a missing cell
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.reporting import stats_report
from harness.cli import main
from harness.records.store import RecordStore, read_records, row_key
from harness.records.window_store import read_window_errors, write_window_errors

ERRORS = {"A": [1.0] * 8, "B": [4.0] + [1.0] * 7, "seasonal-naive": [2.0, 3, 4, 5, 6, 7, 8, 9],
          "E": [2.0, 3, 4, 5, 6, 7, 8, 9], "C": [10.0 + i for i in range(8)]}
WINDOWS = ("48/24", "72/36", "96/48")
RMSE = {"A": 1.0, "B": math.sqrt(23 / 8), "seasonal-naive": math.sqrt(284 / 8), "E": math.sqrt(284 / 8),
        "C": math.sqrt(1500 / 8)}


def _records(out: Path, with_windows: bool = True) -> pd.DataFrame:
    store = RecordStore(out / "records.csv")
    for window in WINDOWS:
        for model, errs in ERRORS.items():
            for f, fold in enumerate(("S1", "S2")):
                fields = dict(task="forecasting", dataset="d", fold=fold, setting=window, condition="clean",
                              model=model, seed=0, protocol="p")
                key = row_key(**fields)
                if model == "C" and window == "96/48" and fold == "S2":
                    store.write({**fields, "key": key, "status": "error", "error": "it failed"})
                    continue
                e = np.array(errs[4 * f:4 * f + 4])
                if with_windows:
                    write_window_errors(out, key, {
                        "sse": e ** 2, "sae": e, "n": np.ones(4, dtype=np.int64), "step_sse": np.array([np.sum(e ** 2)]),
                        "step_n": np.array([4]), "mase": np.full(4, 0.5 if model == "A" else 1.0),
                        "recording": np.arange(4), "start": np.zeros(4, dtype=np.int64)})
                store.write({**fields, "key": key, "status": "ok", "sse": float(np.sum(e ** 2)), "sae": float(e.sum()),
                             "n_points": 4, "rmse": float(np.sqrt(np.mean(e ** 2))), "mae": float(e.mean()),
                             "n_windows": 4})
    return read_records(out / "records.csv")


def _windows(frame: pd.DataFrame, results: Path) -> dict:
    return stats_report.cell_windows(frame, results, "forecasting")[0]


def test_leaderboard_skill_ranks_ties_and_missing_cells(tmp_path):
    frame = _records(tmp_path)
    scores = stats_report.cell_scores(frame, "forecasting")
    assert scores.shape == (3, 5) and math.isnan(scores.loc[("d", "96/48", "clean"), "C"])
    assert scores.loc[("d", "48/24", "clean"), "B"] == pytest.approx(RMSE["B"])
    board, note = stats_report.leaderboard(frame, _windows(frame, tmp_path), "forecasting")
    assert note == ""
    sn = RMSE["seasonal-naive"]
    assert board.loc["A", "skill"] == pytest.approx(1 - 1 / sn)  # the same ratio in every cell
    assert board.loc["B", "skill"] == pytest.approx(1 - RMSE["B"] / sn)
    assert board.loc["E", "skill"] == pytest.approx(0.0) and board.loc["seasonal-naive", "skill"] == 0.0
    assert board.loc["C", "skill"] == pytest.approx(1 - RMSE["C"] / sn)  # over its two completed cells
    # ranks over the two cells every model completed: A 1, B 2, SN and E tie at 3.5, C 5
    assert board["avg_rank"].to_dict() == pytest.approx({"A": 1, "B": 2, "seasonal-naive": 3.5, "E": 3.5, "C": 5})
    assert board.loc["C", "cells_completed"] == "2/3" and board.loc["A", "cells_completed"] == "3/3"
    # wins summed over the other models, in the cells both completed: A beats B, SN, E in 3 cells and C in
    # 2 (C has no 96/48) = 11; SN ties E in 3 cells
    assert (board.loc["A", "wins"], board.loc["A", "losses"]) == (11, 0)
    assert board.loc["seasonal-naive", "ties"] == 3 and board.loc["E", "ties"] == 3
    assert board.loc["A", "mase"] == pytest.approx(0.5) and board.loc["C", "mase"] == pytest.approx(1.0)
    assert list(board.index[:2]) == ["A", "B"]  # sorted by skill


def test_significance_marks_and_bootstrap_intervals(tmp_path):
    frame = _records(tmp_path)
    sig = stats_report.significance(frame, _windows(frame, tmp_path), "forecasting", "rmse", n_boot=200)
    cell = sig[(sig.setting == "48/24")].set_index("model")
    assert set(cell.reference) == {"A"}
    # SN, E and C: 8 distinct positive differences from A -> exact two-sided p = 2/2^8; B: one non-zero
    # difference -> p = 1. Holm over the 4 compared: sorted 1/128 x3, 1 -> 4/128, 3/128, 2/128 -> monotone 4/128
    assert cell.loc["seasonal-naive", "p_value"] == pytest.approx(2 / 256)
    assert cell.loc["seasonal-naive", "p_holm"] == pytest.approx(4 * 2 / 256)
    assert cell.loc["B", "p_value"] == pytest.approx(1.0) and cell.loc["B", "p_holm"] == pytest.approx(1.0)
    assert bool(cell.loc["B", "not_worse"]) and not cell.loc["seasonal-naive", "not_worse"]
    # C is missing in 96/48: three models compared there, Holm factor 3
    last = sig[sig.setting == "96/48"].set_index("model")
    assert "C" not in last.index and last.loc["E", "p_holm"] == pytest.approx(3 * 2 / 256)
    # A's errors are all 1: every resample of subjects gives RMSE 1
    assert (cell.loc["A", "ci_low"], cell.loc["A", "ci_high"]) == (1.0, 1.0)
    assert cell.loc["C", "ci_low"] <= RMSE["C"] <= cell.loc["C", "ci_high"] and cell.loc["C", "n_subjects"] == 2
    grid = stats_report.significance_grid(sig)
    assert grid.loc["A", "d 48/24"].endswith("*") and grid.loc["B", "d 48/24"].endswith("=")
    assert grid.loc["seasonal-naive", "d 48/24"].endswith("]")  # significantly worse: no mark
    assert grid.loc["A", "d 48/24"].startswith("100.00 [100.00, 100.00]")
    assert not sig["better"].any()  # nothing beats the cell's best
    # against a named reference: A is significantly better than seasonal-naive (p_holm 4/128 < 0.05), B is not
    # (one non-zero difference from A, so no test can separate it from A either), C and E are worse or equal
    named = stats_report.significance(frame, _windows(frame, tmp_path), "forecasting", "rmse",
                                      reference="seasonal-naive", n_boot=200)
    marks = stats_report.significance_grid(named)["d 48/24"].str[-1].to_dict()
    assert marks["seasonal-naive"] == "*" and marks["A"] == "+"
    assert named.set_index(["setting", "model"]).loc[("48/24", "A"), "better"]
    # a cell score (pooled) that disagrees with the paired windows' direction gets no "+"
    skewed = frame.copy()
    skewed.loc[(skewed.model == "A") & (skewed.setting == "48/24"), "sse"] = 1e6
    again = stats_report.significance(skewed, _windows(frame, tmp_path), "forecasting", "rmse",
                                      reference="seasonal-naive", n_boot=200)
    assert not again.set_index(["setting", "model"]).loc[("48/24", "A"), "better"]


def test_report_writes_statistics_and_says_what_old_records_cannot_give(tmp_path):
    _records(tmp_path / "new")
    assert main(["report", "--results", str(tmp_path / "new"), "--out", str(tmp_path / "rep")]) == 0
    folder = tmp_path / "rep" / "statistics"
    for name in ("leaderboard_forecasting.md", "significance_rmse_forecasting_grid.md",
                 "horizon_rmse_forecasting.png", "win_tie_loss_rmse_forecasting.txt"):
        assert (folder / name).stat().st_size > 0, name
    report = (tmp_path / "rep" / "REPORT.md").read_text()
    assert "leaderboard" in report
    # one dataset: the diagram's blocks are its 2 test subjects, and C failed on S2: one complete block is too few
    assert "critical-difference diagram (RMSE): a critical-difference diagram needs >= 2 models and >= 2 complete " \
           "test subjects" in report and "blocks: 2 test subjects of d" in report
    _records(tmp_path / "old", with_windows=False)  # records written before per-window errors were kept
    assert main(["report", "--results", str(tmp_path / "old"), "--out", str(tmp_path / "rep-old")]) == 0
    text = (tmp_path / "rep-old" / "REPORT.md").read_text()
    assert (tmp_path / "rep-old" / "statistics" / "leaderboard_forecasting.md").exists()
    assert "have no per-window errors" in text and "--rerun" in text


def test_table_stats_prints_the_leaderboard(tmp_path, capsys):
    _records(tmp_path)
    assert main(["table", "forecasting", "--out", str(tmp_path), "--stats"]) == 0
    out = capsys.readouterr().out
    assert "skill" in out and "avg_rank" in out and "* = the cell's best model" in out


def test_damaged_window_file_is_named(tmp_path):
    write_window_errors(tmp_path, "k", {"sse": np.ones(2)})
    (tmp_path / "window_errors" / "k.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="k.npz: unreadable"):
        read_window_errors(tmp_path, "k")
    write_window_errors(tmp_path, "k", None)  # a rerun that failed removes it
    assert read_window_errors(tmp_path, "k") is None


def test_mae_by_horizon_step_is_kept_and_tabulated(tmp_path):
    """Issue #26 asks for each model's MAE at horizon step 1 against last value's: window errors keep the
    absolute errors summed per step, and the report tabulates and draws MAE by step beside RMSE; files
    written before the sums were kept give no MAE curve (never one made up from RMSE)."""
    from protocols.metrics import window_errors

    pred = np.zeros((2, 2, 3))
    target = np.array([[[1.0, -2, 3], [0, 0, 1]], [[-1, 0, 0], [2, 2, 2]]])
    w = window_errors(pred, target, np.zeros((2, 2, 8)), np.arange(2), np.zeros(2))
    np.testing.assert_array_equal(w.step_sae, [4.0, 4.0, 6.0])  # |1|+|0|+|-1|+|2|, |-2|+0+0+|2|, 3+1+0+2
    np.testing.assert_array_equal(w.step_n, [4, 4, 4])

    frame = _records(tmp_path)
    windows = _windows(frame, tmp_path)
    assert all(m.step_sae is None for cell in windows.values() for m in cell.values())  # old files: not kept
    assert stats_report.horizon_table(windows, "mae").empty
    assert stats_report.horizon_figure(windows, tmp_path / "h_mae", "mae") == []
    assert not stats_report.horizon_table(windows, "rmse").empty

    for key in frame["key"][frame["status"] == "ok"]:  # the same records with the per-step sums kept
        arrays = read_window_errors(tmp_path, key)
        write_window_errors(tmp_path, key, {**arrays, "step_sae": np.array([arrays["sae"].sum()])})
    windows = _windows(frame, tmp_path)
    table = stats_report.horizon_table(windows, "mae").set_index(["setting", "model"])
    assert table.loc[("48/24", "B"), "step 1"] == pytest.approx(11 / 8 * 100)  # (4 + 7) / 8 points, x100
    assert table.loc[("48/24", "seasonal-naive"), "step 1"] == pytest.approx(44 / 8 * 100)
    rmse = stats_report.horizon_table(windows, "rmse").set_index(["setting", "model"])
    assert rmse.loc[("48/24", "B"), "step 1"] == pytest.approx(RMSE["B"] * 100)


def test_no_critical_difference_diagram_without_a_friedman_p_value_and_the_report_says_why(tmp_path, monkeypatch):
    """Two models: Friedman's test is undefined, so a diagram would be captioned "Friedman p = nan"."""
    import sys

    module = sys.modules[__name__]
    monkeypatch.setattr(module, "ERRORS", {m: ERRORS[m] for m in ("A", "B")})
    _records(tmp_path / "two")
    assert main(["report", "--results", str(tmp_path / "two"), "--out", str(tmp_path / "rep")]) == 0
    report = (tmp_path / "rep" / "REPORT.md").read_text()
    assert "critical-difference diagram (RMSE): a critical-difference diagram needs a Friedman p-value, and there " \
           "is none: Friedman needs >= 3 models" in report
    assert "Friedman p = nan" not in report
    assert not list((tmp_path / "rep" / "statistics").glob("cd_*"))
