from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SOTER_BENCH_PLUGINS"] = "tests.plugin_models"

# One torch and one numba thread per test process, as every run computes (harness.run.threads), set before either
# is imported: numba's pool otherwise takes every core and its idle workers spin, so on a shared CPU (CI runs the
# default suite beside the slow one on two cores) SOTER's tests ran 8-10x slower. A user's own counts are kept.
from harness.run.threads import single_thread_unless_set  # noqa: E402

single_thread_unless_set()

from baselines.testing import toy_dataset as make_dataset  # noqa: E402,F401 (the tests' dataset)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture()
def folder(tmp_path):
    """A three-subject toy dataset written as a user dataset folder (the runner and CLI tests' input)."""
    from protocols.datasets.folder import write_folder_dataset

    path = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), path)
    return path


def Recorder():
    """The window mean (it reads every context sample), remembering every context it saw."""
    from baselines.naive import WindowMean

    class _Recorder(WindowMean):
        def __init__(self):
            super().__init__()
            self.seen = []

        def _forecast(self, batch, query_times):
            self.seen.append(batch.values.copy())
            return super()._forecast(batch, query_times)

    return _Recorder()
