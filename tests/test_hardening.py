"""Faults a careless or hostile user can cause: concurrent runs, killed parents, signals,
damaged record stores, full disks, unscorable cells, scheduling-dependent records."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.records.store import COLUMNS, MEASURED, RecordStore, RecordStoreError, read_records, row_key
from protocols.datasets.folder import write_folder_dataset
from tests.conftest import make_dataset
from tests.waiting import wait_for_lines, wait_until

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "SOTER_BENCH_PLUGINS": "tests.plugin_models", "PYTHONPATH": str(REPO),
       "OMP_NUM_THREADS": "1"}
TIMING = ["seconds", "finished_at", "code_version", *MEASURED]  # when, by what code, and how fast


def _row(fold="S01", status="ok", rmse=0.5, model="m"):
    fields = dict(task="forecasting", dataset="d", fold=fold, setting="48/24", condition="clean",
                  model=model, seed=0, protocol="p")
    return {**fields, "key": row_key(**fields), "status": status, "rmse": rmse, "mae": 0.25, "sse": 4 * rmse ** 2,
            "sae": 1.0, "n_points": 4}


# -- item 2: concurrent runs into one store ---------------------------------------------------
def test_two_processes_creating_200_stores_leave_valid_files(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO)!r})
        from harness.records.store import RecordStore, row_key
        who = sys.argv[1]
        for i in range(200):
            fields = dict(task="forecasting", dataset="d", fold=who, setting="48/24", condition="clean",
                          model="m", seed=0, protocol="p")
            RecordStore({str(tmp_path)!r} + f"/s{{i}}.csv").write({{**fields, "status": "ok", "rmse": 0.5, "mae": 0.5,
                                                                "sse": 1.0, "sae": 2.0, "n_points": 4}})
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, who]) for who in ("A", "B")]
    assert [p.wait() for p in procs] == [0, 0]
    header = ",".join(COLUMNS)
    for i in range(200):
        lines = (tmp_path / f"s{i}.csv").read_text().splitlines()
        assert lines.count(header) == 1 and lines[0] == header, f"s{i}.csv"
        assert sorted(read_records(tmp_path / f"s{i}.csv").fold) == ["A", "B"]


def test_a_store_sees_rows_another_run_appended(tmp_path):
    path = tmp_path / "records.csv"
    mine, theirs = RecordStore(path), RecordStore(path)
    theirs.write(_row(fold="S02"))
    assert not mine.is_done(_row(fold="S02")["key"])
    mine.refresh()
    assert mine.is_done(_row(fold="S02")["key"])
    mine.write(_row(fold="S01"))
    theirs.write(_row(fold="S03"))
    assert sorted(RecordStore(path).frame().fold) == ["S01", "S02", "S03"]


def test_a_run_skips_cells_another_run_finished_meanwhile(folder, tmp_path):
    """The runner re-reads the store before each cell: cells done elsewhere are not recomputed."""
    from harness.run.runner import RunConfig, execute, plan
    from protocols.specs import Setting

    config = RunConfig(datasets=(str(folder),), models=("last-value",), out=tmp_path / "o",
                       options={"settings": (Setting(48, 24),), "max_windows_per_subject": 4}, progress=False)
    cells, _ = plan(config)
    other = RecordStore(config.records_path)  # "another run" that finishes every cell first
    for _, fields in cells:
        other.write({**fields, "status": "ok", "rmse": 0.1, "mae": 0.1, "sse": 1.0, "sae": 1.0, "n_points": 10})
    summary = execute(config)
    assert summary.ran == 0 and summary.skipped_done == len(cells)


# -- item 3: workers exit when their parent dies -----------------------------------------------
def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has exited


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_a_cell_that_kills_its_worker_gets_an_error_row_and_the_pool_goes_on(folder, tmp_path):
    """A killed worker breaks Python's whole pool; the executor reruns the cells that were in flight
    alone, so only the culprit's cells become error rows and every other cell finishes ok."""
    out = tmp_path / "o"
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "test-kills-worker", "last-value",
                 "--settings", "48/24", "--max-windows-per-subject", "2", "--jobs", "2", "--out", str(out),
                 "--no-progress"]) == 0
    frame = read_records(out / "records.csv")
    killed = frame[frame.model == "test-kills-worker"]
    assert len(killed) == 3 and set(killed.status) == {"error"}
    assert killed.error.str.contains("worker running this cell was lost").all()
    ok = frame[frame.model == "last-value"]
    assert len(ok) == 3 and set(ok.status) == {"ok"}


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to inspect processes")
def test_workers_exit_after_their_parent_is_killed(tmp_path):
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from harness.run.executor import ProcessExecutor
        ex = ProcessExecutor(2)
        it = ex.run(time.sleep, [120, 120])
        futures = [ex._pool.submit(time.sleep, 0) for _ in range(2)]
        for f in futures:
            f.result()
        print(" ".join(str(p) for p in ex._pool._processes), flush=True)
        next(it)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    workers = [int(p) for p in parent.stdout.readline().split()]
    assert len(workers) == 2 and all(_alive(p) for p in workers)
    parent.kill()
    parent.wait()
    wait_until(lambda: not any(_alive(p) for p in workers))  # a worker that outlives its parent hangs the test


