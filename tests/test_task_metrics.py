"""Issue #28: a task declares its own metrics; a metric without a record column of its own is kept in the
row's details, so the header never changes, and every reader gives it a column of its name."""

from __future__ import annotations

import json
import math

import pytest

from harness.records.store import COLUMNS, RecordStore, read_records
from harness.registry.metrics import MAE, RMSE, Metric
from harness.registry.tasks import TASKS, all_metrics, register_task
from harness.tasks import Task
from protocols.registry import DuplicateNameError

SPREAD = Metric("spread", "Spread", higher_is_better=True)


class _Spread(Task):
    name = "toy-spread"
    metrics = (SPREAD, MAE)


class _OtherMae(Task):
    name = "toy-other-mae"
    metrics = (Metric("mae", "mean absolute error, differently"),)


@pytest.fixture()
def spread():
    register_task(_Spread())
    yield
    TASKS.remove("toy-spread")
    TASKS.remove("toy-other-mae")


def _row(**extra) -> dict[str, object]:
    return dict(task="toy-spread", dataset="d", fold="S0", setting="48/24", condition="clean", model="last-value",
                seed=0, protocol="p", status="ok", mae=0.5, finished_at="2026-01-01T00:00:00+00:00", **extra)


def test_a_tasks_metric_goes_into_details_and_comes_back_as_a_column(spread, tmp_path):
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    store.write(_row(spread=0.25))
    store.write({**_row(spread=float("nan")), "fold": "S1", "status": "error", "error": "boom"})
    assert path.read_text().splitlines()[0] == ",".join(COLUMNS)  # the header of every records file
    frame = read_records(path).sort_values("fold")
    assert frame["spread"].iloc[0] == 0.25 and math.isnan(frame["spread"].iloc[1])
    assert json.loads(frame["details"].iloc[0]) == {"metrics": {"spread": 0.25}}
    assert all_metrics()["spread"] == SPREAD and "spread" not in COLUMNS


def test_a_metric_that_is_no_result_is_refused_like_a_columns(spread, tmp_path):
    store = RecordStore(tmp_path / "records.csv")
    with pytest.raises(ValueError, match="an ok row with details metric spread inf"):
        store.write(_row(spread=float("inf")))
    with pytest.raises(ValueError, match="an ok row with details metric spread nan"):
        store.write(_row(spread=float("nan")))
    with pytest.raises(ValueError, match=r"unknown record columns \['skew'\]"):
        store.write(_row(skew=1.0))


def test_rows_keep_the_details_the_task_wrote(spread, tmp_path):
    RecordStore(tmp_path / "records.csv").write(_row(spread=1.0, details=json.dumps({"queries": 3})))
    details = read_records(tmp_path / "records.csv")["details"].iloc[0]
    assert json.loads(details) == {"queries": 3, "metrics": {"spread": 1.0}}


def test_a_metric_name_has_one_meaning(spread):
    with pytest.raises(DuplicateNameError, match="metric 'mae' of task 'toy-other-mae' differs from the built-in "
                                                 "metric 'mae'"):
        register_task(_OtherMae())
    assert RMSE in TASKS["forecasting"].metrics and MAE in TASKS["toy-spread"].metrics  # sharing one is fine
