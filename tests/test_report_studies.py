"""`harness report` and the training studies (issue #15): the ablation, sensitivity, exposure and
corpus-matched tables render from the files the study runners write (here: soter-tiny trained for a
few steps on a tiny corpus, evaluated on a toy dataset), with the paper's numbers beside ours where
the cells match; and rows of the authors' released checkpoint (`soter-authors`) are compared with the
paper's SOTER rows, labelled as such, apart from our own `soter`."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from baselines.testing import toy_dataset
from harness.reporting import paper
from harness.reporting.paper_cells import AUTHORS_LABEL
from harness.reporting.report import compare, write_report
from harness.reporting.study_tables import read_study, study_cells
from harness.records.store import COLUMNS
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import synthetic_stream, write_dataset
from harness.studies.runners import (ABLATION, evaluate, evaluate_corpus_matched, evaluate_exposure,
                                           evaluate_sensitivity, train, train_corpus_matched)
from protocols.datasets.folder import write_folder_dataset

HAS_CHRONOS = importlib.util.find_spec("chronos") is not None
TRAINED_ABLATION = ["full", "no-cd", "learned-router", "no-cde", "cd-3rd"]  # soter-tiny has 3 layers: no cd-4th/5th
SENSITIVITY_RUNS = ["parallel-rk4", "parallel-dopri5-1e-05"]
WINDOWS = ("48/24", "72/36", "96/48", "128/64")


def _quiet(line: str) -> None:
    pass


@pytest.fixture(scope="module")
def studies(tmp_path_factory) -> Path:
    """A results folder whose studies/ holds the four study outputs, made by the runners themselves."""
    tmp = tmp_path_factory.mktemp("studies")
    corpus = tmp / "corpus"
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), corpus)
    toy = tmp / "toy"
    write_folder_dataset(toy_dataset(n_subjects=2, n_samples=200), toy)
    root = tmp / "results" / "studies"

    def cfg(out: str, steps: int = 1) -> TrainConfig:
        return TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(root / out), steps=steps, batch_size=2,
                           max_length=32, min_length=16, checkpoint_every=steps, log_every=1,
                           model_options={"solver": "rk4"})

    forecasting = dict(datasets=(str(toy),), max_windows_per_subject=1, log=_quiet)
    train(cfg("ablation"), TRAINED_ABLATION, log=_quiet)
    evaluate(root / "ablation", list(ABLATION), **forecasting)
    train(cfg("sensitivity"), SENSITIVITY_RUNS, log=_quiet)
    evaluate_sensitivity(root / "sensitivity", SENSITIVITY_RUNS, str(toy), samples=4, context=32, horizon=8,
                         rollout="direct", log=_quiet)
    train(cfg("pretraining", steps=10), ["full"], log=_quiet)  # exposure-010 ... exposure-100
    evaluate_exposure(root / "pretraining" / "full", **forecasting)
    if HAS_CHRONOS:
        train_corpus_matched(cfg("corpus-matched", steps=2), architecture="tiny", horizon=16, log=_quiet)
    else:  # without the extra 'chronos' the study has SOTER only
        train(cfg("corpus-matched", steps=2), ["full"], log=_quiet)
    evaluate_corpus_matched(root / "corpus-matched", **forecasting)
    return tmp / "results"


def _row(table_md: str, label: str) -> list[str]:
    """The cells of one row of a rendered Markdown table."""
    for line in table_md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == label:
            return cells[1:]
    raise AssertionError(f"no row {label!r} in\n{table_md}")


def _plain(cell: str) -> str:
    """A rendered cell's mean, without bold/underline and the std."""
    return re.sub(r"\*\*|</?u>", "", cell).split(" ± ")[0]


def _mean_over_windows(records: pd.DataFrame, label: str, metric: str) -> float:
    """What the table must show: folds pooled per window, then the mean over the four windows, x100."""
    g = records[records["variant_label"] == label]
    per_window = []
    for window in WINDOWS:
        w = g[g["setting"] == window]
        n = w["n_points"].sum()
        per_window.append(np.sqrt(w["sse"].sum() / n) if metric == "RMSE" else w["sae"].sum() / n)
    return 100 * float(np.mean(per_window))


