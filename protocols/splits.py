"""Leave-one-subject-out folds."""

from __future__ import annotations

from dataclasses import dataclass

from protocols.data import Dataset, DatasetError


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
            "at least two (the normaliser is fitted on the training subjects only)"
        )
    return [Fold(s, tuple(o for o in subjects if o != s)) for s in subjects]


def get_fold(dataset: Dataset, test_subject: str) -> Fold:
    for fold in loso_folds(dataset):
        if fold.test_subject == test_subject:
            return fold
    raise DatasetError(f"dataset {dataset.name!r} has no subject {test_subject!r}")
