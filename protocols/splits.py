"""Leave-one-subject-out folds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from protocols.data import Dataset, DatasetError, Recording
from protocols.subjects import SUBJECTS, blocks_table, subject_table


@dataclass(frozen=True)
class Fold:
    test_subject: str
    train_subjects: tuple[str, ...]

    def __post_init__(self) -> None:
        if self.test_subject in self.train_subjects:
            raise ValueError(f"subject {self.test_subject!r} is both a training and the test subject")
        if not self.train_subjects:
            raise ValueError("a fold needs at least one training subject")


def loso_folds(dataset: Dataset) -> list[Fold]:
    """One fold per subject; the others train (fit the scaler, train probes)."""
    subjects = dataset.subjects
    if len(subjects) < 2:
        raise DatasetError(
            f"dataset {dataset.name!r} has {len(subjects)} subject(s): leave-one-subject-out needs "
            "at least two (the normaliser is fitted on the training subjects only); to evaluate one subject, cut "
            "its recordings into K contiguous blocks that act as subjects: --dataset NAME:blocks=K "
            "(a folder path takes it too: --dataset DIR:blocks=K)"
        )
    return [Fold(s, tuple(o for o in subjects if o != s)) for s in subjects]


def get_fold(dataset: Dataset, test_subject: str) -> Fold:
    for fold in loso_folds(dataset):
        if fold.test_subject == test_subject:
            return fold
    raise DatasetError(f"dataset {dataset.name!r} has no subject {test_subject!r}")


def split_into_blocks(dataset: Dataset, blocks: int) -> Dataset:
    """Each recording cut into ``blocks`` contiguous, equal parts, each part its own pseudo-subject
    ``<subject>#<i>``: how a dataset of one subject (one MIT-BIH record, say) gets leave-one-out
    folds. The normaliser of a fold is then fitted on the other blocks of the same recordings, so
    such folds are leave-one-block-out, not leave-one-subject-out; the dataset is renamed
    ``<name>:blocks=<K>`` so that tables and records say so."""
    if blocks < 2:
        raise DatasetError(f"blocks must be >= 2, got {blocks}")
    recs = []
    for r in dataset.recordings:
        if r.n_samples < blocks:
            raise DatasetError(f"dataset {dataset.name!r}, recording {r.name!r}: {r.n_samples} samples cannot be "
                               f"cut into {blocks} blocks")
        edges = np.linspace(0, r.n_samples, blocks + 1).round().astype(int)
        for i, (a, b) in enumerate(zip(edges[:-1], edges[1:]), start=1):
            recs.append(Recording(f"{r.subject}#{i}", f"{r.name}#{i}", r.values[:, a:b], r.timestamps[a:b],
                                  None if r.labels is None else r.labels[a:b]))
    return Dataset(f"{dataset.name}:blocks={blocks}", dataset.channels, tuple(recs), dataset.sampling_rate,
                   dataset.label_names, f"{dataset.description} (each recording in {blocks} blocks, "
                   "leave-one-block-out)", {**dataset.metadata, "blocks": blocks,
                                            **({SUBJECTS: blocks_table(subject_table(dataset), blocks)}
                                               if subject_table(dataset) else {})})
