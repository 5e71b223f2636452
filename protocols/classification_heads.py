"""Classification heads beside the paper's linear probe (issue #49; docs/protocols.md, "Classification heads").

The paper's protocol (``protocols.classification``) trains one head, a StandardScaler + LogisticRegression
probe on frozen embeddings.  This study keeps everything else of that protocol (the label-pure segments the
seed draws, LOSO folds, the stratified label-budget subset of the training subjects' segments, the pooled
Macro-F1 / Macro-AUROC) and swaps the head:

* ``linear``: the paper's probe (``probe_fold``), the paper's numbers bit for bit;
* ``mlp``: StandardScaler + a one-hidden-layer MLP (adam, no early stopping: a 1 % budget leaves too few
  rows to hold some out), seeded by the run seed, fold and budget;
* ``finetune``: the encoder itself is trained with a linear head on the budget's raw segments (a fitter
  the caller supplies, e.g. ``models.soter.classifier_finetune``, since protocols import no models).

Every head sees only the training subjects' rows of the budget subset; the test subject's labels enter the
scores only.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from protocols.classification import (ClassificationOutcome, PooledPredictions, SegmentPredictions, budget_subset,
                                      fold_seed, labelled_segments, macro_scores, probe_fold)
from protocols.data import Dataset, DatasetError
from protocols.specs import ClassificationSpec, HeadsSpec
from protocols.splits import Fold, loso_folds
from protocols.windows import stable_seed

# (fold, training rows of the budget subset, test rows, their labels, number of classes) -> (labels, proba)
HeadFit = Callable[[Fold, np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def condition(head: str, budget: float) -> str:
    """A cell's condition: ``mlp:budget=5%`` (the budget last, so that tables order it numerically)."""
    return f"{head}:budget={budget * 100:g}%"


def head_of(condition_text: str) -> str:
    return condition_text.split(":", 1)[0]


def head_seed(seed: int, data: str, fold: str, head: str, budget: float) -> int:
    """The initialisation and batch order of a trained head: drawn by the run seed, data, fold, head and budget."""
    return stable_seed(seed, data, fold, "head", head, budget) % (2 ** 31)


def linear_fit(x: np.ndarray, spec: ClassificationSpec) -> HeadFit:
    """The paper's probe on embeddings ``x`` [N, D] of every segment (one fold's)."""
    def fit(fold, train, test, y, n_classes):
        return probe_fold(x[train], y, x[test], n_classes, spec.probe_max_iter)
    return fit


def mlp_fit(x: np.ndarray, spec: HeadsSpec, random_state: Callable[[Fold], int]) -> HeadFit:
    """StandardScaler + MLPClassifier (one hidden layer, adam, no early stopping) on embeddings ``x``."""
    def fit(fold, train, test, y, n_classes):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        head = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(spec.mlp_hidden,),
                                                             max_iter=spec.mlp_max_iter, early_stopping=False,
                                                             random_state=random_state(fold)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed epoch budget, named in the spec
            head.fit(x[train], y)
        proba = np.zeros((test.size, n_classes))
        proba[:, head.classes_] = head.predict_proba(x[test])
        return head.predict(x[test]), proba
    return fit


def evaluate_heads(dataset: Dataset, spec: ClassificationSpec, budget: float, seed: int,
                   fit_of: Callable[[Fold], HeadFit]) -> ClassificationOutcome:
    """One (dataset, model, head, budget, seed) result: the paper's loop (``evaluate_classification``) with the
    head ``fit_of(fold)`` in place of the linear probe; with ``linear_fit`` it gives the paper's numbers."""
    segments = labelled_segments(dataset, spec, seed)
    if segments.labels.size == 0:
        raise DatasetError(f"dataset {dataset.name!r}: no label-pure segment of {spec.length} samples")
    n_classes = len(dataset.label_names or ())
    pooled = PooledPredictions()
    for fold in loso_folds(dataset):
        test = segments.subjects == fold.test_subject
        if not test.any():
            pooled.notes.append(f"fold {fold.test_subject}: no labelled test segment")
            continue
        train_rows = np.flatnonzero(~test)
        y_train = segments.labels[train_rows]
        subset = budget_subset(y_train, budget, fold_seed(seed, dataset.content_id, fold.test_subject, budget))
        classes = np.unique(y_train[subset])
        n_test = int(test.sum())
        if classes.size < 2:
            pooled.notes.append(f"fold {fold.test_subject}: one class in the training subset, probe predicts it")
            y_pred, proba = np.full(n_test, classes[0]), np.zeros((n_test, n_classes))
            proba[:, classes[0]] = 1.0
        else:
            y_pred, proba = fit_of(fold)(fold, train_rows[subset], np.flatnonzero(test), y_train[subset], n_classes)
        pooled.y_true.append(segments.labels[test])
        pooled.subjects.append(segments.subjects[test])
        pooled.y_pred.append(np.asarray(y_pred))
        pooled.proba.append(proba)
    y_true = np.concatenate(pooled.y_true)
    y_pred = np.concatenate(pooled.y_pred)
    f1, auroc, notes = macro_scores(y_true, y_pred, np.concatenate(pooled.proba))
    return ClassificationOutcome(f1, auroc, int(y_true.size), tuple(pooled.notes + notes),
                                 SegmentPredictions(np.concatenate(pooled.subjects), y_true, y_pred))


def checked(x: np.ndarray, n: int, fold: Fold) -> np.ndarray:
    """Embeddings of a fold, refused (as the paper's loop does) when their shape or values are wrong."""
    if x.shape[0] != n or not np.all(np.isfinite(x)):
        raise RuntimeError(f"embeddings for fold {fold.test_subject} have shape {x.shape} "
                           f"or non-finite values; expected {n} rows")
    return x
