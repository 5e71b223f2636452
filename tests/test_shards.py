"""`run --shard K/N`, `merge` and `plan` (issue #50): shards run at once and merged give the records of a serial
run; a missing shard is partial, never complete; conflicting rows are refused; the plan counts what a run does."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.records.store import COLUMNS
from harness.run import costs
from harness.run.shards import TIMING, parse_shard, partition
from harness.commands.shards import EXIT_PARTIAL
from protocols.specs import SpecError

REPO = Path(__file__).resolve().parents[1]
MODELS = ("last-value", "drift", "seasonal-naive")


def _args(folder: Path, out: Path, *extra: str, models=MODELS) -> list[str]:
    return ["run", "forecasting", "--dataset", str(folder), "--models", *models, "--settings", "48/24", "72/36",
            "--max-windows-per-subject", "4", "--out", str(out), "--no-progress", *extra]


def _lines(out: Path) -> tuple[str, list[str]]:
    """The header and every row of a records file as its CSV line, timing columns blanked, sorted by key."""
    text = (out / "records.csv").read_text()
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    timing = [header.index(c) for c in TIMING]
    rows = []
    for values in reader:
        for i in timing:
            values[i] = ""
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(values)
        rows.append(buf.getvalue())
    return ",".join(header), sorted(rows)


def _order(out: Path) -> list[str]:
    """The keys of a records file in the file's order."""
    return [row["key"] for row in csv.DictReader(io.StringIO((out / "records.csv").read_text()))]


def _shards(folder: Path, tmp_path: Path, n: int = 3) -> list[Path]:
    """The n shards as n processes at once."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    outs = [tmp_path / f"shard{k}" for k in range(n)]
    procs = [subprocess.Popen([sys.executable, "-m", "harness", *_args(folder, out, "--shard", f"{k}/{n}")],
                              cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k, out in enumerate(outs)]
    for proc in procs:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
    return outs


def test_three_shards_at_once_merged_equal_a_serial_run(folder, tmp_path, capsys):
    assert main(_args(folder, tmp_path / "serial")) == 0
    shards = _shards(folder, tmp_path)
    counts = [len(_lines(s)[1]) for s in shards]
    assert sum(counts) == 3 * 2 * 3 and all(counts)  # a partition: every cell once, every shard some
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "merged"), *map(str, shards)]) == 0
    assert "partial" not in capsys.readouterr().err
    assert _lines(tmp_path / "merged") == _lines(tmp_path / "serial")  # same keys, same values, byte for byte
    assert _order(tmp_path / "merged") == _order(tmp_path / "serial")  # in the same order
    for folder_name in ("window_errors",):
        serial = sorted(p.name for p in (tmp_path / "serial" / folder_name).iterdir())
        assert sorted(p.name for p in (tmp_path / "merged" / folder_name).iterdir()) == serial
        for name in serial:
            a, b = np.load(tmp_path / "serial" / folder_name / name), np.load(tmp_path / "merged" / folder_name / name)
            assert sorted(a.files) == sorted(b.files) and all(np.array_equal(a[f], b[f]) for f in a.files)
    tables = tmp_path / "serial" / "tables"
    for table in tables.iterdir():
        assert (tmp_path / "merged" / "tables" / table.name).read_text() == table.read_text()
    assert main(["table", "forecasting", "--out", str(tmp_path / "merged")]) == 0
    assert main(["merge", str(tmp_path / "merged"), *map(str, shards)]) == 0  # again: nothing new, nothing refused
    assert _lines(tmp_path / "merged") == _lines(tmp_path / "serial")

    # a shard missing: merged, but partial in merge and in table, never complete
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "part"), str(shards[0]), str(shards[2])]) == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "partial: forecasting" in err and "1/3 not merged" in err and f"{counts[1]} of 18" in err
    assert main(["table", "forecasting", "--out", str(tmp_path / "part")]) == EXIT_PARTIAL
    assert "1/3 not merged" in capsys.readouterr().err
    assert main(["table", "forecasting", "--out", str(shards[1])]) == EXIT_PARTIAL  # a shard alone
    assert "shard 1/3 alone" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "part"), str(shards[1]), str(shards[2])]) == 0  # the rest, in any order
    assert _order(tmp_path / "part") == _order(tmp_path / "serial")
    assert _lines(tmp_path / "part") == _lines(tmp_path / "serial")

    # the same key with other values: refused with one line, nothing written
    bad = tmp_path / "bad"
    subprocess.run(["cp", "-r", str(shards[0]), str(bad)], check=True)
    text = (bad / "records.csv").read_text().splitlines(keepends=True)
    row = next(csv.reader([text[1]]))
    row[COLUMNS.index("rmse")] = repr(float(row[COLUMNS.index("rmse")]) + 1.0)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    (bad / "records.csv").write_text(text[0] + buf.getvalue() + "".join(text[2:]))
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "conflict"), str(shards[0]), str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: conflicting rows for key") and "rmse" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "conflict").exists()  # nothing left behind, not even an empty folder


def test_two_shard_sets_of_other_models_merge_into_the_serial_run(folder, tmp_path, capsys):
    """GPU models' shards on GPU nodes, statistical ones on CPU nodes: two plans, merged into one store."""
    assert main(_args(folder, tmp_path / "serial")) == 0
    sets = [("a0", ("last-value", "drift"), "0/2"), ("a1", ("last-value", "drift"), "1/2"),
            ("b0", ("seasonal-naive",), "0/1")]
    for name, models, shard in sets:
        assert main(_args(folder, tmp_path / name, "--shard", shard, models=models)) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), *(str(tmp_path / name) for name, _, _ in sets)]) == 0
    assert _lines(tmp_path / "m") == _lines(tmp_path / "serial")
    assert main(["merge", str(tmp_path / "p"), str(tmp_path / "a0"), str(tmp_path / "b0")]) == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert err.count("partial:") == 1 and "1/2 not merged" in err  # the other plan is complete