# -- item 13: SIGINT and SIGTERM stop cleanly, whatever the caller's dispositions ---------------
@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_started_with_sigint_ignored_still_stops_cleanly(folder, tmp_path, signum, code):
    out = tmp_path / "o"
    argv = [sys.executable, "-m", "harness", "run", "forecasting", "--dataset", str(folder), "--models",
            "test-slow-last-value", "--settings", "48/24", "72/36", "--max-windows-per-subject", "4",
            "--out", str(out), "--no-progress"]

    def ignore_sigint() -> None:  # what `cmd &` in a non-interactive shell does to its children
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=ignore_sigint)
    records = out / "records.csv"
    wait_for_lines(records, 2, proc)
    proc.send_signal(signum)
    _, err = proc.communicate()
    assert proc.returncode == code, err.decode()
    assert b"rerun the same command to resume" in err
    kept = read_records(records)
    assert 1 <= len(kept) < 6 and set(kept.status) == {"ok"}


# -- item 9: records do not depend on scheduling --------------------------------------------
def test_records_are_identical_with_one_and_two_jobs(tmp_path):
    import numpy as np

    data = make_dataset(n_subjects=3, n_samples=300)
    walk = np.random.default_rng(1).standard_normal((len(data.recordings), 300)).cumsum(axis=1)
    recs = tuple(type(r)(r.subject, r.name, np.stack([r.values[0], w]), r.timestamps, r.labels)
                 for r, w in zip(data.recordings, walk))  # channel b has no season: the rule's other branch
    folder = tmp_path / "walk"
    write_folder_dataset(type(data)(data.name, data.channels, recs, data.sampling_rate, data.label_names), folder)
    frames = []
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        assert main(["run", "forecasting", "--dataset", str(folder), "--models", "seasonal-naive", "last-value",
                     "drift", "--settings", "48/24", "72/36", "--max-windows-per-subject", "4", "--jobs", str(jobs),
                     "--out", str(out), "--no-progress"]) == 0
        text = pd.read_csv(out / "records.csv", dtype=str, keep_default_na=False)
        frames.append(text.drop(columns=TIMING).sort_values("key").reset_index(drop=True))
    pd.testing.assert_frame_equal(frames[0], frames[1])


