"""The report's methods section: it names every flag that changes a number, and states the records' settings in
samples and seconds, protocol versions, seeds, datasets, models and real-time factors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from harness.registry.tasks import all_options, all_tasks
from harness.reporting.methods import RUN_NEUTRAL_FLAGS, RUN_NUMBER_FLAGS, methods_markdown, number_flags, \
    real_time_factors

COHORT = Path(__file__).resolve().parents[1] / "results" / "cohort" / "records.csv"


def _run_flags() -> set[str]:
    from harness.commands.run import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return {s for a in parser._actions for s in a.option_strings if s.startswith("--")}


def test_every_flag_of_run_is_either_named_by_the_methods_or_declared_to_change_no_number():
    task_flags = {o.flag for o in all_options()}
    own = _run_flags() - task_flags
    unclassified = own - set(RUN_NUMBER_FLAGS) - set(RUN_NEUTRAL_FLAGS)
    assert not unclassified, (f"`run` flags {sorted(unclassified)}: add each to RUN_NUMBER_FLAGS (it changes a number: "
                              "the methods section names it) or to RUN_NEUTRAL_FLAGS (with why it changes none)")
    assert not (set(RUN_NUMBER_FLAGS) | set(RUN_NEUTRAL_FLAGS)) - _run_flags() - {"--help"}  # no stale entry
    assert not set(RUN_NUMBER_FLAGS) & set(RUN_NEUTRAL_FLAGS)


def test_the_methods_of_the_committed_cohort_name_every_flag_that_changes_a_number():
    from harness.records.store import read_records

    text = methods_markdown(read_records(COHORT))
    flags = set(RUN_NUMBER_FLAGS) | {o.flag for task in all_tasks().values() for o in task.options}
    assert flags <= set(number_flags())
    missing = [f for f in sorted(flags) if f"| {f} |" not in text]
    assert not missing, f"the methods section does not name {missing}"
    # the records' exact settings, in samples and seconds, version, seed, data fingerprint and weights digest
    assert "| forecasting | forecasting-v1 | synthetic-cohort | 48/24 | 0.75 s / 0.375 s |" in text
    assert "| 128/64 | 2 s / 1 s |" in text and "maxw=16" in text
    assert "217e7b50048d" in text and "f298a554a98546d1" in text and "0.56M parameters" in text
    assert "with seed 0" in text and "10 test subjects" in text and "6400 windows" in text


def test_real_time_factor_is_inference_seconds_over_forecast_seconds():
    rows = pd.DataFrame({"task": ["forecasting"] * 2, "model": ["m", "m"], "dataset": ["d", "d"],
                         "setting": ["64/32", "128/64"], "inference_seconds_per_window": [0.25, 1.5],
                         "horizon_seconds": [0.5, 1.0], "n_windows": [4, 2], "seconds": [3.0, 3.0],
                         "sampling_rate": [64.0, 64.0], "context_samples": [64, 128]})
    factors = real_time_factors(rows)
    assert factors["real_time_factor"].tolist() == [1.0]  # (0.25 / 0.5 + 1.5 / 1.0) / 2
    assert factors["wall_factor"].tolist() == [1.5]  # 6 s of cells over 4 x 0.5 s + 2 x 1 s forecast


def test_report_writes_the_methods_section(tmp_path):
    from harness.reporting.report import write_report

    rows = pd.read_csv(COHORT)
    rows = rows[rows["model"].isin(["last-value", "drift"])]
    folder = tmp_path / "results"
    folder.mkdir()
    rows.to_csv(folder / "records.csv", index=False)
    report = write_report(folder, tmp_path / "report")
    text = (tmp_path / "report" / "METHODS.md").read_text()
    assert text.startswith("# Methods") and "## Flags that change a number" in text
    assert any(p.startswith("METHODS.md") for p in report.produced)
