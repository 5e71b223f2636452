"""Issue #48 item 4: the input-sensitivity probe. A model whose forecasts do not change when its context does
(constant or input-independent output, NormWear #8) is flagged, by the contract kit and by ``run --probe-input``,
whose verdicts mark the model's rows in the tables; legitimate forecasters pass."""

from __future__ import annotations

import json

import numpy as np
import pytest

from baselines.testing import check_forecast_contract, toy_dataset
from harness.cli import main
from harness.records.input_sensitivity import VERDICTS_FILE, read_verdicts
from harness.reporting.limitations import add_row_notes
from harness.reporting.tables import Column, Entry, Table, render
from harness.run.runner import RunConfig, execute
from models.registry import get_spec
from protocols.interface import Capabilities, Model, SeriesBatch
from protocols.sensitivity import (IGNORES_LEVEL, INDEPENDENT, RESPONDS, InputSensitivityError,
                                   check_input_sensitivity, probe_input)
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds

T, H = 48, 24
SETTING = Setting(T, H)
SPEC = ForecastingSpec(settings=(SETTING,), sampling=SamplingSpec(max_windows_per_subject=4, stride=H))


def _probe(model, seed: int = 0):
    ds = toy_dataset(n_subjects=3, n_samples=4 * (T + H))
    return probe_input(model, ds, loso_folds(ds)[0], SETTING, SPEC, seed=seed)


class _ForgetsTheLevel(Model):
    """Forecasts the z-scored context's last value, never scaled back: follows the shape, not the level."""

    name = "forgets-the-level"
    capabilities = Capabilities(multivariate=False)

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        v = batch.values
        z = (v[:, :, -1:] - v.mean(axis=2, keepdims=True)) / (v.std(axis=2, keepdims=True) + 1e-9)
        return np.repeat(z, query_times.shape[1], axis=2)


@pytest.mark.parametrize("name", ["test-constant", "test-sinusoid"])
def test_constant_and_input_independent_models_are_flagged(name):
    report = _probe(get_spec(name).load(seed=0))
    assert report.verdict == INDEPENDENT and report.flagged
    assert set(report.ignored) == {"level", "reversed", "other"}
    with pytest.raises(InputSensitivityError, match=f"{name}: input-independent.*time-reversed"):
        check_input_sensitivity(report)


def test_a_model_that_ignores_the_level_only_is_flagged_for_it():
    report = _probe(_ForgetsTheLevel())
    assert report.verdict == IGNORES_LEVEL and report.ignored == ("level",)


@pytest.mark.parametrize("name", ["last-value", "window-mean", "drift", "seasonal-naive"])
def test_legitimate_forecasters_pass(name):
    report = _probe(get_spec(name).load(seed=0))
    assert report.verdict == RESPONDS and not report.flagged
    check_input_sensitivity(report)
    assert report.changes["level"] == pytest.approx(3.0, rel=0.05) or name == "seasonal-naive"
    if name == "window-mean":  # the mean of a reversed context is the same: ignored, named, not flagged
        assert report.ignored == ("reversed",)


def test_a_constant_channel_does_not_count_as_an_ignored_input():
    """One channel constant, the other varying by little: last value follows every change of the varying one,
    yet the probe once said it ignored the time reversal and another window (the constant channel's unchanged
    forecast diluted the change, its floor of 1 standard deviation inflated the scale)."""
    from baselines.naive import LastValue
    from protocols.sensitivity import probe_arrays
    from protocols.windows import WindowArrays

    rng = np.random.default_rng(1)
    n, length, horizon = 6, 64, 16
    context = 0.5 + 0.004 * rng.normal(size=(n, 2, length))
    context[:, 1, :] = 0.3  # e.g. a sensor stuck at one value
    times = np.tile(np.arange(length, dtype=float), (n, 1))
    queries = np.tile(np.arange(length, length + horizon, dtype=float), (n, 1))
    report = probe_arrays(LastValue(), WindowArrays(context, times, np.zeros((n, 2, horizon)), queries), 64)
    assert report.verdict == RESPONDS and report.ignored == (), report.describe()
    assert report.changes["level"] == pytest.approx(3.0)  # the varying channel moved by its 3 deviations
    # the constant channel alone (every channel of a window flat): still measured, on every channel
    flat = np.full((n, 2, length), 0.3)
    alone = probe_arrays(LastValue(), WindowArrays(flat, times, np.zeros((n, 2, horizon)), queries), 64)
    assert alone.changes["level"] == pytest.approx(3.0)


