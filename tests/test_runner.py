"""Runner and CLI: cached, resumable, honest about failures, clear on bad input."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from harness.run.runner import RunConfig, execute
from harness.records.store import read_records
from protocols.datasets.folder import write_folder_dataset
from protocols.specs import Setting
from tests.conftest import make_dataset
from tests.waiting import wait_for_lines, wait_until

REPO = Path(__file__).resolve().parents[1]
METRIC_COLS = ["key", "status", "rmse", "mae", "sse", "sae", "n_points", "n_windows"]


def _config(folder, out, models=("last-value", "window-mean"), **kw) -> RunConfig:
    options = {"settings": (Setting(48, 24), Setting(72, 36)), "max_windows_per_subject": 4}
    return RunConfig(datasets=(str(folder),), models=tuple(models), out=out, options=options, progress=False, **kw)


def _metrics(path: Path) -> pd.DataFrame:
    return read_records(path)[METRIC_COLS].sort_values("key").reset_index(drop=True)


def test_run_writes_records_and_rerun_skips_finished(folder, tmp_path):
    summary = execute(_config(folder, tmp_path / "out"))
    assert summary.planned == 2 * 2 * 3 and summary.ran == 12
    frame = read_records(summary.records_path)
    assert set(frame.status) == {"ok"} and frame.key.is_unique
    assert (frame.n_windows > 0).all() and np.isfinite(frame.rmse).all()
    again = execute(_config(folder, tmp_path / "out"))
    assert again.ran == 0 and again.skipped_done == 12
    pd.testing.assert_frame_equal(_metrics(summary.records_path), _metrics(again.records_path))


def test_parallel_jobs_give_identical_records(folder, tmp_path):
    a = execute(_config(folder, tmp_path / "serial"))
    b = execute(_config(folder, tmp_path / "parallel", jobs=2))
    pd.testing.assert_frame_equal(_metrics(a.records_path), _metrics(b.records_path))


def test_failing_and_unavailable_models_are_recorded_not_fatal(folder, tmp_path):
    s = execute(_config(folder, tmp_path / "o", models=("last-value", "test-broken", "test-needs-weights")))
    frame = read_records(s.records_path)
    by_model = frame.groupby("model").status.agg(set).to_dict()
    assert by_model == {"last-value": {"ok"}, "test-broken": {"error"}, "test-needs-weights": {"unavailable"}}
    assert frame[frame.model == "test-broken"].error.str.contains("always fails").all()
    assert frame[frame.model == "test-needs-weights"].error.str.contains("--weights").all()
    # error rows are retried on the next run; finished rows are not
    again = execute(_config(folder, tmp_path / "o", models=("last-value", "test-broken")))
    assert again.ran == 6 and again.skipped_done == 6


def test_a_diverged_cell_is_an_error_row_that_a_rerun_keeps_and_rerun_recomputes(folder, tmp_path):
    """A diverged solve is deterministic (the same weights diverge on the same windows again): rerunning it would only
    repeat its cost, so it is final like an ok row; any other error is retried, and --rerun recomputes both."""
    from tests.plugin_models import Diverging

    first = execute(_config(folder, tmp_path / "o", models=("test-diverging", "test-broken")))
    frame = read_records(first.records_path)
    diverged = frame[frame.model == "test-diverging"]
    assert set(diverged.status) == {"error"} and diverged.error.str.startswith(
        "protocols.interface.ModelDivergedError: the forecast of windows").all()
    calls = Diverging.forecasts
    again = execute(_config(folder, tmp_path / "o", models=("test-diverging", "test-broken")))
    assert again.ran == 6 and again.skipped_done == 6 and Diverging.forecasts == calls  # only test-broken's ran
    forced = execute(_config(folder, tmp_path / "o", models=("test-diverging",), rerun=True))
    assert forced.ran == 6 and Diverging.forecasts > calls


def test_changed_data_is_not_served_from_cache(folder, tmp_path):
    execute(_config(folder, tmp_path / "o", models=("last-value",)))
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300, seed=5), folder)
    again = execute(_config(folder, tmp_path / "o", models=("last-value",)))
    assert again.ran == 6


def test_cli_prints_table_and_writes_tables(folder, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "drift",
                 "--settings", "48/24", "72/36", "--out", str(out), "--no-progress",
                 "--max-windows-per-subject", "4"])
    text = capsys.readouterr().out
    assert code == 0
    assert "toy RMSE" in text and "last-value" in text and "drift" in text
    for ext in ("txt", "md", "tex"):
        assert (out / "tables" / f"forecasting.{ext}").exists()
    assert "**" in (out / "tables" / "forecasting.md").read_text()
    assert main(["table", "forecasting", "--out", str(out), "--format", "latex"]) == 0
    assert r"\mathbf" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["run", "forecasting", "--models", "no-such-model"], "unknown model 'no-such-model'"),
    (["run", "forecasting", "--dataset", "no-such-dataset"], "unknown dataset 'no-such-dataset'"),
    (["run", "forecasting", "--settings", "96-48"], "not of the form CONTEXT/HORIZON"),
    (["run", "forecasting", "--dataset", "/nonexistent/folder"], "/nonexistent/folder"),
    (["run", "forecasting", "--weights", "soter"], "MODEL=DIR"),
    (["table", "forecasting", "--out", "/nonexistent/out"], "no records file"),
])
def test_cli_bad_input_is_a_clear_error(argv, message, capsys, tmp_path):
    if argv[0] == "run":
        argv = argv + ["--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_single_subject_dataset_is_refused_with_reason(tmp_path, capsys):
    path = tmp_path / "one"
    write_folder_dataset(make_dataset(n_subjects=1, n_samples=300), path)
    assert main(["run", "forecasting", "--dataset", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "at least two" in capsys.readouterr().err


def _cli(args, out, env):
    return [sys.executable, "-m", "harness", "run", "forecasting", *args, "--out", str(out), "--no-progress"]


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_sigint_mid_run_then_resume_equals_uninterrupted_run(folder, tmp_path):
    env = {**os.environ, "SOTER_BENCH_PLUGINS": "tests.plugin_models", "PYTHONPATH": str(REPO)}
    args = ["--dataset", str(folder), "--models", "test-slow-last-value", "--settings", "48/24", "72/36",
            "--max-windows-per-subject", "4"]
    interrupted = tmp_path / "interrupted"
    proc = subprocess.Popen(_cli(args, interrupted, env), cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    records = interrupted / "records.csv"
    wait_for_lines(records, 3, proc)  # header + 2 rows
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert b"rerun the same command to resume" in err
    partial = read_records(records)
    assert 2 <= len(partial) < 6
    assert subprocess.run(_cli(args, interrupted, env), cwd=REPO, env=env, capture_output=True).returncode == 0
    clean = tmp_path / "clean"
    assert subprocess.run(_cli(args, clean, env), cwd=REPO, env=env, capture_output=True).returncode == 0
    pd.testing.assert_frame_equal(_metrics(records), _metrics(clean / "records.csv"))


@pytest.mark.parametrize("task, models, extra", [
    ("imputation", ["locf", "spline-extrapolation", "last-value"], ["--rates", "25", "75", "--seeds", "0", "1"]),
    ("noise", ["last-value", "drift"], ["--levels", "0", "0.3", "--settings", "48/24"]),
    ("classification", ["stat-features", "random"],
     ["--budgets", "10", "100", "--seeds", "0", "1", "--segment-length", "48"]),
])
def test_every_task_runs_end_to_end_with_tables_and_figures(folder, tmp_path, capsys, task, models, extra):
    out = tmp_path / task
    argv = ["run", task, "--dataset", str(folder), "--models", *models, "--out", str(out), "--no-progress",
            "--max-windows-per-subject", "4", *extra]
    assert main(argv) == 0
    text = capsys.readouterr().out
    frame = read_records(out / "records.csv")
    assert set(frame.status) == {"ok"} and set(frame.task) == {task}
    assert all(m in text for m in models)
    assert list((out / "tables").glob("*.md")) and list((out / "figures").glob("*.png"))
    assert main(argv) == 0 and "0 run now" in capsys.readouterr().out  # cached
    if task == "imputation":
        assert set(frame.seed) == {0, 1} and set(frame.condition) == {"missing=25%", "missing=75%"}
    if task == "classification":
        assert frame.macro_auroc.between(0, 1).all() and (frame.fold == "all").all()


def test_a_weights_path_that_does_not_exist_is_a_usage_error(tmp_path, capsys):
    assert main(["run", "forecasting", "--models", "soter", "--weights", f"soter={tmp_path / 'typo'}",
                 "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert f"{tmp_path / 'typo'} does not exist" in capsys.readouterr().err
    assert not (tmp_path / "o" / "records.csv").exists()


def test_a_models_note_is_printed_once_per_run(folder, tmp_path, capsys):
    assert main(["run", "noise", "--dataset", str(folder), "--models", "soter", "last-value", "--levels", "0", "0.1",
                 "0.2", "--settings", "48/24", "--max-windows-per-subject", "2", "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.count("Noise") >= 3 or out.count("beta") >= 3  # one table per level
    assert out.count("forecasts decoded per query") == 1
    for table in (tmp_path / "o" / "tables").glob("*.md"):  # each saved table stands alone: it keeps the note
        assert "forecasts decoded per query" in table.read_text()


@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_the_cell_swallowed_still_stops_the_run_and_its_row_is_never_written(
        folder, tmp_path, monkeypatch, capsys, signum, status):
    """A library that catches KeyboardInterrupt (scikit-learn's MLP training, an optional import) goes on as if
    nothing happened: the run must still stop (130, 143), without the row of the cell the signal landed in (its
    result is no result) and with every row finished before it; the caller's handlers are back afterwards."""
    from harness.run import runner

    original, calls, during = runner.run_cell, [], []

    def swallowing(cell):
        calls.append(cell)
        during.append(signal.getsignal(signum))
        if len(calls) == 3:
            try:
                os.kill(os.getpid(), signum)  # its handler runs here, inside the try
            except KeyboardInterrupt:
                pass  # swallowed, as scikit-learn does
        return original(cell)

    def sentinel(*_):
        raise AssertionError("the caller's handler ran")

    monkeypatch.setattr(runner, "run_cell", swallowing)
    before = {s: signal.signal(s, sentinel) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        out = tmp_path / "o"
        argv = ["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "window-mean",
                "--settings", "48/24", "72/36", "--max-windows-per-subject", "4", "--out", str(out), "--no-progress"]
        assert main(argv) == status
        assert "rerun the same command to resume" in capsys.readouterr().err
        assert all(h is not sentinel for h in during)  # the run's own handler while its cells ran
        assert signal.getsignal(signal.SIGINT) is sentinel and signal.getsignal(signal.SIGTERM) is sentinel
        assert len(read_records(out / "records.csv")) == 2 and len(calls) == 3  # no third row, no fourth cell
        with pytest.raises(KeyboardInterrupt):  # in process, too: execute() raises, then restores the handlers
            calls.clear()
            execute(_config(folder, out, rerun=True))
        assert signal.getsignal(signal.SIGINT) is sentinel and signal.getsignal(signal.SIGTERM) is sentinel
        monkeypatch.setattr(runner, "run_cell", original)
        assert execute(_config(folder, out)).ran == 12 - 2  # resumes: the rest, then the uninterrupted records
        assert signal.getsignal(signal.SIGINT) is sentinel and signal.getsignal(signal.SIGTERM) is sentinel
        pd.testing.assert_frame_equal(_metrics(out / "records.csv"),
                                      _metrics(execute(_config(folder, tmp_path / "clean")).records_path))
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def test_ctrl_c_during_the_commands_imports_is_exit_130(folder, tmp_path):
    """A Ctrl-C while the command still imports (a plugin here; on a busy machine any import takes seconds) is exit
    130 with one line: not a traceback, and, for a run started with SIGINT ignored (a background job of a script),
    not a run that goes on to exit 0."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "SOTER_BENCH_PLUGINS": "tests.plugin_slow_import", "SOTER_TEST_IMPORT_DIR": str(tmp_path)}
    out = tmp_path / "o"
    for ignored in (False, True):
        (tmp_path / "go").unlink(missing_ok=True)
        (tmp_path / "importing").unlink(missing_ok=True)
        proc = subprocess.Popen(_cli(["--dataset", str(folder), "--models", "last-value"], out, env), cwd=REPO,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignored else None)
        wait_until(lambda: (tmp_path / "importing").exists(), proc, "the plugin's import began")
        proc.send_signal(signal.SIGINT)
        (tmp_path / "go").write_text("")  # a process that missed the signal goes on with the run
        _, err = proc.communicate()
        assert proc.returncode == 130, err.decode()
        assert b"Traceback" not in err and b"interrupted" in err
        assert not (out / "records.csv").exists()


def test_two_runs_that_compute_one_cell_at_once_leave_one_row_of_it(folder, tmp_path, monkeypatch):
    """Two runs into one --out: a cell both started before either finished it (here: the second run, whole, inside
    the first one's first cell) is written once; the records hold one row per key."""
    from harness.run import runner

    original, nested = runner.run_cell, []

    def first_cell_runs_another_run(cell):
        if not nested:
            nested.append(None)
            nested[0] = execute(_config(folder, tmp_path / "o"))  # the other run, into the same folder
        return original(cell)

    monkeypatch.setattr(runner, "run_cell", first_cell_runs_another_run)
    summary = execute(_config(folder, tmp_path / "o"))
    assert nested[0].ran == 12 and summary.skipped_done == 11  # the other run did every cell meanwhile
    keys = read_records(tmp_path / "o" / "records.csv")["key"]
    lines = (tmp_path / "o" / "records.csv").read_text().splitlines()[1:]
    assert len(lines) == len(keys) == keys.nunique() == 12
    monkeypatch.setattr(runner, "run_cell", original)
    assert execute(_config(folder, tmp_path / "o", rerun=True)).ran == 12  # a rerun still supersedes its rows
    assert len((tmp_path / "o" / "records.csv").read_text().splitlines()) == 1 + 24