@pytest.mark.parametrize("shard", ["3/3", "0/0", "-1/3", "a/b", "1", "1/"])
def test_an_invalid_shard_is_one_line_and_exit_2(folder, tmp_path, capsys, shard):
    assert main(_args(folder, tmp_path / "o", f"--shard={shard}")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--shard expects K/N" in err
    assert not (tmp_path / "o" / "records.csv").exists()


@pytest.mark.parametrize("command", ["run", "plan"])
def test_more_shards_than_cells_is_one_line_and_exit_2(folder, tmp_path, capsys, command):
    """N beyond the plan's cells (here 6) is refused before anything is written (an N of 10^12 once filled the
    memory); N equal to the cells is a shard per cell."""
    argv = _args(folder, tmp_path / "o", "--shard", "0/999999999999", models=("last-value",))
    argv[0] = command
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the plan has 6 cell(s), so N can be at most 6" in err
    assert not (tmp_path / "o" / "records.csv").exists() and not list((tmp_path / "o").glob("plan-*.json"))
    assert main(_args(folder, tmp_path / "o", "--shard", "5/6", models=("last-value",))) == 0


def test_plan_refuses_an_out_that_names_a_file(folder, tmp_path, capsys):
    (tmp_path / "f").write_text("")
    for command in ("run", "plan"):
        argv = _args(folder, tmp_path / "f", models=("last-value",))
        argv[0] = command
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "is a file, not a folder" in err


def test_merge_refuses_a_folder_that_is_no_shard(folder, tmp_path, capsys):
    assert main(_args(folder, tmp_path / "plain", models=("last-value",))) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "plain")]) == 2
    assert "no plan manifest" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
    (tmp_path / "f").write_text("")
    assert main(["merge", str(tmp_path / "f"), str(tmp_path / "plain")]) == 2  # OUT names a file: one line
    assert "is a file, not a folder" in capsys.readouterr().err


def test_the_partition_balances_cost_not_count_and_is_deterministic():
    costs_ = [("big", 10.0)] + [(f"small{i:02d}", 1.0) for i in range(10)]
    owner = partition(costs_, 2)
    assert owner == partition(list(reversed(costs_)), 2)  # the order given does not matter
    assert [k for k, s in owner.items() if s == owner["big"]] == ["big"]  # one costly cell against ten cheap ones
    ties = partition([(k, 1.0) for k in "dcba"], 2)
    assert ties == {"a": 0, "b": 1, "c": 0, "d": 1}  # equal costs: by key
    unknown = partition([("x", None), ("y", 4.0), ("z", 4.0)], 2)
    assert set(unknown) == {"x", "y", "z"}


