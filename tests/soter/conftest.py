"""Fixtures shared by the SOTER training tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.soter.training.corpus import synthetic_stream, write_dataset


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A small pre-training corpus: two synthetic subjects (seed 1000), 6 s per state, 64 Hz."""
    path = tmp_path_factory.mktemp("corpus")
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), path)
    return path
