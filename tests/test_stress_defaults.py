"""Issue #31: the stress tests are named options; the paper's defaults give byte-identical records.

``fixtures/records_v1`` was written by the code of commit 12d170b for a small run of every built-in task; its rows
stood here until issue #46 seeded every draw of the protocols with the data's content fingerprint instead of the
dataset's name, which moved every window. ``fixtures/stress_defaults/records.csv`` holds the rows of the same runs
(same keys) since: rerun now with every default (points mask, Gaussian noise), each row must be the same byte for
byte in every column but the three that say when and by what code it ran (and ``model_info``'s ``identity``, the
code and weights digest that issue #27 added).  ``fixtures/stress_defaults/window_errors.json`` holds digests of
the per-window arrays the same forecasting and noise runs wrote (since issue #46).

The fixture holds the rows of each task's version 1 (their ``protocol`` without the version token that leads it
now): once a task's version is bumped, its golden file (tests/golden, tests/test_golden.py) guards the numbers of
the new version, and this fixture is never regenerated."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from harness.registry.versions import stamped
from harness.records.store import PROVENANCE, data_of
from harness.run.runner import execute
from harness.records.window_store import read_window_errors
from tests.test_task_records_compat import FIXTURE, RUNS, _config

GOLDEN = Path(__file__).parent / "fixtures" / "stress_defaults" / "window_errors.json"
CURRENT = GOLDEN.with_name("records.csv")  # the rows of records_v1's runs since issue #46 (model_info without identity)
VARYING = ("seconds", "finished_at", "code_version")  # when and by what code: never the same
# per-window arrays added since (and #26's absolute errors summed per horizon step, for MAE by step)
ADDED = {"channel_mae", "channel_scale", "channels", "channel_sse", "modalities", "step_sae"}


def _without_identity(info: str) -> str:
    """``model_info`` as rows wrote it before #27 added the code and weights identity (by what code: varies)."""
    value = json.loads(info)
    assert "code" in value.pop("identity")
    return json.dumps(value, sort_keys=True) if value else ""  # a row without a model description had none


def _rows(path: Path) -> dict[str, dict[str, str]]:
    with open(path, newline="") as fh:
        return {r["key"]: r for r in csv.DictReader(fh)}


@pytest.fixture()
def toy(tmp_path):
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)
    return folder


@pytest.mark.parametrize("task", list(RUNS))
def test_the_paper_defaults_give_the_records_of_before(toy, tmp_path, task):
    from harness.registry.versions import task_version

    if task_version(task) != 1:
        pytest.skip(f"the fixture holds the rows of {task}-v1; tests/golden holds those of v{task_version(task)}")
    out = tmp_path / "out"
    summary = execute(_config(task, toy, out), log=lambda m: None)
    assert summary.ran == summary.planned > 0
    before, now = _rows(CURRENT), _rows(out / "records.csv")
    assert set(now) <= set(before) and set(before) == set(_rows(FIXTURE / "records.csv"))  # the same keys
    for key, row in now.items():
        old = {("setting" if k == "window" else k): v for k, v in before[key].items()}
        old["protocol"] = stamped(row["task"], old["protocol"])  # written before the task's version token
        row = {**row, "model_info": _without_identity(row["model_info"])}
        differ = {c: (old[c], row[c]) for c in row if c not in VARYING + PROVENANCE and row[c] != old[c]}
        assert not differ, f"{task} row {key} changed: {differ}"
        assert row["data_fingerprint"] == data_of(row["protocol"]) != ""  # provenance: added, never changing a row
        assert row["windows_planned"] in ("", row["n_windows"])
    if task in ("forecasting", "noise"):
        golden = json.loads(GOLDEN.read_text())
        for key in now:
            arrays = read_window_errors(out, key)
            digests = {n: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16] for n, a in arrays.items()}
            # the arrays of before are unchanged; per-channel arrays were added (#27's MASE by channel, and the
            # channel SSE and modalities that #31's breakdowns pool)
            assert {n: digests.get(n) for n in golden[key]} == golden[key]
            assert set(digests) - set(golden[key]) <= ADDED
