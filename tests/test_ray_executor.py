"""``run --executor ray`` on a local Ray instance: the records of a serial run, resume after an
interrupt, an error row for a cell whose worker is killed, and clear errors without Ray."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.cli import main
from harness.records.store import MEASURED
from harness.run.runner import RunConfig, execute, resolve_device
from harness.records.store import read_records
from protocols.datasets.folder import write_folder_dataset
from protocols.specs import SpecError, Setting
from tests.conftest import make_dataset
from tests.waiting import wait_for_lines

pytestmark = pytest.mark.slow  # issue #44: Ray starts a local instance per test: .ci/run's second phase

REPO = Path(__file__).resolve().parents[1]
TIMING = ["seconds", "finished_at", "code_version", *MEASURED]  # when, by what code, and how fast
ENV = {**os.environ, "SOTER_BENCH_PLUGINS": "tests.plugin_models", "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), path)
    return path


@pytest.fixture(scope="module")
def local_ray():
    """One local instance for the in-process tests (starting one costs ~10 s); the executor joins it
    and, not having started it, leaves it running."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install 'soter-bench[ray]'")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _records(out: Path) -> pd.DataFrame:
    text = pd.read_csv(out / "records.csv", dtype=str, keep_default_na=False)
    return text.drop(columns=TIMING).sort_values("key").reset_index(drop=True)


def _argv(folder: Path, out: Path, *extra: str, models=("last-value", "drift", "seasonal-naive")) -> list[str]:
    return ["run", "forecasting", "--dataset", str(folder), "--models", *models, "--settings", "48/24", "72/36",
            "--max-windows-per-subject", "4", "--out", str(out), "--no-progress", *extra]


def test_ray_sweep_gives_exactly_the_records_of_a_serial_run(local_ray, folder, tmp_path):
    assert main(_argv(folder, tmp_path / "serial", "--jobs", "1")) == 0
    assert main(_argv(folder, tmp_path / "ray", "--executor", "ray")) == 0
    assert local_ray.is_initialized()  # joined, not started: left running
    pd.testing.assert_frame_equal(_records(tmp_path / "serial"), _records(tmp_path / "ray"))
    again = execute(RunConfig(datasets=(str(folder),), models=("last-value", "drift", "seasonal-naive"),
                              options={"settings": (Setting(48, 24), Setting(72, 36)), "max_windows_per_subject": 4},
                              out=tmp_path / "ray", progress=False, executor="ray"))
    assert again.planned == 3 * 2 * 3 and again.skipped_done == again.planned and again.ran == 0  # cached


def test_a_cell_whose_worker_is_killed_gets_an_error_row_and_the_sweep_goes_on(local_ray, folder, tmp_path):
    out = tmp_path / "o"
    argv = _argv(folder, out, "--executor", "ray", models=("test-kills-worker", "last-value"))
    argv[argv.index("72/36")] = "96/48"  # fewer killed workers to restart; one window too long for a context
    assert main(argv) == 0
    frame = read_records(out / "records.csv")
    killed = frame[frame.model == "test-kills-worker"]
    assert len(killed) == 6 and set(killed.status) == {"error"}
    assert killed.error.str.contains("worker running this cell was lost").all()
    assert set(frame[frame.model == "last-value"].status) == {"ok"}


def test_device_is_resolved_against_the_cluster():
    assert resolve_device("auto", cluster_gpus=0) == "cpu"
    assert resolve_device("auto", cluster_gpus=2) == "cuda"
    with pytest.raises(SpecError, match="has no GPU"):
        resolve_device("cuda", cluster_gpus=0)
    with pytest.raises(SpecError, match="use --device cuda"):
        resolve_device("cuda:1", cluster_gpus=2)


def test_interrupted_ray_sweep_resumes_to_the_records_of_an_uninterrupted_run(local_ray, folder, tmp_path):
    """Interrupted with SIGINT in a process of its own (which starts and stops its own Ray instance),
    resumed in this one (joining the shared instance)."""
    args = [sys.executable, "-m", "harness", *_argv(folder, tmp_path / "interrupted", "--executor", "ray",
                                                      models=("test-slow-last-value",))]
    records = tmp_path / "interrupted" / "records.csv"
    proc = subprocess.Popen(args, cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_lines(records, 3, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate()
    assert proc.returncode == 130, err.decode()
    assert 2 <= len(read_records(records)) < 6
    assert main(args[3:]) == 0
    assert main(_argv(folder, tmp_path / "clean", models=("test-slow-last-value",))) == 0
    pd.testing.assert_frame_equal(_records(tmp_path / "interrupted"), _records(tmp_path / "clean"))


def test_without_ray_the_error_names_the_extra(folder, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    assert main(_argv(folder, tmp_path / "o", "--executor", "ray")) == 2
    assert "soter-bench[ray]" in capsys.readouterr().err


def test_ray_address_without_the_ray_executor_is_a_usage_error(folder, tmp_path, capsys):
    assert main(_argv(folder, tmp_path / "o", "--ray-address", "auto")) == 2
    assert "--ray-address needs --executor ray" in capsys.readouterr().err


class _RecordingRay:
    """Just the calls close() may make, recorded."""

    def __init__(self) -> None:
        self.cancelled: list = []
        self.shutdowns = 0

    def cancel(self, ref, **kwargs) -> None:
        self.cancelled.append(ref)

    def shutdown(self) -> None:
        self.shutdowns += 1


def test_close_on_an_interrupt_never_cancels_tasks_in_flight():
    """A ray.cancel racing a task's completion crashed the driver's core worker in CI (exit 1, not
    130; ray-project/ray#54527): close forgets the tasks and stops only the instance it started."""
    from harness.run.executor_ray import RayExecutor

    executor = object.__new__(RayExecutor)
    fake = _RecordingRay()
    executor._ray, executor._pending, executor._started = fake, {"ref-a": "cell-a", "ref-b": "cell-b"}, True
    executor.close()
    assert fake.cancelled == [] and fake.shutdowns == 1 and executor._pending == {}
    executor.close()  # idempotent: nothing started is left to stop
    assert fake.shutdowns == 1
