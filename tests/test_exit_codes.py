"""Issue #32 item 3: a script can tell a run or table that scored nothing from a success, and a model
that cannot do the task is a usage error before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import EXIT_NOTHING_SCORED, main
from harness.records.store import read_records


def _run(folder: Path, out: Path, *extra: str) -> int:
    return main(["run", "forecasting", "--dataset", str(folder), "--out", str(out), "--no-progress",
                 "--max-windows-per-subject", "2", *extra])


def test_a_classification_only_model_in_forecasting_is_a_usage_error_before_work(folder, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run(folder, out, "--models", "last-value", "stat-features") == 2
    err = capsys.readouterr().err
    assert "stat-features does classification" in err and "`python -m harness list models`" in err
    assert len(err.strip().splitlines()) == 1 and "auto-ets" not in err  # where the models are, not all of them
    assert not (out / "records.csv").exists()  # no work, no rows


def test_a_setting_longer_than_every_recording_exits_non_zero(folder, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run(folder, out, "--models", "last-value", "--settings", "5000/2000") == EXIT_NOTHING_SCORED != 0
    assert "nothing was scored" in capsys.readouterr().err
    assert set(read_records(out / "records.csv").status) == {"error"}  # the rows still say why


def test_a_run_that_scores_something_exits_zero(folder, tmp_path, capsys):
    out = tmp_path / "o"
    assert _run(folder, out, "--models", "last-value", "--settings", "48/24") == 0
    assert "nothing was scored" not in capsys.readouterr().err
    # table of that task: fine; of a task with no records: a usage error naming what is there
    assert main(["table", "forecasting", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["table", "imputation", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no imputation records" in err and "tasks recorded there: forecasting" in err


def test_a_table_with_nothing_scored_exits_non_zero(folder, tmp_path, capsys):
    out = tmp_path / "o"
    _run(folder, out, "--models", "last-value", "--settings", "5000/2000")
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out)]) == EXIT_NOTHING_SCORED
    assert "nothing was scored" in capsys.readouterr().err