def test_parse_shard():
    assert parse_shard("2/4") == (2, 4)
    with pytest.raises(SpecError):
        parse_shard("4/4")


def test_plan_counts_the_run_and_its_cached_share(folder, tmp_path, capsys, monkeypatch):
    calibration = tmp_path / "calibration.csv"
    calibration.write_text("model,weights,status,seconds_per_sample,seconds_per_sample_batched,load_seconds,setting,"
                           "channels,device\nlast-value,trained,ok,0.5,0.25,2.0,48/24,1,cpu\n"
                           "last-value,trained,ok,0.5,0.5,2.0,72/36,1,cpu\n")
    monkeypatch.setattr(costs, "CALIBRATION", (calibration,))
    argv = _args(folder, tmp_path / "o", models=("last-value", "drift"))
    argv[0] = "plan"
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    rows = {r["model"]: r for r in plan["rows"]}
    assert {r["cells"] for r in rows.values()} == {6} and plan["total"]["cached"] == 0
    lv = rows["last-value"]
    assert lv["samples"] > 0 and "calibration" in lv["source"]
    # 48/24 windows at 0.25 s per series, 72/36 at 0.5: between the two rates times the series
    assert 0.25 * lv["samples"] <= lv["cpu_seconds"] <= 0.5 * lv["samples"]
    assert rows["drift"]["cpu_seconds"] is None and "unknown" in rows["drift"]["source"]
    assert plan["total"]["unknown_models"] == ["drift"] and plan["wall_seconds"] is None
    assert plan["load_seconds"]["last-value"] == 2.0
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "unknown" in text and "0% cached" in text and "not measured" in text  # no GPU row

    run = _args(folder, tmp_path / "o", models=("last-value",))
    assert main(run) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    rows = {r["model"]: r for r in plan["rows"]}
    assert rows["last-value"]["cached"] == 6 and rows["last-value"]["to_run"] == 0 and plan["total"]["cached"] == 6
    assert rows["drift"]["cached"] == 0

    from protocols.datasets import load_dataset

    channels = len(load_dataset(str(folder)).channels)
    n_windows = sum(int(r["n_windows"]) for r in csv.DictReader(open(tmp_path / "o" / "records.csv")))
    assert lv["samples"] == n_windows * channels  # the windows the run scored, x its channels