def test_the_four_study_tables_render_from_the_runners_outputs(studies, tmp_path):
    report = write_report(studies, tmp_path / "report")
    text = report.path.read_text()
    not_produced = {what for what, _ in report.missing}
    labels = ("tab:ablation", "tab:sensitivity", "tab:pretraining_exposure", "tab:corpus_matched")
    for label in labels:
        stem = label.split(":")[1]
        assert label not in not_produced
        assert f"{label}: this run's study table from " in text
        assert (tmp_path / "report" / "tables" / f"{stem}.tex").read_text().startswith(r"\begin{table}")
        assert (tmp_path / "report" / "comparison" / f"{stem}.md").is_file()
    tables = {label: (tmp_path / "report" / "tables" / f"{label.split(':')[1]}.md").read_text() for label in labels}

    # ablation: one row per trained variant (cd-4th and cd-5th were not trained), our measured numbers
    ablation = read_study("tab:ablation", studies / "studies" / "ablation" / "ablation_records.csv")
    assert list(dict.fromkeys(ablation["variant_label"])) == [ABLATION[v].label for v in TRAINED_ABLATION]
    assert "CD Layer@5th" not in tables["tab:ablation"] and "CD Layer@4th" not in tables["tab:ablation"]
    for variant in TRAINED_ABLATION:
        label = ABLATION[variant].label
        row = _row(tables["tab:ablation"], label)
        assert [_plain(c) for c in row] == [f"{_mean_over_windows(ablation, label, m):.2f}" for m in ("RMSE", "MAE")]

    # exposure: the five checkpoints of one pre-training run
    exposure = read_study("tab:pretraining_exposure",
                          studies / "studies" / "pretraining" / "full" / "exposure_records.csv")
    for share in ("10%", "25%", "50%", "75%", "100%"):
        row = _row(tables["tab:pretraining_exposure"], share)
        assert [_plain(c) for c in row] == [f"{_mean_over_windows(exposure, share, m):.2f}" for m in ("RMSE", "MAE")]

    # sensitivity: RMSE and MAE x100 and the seconds per step of each run
    sensitivity = pd.read_csv(studies / "studies" / "sensitivity" / "sensitivity.csv")
    for name, row_label in (("parallel-rk4", "Parallel Prefix, rk4"),
                            ("parallel-dopri5-1e-05", "Parallel Prefix, dopri5, 1e-5")):
        r = sensitivity[sensitivity["variant"] == name].iloc[0]
        assert [_plain(c) for c in _row(tables["tab:sensitivity"], row_label)] == [
            f"{100 * r['rmse']:.2f}", f"{100 * r['mae']:.2f}", f"{r['step_seconds']:.2f}"]
    assert "zero-shot forecasting on toy (4 windows of 32/8, seed 42, direct rollout)" in tables["tab:sensitivity"]

    # corpus-matched: SOTER and the scratch Chronos-2 measured; the released checkpoint needs weights
    matched = read_study("tab:corpus_matched", studies / "studies" / "corpus-matched" / "corpus_matched_records.csv")
    trained = ["SOTER", "Chronos-2 (scratch)"] if HAS_CHRONOS else ["SOTER"]
    for label in trained:
        assert [_plain(c) for c in _row(tables["tab:corpus_matched"], label)] == [
            f"{_mean_over_windows(matched, label, m):.2f}" for m in ("RMSE", "MAE")]
    assert _row(tables["tab:corpus_matched"], "Chronos2-Small") == ["unavailable", "unavailable"]

    # the toy dataset is none of the paper's: every cell is listed as ours alone, none is filled from the paper
    assert "tab:ablation: 0 of 42 cells in common with the paper's (this run's study has 10 cells" in text
    comparison = (tmp_path / "report" / "comparison" / "ablation.md").read_text()
    assert "No cell in common" in comparison and "| w/o CD Layer | toy | RMSE |" in comparison


def test_study_cells_stand_beside_the_papers_where_they_match(studies):
    """Our cells carry the paper's row names, datasets, conditions and scales, so that on the paper's
    datasets each meets its printed counterpart."""
    ablation = read_study("tab:ablation", studies / "studies" / "ablation" / "ablation_records.csv")
    merged = compare(paper.load()["tab:ablation"], study_cells("tab:ablation", ablation.assign(dataset="mitbih")))
    cell = merged[(merged["method"] == "w/o CD Layer") & (merged["dataset"] == "MIT-BIH") & (merged["metric"] == "RMSE")]
    assert cell["paper"].tolist() == [pytest.approx(2.14)]  # printed "\quad w/o CD Layer": 2.14
    assert cell["ours"].iloc[0] == pytest.approx(_mean_over_windows(ablation, "w/o CD Layer", "RMSE"))
    assert merged["ours"].notna().sum() == 2 * 5  # RMSE and MAE of five variants on MIT-BIH

    sensitivity = read_study("tab:sensitivity", studies / "studies" / "sensitivity" / "sensitivity.csv")
    cells = study_cells("tab:sensitivity", sensitivity.assign(dataset="mitbih", context=128, horizon=64))
    merged = compare(paper.load()["tab:sensitivity"], cells)
    both = merged[merged["ours"].notna()].set_index(["method", "metric"])
    rk4 = sensitivity[sensitivity["solver"] == "rk4"].iloc[0]
    assert both.loc[("Parallel Prefix, rk4, 1e-5", "RMSE"), "paper"] == pytest.approx(4.81)  # 0.0481 printed
    assert both.loc[("Parallel Prefix, rk4, 1e-5", "RMSE"), "ours"] == pytest.approx(100 * rk4["rmse"])
    assert both.loc[("Parallel Prefix, rk4, 1e-5", "latency_s_per_step"), "paper"] == pytest.approx(2.12)
    assert both.loc[("Parallel Prefix, dopri5, 1e-5", "MAE"), "paper"] == pytest.approx(3.47)
    assert len(both) == 2 * 3  # two runs x (RMSE, MAE, seconds per step)


