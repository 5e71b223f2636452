"""Issue #32 item 1: a run uses one torch and one numba thread unless the user set OMP_NUM_THREADS or
NUMBA_NUM_THREADS (two threads stall at every OpenMP barrier on a busy CPU: SOTER 40-115x slower)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.run.runner import gpu_device_files

REPO = Path(__file__).resolve().parents[1]
SCRIPT = """
import sys, numba, torch  # imported before the run, as SOTER's modules import them
from harness.run.runner import RunConfig, execute
from protocols.datasets.folder import write_folder_dataset
from tests.conftest import make_dataset
folder, out = sys.argv[1], sys.argv[2]
write_folder_dataset(make_dataset(n_subjects=3, n_samples=200), folder)
execute(RunConfig(datasets=(folder,), models=("last-value",), out=out, progress=False,
                  options={"max_windows_per_subject": 1}), log=lambda m: None)
print(torch.get_num_threads(), numba.get_num_threads())
"""


def _threads_after_a_run(tmp_path, **env: str) -> tuple[int, int]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "toy"), str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=REPO,
                          env={**clean, "PYTHONPATH": str(REPO), **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch_n, numba_n = proc.stdout.split()[-2:]
    return int(torch_n), int(numba_n)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: one thread either way")
def test_a_run_computes_on_one_thread_of_each_pool(tmp_path):
    assert _threads_after_a_run(tmp_path) == (1, 1)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: cannot ask for two threads")
def test_threads_the_user_asked_for_are_kept(tmp_path):
    assert _threads_after_a_run(tmp_path, OMP_NUM_THREADS="2", NUMBA_NUM_THREADS="2") == (2, 2)


LIGHT_RUN = """
import sys
from baselines.testing import toy_dataset
from harness.cli import main
from protocols.datasets.folder import write_folder_dataset
folder, out = sys.argv[1], sys.argv[2]
write_folder_dataset(toy_dataset(n_subjects=3, n_samples=200), folder)
rc = main(["run", "forecasting", "--dataset", folder, "--models", "last-value", "--out", out, "--no-progress",
           "--max-windows-per-subject", "1"])
print(rc, sorted(m for m in sys.modules if m.split(".")[0] == "torch")[:3])
"""


@pytest.mark.skipif(gpu_device_files(), reason="a machine that may have a GPU imports torch to ask (--device auto)")
def test_a_run_of_a_model_without_torch_does_not_import_it(tmp_path):
    """The thread limit sets the environment torch reads when it starts, rather than importing torch to set it
    (most of the CPU of a cached rerun of light models)."""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", LIGHT_RUN, str(tmp_path / "toy"), str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=REPO, env={**clean, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[-2] == "0 []", proc.stdout[-500:]


def test_torch_imported_after_the_limit_gets_one_thread(tmp_path):
    """A torch model loaded after the run's limit: torch reads OMP_NUM_THREADS when it starts, and the load sets
    one thread if an OpenMP runtime had started before the variable was set."""
    code = """
import os, sys
from harness.run.threads import limit_loaded_torch, single_thread_unless_set
assert "torch" not in sys.modules
single_thread_unless_set()
import torch
torch.set_num_threads(2)  # as if an OpenMP runtime had started with two threads before the limit
limit_loaded_torch()
print(os.environ["OMP_NUM_THREADS"], torch.get_num_threads())
"""
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**clean, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1", "1"]


def test_the_test_suite_computes_on_one_thread_of_each_pool_unless_asked():
    """tests/conftest.py limits the pools before torch and numba start (spinning idle numba workers made SOTER's
    tests 8-10x slower beside CI's slow phase); a count set in the environment is kept."""
    import numba
    import torch

    assert numba.config.NUMBA_NUM_THREADS == int(os.environ["NUMBA_NUM_THREADS"])
    assert torch.get_num_threads() == int(os.environ["OMP_NUM_THREADS"])
