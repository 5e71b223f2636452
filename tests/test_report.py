"""`harness report`: the paper's tables transcribed as printed, our cells in the paper's names and
scales, golden Markdown/LaTeX for a fixed record set, and no crash on missing or unavailable cells."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.reporting import paper
from harness.reporting.paper_cells import our_cells
from harness.reporting.report import compare, comparison_markdown, write_report
from harness.records.store import COLUMNS
from harness.reporting.tables import render, task_tables

FIXTURES = Path(__file__).parent / "fixtures" / "report"
TEX = Path(__file__).resolve().parents[2] / "shared" / "paper" / "soter-paper.tex"
WINDOWS = ("48/24", "72/36", "96/48", "128/64")


def _row(**kw) -> dict:
    row = {c: "" for c in COLUMNS}
    row.update(kw)
    return row


def fixed_records() -> pd.DataFrame:
    """SOTER and last value on MIT-BIH (2 folds x 4 windows), TiRex unavailable, one failed window."""
    rows = []
    for w, window in enumerate(WINDOWS):
        for f, fold in enumerate(("100", "101")):
            n = 100 * (w + 1)
            for model, err in (("soter", 0.01 + 0.002 * w + 0.001 * f), ("last-value", 0.05 + 0.01 * w)):
                status = "error" if (model == "last-value" and window == "128/64" and fold == "101") else "ok"
                rows.append(_row(task="forecasting", dataset="mitbih", fold=fold, setting=window, condition="clean",
                                 model=model, seed=0, status=status, sse=err ** 2 * n if status == "ok" else np.nan,
                                 rmse=err if status == "ok" else np.nan, mae=err * 0.6 if status == "ok" else np.nan,
                                 sae=err * 0.6 * n if status == "ok" else np.nan, n_points=n if status == "ok" else 0,
                                 error="boom" if status == "error" else ""))
            rows.append(_row(task="forecasting", dataset="mitbih", fold="100", setting=window, condition="clean",
                             model="tirex", seed=0, status="unavailable", n_points=0,
                             error="tirex needs weights"))
    frame = pd.DataFrame(rows)
    frame["key"] = [f"k{i}" for i in range(len(frame))]  # the store keeps the latest row per key
    for c in ("sse", "sae", "n_points", "seed"):
        frame[c] = pd.to_numeric(frame[c])
    return frame


def test_paper_tables_are_transcribed_as_printed():
    tables = paper.load()
    assert len(tables) == 15 and all(len(t) for t in tables.values())
    main = tables["tab:main_results"]
    cell = main[(main["method"] == "SOTER") & (main["dataset"] == "MIT-BIH") & (main["metric"] == "RMSE")]
    assert cell[["value", "std"]].values.tolist() == [["1.29", "0.22"]]  # \pmstd{\mathbf{1.29^{*}}}{0.22}
    assert len(main) == 21 * 12 and (main["scale"] == 100).all()
    win24 = tables["tab:e-win24"]
    assert "Timer" not in set(win24["method"])  # printed "/" (not supported): no row
    imp = tables["tab:e-imp75"]
    assert imp[(imp["method"] == "SOTER") & (imp["dataset"] == "HeartRate") & (imp["metric"] == "RMSE")][
        "value"].tolist() == ["0.0546"]
    exposure = tables["tab:pretraining_exposure"]
    assert set(exposure["exposure"]) == {"10%", "25%", "50%", "75%", "100%"}
    assert tables["tab:eval-stats"].query("metric == 'NPE'")["value"].tolist() == [
        "0.469", "0.878", "0.643", "0.646", "0.334", "0.618"]


@pytest.mark.skipif(not TEX.is_file(), reason=f"{TEX} not beside the checkout")
def test_committed_transcription_matches_the_paper(tmp_path):
    paper.write(TEX, tmp_path)
    for f in sorted(tmp_path.glob("*.csv")):
        assert f.read_text() == (paper.PAPER_DIR / f.name).read_text(), f.name


def test_our_cells_use_paper_names_scales_and_pooling():
    ours = our_cells(fixed_records())
    soter = ours[(ours["table"] == "tab:main_results") & (ours["method"] == "SOTER") & (ours["metric"] == "RMSE")]
    per_window = [np.sqrt(((0.01 + 0.002 * w) ** 2 + (0.011 + 0.002 * w) ** 2) / 2) for w in range(4)]
    assert soter["dataset"].tolist() == ["MIT-BIH"]
    assert soter["ours"].iloc[0] == pytest.approx(100 * np.mean(per_window))
    assert soter["ours_std"].iloc[0] == pytest.approx(100 * np.std(per_window, ddof=1))
    last = ours[(ours["table"] == "tab:main_results") & (ours["model"] == "last-value") & (ours["metric"] == "RMSE")]
    assert last["status"].iloc[0] == "partial" and "3 of 4" in last["reason"].iloc[0]
    w64 = ours[(ours["table"] == "tab:e-win64") & (ours["model"] == "last-value")]
    assert w64["ours"].isna().all() and (w64["status"] == "error").all()
    tirex = ours[(ours["method"] == "TiRex") & (ours["table"] == "tab:main_results")]
    assert tirex["ours"].isna().all() and (tirex["status"] == "unavailable").all()


def test_golden_markdown_and_latex(tmp_path):
    frame = fixed_records()
    (_, table), = task_tables(frame, "forecasting")
    ptable = paper.load()["tab:main_results"]
    ours = our_cells(frame)
    merged = compare(ptable, ours)
    md = comparison_markdown("tab:main_results", "caption", merged, ours.iloc[:0])
    got = {"forecasting.md": render(table, "markdown"), "forecasting.tex": render(table, "latex"),
           "comparison_main_results.md": md}
    for name, text in got.items():
        assert text == (FIXTURES / name).read_text(), name


def test_report_never_crashes_and_lists_what_it_could_not_produce(tmp_path):
    results = tmp_path / "run"
    results.mkdir()
    fixed_records().to_csv(results / "records.csv", index=False)
    report = write_report(results, tmp_path / "out").path.read_text()
    assert "tab:main_results: 2 of 252 cells compared" in report  # SOTER's RMSE and MAE on MIT-BIH
    assert "tab:ablation: needs the ablation study" in report
    assert "figure: gate similarity: run `python -m harness.studies.gates --out RESULTS/figures`" in report
    assert (tmp_path / "out" / "tables" / "forecasting.tex").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "tab:main_results: this run has no records" in write_report(empty, tmp_path / "out2").path.read_text()


def test_a_models_note_appears_once_and_only_under_its_numbers():
    frame = fixed_records()
    (_, table), = task_tables(frame, "forecasting")
    assert sum(n.startswith("soter: the paper's recipe") and "decoded per query" in n for n in table.all_notes()) == 1
    assert not any(n.startswith("tirex") and "decoded" in n for n in table.all_notes())
    unavailable = frame.copy()
    unavailable.loc[unavailable["model"] == "soter", "status"] = "unavailable"
    (_, table), = task_tables(unavailable, "forecasting")
    assert not any("decoded per query" in n for n in table.all_notes())


def imputation_records() -> pd.DataFrame:
    """Last value on MIT-BIH at 25% missing, three seeds of two folds each."""
    rows = [_row(task="imputation", dataset="mitbih", fold=fold, setting="96", condition="missing=25%",
                 model="last-value", seed=seed, status="ok", sse=(0.05 + 0.01 * seed) ** 2 * 80,
                 sae=0.6 * (0.05 + 0.01 * seed) * 80, n_points=80, rmse=0.05 + 0.01 * seed,
                 mae=0.6 * (0.05 + 0.01 * seed))
            for seed in (0, 1, 2) for fold in ("100", "101")]
    frame = pd.DataFrame(rows)
    frame["key"] = [f"i{i}" for i in range(len(frame))]
    for c in ("sse", "sae", "n_points", "seed"):
        frame[c] = pd.to_numeric(frame[c])
    return frame


def test_every_comparison_is_x100_ours_and_the_papers():
    """The paper printed its per-window and imputation tables unscaled: ours and its values are both
    shown x100 there too, like every other table."""
    frame = pd.concat([fixed_records(), imputation_records()], ignore_index=True)
    ours = our_cells(frame)
    win = ours[(ours["table"] == "tab:e-win24") & (ours["model"] == "soter") & (ours["metric"] == "RMSE")]
    assert win["ours"].iloc[0] == pytest.approx(100 * np.sqrt((0.01 ** 2 + 0.011 ** 2) / 2))
    imp = ours[(ours["table"] == "tab:e-imp25") & (ours["metric"] == "RMSE")]
    assert imp["ours"].iloc[0] == pytest.approx(100 * np.mean([0.05, 0.06, 0.07]))
    assert imp["ours_std"].iloc[0] == pytest.approx(100 * np.std([0.05, 0.06, 0.07], ddof=1))
    ptable = paper.load()["tab:e-imp25"]
    merged = compare(ptable, ours)
    printed = ptable[(ptable["method"] == "SOTER") & (ptable["dataset"] == "HeartRate") & (ptable["metric"] == "RMSE")]
    cell = merged[(merged["method"] == "SOTER") & (merged["dataset"] == "HeartRate") & (merged["metric"] == "RMSE")]
    assert cell["paper"].iloc[0] == pytest.approx(100 * float(printed["value"].iloc[0]))
    assert cell["paper_std"].iloc[0] == pytest.approx(100 * float(printed["std"].iloc[0]))
    md = comparison_markdown("tab:e-imp25", "caption", merged, ours[ours["table"] == "tab:e-imp25"])
    assert "| ours (x100) | ours std (x100) |" in md and "shown x100 here" in md
    assert "| last-value | MIT-BIH | RMSE | missing=25% | 6.00 | 1.00 | ok |" in md  # two decimals


def test_report_prints_a_summary_and_lists_each_figure_once(tmp_path, capsys):
    from harness.cli import main

    results = tmp_path / "run"
    (results / "figures").mkdir(parents=True)
    pd.concat([fixed_records(), imputation_records()], ignore_index=True).to_csv(results / "records.csv", index=False)
    stale = results / "figures" / "imputation_rmse_vs_missing_rate.png"  # what `run` drew earlier
    stale.write_bytes(b"stale")
    (results / "forecast-example-mitbih.png").write_bytes(b"png")
    assert main(["report", "--results", str(results), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    report = (tmp_path / "out" / "REPORT.md").read_text()
    for text in (printed, report):
        assert text.count("imputation RMSE against missing rate") == 1
        assert text.count("forecasting examples") == 1
        assert "figure: noise robustness: no noise records" in text
        assert "tab:ablation" in text and "tab:main_results: 2 of 252 cells compared" in text
    lines = printed.splitlines()
    assert lines[0].startswith("Produced (") and any(line.startswith("Not produced (") for line in lines)
    assert lines[-1].startswith(f"Report: {tmp_path / 'out' / 'REPORT.md'}")
    assert "  tab:classification, tab:e-imp50, tab:e-imp75, tab:label_efficiency: this run has no records" in printed
    assert report.count("- tab:e-imp50: this run has no records") == 1  # the file: one line per table
    assert (tmp_path / "out" / "figures" / stale.name).read_bytes() != b"stale"  # drawn from the records
    assert (tmp_path / "out" / "figures" / "forecast-example-mitbih.png").read_bytes() == b"png"


def test_naive_rows_stand_beside_the_range_of_the_papers_models():
    """Every comparison lists our naive models' cells with the paper's best and worst model on the same base
    dataset, metric and condition: the reader sees what copying the last sample scores next to the paper."""
    from harness.reporting.report import comparison_markdown, compare, naive_rows

    ptable = pd.DataFrame({"table": "tab:e-imp75", "method": ["A", "B"], "dataset": "MIT-BIH", "metric": "RMSE",
                           "condition": "missing=75%", "value": [0.15, 0.48], "std": [0.01, 0.02], "scale": 1})
    mine = pd.DataFrame({"table": "tab:e-imp75", "model": ["locf", "soter"], "method": ["locf", "SOTER"],
                         "dataset": "mitbih:blocks=6", "metric": "RMSE", "condition": "missing=75%",
                         "ours": [1.78, 9.0], "ours_std": 0.1, "status": "ok", "reason": ""})
    merged = compare(ptable, mine)
    naive = naive_rows(merged, mine)
    assert naive[["method", "ours", "paper_min", "paper_max", "paper_models"]].values.tolist() == [
        ["locf", 1.78, 15.0, 48.0, 2]]
    text = comparison_markdown("tab:e-imp75", "cap", merged, mine.iloc[:0], naive=naive)
    assert "| locf | mitbih:blocks=6 | RMSE | missing=75% | 1.78 | 15.00 | 48.00 | 2 |" in text