def test_plan_of_a_shard_and_measured_costs(folder, tmp_path, capsys):
    argv = _args(folder, tmp_path / "o", models=("last-value", "drift"))
    assert main(argv) == 0
    argv[0] = "plan"
    capsys.readouterr()
    assert main([*argv, "--shard", "0/2", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["planned_cells"] == 12 and 0 < plan["total"]["cells"] < 12
    assert main([*argv, "--rerun", "--json"]) == 0  # nothing cached: every cell estimated from the measured rows
    plan = json.loads(capsys.readouterr().out)
    assert plan["total"]["cached"] == 0 and plan["total"]["to_run"] == 12
    assert all(r["source"] == "measured (records in --out)" for r in plan["rows"]) and plan["wall_seconds"] > 0


def test_submitit_local_executor_gives_the_records_of_a_serial_run(folder, tmp_path, monkeypatch):
    """``--executor submitit`` without Slurm: submitit's local executor, one process per cell."""
    pytest.importorskip("submitit", reason="the submitit extra is not installed: pip install 'soter-bench[submitit]'")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    models = ("last-value", "drift")
    assert main(_args(folder, tmp_path / "serial", models=models)) == 0
    assert main(_args(folder, tmp_path / "sub", "--executor", "submitit", "--jobs", "2", models=models)) == 0
    assert _lines(tmp_path / "sub") == _lines(tmp_path / "serial")
    assert (tmp_path / "sub" / "submitit").is_dir()  # the jobs' pickles and logs


def test_submitit_parameters_that_are_no_json_are_one_line(folder, tmp_path, capsys, monkeypatch):
    pytest.importorskip("submitit")
    monkeypatch.setenv("SOTER_BENCH_SUBMITIT", "{partition")
    assert main(_args(folder, tmp_path / "o", "--executor", "submitit", models=("last-value",))) == 2
    assert "SOTER_BENCH_SUBMITIT is no JSON object" in capsys.readouterr().err


def _lose(shard: Path, index: int = 0) -> str:
    """Turn the shard's ``index``-th row into the error row of a lost worker (what a killed worker leaves)."""
    from harness.records.store import RecordStore
    from harness.run.runner import lost_cell_row

    text = (shard / "records.csv").read_text().splitlines(keepends=True)
    row = dict(zip(COLUMNS, next(csv.reader([text[1 + index]]))))
    keep = ("key", "task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol", "model_info",
            "code_version", "finished_at")
    lost = {**{c: row[c] for c in keep}, **lost_cell_row(None, MemoryError("killed"))}
    (shard / "records.csv").write_text(text[0])
    store = RecordStore(shard / "records.csv")
    for i, line in enumerate(text[1:]):
        store.write(lost if i == index else dict(zip(COLUMNS, next(csv.reader([line])))))
    return row["key"]


def test_a_lost_workers_row_is_partial_and_the_rerun_shard_merges_into_the_serial_run(folder, tmp_path, capsys):
    """A shard whose worker was lost has an error row: its merge is partial; rerun that shard (it retries the
    error row) and merge again: the serial run's records, the error row superseded."""
    models = ("last-value", "drift")
    assert main(_args(folder, tmp_path / "serial", models=models)) == 0
    shards = [tmp_path / f"s{k}" for k in range(2)]
    for k, out in enumerate(shards):
        assert main(_args(folder, out, "--shard", f"{k}/2", models=models)) == 0
    _lose(shards[1])
    capsys.readouterr()
    merged = tmp_path / "merged"
    assert main(["merge", str(merged), *map(str, shards)]) == EXIT_PARTIAL
    err = capsys.readouterr().err
    assert "partial: forecasting: 1 of 12 planned cells have the error row of a lost worker" in err
    assert main(["table", "forecasting", "--out", str(merged)]) == EXIT_PARTIAL
    assert main(_args(folder, shards[1], "--shard", "1/2", models=models)) == 0  # the documented recovery
    capsys.readouterr()
    assert main(["merge", str(merged), *map(str, shards)]) == 0
    assert "partial" not in capsys.readouterr().err
    assert _lines(merged) == _lines(tmp_path / "serial")  # one row per key: the error row is gone
    assert _order(merged) == _order(tmp_path / "serial")
    assert main(["merge", str(merged), *map(str, shards)]) == 0  # again: nothing changes
    assert _lines(merged) == _lines(tmp_path / "serial")


def test_two_finished_rows_that_differ_are_still_refused_and_an_error_row_never_beats_ok(folder, tmp_path, capsys):
    models = ("last-value",)
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(_args(folder, a, "--shard", "0/1", models=models)) == 0
    subprocess.run(["cp", "-r", str(a), str(b)], check=True)
    _lose(b)
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "m"), str(b), str(a)]) == 0  # a's ok row wins, in either order
    assert _lines(tmp_path / "m") == _lines(a)


def _children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid`` (zombies count as gone)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_submitit_job_controller_stops_with_its_killed_driver(tmp_path):
    """`kill -9` of an `--executor submitit` driver: submitit's local job controller (meant to outlive the session)
    ends its job and exits instead of running it, and starting others, for a driver that will never record them."""
    pytest.importorskip("submitit")
    from tests.waiting import wait_until

    driver = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from harness.run.executor_submitit import SubmititExecutor\n"
         "next(SubmititExecutor(Path(sys.argv[1])).run(time.sleep, [3600]))", str(tmp_path / "submitit")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stderr=subprocess.PIPE)
    controllers: list[int] = []
    jobs: list[int] = []

    def job_running() -> bool:
        controllers[:] = _children(driver.pid)
        jobs[:] = [job for c in controllers for job in _children(c)]
        return bool(jobs)

    wait_until(job_running, driver, "the job ran under its controller")
    driver.kill()
    driver.communicate()
    wait_until(lambda: not any(map(_alive, controllers + jobs)))  # a controller that goes on hangs the test here
