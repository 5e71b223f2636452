"""The record store keeps every finished row, whatever happens to the process."""

from __future__ import annotations

import pytest

from harness.records.store import COLUMNS, KEY_FIELDS, RecordStore, RecordStoreError, row_key


def _row(fold="S01", status="ok", rmse=0.5):
    fields = dict(task="forecasting", dataset="d", fold=fold, setting="48/24", condition="clean",
                  model="m", seed=0, protocol="p")
    return {**fields, "key": row_key(**fields), "status": status, "rmse": rmse, "mae": 0.25, "sse": 4 * rmse ** 2,
            "sae": 1.0, "n_points": 4}


def test_round_trip_and_latest_row_wins(tmp_path):
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    store.write(_row(status="error"))
    store.write(_row(status="ok", rmse=0.1 + 0.2))
    store.write(_row(fold="S02"))
    again = RecordStore(path)
    frame = again.frame()
    assert len(frame) == 2
    row = frame[frame.fold == "S01"].iloc[0]
    assert row.status == "ok" and row.rmse == 0.1 + 0.2  # exact float round trip
    assert again.is_done(_row()["key"])


def test_truncated_last_line_is_dropped(tmp_path):
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    store.write(_row())
    store.write(_row(fold="S02"))
    data = path.read_bytes()
    path.write_bytes(data[:-7])  # a write cut short by a kill
    again = RecordStore(path)
    assert list(again.frame().fold) == ["S01"]
    again.write(_row(fold="S03"))
    assert list(RecordStore(path).frame().fold) == ["S01", "S03"]


def test_foreign_file_is_refused(tmp_path):
    path = tmp_path / "records.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(RecordStoreError, match="unexpected columns"):
        RecordStore(path)


def test_bad_rows_are_refused(tmp_path):
    store = RecordStore(tmp_path / "r.csv")
    with pytest.raises(ValueError, match="status"):
        store.write({**_row(), "status": "done"})
    with pytest.raises(ValueError, match="unknown record columns"):
        store.write({**_row(), "colour": "red"})


def test_key_depends_on_every_key_field():
    base = {f: "x" for f in KEY_FIELDS}
    keys = {row_key(**{**base, f: "y"}) for f in KEY_FIELDS}
    assert len(keys) == len(KEY_FIELDS) and row_key(**base) not in keys
    assert set(KEY_FIELDS) <= set(COLUMNS)


def test_tables_read_one_row_per_cell_the_latest_of_any_weights(tmp_path):
    """A cell run with weights A, then with weights B, has two keys; tables must not pool them."""
    from harness.records.store import read_records

    path = tmp_path / "records.csv"
    store = RecordStore(path)
    fields = dict(task="forecasting", dataset="d", fold="S01", setting="48/24", condition="clean",
                  model="m", seed=0, protocol="p")
    sums = {"mae": 0.25, "sse": 1.0, "sae": 1.0, "n_points": 4}
    store.write({**fields, "key": row_key("weights-A", **fields), "status": "ok", "rmse": 0.5, **sums,
                 "finished_at": "2026-11-23T10:00:00+00:00"})
    store.write({**fields, "key": row_key("weights-B", **fields), "status": "ok", "rmse": 0.3, **sums,
                 "finished_at": "2026-11-23T11:00:00+00:00"})
    store.write(_row(fold="S02"))
    frame = read_records(path)
    assert len(frame) == 2 and frame.loc[frame.fold == "S01", "rmse"].item() == 0.3
    assert len(RecordStore(path).frame()) == 3  # every row stays in the file


def test_compact_keeps_the_latest_row_of_each_key_and_the_same_frame(tmp_path):
    """results/regenerate.sh compacts a committed folder after a rerun: superseded rows leave the file, the current
    rows (and so every table) stay exactly as they were, and a store opened before sees the compacted file."""
    path = tmp_path / "records.csv"
    store, reader = RecordStore(path), RecordStore(path)
    for fold, rmse in (("S01", 0.5), ("S02", 0.7), ("S01", 0.4), ("S03", 0.9), ("S02", 0.6)):
        store.write(_row(fold=fold, rmse=rmse))
    before = store.frame()
    assert store.compact() == 2 and store.compact() == 0
    lines = path.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 4
    assert [line.split(",")[COLUMNS.index("fold")] for line in lines[1:]] == ["S01", "S02", "S03"]
    assert RecordStore(path).frame().equals(before)
    reader.refresh()
    assert reader.frame().equals(before)
    store.write(_row(fold="S04"))  # appends after the compacted rows
    assert len(RecordStore(path).frame()) == 4
