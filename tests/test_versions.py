"""Declared versions decide whether a row is current; the code digest is provenance (harness.registry.versions).

What a maintainer needs from the rule: an edit that moves no number (a comment, a private rename) leaves every
committed table as it is; a version bump makes exactly the folders that hold the task's (or the model's) rows out of
date; derived caches (classification's embeddings) follow the same rule; and a folder is re-stamped, not
regenerated, when a sample of its cells proves that nothing moved.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.records import code_identity, configurations
from harness.records.keys import row_key
from harness.records.staleness import folder_staleness, results_folders
from harness.records.store import RecordStore, read_records
from harness.registry import versions
from harness.registry.versions import protocol_version, split_version, stamped, unversioned, with_version
from harness.reporting.tables import task_tables
from harness.run.runner import RunConfig, execute
from protocols.specs import Setting

RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.fixture(autouse=True)
def _fresh_version_caches():
    configurations.current_task_version.cache_clear()
    configurations.current_revision.cache_clear()
    yield
    configurations.current_task_version.cache_clear()
    configurations.current_revision.cache_clear()


@pytest.fixture()
def toy(tmp_path):
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    return folder


def _forecast(toy: Path, out: Path, **extra) -> RunConfig:
    return RunConfig(task="forecasting", datasets=(str(toy),), models=("last-value", "seasonal-naive"), out=out,
                     progress=False, options={"settings": (Setting(48, 24),), "max_windows_per_subject": 3}, **extra)


# -- the token and the key ------------------------------------------------------------------------------------
def test_the_version_token_leads_the_protocol_and_stays_out_of_the_key():
    assert with_version("forecasting", 1, "maxw=16;data=ab") == "forecasting-v1;maxw=16;data=ab"
    assert split_version("forecasting", "forecasting-v3;maxw=16") == (3, "maxw=16")
    assert split_version("forecasting", "maxw=16") == (None, "maxw=16")  # written before versions: v1
    assert protocol_version("forecasting", "maxw=16") == 1 and protocol_version("noise", "noise-v2;x") == 2
    assert unversioned("noise", "noise-v2;noise;maxw=4") == "noise;maxw=4"
    assert stamped("noise", "noise;maxw=4") == "noise-v1;noise;maxw=4"
    fields = dict(task="forecasting", dataset="d", fold="S1", setting="48/24", condition="clean", model="m", seed=0)
    keys = {row_key("", **fields, protocol=p) for p in ("maxw=16", "forecasting-v1;maxw=16", "forecasting-v2;maxw=16")}
    assert len(keys) == 1  # a cell keeps its key across versions (and the committed rows theirs)


def test_every_committed_row_keeps_its_key_under_the_rule():
    """The keys the runner plans now are the committed rows' keys: nothing committed is orphaned (rows of random
    weights are no result: speed and shapes only, never in a table)."""
    from models.random_weights import is_random_info

    for folder in results_folders([RESULTS]):
        for key, row in RecordStore(folder / "records.csv", readonly=True).rows().items():
            if is_random_info(row["model_info"]):
                continue
            identity = configurations.row_identity(row["model_info"]) or {}
            fields = {f: row[f] for f in ("task", "dataset", "fold", "setting", "condition", "model", "seed",
                                          "protocol")}
            assert row_key(str(identity.get("model_id", "")), **fields) == key, (folder.name, key)


def test_a_run_writes_the_token_and_a_resumed_run_reuses_rows_written_before_it(toy, tmp_path):
    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    path = out / "records.csv"
    rows = RecordStore(path).rows()
    assert all(r["protocol"].startswith("forecasting-v1;") for r in rows.values())
    legacy = path.read_text().replace("forecasting-v1;", "")  # rows as they were before versions were declared
    path.write_text(legacy)
    again = execute(_forecast(toy, out), log=lambda m: None)
    assert again.skipped_done == again.planned and again.ran == 0


# -- an edit that moves nothing ---------------------------------------------------------------------------------
def test_a_code_edit_without_a_bump_leaves_every_committed_table_unmarked(monkeypatch):
    """A comment or a private rename anywhere (protocols/windows.py, harness/tasks/base.py, harness/tasks/forecasting.py)
    changes the code digest and nothing else: no committed row is left out, no table entry marked."""
    monkeypatch.setattr(code_identity, "code_digest", lambda modules: "edited000000")
    assert code_identity.row_code("last-value", "forecasting") == "edited000000"
    for folder in results_folders([RESULTS]):
        frame = read_records(folder / "records.csv")
        assert not frame.attrs["older_versions"], folder.name
        assert len(frame) == len(RecordStore(folder / "records.csv", readonly=True).frame()) - _random(folder)
        for task in sorted(set(frame["task"])):
            for _, table in task_tables(frame, task):
                notes = " ".join(getattr(table, "notes", ()))
                assert "stale" not in notes and "mixed" not in notes and "not shown" not in notes, (folder, task)


def _random(folder: Path) -> int:
    from harness.records.store import random_weight_rows

    return len(random_weight_rows(folder / "records.csv"))


def test_a_code_edit_without_a_bump_recomputes_no_finished_row(toy, tmp_path, monkeypatch):
    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    monkeypatch.setattr(code_identity, "code_digest", lambda modules: "edited000000")
    again = execute(_forecast(toy, out), log=lambda m: None)
    assert again.ran == 0 and again.recomputed == 0


# -- a bump ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task, affected", [
    ("forecasting", {"cohort", "mitbih-100", "mitbih-2records", "published-sizes"}),
    ("noise", {"noise"}), ("imputation", {"imputation"}), ("classification", {"classification"}),
    ("physiology", {"physiology"}), ("shift", set()),
])
def test_a_task_bump_makes_exactly_the_folders_of_its_rows_out_of_date(monkeypatch, task, affected):
    before = {f.name for f in results_folders([RESULTS]) if folder_staleness(f).stale}
    assert before == set()  # the committed results are current
    monkeypatch.setitem(versions.TASK_VERSIONS, task, versions.TASK_VERSIONS[task] + 1)
    configurations.current_task_version.cache_clear()
    stale = {f.name for f in results_folders([RESULTS]) if folder_staleness(f).stale}
    assert stale == affected


def test_harness_stale_lists_them_and_exits_nonzero(monkeypatch, capsys):
    from harness.cli import main

    assert main(["stale", str(RESULTS)]) == 0
    monkeypatch.setitem(versions.TASK_VERSIONS, "noise", 2)
    configurations.current_task_version.cache_clear()
    assert main(["stale", str(RESULTS)]) == 4
    out = capsys.readouterr().out
    assert "noise: OUT OF DATE: 210 rows of noise-v1 (now v2)" in out and "1 of 8 folders out of date" in out


def test_a_bump_recomputes_under_the_same_keys_and_tables_show_the_current_rows(toy, tmp_path, monkeypatch):
    out = tmp_path / "out"
    first = execute(_forecast(toy, out), log=lambda m: None)
    monkeypatch.setitem(versions.TASK_VERSIONS, "forecasting", 2)
    configurations.current_task_version.cache_clear()
    assert read_records(out / "records.csv").empty  # every row of v1: no table shows it ...
    assert "rows of forecasting-v1 (now v2)" in read_records(out / "records.csv").attrs["older_versions"]["forecasting"]
    again = execute(_forecast(toy, out), log=lambda m: None)  # ... and the same command recomputes them
    assert again.recomputed == again.planned == first.planned and again.keys == first.keys
    frame = read_records(out / "records.csv")
    assert len(frame) == first.planned and frame["protocol"].str.startswith("forecasting-v2;").all()


# -- derived caches follow the rule: classification's embeddings -----------------------------------------------
@pytest.fixture()
def labelled(tmp_path):
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    folder = tmp_path / "labelled"
    write_folder_dataset(make_dataset(n_subjects=5, n_samples=600), folder)  # label 0 then 1
    return folder


def _classify(data: Path, out: Path, rerun: bool = False) -> RunConfig:
    return RunConfig(task="classification", datasets=(str(data),), models=("stat-features",), out=out, seeds=(0,),
                     progress=False, rerun=rerun,
                     options={"budgets": (1.0,), "max_windows_per_subject": 8, "segment_length": 32})


def _f1(out: Path) -> list[float]:
    frame = read_records(out / "records.csv")
    return sorted(frame.loc[frame["status"] == "ok", "macro_f1"])


def _garble_embeddings(monkeypatch):
    """A behaviour edit in the embedding pass (what a change to harness/run/embeddings.py or a model's embed does)."""
    import numpy as np

    from harness.run import embeddings

    real = embeddings.embed_segments
    monkeypatch.setattr(embeddings, "embed_segments",
                        lambda *a, **k: np.random.default_rng(0).permutation(np.asarray(real(*a, **k))))


def test_a_version_bump_recomputes_classification_from_fresh_embeddings(labelled, tmp_path, monkeypatch):
    toy = labelled
    out = tmp_path / "out"
    execute(_classify(toy, out), log=lambda m: None)
    _garble_embeddings(monkeypatch)
    monkeypatch.setitem(versions.TASK_VERSIONS, "classification", 2)
    configurations.current_task_version.cache_clear()
    execute(_classify(toy, out), log=lambda m: None)  # resumed into the same folder and cache
    execute(_classify(toy, tmp_path / "fresh"), log=lambda m: None)
    assert _f1(out) == _f1(tmp_path / "fresh")


def test_rerun_recomputes_the_embeddings_too(labelled, tmp_path, monkeypatch):
    toy = labelled
    out = tmp_path / "out"
    execute(_classify(toy, out), log=lambda m: None)
    before = _f1(out)
    _garble_embeddings(monkeypatch)
    execute(_classify(toy, out, rerun=True), log=lambda m: None)
    execute(_classify(toy, tmp_path / "fresh"), log=lambda m: None)
    assert _f1(out) == _f1(tmp_path / "fresh") != before


# -- re-stamping ------------------------------------------------------------------------------------------------
def test_restamp_verifies_then_renews_identities_and_keeps_every_number(toy, tmp_path, monkeypatch):
    from harness.run.restamp import restamp

    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    path = out / "records.csv"
    path.write_text(path.read_text().replace("forecasting-v1;", ""))  # rows written before versions
    before = RecordStore(path).rows()
    monkeypatch.setattr(code_identity, "code_digest", lambda modules: "edited000000")
    report = restamp(_forecast(toy, out), sample=1, log=lambda m: None)
    assert report.verified == 2 and not report.moved and report.restamped == len(before) == report.found
    after = RecordStore(path).rows()
    assert set(after) == set(before)
    for key, row in after.items():
        assert row["protocol"] == "forecasting-v1;" + before[key]["protocol"]
        assert configurations.recorded_code(row["model_info"]) == "edited000000"
        assert all(row[c] == before[key][c] for c in ("rmse", "mae", "sse", "sae", "n_points", "seconds",
                                                         "finished_at"))


def test_restamp_writes_nothing_when_a_number_moved(toy, tmp_path, monkeypatch):
    from dataclasses import replace

    from harness.run.restamp import restamp
    from harness.tasks import forecasting

    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    data = (out / "records.csv").read_bytes()
    real = forecasting.evaluate_forecasting

    def moved(*args, **kwargs):  # a behaviour edit: every error sum 1 % larger
        result = real(*args, **kwargs)
        return replace(result, errors=replace(result.errors, sse=result.errors.sse * 1.01))

    monkeypatch.setattr(forecasting, "evaluate_forecasting", moved)
    report = restamp(_forecast(toy, out), sample=None, log=lambda m: None)
    assert len(report.moved) == report.verified == 6 and report.restamped == 0
    assert (out / "records.csv").read_bytes() == data


def test_a_real_comment_and_private_rename_leave_the_committed_tables_and_folders_as_they_were(tmp_path):
    """The acceptance, on a copy of the tree: a comment in protocols/windows.py and harness/tasks/base.py and a
    private rename in harness/tasks/forecasting.py change the code digest; `table` marks nothing and `stale`
    finds every committed folder current."""
    import os
    import shutil
    import subprocess
    import sys

    repo = RESULTS.parent
    copy = tmp_path / "tree"
    for package in ("protocols", "models", "baselines", "harness", "results"):
        shutil.copytree(repo / package, copy / package, ignore=shutil.ignore_patterns("__pycache__", "runs"))
    (copy / "protocols" / "windows.py").write_text((repo / "protocols" / "windows.py").read_text() + "\n# a comment\n")
    (copy / "harness" / "tasks" / "base.py").write_text("# a comment\n" + (repo / "harness" / "tasks" / "base.py").read_text())
    source = (repo / "harness" / "tasks" / "forecasting.py").read_text()
    renamed = source.replace("fold = get_fold(", "test_fold = get_fold(").replace(
        "evaluate_forecasting(model, dataset, fold,", "evaluate_forecasting(model, dataset, test_fold,")
    assert renamed.count("test_fold") == 2  # a private rename: one local name, defined and used
    (copy / "harness" / "tasks" / "forecasting.py").write_text(renamed)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SOTER_BENCH_")}, "PYTHONPATH": str(copy),
           "HF_HUB_OFFLINE": "1"}

    def harness(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness", *args], cwd=copy, env=env, capture_output=True,
                              text=True)

    found = subprocess.run([sys.executable, "-c", "from harness.records.code_identity import row_code; "
                            "print(row_code('last-value', 'forecasting'))"], cwd=copy, env=env, capture_output=True,
                           text=True)
    digest = found.stdout.strip()
    assert digest and digest != code_identity.row_code("last-value", "forecasting"), found.stderr  # the edit shows
    stale = harness("stale", "results")
    assert stale.returncode == 0 and "0 of 8 folders out of date" in stale.stdout, stale.stdout + stale.stderr
    table = harness("table", "forecasting", "--out", "results/cohort", "--format", "markdown")
    assert table.returncode == 0, table.stderr
    assert "†" not in table.stdout and "stale" not in table.stdout and "not shown" not in table.stdout
