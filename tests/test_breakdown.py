"""Issue #31: every task's table broken down by signal modality and by subject (harness.reporting.breakdown); the parts
sum back to the pooled score."""

from __future__ import annotations

import numpy as np
import pytest

from harness.reporting.breakdown import by_modality, by_subject, channel_arrays, modality_sums, subject_scores
from harness.records.cell_files import read_cell_file
from harness.cli import main
from harness.run.runner import RunConfig, execute
from harness.records.store import read_records
from harness.registry.tasks import get_task
from harness.reporting.tables import pooled
from protocols.data import Dataset, Recording
from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
from protocols.modality import channel_modalities, modality_of
from protocols.specs import Setting


def _dataset() -> Dataset:
    """Four subjects, channels an ECG and a PPG by name and one the manifest calls EDA."""
    rng = np.random.default_rng(0)
    recs = []
    for i in range(4):
        t = np.arange(300) / 10.0
        values = np.stack([np.sin(2 * np.pi * (1 + 0.1 * i) * t), np.cos(2 * np.pi * 0.7 * t) + 0.1 * i,
                           np.cumsum(rng.standard_normal(300)) * (0.05 + 0.05 * i)])
        labels = (np.arange(300) >= 150).astype(np.int64)
        recs.append(Recording(f"S{i}", f"S{i}", values, t, labels))
    return Dataset("bd", ("ecg", "ppg", "skin"), tuple(recs), sampling_rate=10.0, label_names=("rest", "task"),
                   metadata={"modality": {"skin": "EDA"}})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("breakdown")
    folder = base / "bd"
    write_folder_dataset(_dataset(), folder)
    out = base / "out"
    common = dict(datasets=(str(folder),), out=out, progress=False)
    execute(RunConfig(task="forecasting", models=("last-value", "window-mean"), **common,
                      options={"settings": (Setting(32, 8), Setting(48, 16)), "max_windows_per_subject": 3}),
            log=lambda m: None)
    execute(RunConfig(task="noise", models=("last-value",), **common,
                      options={"settings": (Setting(32, 8),), "levels": (0.0, 0.5), "artefact": "wander",
                               "max_windows_per_subject": 3}), log=lambda m: None)
    execute(RunConfig(task="imputation", models=("locf",), seeds=(0, 1), **common,
                      options={"segment_length": 48, "rates": (0.5,), "mask": "contiguous", "burst_seconds": 0.5,
                               "max_windows_per_subject": 3}), log=lambda m: None)
    execute(RunConfig(task="classification", models=("stat-features", "random"), seeds=(0,), **common,
                      options={"segment_length": 32, "budgets": (1.0,), "max_windows_per_subject": 3}),
            log=lambda m: None)
    return folder, out, read_records(out / "records.csv")


def test_modalities_come_from_names_and_the_manifest(runs):
    folder, _, _ = runs
    assert channel_modalities(load_folder_dataset(folder)) == ("ECG", "PPG", "EDA")
    assert modality_of("skin") == "other"


@pytest.mark.parametrize("task", ["forecasting", "noise", "imputation"])
def test_the_modalities_of_a_row_sum_back_to_its_pooled_sums(runs, task):
    _, out, frame = runs
    rows = frame[(frame["task"] == task) & (frame["status"] == "ok")]
    assert len(rows)
    for _, r in rows.iterrows():
        arrays = channel_arrays(out, r["key"])
        # one record of each channel's errors: forecasting and noise keep it in their per-window errors only
        assert (read_cell_file(out, "channel_errors", r["key"]) is None) == (task != "imputation")
        assert list(arrays["modalities"]) == ["ECG", "PPG", "EDA"]
        assert arrays["sse"].sum() == pytest.approx(r["sse"], rel=1e-12)
        assert arrays["sae"].sum() == pytest.approx(r["sae"], rel=1e-12)
        assert int(arrays["n"].sum()) == int(r["n_points"])


@pytest.mark.parametrize("task", ["forecasting", "noise", "imputation"])
def test_the_all_column_of_the_modality_table_is_the_task_tables_score(runs, task):
    _, out, frame = runs
    sums, notes = modality_sums(frame, task, out)
    assert not notes and set(sums["modality"]) == {"ECG", "PPG", "EDA"}
    table = by_modality(frame, task, out)
    assert table.header[-1] == "all"
    per = pooled(frame, task)
    for row in table.rows:
        cond, ds, model = row[:3]
        expected = per[(per["condition"] == cond) & (per["dataset"] == ds) & (per["model"] == model)]["rmse"].mean()
        assert float(row[-1]) == pytest.approx(100 * expected, abs=0.006)  # two decimals


@pytest.mark.parametrize("task", ["forecasting", "imputation"])
def test_the_subject_table_names_the_worst_subject_and_pools_as_the_task_table(runs, task):
    _, out, frame = runs
    table = by_subject(frame, task, out)
    rows = frame[(frame["task"] == task) & (frame["status"] == "ok")]
    per = pooled(frame, task)
    for row in table.rows:
        cond, ds, model = row[:3]
        g = rows[(rows["condition"] == cond) & (rows["model"] == model)]
        folds = g.assign(r=np.sqrt(g["sse"] / g["n_points"])).groupby("fold")["r"].mean()
        assert row[-1].endswith(f"({folds.idxmax()})") and row[-2].endswith(f"({folds.idxmin()})")
        assert int(row[4]) == g["fold"].nunique() == 4
        expected = per[(per["condition"] == cond) & (per["model"] == model)]["rmse"].mean()
        assert float(row[3]) == pytest.approx(100 * expected, abs=0.006)
        # the subjects' sums add up to the table's pooled score, replicate by replicate
        reps = list(get_task(task).replicates)
        mine = per[(per["condition"] == cond) & (per["model"] == model)].set_index(reps)["rmse"]
        for key, rep in g.groupby(reps):
            assert np.sqrt(rep["sse"].sum() / rep["n_points"].sum()) == pytest.approx(mine.loc[key], rel=1e-12)


