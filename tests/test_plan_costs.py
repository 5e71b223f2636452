"""`harness plan`'s calibration and estimates (harness/run/costs.py): every default model has its rows, a cell's
estimate is its forecasts' rate times the series it forecasts plus, for a model trained in every cell, one fit, and
the benchmark that writes the rows measures that fit. Nothing here is timed: the rows are read, not measured."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from harness.run import costs
from harness.run.costs import Rate, cell_cost, rate_for, read_calibration
from harness.tasks import get_task
from tests.test_overhead import _benchmark_module

ROOT = Path(__file__).resolve().parents[1]
PAPER_SETTINGS = ("48/24", "72/36", "96/48", "128/64")
SUPERVISED = ("ridge", "mlp", "dlinear", "patchtst", "deepar")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_default_forecasting_model_has_a_batched_cohort_row_at_every_setting():
    rates = read_calibration()
    for model in get_task("forecasting").default_models():
        for setting in PAPER_SETTINGS:
            assert (model, "trained", setting, "cpu") in rates, f"{model} at {setting}: no calibration row"
    cohort = [r for r in _rows(ROOT / "results" / "benchmarks" / "cell_costs.csv") if r["status"] == "ok"]
    batches = {(r["model"], r["setting"]): r["batch"] for r in cohort}
    assert all(batches[(m, s)] == "32" for m in get_task("forecasting").default_models() for s in PAPER_SETTINGS)


def test_fracast_and_the_supervised_models_are_estimated_and_the_supervised_pay_a_fit():
    rates = read_calibration()
    for model in ("fracast", *SUPERVISED):
        rate = rate_for(rates, model, "96/48", "cpu", random_weights=False)
        assert rate is not None, f"{model}: no calibration row, the plan would say unknown"
        assert (rate.fit_seconds > 0) == (model in SUPERVISED)
        assert "unknown" not in cell_cost(model, "96/48", 100, rates, False).source


def test_soter_s_autoregressive_rate_is_its_measured_batched_rollout_not_its_single_latency():
    rates = read_calibration()
    rate = rate_for(rates, "soter-autoregressive", "128/64", "cpu", random_weights=True)
    measured = [r for r in _rows(ROOT / "results" / "benchmarks" / "batched_rates.csv")
                if r["model"] == "soter-autoregressive" and r["status"] == "ok"]
    assert measured and rate.seconds_per_sample == pytest.approx(float(measured[-1]["seconds_per_sample_batched"]))
    latency = [r for r in _rows(ROOT / "results" / "benchmarks" / "system_overhead.csv")
               if r["model"] == "soter-autoregressive" and r["status"] == "ok"]
    assert latency and latency[-1]["seconds_per_sample"]  # the report's batch-1 figure stays where it was


def test_a_cell_s_estimate_is_the_rate_times_its_series_plus_one_fit():
    rates = {("m", "trained", "48/24", "cpu"): Rate(0.5, 3.0, "trained", "48/24", "cpu"),
             ("f", "trained", "48/24", "cpu"): Rate(0.5, 3.0, "trained", "48/24", "cpu", fit_seconds=7.0)}
    one, twice = (cell_cost("m", "48/24", n, rates, False).cpu for n in (10, 20))
    assert (one, twice) == (5.0, 10.0)  # proportional to the windows x channels a cell forecasts
    fit_one, fit_twice = (cell_cost("f", "48/24", n, rates, False).cpu for n in (10, 20))
    assert (fit_one, fit_twice) == (12.0, 17.0)  # the fit once per cell, whatever its windows
    assert "a cohort fit per cell" in cell_cost("f", "48/24", 10, rates, False).source
    assert cell_cost("f", "48/24", None, rates, False).cpu is None  # a task that cannot count: unknown, never a guess


def test_a_call_s_fixed_cost_comes_from_the_single_sample_and_the_batch():
    # one sample per call 1.0 s, 32 per call 0.1 s each (3.2 s): 3.2 = a + 32 b and 1.0 = a + b
    call, per = costs.affine(1.0, 0.1, 32)
    assert call == pytest.approx(1.0 - 2.2 / 31) and per == pytest.approx(2.2 / 31)
    assert costs.affine(None, 0.1, 32) == (0.0, 0.1) and costs.affine(0.05, 0.1, 32) == (0.0, 0.1)  # no fixed cost
    rates = {("m", "trained", "48/24", "cpu"): Rate(per, 0.0, "trained", "48/24", "cpu", call_seconds=call)}
    few, many = (cell_cost("m", "48/24", n, rates, False, calls=1).cpu for n in (1, 32))
    assert few == pytest.approx(1.0) and many == pytest.approx(3.2)  # a call of one costs far more than 1/32 of 32
    assert cell_cost("m", "48/24", 64, rates, False, calls=2).cpu == pytest.approx(6.4)


def test_a_fit_column_is_read_and_an_old_file_without_it_reads_as_no_fit(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("model,weights,status,seconds_per_sample,seconds_per_sample_batched,load_seconds,setting,channels,"
                   "device\nm,trained,ok,0.5,0.25,1.0,48/24,1,cpu\n")
    new = tmp_path / "new.csv"
    new.write_text("model,weights,status,seconds_per_sample,seconds_per_sample_batched,load_seconds,setting,channels,"
                   "device,fit_seconds\nf,trained,ok,0.5,0.25,1.0,48/24,2,cpu,4.0\n")
    rates = read_calibration((old, new))
    assert rates[("m", "trained", "48/24", "cpu")].fit_seconds == 0.0
    rate = rates[("f", "trained", "48/24", "cpu")]
    assert rate.fit_seconds == 4.0 and rate.seconds_per_sample == 0.125  # per one-channel series


def test_cpu_seconds_are_preferred_and_a_wall_clock_row_says_so(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("model,weights,status,seconds_per_sample,seconds_per_sample_batched,load_seconds,setting,channels,"
                     "device,fit_seconds,cpu_seconds_per_sample_batched,fit_cpu_seconds,cpu_seconds_per_sample,batch,"
                     "load_cpu_seconds,warmup_cpu_seconds\n"
                     "c,trained,ok,0.5,0.4,1.0,48/24,1,cpu,9.0,0.1,3.0,,32,0.5,\n"
                     "w,trained,ok,0.5,0.4,1.0,48/24,1,cpu,9.0,,,,32,0.5,7.0\n"
                     "a,trained,ok,0.5,0.4,1.0,48/24,2,cpu,,0.1,,1.0,32,0.5,2.5\n")
    rates = read_calibration((table,))
    cpu, wall = rates[("c", "trained", "48/24", "cpu")], rates[("w", "trained", "48/24", "cpu")]
    assert (cpu.seconds_per_sample, cpu.fit_seconds, cpu.clock) == (0.1, 3.0, "cpu")  # a busy machine's wall is not
    assert (wall.seconds_per_sample, wall.fit_seconds, wall.clock) == (0.4, 9.0, "wall")
    assert "wall clock" in wall.describe("48/24") and "wall clock" not in cpu.describe("48/24")
    both = rates[("a", "trained", "48/24", "cpu")]  # single and batched CPU: a fixed cost per call, the rest per series
    assert both.call_seconds == pytest.approx(1.0 - 2.2 / 31) and both.seconds_per_sample == pytest.approx(1.1 / 31)
    # a process pays the load and its first forecast's set-up beyond a call (2.5 - 1.0) once; a wall row: its load
    assert (cpu.load_seconds, both.load_seconds, wall.load_seconds) == (0.5, 2.0, 1.0)


def test_the_plan_total_is_the_sum_of_its_cells_and_doubles_with_the_cells(monkeypatch, tmp_path):
    from harness.run.plan_costs import estimate_plan
    from harness.run.runner import RunConfig
    from protocols.specs import Setting

    calibration = tmp_path / "calibration.csv"
    calibration.write_text("model,weights,status,seconds_per_sample,seconds_per_sample_batched,load_seconds,setting,"
                           "channels,device,fit_seconds\nlast-value,trained,ok,0.5,0.25,2.0,48/24,1,cpu,\n"
                           "ridge,trained,ok,0.5,0.25,2.0,48/24,1,cpu,3.0\n")
    monkeypatch.setattr(costs, "CALIBRATION", (calibration,))

    def plan(seeds: tuple[int, ...]):
        config = RunConfig(task="forecasting", datasets=("synthetic-cohort",), models=("last-value", "ridge"),
                           options={"settings": (Setting(48, 24),)}, out=tmp_path / "o", seeds=seeds)
        return {r["model"]: r for r in estimate_plan(config)["rows"]}

    one, two = plan((0,)), plan((0, 1))
    for model, fit in (("last-value", 0.0), ("ridge", 3.0)):
        assert two[model]["cells"] == 2 * one[model]["cells"] and two[model]["samples"] == 2 * one[model]["samples"]
        assert one[model]["cpu_seconds"] == pytest.approx(0.25 * one[model]["samples"] + fit * one[model]["cells"])
        assert two[model]["cpu_seconds"] == pytest.approx(2 * one[model]["cpu_seconds"])


def test_the_benchmark_fits_a_model_trained_per_cell_on_the_cohort_and_refuses_random_walks():
    bench = _benchmark_module()
    rows = list(bench.measure_one("ridge", "trained", 48, 24, 1, 2, 1, "cpu", inputs="cohort"))
    assert rows[-1]["status"] == "ok" and rows[-1]["fit_seconds"] > 0 and rows[-1]["seconds_per_sample_batched"] > 0
    assert rows[-1]["fit_cpu_seconds"] > 0 and rows[-1]["cpu_seconds_per_sample_batched"] > 0
    assert rows[-1]["cpu_seconds_per_sample"] > 0 and rows[-1]["warmup_cpu_seconds"] > 0
    rows = list(bench.measure_one("ridge", "trained", 48, 24, 1, 2, 1, "cpu"))
    assert rows == [{"status": "not measured", "reason": "ridge is trained per fold: measure it with --inputs cohort"}]
    rows = list(bench.measure_one("last-value", "trained", 48, 24, 1, 2, 0, "cpu"))  # --repeats 0: the batch alone
    assert rows[-1]["seconds_per_sample"] is None and rows[-1]["seconds_per_sample_batched"] > 0
    assert rows[-1]["fit_seconds"] is None


def test_a_row_appended_to_a_table_written_before_a_column_existed_keeps_every_old_row(tmp_path):
    bench = _benchmark_module()
    out = tmp_path / "t.csv"
    out.write_text("model,weights,status\nold,trained,ok\n")
    bench._append(out, {"model": "new", "weights": "trained", "status": "ok", "fit_seconds": 2.5})
    rows = _rows(out)
    assert list(rows[0]) == list(bench.COLUMNS)
    assert [(r["model"], r["status"], r["fit_seconds"]) for r in rows] == [("old", "ok", ""), ("new", "ok", "2.5")]
