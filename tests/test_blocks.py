"""`NAME:blocks=K`: a dataset of one subject evaluated leave-one-block-out."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.data import Dataset, DatasetError, Recording
from protocols.datasets import load_dataset
from protocols.splits import loso_folds, split_into_blocks


def _one_subject(n: int = 101) -> Dataset:
    t = np.arange(n) / 10.0
    return Dataset("one", ("a", "b"), (Recording("s1", "r1", np.vstack([np.sin(t), t]), t),), 10.0)


def test_blocks_are_contiguous_disjoint_and_cover_the_recording():
    ds = split_into_blocks(_one_subject(), 4)
    assert ds.name == "one:blocks=4" and ds.subjects == ("s1#1", "s1#2", "s1#3", "s1#4")
    joined = np.concatenate([r.values for r in ds.recordings], axis=1)
    np.testing.assert_array_equal(joined, _one_subject().recordings[0].values)
    folds = loso_folds(ds)
    assert len(folds) == 4 and all(f.test_subject not in f.train_subjects for f in folds)


def test_bad_block_counts_are_refused():
    with pytest.raises(DatasetError, match="blocks must be >= 2"):
        split_into_blocks(_one_subject(), 1)
    with pytest.raises(DatasetError, match="cannot be cut into 500 blocks"):
        split_into_blocks(_one_subject(), 500)
    with pytest.raises(DatasetError, match="must be an integer"):
        load_dataset("synthetic-cohort:blocks=two")


def test_a_one_subject_dataset_gets_folds_through_the_suffix(tmp_path):
    from pathlib import Path

    wfdb = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wfdb"
    if not (wfdb / "100.hea").is_file():
        pytest.skip("../shared/data/wfdb is not beside this checkout")
    with pytest.raises(DatasetError, match="at least two"):
        loso_folds(load_dataset("mitbih", data_root=wfdb))
    ds = load_dataset("mitbih:blocks=6", data_root=wfdb)
    assert ds.name == "mitbih:blocks=6" and len(loso_folds(ds)) == 6
    assert sum(r.n_samples for r in ds.recordings) == 650000