def test_classification_by_subject_from_the_kept_predictions(runs):
    from sklearn.metrics import f1_score

    _, out, frame = runs
    rows = frame[(frame["task"] == "classification") & (frame["status"] == "ok")]
    for _, r in rows.iterrows():
        arrays = read_cell_file(out, "predictions", r["key"])
        assert set(arrays["subject"]) == {"S0", "S1", "S2", "S3"}
        assert f1_score(arrays["y_true"], arrays["y_pred"], average="macro") == pytest.approx(r["macro_f1"])
    per, metric, higher = subject_scores(frame, "classification", out)
    assert metric == "Macro-F1" and higher and len(per) == 8 and per["value"].between(0, 100).all()
    table = by_subject(frame, "classification", out)
    assert {row[2] for row in table.rows} == {"stat-features", "random"}


def test_the_cli_writes_breakdowns_in_three_formats_with_a_figure(runs, capsys):
    _, out, _ = runs
    assert main(["table", "forecasting", "--out", str(out), "--by", "modality"]) == 0
    assert main(["table", "noise", "--out", str(out), "--by", "subject", "--format", "markdown"]) == 0
    printed = capsys.readouterr().out
    assert "| condition | dataset | model |" in printed and "wander=0.5" in printed
    for stem in ("forecasting_by_modality", "noise_by_subject"):
        for ext in ("txt", "md", "tex"):
            assert (out / "tables" / f"{stem}.{ext}").stat().st_size > 0
        assert (out / "figures" / f"{stem}.png").exists()
    assert r"\begin{tabular}" in (out / "tables" / "forecasting_by_modality.tex").read_text()


def test_a_breakdown_that_does_not_apply_is_one_clear_error(runs, capsys):
    _, out, _ = runs
    assert main(["table", "classification", "--out", str(out), "--by", "modality"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: classification has no breakdown by modality")


def test_rows_without_per_channel_errors_are_named_not_guessed(runs, tmp_path):
    _, out, frame = runs
    rows = frame[frame["task"] == "forecasting"]
    empty = tmp_path / "elsewhere"  # the records without their sidecar files
    sums, notes = modality_sums(rows, "forecasting", empty)
    assert sums.empty and "have no per-channel errors" in notes[0]
    assert "rerun them with --rerun" in by_modality(rows, "forecasting", empty).notes[0]


def test_figure_rows_follow_the_table_order_and_never_interleave_two_families():
    from harness.reporting.breakdown_figure import condition_order

    noise = get_task("noise")
    seen = ["beta=0", "clip=0.1", "beta=0.25", "wander=1", "clip=0.5", "wander=0.25", "beta=1"]
    assert condition_order(seen, noise) == ["beta=0", "beta=0.25", "beta=1", "clip=0.1", "clip=0.5",
                                            "wander=0.25", "wander=1"]


def test_files_kept_beside_rows_get_the_records_mode(tmp_path):
    import os
    import stat

    folder = tmp_path / "bd"
    write_folder_dataset(_dataset(), folder)
    previous = os.umask(0o022)
    try:
        execute(RunConfig(task="imputation", models=("locf",), seeds=(0,), datasets=(str(folder),),
                          out=tmp_path / "out", progress=False,
                          options={"segment_length": 48, "rates": (0.5,), "max_windows_per_subject": 1}),
                log=lambda m: None)
    finally:
        os.umask(previous)
    kept = [*(tmp_path / "out" / "channel_errors").glob("*.npz"), *(tmp_path / "out" / "masks").glob("*.npz")]
    assert kept
    assert {stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "out" / "records.csv", *kept]} == {0o644}


def test_rows_written_before_window_errors_kept_channels_break_down_from_their_channel_files(runs, tmp_path):
    import shutil

    from harness.records.cell_files import write_cell_files
    from harness.records.window_store import read_window_errors, write_window_errors
    from protocols.channel_errors import from_window_arrays

    _, out, frame = runs
    old = tmp_path / "old"
    shutil.copytree(out / "window_errors", old / "window_errors")
    key = frame[(frame["task"] == "forecasting") & (frame["status"] == "ok")]["key"].iloc[0]
    windows = read_window_errors(old, key)
    expected = from_window_arrays(windows).arrays()
    write_cell_files(old, key, {"channel_errors": expected})  # what the first #31 code wrote
    write_window_errors(old, key, {k: v for k, v in windows.items() if k not in ("channel_sse", "modalities")})
    got = channel_arrays(old, key)
    assert set(got) == set(expected) and all(np.array_equal(got[k], expected[k]) for k in expected)


@pytest.mark.parametrize("by", [by_modality, by_subject])
def test_a_breakdown_names_rows_of_an_older_revision_as_the_task_tables_do(runs, by):
    import json

    _, out, frame = runs
    rows = frame[frame["task"] == "forecasting"].copy()
    mine = rows.index[rows["model"] == "last-value"]
    info = json.loads(rows.loc[mine[0], "model_info"])
    info["identity"] = {**info["identity"], "code": "another-version"}
    rows.loc[mine[0], "model_info"] = json.dumps(info)  # another code digest: provenance, no mark
    assert not any("stale" in n or "mixed" in n for n in by(rows, "forecasting", out).notes)
    info["identity"] = {**info["identity"], "revision": 7}
    rows.loc[mine[0], "model_info"] = json.dumps(info)  # one row of another revision
    notes = by(rows, "forecasting", out).notes
    assert any(n.startswith("last-value on ") and "stale" in n for n in notes)
