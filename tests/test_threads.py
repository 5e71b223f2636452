"""Issue #32 item 1: a run uses one torch and one numba thread unless the user set OMP_NUM_THREADS or
NUMBA_NUM_THREADS (two threads stall at every OpenMP barrier on a busy CPU: SOTER 40-115x slower)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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
