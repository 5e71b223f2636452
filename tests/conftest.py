from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["SOTER_BENCH_PLUGINS"] = "tests.plugin_models"

from baselines.testing import toy_dataset as make_dataset  # noqa: E402,F401 (the tests' dataset)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