def test_a_missing_or_empty_study_output_is_named(tmp_path):
    results = tmp_path / "results"
    (results / "studies" / "ablation").mkdir(parents=True)
    evaluate(results / "studies" / "ablation", ["full"], log=_quiet)  # nothing trained: a file with no rows
    report = write_report(results, tmp_path / "report")
    why = dict(report.missing)
    assert why["tab:ablation"].startswith(f"{results / 'studies' / 'ablation' / 'ablation_records.csv'} has no rows")
    assert "needs the ablation study's records" in why["tab:ablation"]
    for label, name in (("tab:sensitivity", "sensitivity.csv"), ("tab:pretraining_exposure", "exposure_records.csv"),
                        ("tab:corpus_matched", "corpus_matched_records.csv")):
        assert why[label].startswith("needs ") and why[label].endswith(f"no {name} found under {results}")
    assert not (tmp_path / "report" / "tables" / "ablation.md").exists()


def _records(models: dict[str, float]) -> pd.DataFrame:
    """Forecasting records on MIT-BIH (two folds x the four windows), one error level per model."""
    rows = []
    for w, window in enumerate(WINDOWS):
        for fold in ("100", "101"):
            n = 100 * (w + 1)
            for model, err in models.items():
                row = {c: "" for c in COLUMNS}
                row.update(task="forecasting", dataset="mitbih", fold=fold, setting=window, condition="clean",
                           model=model, seed=0, status="ok", sse=err ** 2 * n, sae=err * 0.5 * n, n_points=n,
                           rmse=err, mae=err * 0.5,
                           key=f"{model}-{window}-{fold}")
                rows.append(row)
    frame = pd.DataFrame(rows)
    for c in ("sse", "sae", "n_points", "seed"):
        frame[c] = pd.to_numeric(frame[c])
    return frame


def test_the_authors_checkpoint_is_compared_with_the_papers_soter_rows(tmp_path):
    results = tmp_path / "run"
    results.mkdir()
    _records({"soter": 0.02, "soter-authors": 0.013}).to_csv(results / "records.csv", index=False)
    report = write_report(results, tmp_path / "out")
    assert ("tab:main_results: 2 of 252 cells compared, and 2 of the authors' checkpoint beside the paper's SOTER "
            "(comparison/main_results.md)") in report.produced
    md = (tmp_path / "out" / "comparison" / "main_results.md").read_text()
    # ours (trained) and the authors' checkpoint, each beside the paper's SOTER (1.29 +- 0.22 on MIT-BIH RMSE)
    assert "| SOTER | MIT-BIH | RMSE | mean over the 4 settings (context/horizon) | 1.29 | 0.22 | 2.00 |" in md
    assert f"| {AUTHORS_LABEL} | MIT-BIH | RMSE | mean over the 4 settings (context/horizon) | 1.29 | 0.22 | 1.30 |" in md
    assert "2 of 252 paper cells have a number from this run; 2 more put the authors' released checkpoint" in md
    assert "no paper counterpart" not in md  # the authors' rows are compared, not listed as ours alone
    win = (tmp_path / "out" / "comparison" / "e-win24.md").read_text()  # printed unscaled: x100 here too
    assert f"| {AUTHORS_LABEL} | MIT-BIH | RMSE | 48/24 |" in win
    # without authors' rows nothing changes
    _records({"soter": 0.02}).to_csv(results / "records.csv", index=False)
    report = write_report(results, tmp_path / "out2")
    assert "tab:main_results: 2 of 252 cells compared (comparison/main_results.md)" in report.produced
    assert AUTHORS_LABEL not in (tmp_path / "out2" / "comparison" / "main_results.md").read_text()


def test_a_sensitivity_variant_trains_with_its_own_solver_whatever_solver_is_given(tmp_path):
    """`--model-option solver=rk4` (handy for the other studies) must not turn the grid's dopri5 runs into rk4 runs:
    the variant's model options go over the run's."""
    from harness.studies.runners import variant_configs

    base = TrainConfig(model="soter-tiny", out=str(tmp_path), model_options={"solver": "rk4"})
    for name, solver in (("loop-dopri5-1e-04", "dopri5"), ("parallel-rk4", "rk4"), ("full", "rk4")):
        train_cfg, model_cfg = variant_configs(name, base)
        assert model_cfg.solver == solver and train_cfg.model_config().solver == solver, name
