"""Breakdowns by a per-subject metadata field (harness.reporting.subgroups): the fields come from the dataset
(a folder manifest's [subjects.NAME], MIT-BIH's header comments), never enter its fingerprints, and a group whose
errors are twice another's by construction reads exactly twice."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.records.window_store import write_window_errors
from harness.reporting.subgroups import by_subject_field
from protocols.data import Dataset, DatasetError, Recording, dataset_fingerprint
from protocols.datasets.folder import load_folder_dataset, write_folder_dataset
from protocols.splits import split_into_blocks
from protocols.subjects import field_values, wfdb_patient_fields

GROUP = {"S0": "a", "S1": "a", "S2": "b", "S3": "b"}


def _dataset(subjects: dict | None = None) -> Dataset:
    t = np.arange(400) / 10.0
    recs = tuple(Recording(s, s, np.stack([np.sin(2 * np.pi * (1 + 0.1 * i) * t)]), t)
                 for i, s in enumerate(GROUP))
    return Dataset("sg", ("ecg",), recs, 10.0, metadata={"subjects": subjects} if subjects else {})


def test_subject_fields_move_no_fingerprint_and_round_trip_through_a_folder(tmp_path):
    plain, tagged = _dataset(), _dataset({s: {"group": g, "age": 30 + i} for i, (s, g) in enumerate(GROUP.items())})
    assert dataset_fingerprint(plain) == dataset_fingerprint(tagged) and plain.content_id == tagged.content_id
    back = load_folder_dataset(write_folder_dataset(tagged, tmp_path / "ds").parent)
    assert field_values(back, "group") == GROUP and field_values(back, "age")["S3"] == "33"
    assert dataset_fingerprint(back) == dataset_fingerprint(plain)
    blocks = split_into_blocks(back, 2)
    assert field_values(blocks, "group")["S2#2"] == "b"


def test_a_manifest_naming_an_unknown_subject_or_a_nested_value_is_refused(tmp_path):
    manifest = write_folder_dataset(_dataset(), tmp_path / "ds")
    data = json.loads(manifest.read_text())
    for bad, words in (({"S9": {"sex": "F"}}, "subjects.S9 names no subject"),
                       ({"S0": {"sex": ["F"]}}, "subjects.S0.sex must be")):
        manifest.write_text(json.dumps({**data, "subjects": bad}))
        with pytest.raises(DatasetError, match=words):
            load_folder_dataset(tmp_path / "ds")


def test_mitbih_header_comments_give_age_and_sex():
    assert wfdb_patient_fields(["unnecessary comment", "69 M 1085 1629 x1", "Aldomet, Inderal"]) == {"age": 69, "sex": "M"}
    assert wfdb_patient_fields(["? F 1 2 x1"]) == {"sex": "F"}
    assert wfdb_patient_fields(["no patient line"]) == {}


def _records(tmp_path, windows: int = 5) -> tuple[pd.DataFrame, dict]:
    """Rows of one model on four subjects and two settings; every window of a group-a subject has 4x the squared
    error of a group-b one, so group a's RMSE is exactly 2x group b's."""
    rng = np.random.default_rng(1)
    rows = []
    base = rng.uniform(0.5, 1.5, size=windows)
    for setting in ("32/8", "48/16"):
        for s, g in GROUP.items():
            key = f"{s}-{setting.replace('/', '-')}"
            sse = base * (4.0 if g == "a" else 1.0)
            n = np.full(windows, 10)
            write_window_errors(tmp_path, key, {"sse": sse, "sae": np.sqrt(sse), "n": n})
            rows.append({"key": key, "task": "forecasting", "dataset": "sg", "fold": s, "setting": setting,
                         "condition": "clean", "model": "last-value", "seed": 0, "status": "ok",
                         "protocol": "forecasting@1;maxw=5;data=abc123", "sse": sse.sum(), "n_points": n.sum(),
                         "model_info": "{}", "code_version": "x"})
    return pd.DataFrame(rows), {"abc123": GROUP}


def test_a_group_with_twice_the_error_by_construction_reads_twice_with_intervals(tmp_path):
    frame, fields = _records(tmp_path)
    table = by_subject_field(frame, "forecasting", tmp_path, "group", fields)
    assert table.header[3:] == ("group=a", "group=b")
    (row,) = table.rows
    a, b = (float(c.split()[0]) for c in row[3:])
    assert a == pytest.approx(2 * b, rel=1e-3)
    rmse_b = 100 * np.sqrt(frame.loc[frame["fold"] == "S2", "sse"].iloc[0] / 50)
    for cell, est in zip(row[3:], (2 * rmse_b, rmse_b)):
        low, high = (float(x) for x in cell.split("[")[1].split("]")[0].split(", "))
        assert low <= est + 0.01 and est - 0.01 <= high  # the estimate lies in its interval
        assert cell.endswith("(n=2)")


def test_a_group_of_one_subject_resamples_its_windows_and_says_so(tmp_path):
    frame, fields = _records(tmp_path)
    fields = {"abc123": {**GROUP, "S0": "c"}}
    table = by_subject_field(frame, "forecasting", tmp_path, "group", fields)
    assert any("group=c: one subject (S0)" in n for n in table.notes)
    cell = table.rows[0][table.header.index("group=c")]
    low, high = (float(x) for x in cell.split("[")[1].split("]")[0].split(", "))
    assert low < high  # the windows differ, so there is a spread


def test_the_cli_breaks_a_run_down_by_a_manifest_field(tmp_path, capsys):
    folder = tmp_path / "ds"
    write_folder_dataset(_dataset({s: {"group": g} for s, g in GROUP.items()}), folder)
    out = tmp_path / "out"
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "--settings", "32/8",
                 "--max-windows-per-subject", "3", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out), "--by", "subject-field:group",
                 "--dataset", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "group=a" in text and "group=b" in text and (out / "tables" / "forecasting_by_group.md").is_file()
    assert main(["table", "forecasting", "--out", str(out), "--by", "subject-field:age",
                 "--dataset", str(folder)]) == 2
    assert "no per-subject field 'age'; its fields: group" in capsys.readouterr().err
    other = tmp_path / "other"
    write_folder_dataset(replace(_dataset({"S0": {"group": "a"}}), recordings=_dataset().recordings[:2]), other)
    assert main(["table", "forecasting", "--out", str(out), "--by", "subject-field:group",
                 "--dataset", str(other)]) == 2
    assert "no forecasting row was computed on the data of" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["table", "forecasting", "--out", str(out), "--by", "subject-field:"])
    assert stop.value.code == 2 and "unknown breakdown 'subject-field:'" in capsys.readouterr().err
