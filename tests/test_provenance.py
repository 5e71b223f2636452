"""Every record row says what it consumed (docs/records.md, provenance columns).

What users of the records need: the data a row was computed on, the context and horizon its model actually worked
on (after an adapter's resampling) at the rate it saw, how many windows it scored of those planned (a row that scored
another number is no result), what inference and training cost; a folder made under another identity is never pooled
with a new run's rows and the run says so; files written before these columns read and take new rows; a re-stamp
fills what can be derived without recomputing.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.records.store import COLUMNS, MEASURED, PROVENANCE, RecordStore, data_of, read_records, row_key
from harness.run.runner import RunConfig, execute
from protocols.specs import Setting

OLD_COLUMNS = tuple(c for c in COLUMNS if c not in PROVENANCE)


@pytest.fixture()
def toy(tmp_path):
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    return folder


def _forecast(toy: Path, out: Path, models=("last-value",), **extra) -> RunConfig:
    return RunConfig(task="forecasting", datasets=(str(toy),), models=models, out=out, progress=False,
                     options={"settings": (Setting(48, 24),), "max_windows_per_subject": 3}, **extra)


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _rate(toy: Path) -> float:
    from protocols.datasets import load_dataset

    return float(load_dataset(str(toy)).sampling_rate)


# -- a row carries what it consumed -------------------------------------------------------------------------------
def test_a_row_carries_its_data_lengths_rate_windows_and_seconds(toy, tmp_path):
    out = tmp_path / "out"
    execute(_forecast(toy, out, models=("last-value", "ridge")), log=lambda m: None)
    rows = _rows(out / "records.csv")
    assert rows and set(PROVENANCE) <= set(rows[0])
    rate = _rate(toy)
    for row in rows:
        assert row["status"] == "ok"
        assert row["data_fingerprint"] == data_of(row["protocol"]) != ""
        assert (row["context_samples"], row["horizon_samples"]) == ("48", "24")
        assert float(row["sampling_rate"]) == rate and float(row["context_seconds"]) == 48 / rate
        assert float(row["horizon_seconds"]) == 24 / rate
        assert row["windows_planned"] == row["n_windows"] == "3"
        assert float(row["inference_seconds_per_window"]) >= 0
        # training seconds: the supervised model trained on the fold; the zero-shot one did not
        assert (row["training_seconds"] != "") == (row["model"] == "ridge")


def test_imputation_rows_consume_the_segment_length_with_no_horizon(toy, tmp_path):
    out = tmp_path / "out"
    execute(RunConfig(task="imputation", datasets=(str(toy),), models=("locf",), out=out, progress=False,
                      seeds=(0,), options={"segment_length": 64, "max_windows_per_subject": 2}), log=lambda m: None)
    for row in _rows(out / "records.csv"):
        assert (row["context_samples"], row["horizon_samples"], row["horizon_seconds"]) == ("64", "", "")
        assert row["windows_planned"] == row["n_windows"]


def test_a_model_that_resamples_records_what_it_consumed():
    from baselines.normwear_model import MODEL_RATE, NormWear

    model = object.__new__(NormWear)  # no weights needed: the rule is the adapter's own
    model._resample = "authors"
    assert model.consumed(256, 128.0) == (256, 128.0)  # the authors resample only above 256 Hz
    assert model.consumed(720, 360.0) == (130, MODEL_RATE)  # resample_poly's length: 720 * 13 / 72
    assert model.consumed(1000, 500.0) == (130, MODEL_RATE)  # ceil(1000 * 13 / 100)
    model._resample = "always"
    samples, rate = model.consumed(96, 64.0)
    assert rate == MODEL_RATE and samples == 98


# -- scored against planned -------------------------------------------------------------------------------------
def test_a_row_that_scored_another_number_of_windows_than_planned_is_an_error_row(toy, tmp_path, monkeypatch):
    from harness.tasks.forecasting import Forecasting

    out = tmp_path / "out"
    monkeypatch.setattr(Forecasting, "planned_windows", lambda self, cell, dataset: 5)  # the plan says 5, 3 scored
    execute(_forecast(toy, out), log=lambda m: None)
    rows = _rows(out / "records.csv")
    assert rows and all(r["status"] == "error" for r in rows)
    assert all("scored 3 windows but the protocol selected 5 for scoring: 2 missing" in r["error"] for r in rows)
    assert all(r["rmse"] == "" and r["windows_planned"] == "5" and r["n_windows"] == "3" for r in rows)
    assert not (out / "window_errors").exists() or not any((out / "window_errors").iterdir())


# -- another identity in the folder -------------------------------------------------------------------------------
def test_a_run_into_a_folder_of_other_data_under_the_same_name_says_so_and_keeps_them_apart(toy, tmp_path, capsys):
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    before = {r["data_fingerprint"] for r in _rows(out / "records.csv")}
    capsys.readouterr()
    other = tmp_path / "other" / "toy"  # the same dataset name, other content
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=320), other)
    execute(_forecast(other, out), log=lambda m: None)
    err = capsys.readouterr().err
    rows = _rows(out / "records.csv")
    now = {r["data_fingerprint"] for r in rows} - before
    assert len(before) == len(now) == 1
    (old,), (new,) = before, now
    assert f"{out} holds rows of toy with data {old}; this run's data is {new}: kept apart, shown as two datasets" in err
    assert len(err.strip().splitlines()) == 1
    frame = read_records(out / "records.csv")
    assert frame["dataset"].nunique() == 2  # never pooled: two datasets in every table


def test_a_run_into_a_folder_of_another_task_version_says_so(toy, tmp_path, capsys):
    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    path = out / "records.csv"
    path.write_text(path.read_text().replace("forecasting-v1;", "forecasting-v0;"))
    capsys.readouterr()
    execute(_forecast(toy, out), log=lambda m: None)
    err = capsys.readouterr().err
    assert f"{out} holds 3 forecasting rows of forecasting-v0; this run computes forecasting-v1: never pooled" in err


def test_rows_of_other_weights_under_a_model_name_are_named_once():
    from harness.records.configurations import with_identity
    from harness.run.provenance import identity_changes

    fields = [{"dataset": "toy", "protocol": "forecasting-v1;maxw=3;data=aaa", "model": "soter"}]
    old = {"task": "forecasting", "dataset": "toy", "model": "soter", "protocol": "forecasting-v1;maxw=3;data=aaa",
           "model_info": with_identity("", {"model_id": "x", "weights": "1111"})}
    rows = {str(i): {**old, "key": str(i)} for i in range(3)}
    lines = identity_changes("out", rows, fields, {"soter": {"model_id": "y", "weights": "2222"}}, "forecasting", 1)
    assert lines == ["out holds rows of soter with weights 1111; this run's weights are 2222: kept apart, shown as "
                     "two configurations"]
    assert identity_changes("out", rows, fields, {"soter": {"model_id": "x", "weights": "1111"}}, "forecasting", 1) == []


def test_a_run_into_its_own_folder_says_nothing(toy, tmp_path, capsys):
    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    capsys.readouterr()
    execute(_forecast(toy, out), log=lambda m: None)
    assert "holds rows" not in capsys.readouterr().err


# -- files written before the provenance columns ------------------------------------------------------------------
def _old_header_file(path: Path, rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(OLD_COLUMNS)
        for row in rows:
            writer.writerow([row[c] for c in OLD_COLUMNS])


def _row(fold: str, **extra: object) -> dict[str, object]:
    fields = dict(task="forecasting", dataset="toy", fold=fold, setting="48/24", condition="clean",
                  model="last-value", seed=0, protocol="forecasting-v1;maxw=3;data=abc123")
    return {**fields, "key": row_key(**fields), "status": "ok", "rmse": 0.5, "mae": 0.4, "sse": 1.0, "sae": 2.0,
            "n_points": 4, "n_windows": 2, "details": json.dumps({"notes": ["kept"]}),
            "finished_at": "2026-11-29T10:00:00+00:00", **extra}


def test_an_old_header_file_reads_and_takes_appends_in_its_own_header(tmp_path):
    path = tmp_path / "records.csv"
    old = {c: str(v) for c, v in _row("S01").items()}
    _old_header_file(path, [{c: old.get(c, "") for c in OLD_COLUMNS}])
    store = RecordStore(path)
    assert all(store.get(old["key"])[c] == "" for c in PROVENANCE)  # read, with the columns empty
    new = _row("S02", context_samples=48, horizon_samples=24, windows_planned=2, inference_seconds_per_window=0.25)
    store.write(new)
    text = path.read_text().splitlines()
    assert text[0] == ",".join(OLD_COLUMNS)  # the header is never rewritten by an append
    assert '""provenance""' in text[-1]
    for reader in (RecordStore(path), RecordStore(path, readonly=True)):
        row = reader.get(str(new["key"]))
        assert (row["context_samples"], row["windows_planned"], row["data_fingerprint"]) == ("48", "2", "abc123")
        assert row["inference_seconds_per_window"] == "0.25" and row["training_seconds"] == ""
        assert json.loads(row["details"]) == {"notes": ["kept"]}  # the provenance read back out of details
    frame = read_records(path)
    assert list(frame.sort_values("fold")["context_samples"].astype(str)) == ["<NA>", "48"]
    assert RecordStore(path).compact() == 0  # nothing superseded: nothing rewritten
    store.write({**new, "finished_at": "2026-11-29T11:00:00+00:00"})
    assert RecordStore(path).compact() == 1  # a whole rewrite writes the current header, provenance in its columns
    rows = _rows(path)
    assert tuple(rows[0]) == COLUMNS
    assert [r["context_samples"] for r in rows] == ["", "48"] and "provenance" not in rows[1]["details"]


def test_a_full_header_file_keeps_provenance_in_its_columns(tmp_path):
    path = tmp_path / "records.csv"
    RecordStore(path).write(_row("S01", context_samples=48))
    (row,) = _rows(path)
    assert row["context_samples"] == "48" and row["data_fingerprint"] == "abc123"
    assert json.loads(row["details"]) == {"notes": ["kept"]}


# -- re-stamping fills the derivable columns -------------------------------------------------------------------------
def test_restamp_fills_the_derivable_provenance_and_leaves_the_measured_empty(toy, tmp_path):
    from harness.run.restamp import restamp

    out = tmp_path / "out"
    execute(_forecast(toy, out, models=("last-value", "seasonal-naive")), log=lambda m: None)
    path = out / "records.csv"
    made = _rows(path)
    _old_header_file(path, made)  # rows written before the provenance columns
    report = restamp(_forecast(toy, out, models=("last-value", "seasonal-naive")), sample=1, log=lambda m: None)
    assert not report.moved and report.restamped == len(made) == report.provenance == report.unmeasured
    assert f"inference and training seconds left empty on {len(made)} rows that predate them" in report.line()
    rows = {r["key"]: r for r in _rows(path)}
    assert tuple(next(iter(rows.values()))) == COLUMNS  # the rewritten file has the current header
    for before in made:
        row = rows[before["key"]]
        assert all(row[c] == before[c] for c in PROVENANCE if c not in MEASURED)  # what the run itself recorded
        assert all(row[c] == "" for c in MEASURED)
        assert all(row[c] == before[c] for c in ("rmse", "mae", "sse", "n_windows", "seconds", "finished_at"))


def test_restamp_counts_a_row_that_scored_other_than_planned_as_moved(toy, tmp_path):
    from harness.run.restamp import restamp

    out = tmp_path / "out"
    execute(_forecast(toy, out), log=lambda m: None)
    path = out / "records.csv"
    made = _rows(path)
    made[0]["n_windows"] = "2"
    _old_header_file(path, made)
    before = path.read_text()
    report = restamp(_forecast(toy, out), sample=1, log=lambda m: None)
    assert len(report.moved) == 1 and "scored 2 windows but the protocol selected 3" in report.moved[0]
    assert path.read_text() == before  # nothing written


# -- the provenance table ---------------------------------------------------------------------------------------------
def test_table_show_provenance_prints_consumed_lengths_rate_windows_and_seconds(toy, tmp_path, capsys):
    out = tmp_path / "out"
    execute(_forecast(toy, out, models=("last-value", "ridge")), log=lambda m: None)
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out), "--show", "provenance"]) == 0
    text = capsys.readouterr().out
    rate = _rate(toy)
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith(("last-value", "ridge"))}
    assert set(lines) == {"last-value", "ridge"}
    for model, line in lines.items():
        assert f"48 ({48 / rate:.4g} s)" in line and f"24 ({24 / rate:.4g} s)" in line and f"{rate:g}" in line
        assert "9/9" in line  # 3 folds x 3 windows scored of 3 x 3 planned
    assert len(lines["ridge"].split()) == len(lines["last-value"].split()) + 1  # training seconds: ridge only
    assert (out / "tables" / "forecasting_provenance.md").is_file()
