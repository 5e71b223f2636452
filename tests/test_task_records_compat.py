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
from protocols.specs import WindowSpec
from tests.conftest import make_dataset

FIXTURE = Path(__file__).parent / "fixtures" / "records_v1"
RUNS = {  # as the fixture was made
    "forecasting": dict(models=("last-value", "window-mean"), windows=(WindowSpec(48, 24),)),
    "noise": dict(models=("last-value",), windows=(WindowSpec(48, 24),), noise_levels=(0.0, 0.1)),
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
