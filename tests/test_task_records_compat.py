"""Issue #17: tasks became objects (harness.tasks); records of the previous version still load and count
as done.  ``fixtures/records_v1`` was written by the code before the refactor (commit 12d170b) for a small
run of every built-in task; ``keys.json`` holds the row keys it planned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.runner import RunConfig, execute, plan
from harness.store import read_records
from protocols.datasets.folder import write_folder_dataset
from protocols.specs import Setting
from tests.conftest import make_dataset

FIXTURE = Path(__file__).parent / "fixtures" / "records_v1"
RUNS = {  # as the fixture was made
    "forecasting": dict(models=("last-value", "window-mean"), settings=(Setting(48, 24),)),
    "noise": dict(models=("last-value",), settings=(Setting(48, 24),), noise_levels=(0.0, 0.1)),
    "imputation": dict(models=("locf",), missing_rates=(0.25,), seeds=(0, 1), segment_length=32),
    "classification": dict(models=("stat-features", "random"), budgets=(0.5, 1.0), seeds=(0,), segment_length=32),
}


@pytest.fixture()
def previous(tmp_path) -> tuple[Path, Path]:
    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(FIXTURE / "records.csv", out / "records.csv")
    return folder, out


def _config(task: str, folder: Path, out: Path) -> RunConfig:
    return RunConfig(task=task, datasets=(str(folder),), out=out, max_windows_per_subject=4, progress=False,
                     **RUNS[task])


@pytest.mark.parametrize("task", list(RUNS))
def test_keys_are_those_of_the_previous_version(previous, task):
    folder, out = previous
    cells, _ = plan(_config(task, folder, out))
    assert sorted(str(fields["key"]) for _, fields in cells) == json.loads((FIXTURE / "keys.json").read_text())[task]


@pytest.mark.parametrize("task", list(RUNS))
def test_a_rerun_over_previous_records_skips_every_cell(previous, task):
    folder, out = previous
    summary = execute(_config(task, folder, out), log=lambda m: None)
    assert summary.planned > 0 and summary.ran == 0 and summary.skipped_done == summary.planned
    assert summary.status_counts == {"ok": summary.planned}


@pytest.mark.parametrize("task", list(RUNS))
def test_previous_records_render_their_tables(previous, task, capsys):
    _, out = previous
    frame = read_records(out / "records.csv")
    assert set(frame["task"]) == set(RUNS)
    assert main(["table", task, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    models = [m for m in RUNS[task]["models"]]
    assert all(m in printed for m in models)
    assert any((out / "tables").glob("*.md"))


# -- issue #17, last part: the context/horizon column is "setting"; files that call it "window" still read --------
OLD_HEADER = (FIXTURE / "records.csv").read_bytes().split(b"\n", 1)[0]


def test_the_fixture_is_in_the_old_format():
    assert b",window," in OLD_HEADER and b",setting," not in OLD_HEADER


def test_an_old_records_file_loads_with_setting_filled_from_its_window_column(previous):
    import csv

    _, out = previous
    frame = read_records(out / "records.csv")
    assert "setting" in frame.columns and "window" not in frame.columns
    with open(FIXTURE / "records.csv", newline="") as fh:
        old = {r["key"]: r["window"] for r in csv.DictReader(fh)}
    assert dict(zip(frame["key"], frame["setting"])) == old
    assert set(frame.loc[frame["task"] == "forecasting", "setting"]) == {"48/24"}


def test_keys_hash_the_setting_under_its_old_name():
    from harness.store import row_key

    fields = dict(task="forecasting", dataset="toy", fold="S00", condition="clean", model="last-value", seed=0,
                  protocol="p")
    assert row_key(setting="48/24", **fields) == row_key(window="48/24", **fields)
    assert row_key("abc", setting="48/24", **fields) != row_key(setting="48/24", **fields)


@pytest.mark.parametrize("flag", ["--settings", "--windows"])
def test_a_run_into_an_old_records_file_keeps_every_old_row(previous, flag, capsys):
    """One setting already done (the fixture's 48/24) and one new (32/8): the old rows are neither lost nor
    recomputed, the new ones are appended under the old header, and the file reads afterwards."""
    folder, out = previous
    before = (out / "records.csv").read_bytes()
    old = read_records(out / "records.csv")
    argv = ["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "window-mean", flag, "48/24",
            "32/8", "--max-windows-per-subject", "4", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    after = (out / "records.csv").read_bytes()
    assert after.startswith(before)  # every old row byte for byte, the header unchanged (never rewritten)
    frame = read_records(out / "records.csv")
    assert set(old["key"]) <= set(frame["key"])
    new = frame[~frame["key"].isin(set(old["key"]))]
    assert len(new) > 0 and set(new["setting"]) == {"32/8"}  # only the new setting was computed
    done = old[(old["task"] == "forecasting")]
    assert f"{len(done)} already done, {len(new)} run now" in printed
    # and a second run computes nothing
    assert main(argv) == 0
    assert f"{len(done) + len(new)} already done, 0 run now" in capsys.readouterr().out
    assert (out / "records.csv").read_bytes() == after


def test_repair_leaves_a_valid_old_records_file_alone(previous):
    from harness.store import repair_store

    _, out = previous
    before = (out / "records.csv").read_bytes()
    report = repair_store(out / "records.csv")
    assert report.backup is None and report.rejected == 0 and (out / "records.csv").read_bytes() == before


def test_an_old_study_file_with_a_window_column_reads(tmp_path):
    """ablation / exposure / corpus-matched files are records frames written by the study runners:
    those written before the rename have a "window" column."""
    import pandas as pd

    from harness.report import read_study, study_table

    frame = pd.read_csv(FIXTURE / "records.csv", dtype=str)
    frame = frame[frame["task"] == "forecasting"].assign(variant="full", variant_label="SOTER (full)")
    assert "window" in frame.columns
    frame.to_csv(tmp_path / "ablation_records.csv", index=False)
    study = read_study("tab:ablation", tmp_path / "ablation_records.csv")
    assert "setting" in study.columns and set(study["setting"]) == {"48/24"}
    table = study_table("tab:ablation", study)
    assert table.models == ("SOTER (full)",) and table.entries


@pytest.mark.parametrize("path", sorted(Path(__file__).parents[1].glob("results/**/records.csv")))
def test_committed_records_still_read(path):
    from harness.store import random_weight_rows

    # a folder of random-weight runs (#29: speed and shape only) has no row for a table, by design
    frame = read_records(path)
    if not len(frame):
        frame = random_weight_rows(path)
    assert len(frame) and frame["setting"].ne("").all()


def test_user_code_with_the_earlier_names_still_works():
    """WindowSpec, PAPER_WINDOWS, windows= / .windows, points_per_window, Cell.window and Capabilities(windows=)
    are deprecated names of Setting, PAPER_SETTINGS, settings, points_per_segment and Capabilities(settings=)."""
    from harness.cells import Cell
    from protocols.interface import Capabilities
    from protocols.specs import (PAPER_SETTINGS, PAPER_WINDOWS, ForecastingSpec, ImputationSpec, NoiseSpec,
                                 WindowSpec)

    assert WindowSpec is Setting and PAPER_WINDOWS is PAPER_SETTINGS
    old = ForecastingSpec(windows=(WindowSpec(48, 24),))
    assert old == ForecastingSpec(settings=(Setting(48, 24),)) and old.windows == old.settings
    assert NoiseSpec(windows=(Setting(48, 24),)).settings == (Setting(48, 24),)
    imputation = ImputationSpec(points_per_window=3)
    assert imputation.points_per_segment == imputation.points_per_window == 3
    cell = Cell("forecasting", "toy", "S00", "48/24", "last-value", 0, old)
    assert cell.window == cell.setting == "48/24"
    caps = Capabilities(windows=((96, 48),))
    assert caps == Capabilities(settings=((96, 48),)) and caps.supports_window(96, 48)
    assert not caps.supports_setting(48, 24)


def test_fingerprints_are_those_of_the_previous_version():
    from protocols.specs import ClassificationSpec, ForecastingSpec, ImputationSpec, NoiseSpec

    assert ForecastingSpec().fingerprint() == "maxw=16;stride=None;seed=0"
    assert NoiseSpec().fingerprint() == "noise;maxw=16;stride=None;seed=0"
    assert ImputationSpec().fingerprint() == "imputation;len=96;warmup=16;points=8;maxw=8;stride=None"
    assert ClassificationSpec().fingerprint() == "classification;len=128;stride=None;maxw=60;segments=seed"
