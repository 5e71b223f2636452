"""Issue #17: tasks became objects (harness.tasks); records of the previous version still load and count
as done.  ``fixtures/records_v1`` was written by the code before the refactor (commit 12d170b) for a small
run of every built-in task; ``keys.json`` holds the row keys it planned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.cli import main
from harness.run.runner import RunConfig, execute, plan
from harness.records.store import random_weight_rows, read_records
from protocols.datasets.folder import write_folder_dataset
from protocols.specs import Setting
from tests.conftest import make_dataset

FIXTURE = Path(__file__).parent / "fixtures" / "records_v1"
RUNS = {  # as the fixture was made: (RunConfig fields, the task's options)
    "forecasting": (dict(models=("last-value", "window-mean")), dict(settings=(Setting(48, 24),))),
    "noise": (dict(models=("last-value",)), dict(settings=(Setting(48, 24),), levels=(0.0, 0.1))),
    "imputation": (dict(models=("locf",), seeds=(0, 1)), dict(rates=(0.25,), segment_length=32)),
    "classification": (dict(models=("stat-features", "random"), seeds=(0,)), dict(budgets=(0.5, 1.0), segment_length=32)),
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
    fields, options = RUNS[task]
    return RunConfig(task=task, datasets=(str(folder),), out=out, options={"max_windows_per_subject": 4, **options},
                     progress=False, **fields)


@pytest.mark.parametrize("task", list(RUNS))
def test_keys_are_those_of_the_previous_version(previous, task):
    folder, out = previous
    cells, _ = plan(_config(task, folder, out))
    assert sorted(str(fields["key"]) for _, fields in cells) == json.loads((FIXTURE / "keys.json").read_text())[task]


@pytest.mark.parametrize("task, point_type", [("forecasting", Setting), ("noise", Setting), ("imputation", int),
                                              ("classification", int)])
def test_a_cell_carries_its_point_typed_and_the_records_its_name(previous, task, point_type):
    """Issue #28: the task reads its setting back from the cell as the object its points() gave, not a string to
    parse; the records' setting (and so the key, above) is its name, as before."""
    from harness.run.cells import Cell

    folder, out = previous
    cells, _ = plan(_config(task, folder, out))
    assert cells and all(isinstance(c.point, point_type) for c, _ in cells)
    assert all(f["setting"] == c.setting == (c.point.name if point_type is Setting else str(c.point)) for c, f in cells)
    assert Cell("mean-level", "toy", "S00", "32/8", "last-value", 0, None).point == "32/8"  # a task giving strings


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
    models = [m for m in RUNS[task][0]["models"]]
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
    import hashlib

    from harness.records.keys import row_key

    fields = dict(task="forecasting", dataset="toy", fold="S00", condition="clean", model="last-value", seed=0,
                  protocol="p")
    text = "task=forecasting|dataset=toy|fold=S00|window=48/24|condition=clean|model=last-value|seed=0|protocol=p"
    assert row_key(setting="48/24", **fields) == hashlib.sha1(text.encode()).hexdigest()[:16]
    assert row_key("abc", setting="48/24", **fields) != row_key(setting="48/24", **fields)


def test_a_run_into_an_old_records_file_keeps_every_old_row(previous, capsys):
    """One setting already done (the fixture's 48/24) and one new (32/8): the old rows are neither lost nor
    recomputed, the new ones are appended under the old header, and the file reads afterwards."""
    folder, out = previous
    before = (out / "records.csv").read_bytes()
    old = read_records(out / "records.csv")
    argv = ["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "window-mean", "--settings", "48/24",
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
    from harness.records.store import repair_store

    _, out = previous
    before = (out / "records.csv").read_bytes()
    report = repair_store(out / "records.csv")
    assert report.backup is None and report.rejected == 0 and (out / "records.csv").read_bytes() == before


def test_an_old_study_file_with_a_window_column_reads(tmp_path):
    """ablation / exposure / corpus-matched files are records frames written by the study runners:
    those written before the rename have a "window" column."""
    import pandas as pd

    from harness.reporting.study_tables import read_study, study_table

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
    # a folder of random-weight runs (#29: speed and shape only) has no row for a table, by design
    frame = read_records(path)
    if frame.empty:  # rows made with random weights only (results/published-sizes, issue #29): tables leave them out
        frame = random_weight_rows(path)
    assert len(frame) and frame["setting"].ne("").all()


def test_the_earlier_names_are_gone():
    """Issue #28 removed the deprecated names of issue #17 (WindowSpec, PAPER_WINDOWS, windows= / .windows,
    points_per_window, Cell.window, Capabilities(windows=) / supports_window, window_capable, models.interface, the
    flags --windows and --window):
    each thing has one name. Records keep theirs: a file whose column is called window still reads (above)."""
    from harness.run.cells import Cell
    from harness.tasks import forecasting
    from protocols import specs
    from protocols.interface import Capabilities
    from protocols.specs import ForecastingSpec, ImputationSpec

    assert not hasattr(specs, "WindowSpec") and not hasattr(specs, "PAPER_WINDOWS")
    for make in (lambda: ForecastingSpec(windows=(Setting(48, 24),)), lambda: ImputationSpec(points_per_window=3),
                 lambda: Capabilities(windows=((96, 48),))):
        with pytest.raises(TypeError, match="unexpected keyword argument"):
            make()
    assert not hasattr(ForecastingSpec(), "windows") and not hasattr(Capabilities, "supports_window")
    assert not hasattr(Cell, "window") and not hasattr(forecasting, "window_capable")
    assert not (Path(__file__).parents[1] / "models" / "interface.py").exists()  # the module alias


def test_fingerprints_are_those_of_the_previous_version():
    from protocols.specs import ClassificationSpec, ForecastingSpec, ImputationSpec, NoiseSpec

    assert ForecastingSpec().fingerprint() == "maxw=16;stride=None;seed=0"
    assert NoiseSpec().fingerprint() == "noise;maxw=16;stride=None;seed=0"
    assert ImputationSpec().fingerprint() == "imputation;len=96;warmup=16;points=8;maxw=8;stride=None"
    assert ClassificationSpec().fingerprint() == "classification;len=128;stride=None;maxw=60;segments=seed"