# -- item 10: damaged stores name file and line; repair keeps valid rows, deletes nothing ----
def _damaged_store(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    for fold in ("S01", "S02", "S03", "S04"):
        store.write(_row(fold=fold))
    lines = path.read_bytes().splitlines(keepends=True)
    lines[2] = lines[2].replace(b"S02", b"S\xff2")  # bad bytes
    lines[3] = lines[3].replace(b",0.5,", b",zero point five,")  # a bad value in a finished row
    lines.insert(4, b"abc,def\n")  # a short line ending in a newline
    data = b"".join(lines)
    path.write_bytes(data)
    return path, data


def test_a_damaged_store_is_refused_naming_file_and_line(tmp_path):
    path, _ = _damaged_store(tmp_path)
    with pytest.raises(RecordStoreError, match=r"records\.csv, line 3: bytes that are not UTF-8.*harness repair"):
        RecordStore(path)
    path.write_bytes(path.read_bytes().replace(b"S\xff2", b"S02"))
    with pytest.raises(RecordStoreError, match=r"line 4: rmse 'zero point five' is not a number"):
        RecordStore(path)


def test_repair_keeps_valid_rows_and_moves_the_rest_aside(tmp_path, capsys):
    path, original = _damaged_store(tmp_path)
    assert main(["repair", "--out", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "kept 2 rows" in said and "3 lines moved aside" in said
    assert sorted(read_records(path).fold) == ["S01", "S04"]
    backups = list(tmp_path.glob("records.csv.damaged-*"))
    rejected = list(tmp_path.glob("records.rejected-*.csv"))
    assert len(backups) == 1 and backups[0].read_bytes() == original  # nothing deleted
    assert rejected[0].read_bytes().count(b"\n") == 3
    RecordStore(path).write(_row(fold="S02"))  # the store works again
    assert main(["repair", "--out", str(tmp_path)]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_a_failed_write_is_a_clear_error_and_leaves_the_file_valid(tmp_path, monkeypatch):
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    store.write(_row(fold="S01"))
    before = path.read_bytes()
    real_write = os.write

    def short_then_full(fd, data):
        if len(data) > 20:
            real_write(fd, data[:10])  # a short write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(RecordStoreError, match="No space left on device.*every row written before it is kept"):
        store.write(_row(fold="S02"))
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert list(RecordStore(path).frame().fold) == ["S01"]


# -- items 7 and 8: cells that cannot be scored are errors with their reason ------------------
def test_non_finite_metrics_are_error_rows_with_the_reason(folder, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "forecasting", "--dataset", str(folder), "--models", "test-overflow", "--settings", "48/24",
                 "--max-windows-per-subject", "2", "--out", str(out), "--no-progress"]) == 1  # nothing scored
    frame = read_records(out / "records.csv")
    assert set(frame.status) == {"error"}
    assert all("RMSE not finite" in e for e in frame.error)
    assert "RMSE not finite" in capsys.readouterr().out  # the table's note says why


def test_recordings_shorter_than_every_window_give_error_rows_with_the_reason(tmp_path, capsys):
    path = tmp_path / "short"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=60), path)
    out = tmp_path / "o"
    assert main(["run", "forecasting", "--dataset", str(path), "--models", "last-value", "--settings", "48/24",
                 "--out", str(out), "--no-progress"]) == 1  # nothing scored: not a success
    frame = read_records(out / "records.csv")
    assert set(frame.status) == {"error"}
    assert all("shorter than that" in e for e in frame.error)
    printed = capsys.readouterr()
    assert "1 recording(s) shorter than that" in printed.out
    assert "nothing was scored" in printed.err


# -- item 15: a task that cannot apply is refused before it runs ----------------------------
def test_classification_without_labels_is_refused_before_running(tmp_path, capsys):
    data = make_dataset(n_subjects=3, n_samples=300)
    unlabelled = type(data)(data.name, data.channels,
                            tuple(type(r)(r.subject, r.name, r.values, r.timestamps, None) for r in data.recordings),
                            data.sampling_rate, None)
    path = tmp_path / "nolabels"
    write_folder_dataset(unlabelled, path)
    out = tmp_path / "o"
    assert main(["run", "classification", "--dataset", str(path), "--models", "stat-features",
                 "--out", str(out), "--no-progress"]) == 2
    assert "has no labels" in capsys.readouterr().err
    assert not (out / "records.csv").exists()