def test_the_probe_is_deterministic_under_a_seed():
    model = get_spec("seasonal-naive").load(seed=0)
    assert _probe(model, seed=3) == _probe(model, seed=3)


def test_the_contract_kit_runs_the_probe():
    with pytest.raises(InputSensitivityError, match="test-constant"):
        check_forecast_contract(get_spec("test-constant"))
    check_forecast_contract(get_spec("last-value"))


def test_run_probe_input_writes_verdicts_and_the_table_marks_the_flagged_row(folder, tmp_path, capsys):
    out = tmp_path / "o"
    config = RunConfig(datasets=(str(folder),), models=("last-value", "test-constant"), out=out, progress=False,
                       options={"settings": (SETTING,), "max_windows_per_subject": 4}, probe_input=True)
    summary = execute(config)
    keys = set(summary.keys)
    verdicts = {v["model"]: v for v in read_verdicts(out)}
    assert verdicts["test-constant"]["verdict"] == INDEPENDENT and verdicts["test-constant"]["flagged"]
    assert verdicts["last-value"]["verdict"] == RESPONDS and not verdicts["last-value"]["flagged"]
    assert json.loads((out / VERDICTS_FILE).read_text())  # beside the records
    again = execute(RunConfig(datasets=(str(folder),), models=("last-value", "test-constant"), out=out, progress=False,
                              options={"settings": (SETTING,), "max_windows_per_subject": 4}))
    assert set(again.keys) == keys  # the flag changes no row key

    assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert any(line.startswith("| test-constant § |") for line in lines)
    assert any(line.startswith("| last-value |") for line in lines)
    assert "| test-constant | INPUT-INDEPENDENT 0 / 0 / 0 |" in lines  # the verdict table, printed and written
    assert "| last-value | responds 3 / " in (out / "tables" / "input_sensitivity.md").read_text()
    assert any(line.startswith("§ test-constant on toy, input-sensitivity probe (fold S00, setting 48/24; docs/protocols.md): "
                                         "input-independent") for line in lines)


def test_probe_notes_join_the_limitation_marks():
    col = Column("d", "RMSE")
    table = Table("t", (col,), ("a", "b"), {(m, col): Entry(1.0, 0.0, 1, 1, "ok") for m in ("a", "b")},
                  limited=(("a", "§"),), limitation_notes=(("§", "a's limitation"),))
    marked = add_row_notes(table, {"b": ["b ignores its input"], "c": ["no such row"]})
    assert dict(marked.limited) == {"a": "§1", "b": "§2"}
    assert marked.limitation_notes == (("§1", "a's limitation"), ("§2", "b ignores its input"))
    assert "§2 b ignores its input" in render(marked, "markdown")
    assert add_row_notes(table, {}) is table


def test_probe_input_on_a_task_without_settings_is_a_usage_error(capsys, tmp_path):
    assert main(["run", "classification", "--probe-input", "--out", str(tmp_path / "o")]) == 2
    assert "--probe-input probes forecasts" in capsys.readouterr().err


def test_one_verdict_table_of_several_runs(tmp_path, capsys):
    from harness.records.input_sensitivity import record_verdicts
    from harness.reporting.input_sensitivity import main as table_main

    common = {"model_id": "", "fold": "S00", "setting": "48/24", "rtol": 0.01, "n_windows": 4, "note": ""}
    record_verdicts(tmp_path / "a", [{**common, "dataset": "d1", "model": "m", "verdict": RESPONDS, "flagged": False,
                                      "ignored": [], "changes": {"level": 3.0, "reversed": 1.0, "other": 2.0}}])
    record_verdicts(tmp_path / "b", [{**common, "dataset": "d2", "model": "m", "verdict": INDEPENDENT, "flagged": True,
                                      "ignored": ["level", "reversed", "other"],
                                      "changes": {"level": 0.0, "reversed": 0.0, "other": 0.0}}])
    assert table_main([str(tmp_path / "a"), str(tmp_path / "b"), "--format", "markdown"]) == 0
    assert "| m | responds 3 / 1 / 2 | INPUT-INDEPENDENT 0 / 0 / 0 |" in capsys.readouterr().out.splitlines()
    assert table_main([str(tmp_path / "none")]) == 2
