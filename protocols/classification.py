"""Frozen-embedding linear probes under LOSO, with label budgets (docs/protocols.md).

Segments of ``length`` samples lying inside one labelled state are embedded by the frozen
model (normalised with the fold's training-subject MinMax); a StandardScaler +
LogisticRegression probe is trained on the fold's training subjects only (on a stratified,
seeded share of their segments, the label budget) and predicts the test subject.  Test
predictions of all folds are pooled, then Macro-F1 and one-vs-rest Macro-AUROC computed.

The run seed draws the data, never the optimiser: it sets each recording's segment offset
(phase of the segment grid), which segments a subject keeps when more than
``max_windows_per_subject`` qualify, and the label-budget subset.  The probe (lbfgs) is
deterministic given its rows, so two runs with one seed agree exactly and runs with different
seeds differ by the segments they saw, also at a 100 % budget.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from protocols import interface
from protocols.data import Dataset, DatasetError, Recording
from protocols.interface import Model, SeriesBatch
from protocols.scaling import fit_fold_scaler
from protocols.specs import ClassificationSpec, SamplingSpec
from protocols.splits import Fold, loso_folds
from protocols.windows import WindowRef, extract_segments, select_segments, stable_seed

RANDOM_BASELINE = "random"  # the paper's reference row: uniform random labels, constant scores


@dataclass(frozen=True)
class LabelledSegments:
    refs: tuple[WindowRef, ...]
    labels: np.ndarray  # [N] class codes
    subjects: np.ndarray  # [N] subject ids


def _pure(rec: Recording, starts: np.ndarray, length: int) -> np.ndarray:
    if rec.labels is None:
        return np.zeros(starts.size, dtype=bool)
    lab = rec.labels
    first = lab[starts]
    changes = np.concatenate([[0], np.cumsum(lab[1:] != lab[:-1])])  # label-change counter
    return (first >= 0) & (changes[starts + length - 1] == changes[starts])


def check_classifiable(dataset: Dataset) -> None:
    """Refuse, before any cell runs, a dataset on which classification cannot give one result."""
    if dataset.label_names is None or all(r.labels is None for r in dataset.recordings):
        raise DatasetError(f"dataset {dataset.name!r} has no labels: classification needs them "
                           "(a `label` column, see docs/datasets.md)")
    present = {int(c) for r in dataset.recordings if r.labels is not None for c in np.unique(r.labels) if c >= 0}
    if len(present) < 2:
        raise DatasetError(f"dataset {dataset.name!r} has {len(present)} labelled class(es): "
                           "classification needs at least two")


def segment_offset(dataset: Dataset, rec: Recording, spec: ClassificationSpec, seed: int) -> int:
    """Where a recording's segment grid starts, in [0, stride): drawn by (seed, the data's content, recording)."""
    stride = spec.stride or spec.length
    rng = np.random.default_rng(stable_seed(seed, dataset.content_id, rec.subject, rec.name,
                                            "classification-offset", spec.length, stride))
    return int(rng.integers(stride))


def labelled_segments(dataset: Dataset, spec: ClassificationSpec, seed: int = 0) -> LabelledSegments:
    """The label-pure segments of one run: the seed draws every recording's grid offset and, where
    a subject has more than ``max_windows_per_subject`` of them, which ones are kept."""
    check_classifiable(dataset)
    stride = spec.stride or spec.length
    sampling = SamplingSpec(max_windows_per_subject=spec.max_windows_per_subject, seed=seed)

    def accept(rec: Recording, starts: np.ndarray) -> np.ndarray:
        # candidates come at every sample (stride 1); keep the seeded grid offset + k * stride
        keep = starts % stride == segment_offset(dataset, rec, spec, seed)
        keep[keep] = _pure(rec, starts[keep], spec.length)
        return keep

    refs: list[WindowRef] = []
    for subject in dataset.subjects:
        sel = select_segments(dataset, subject, spec.length, 1, sampling,
                              tag=f"classification|{spec.length}", accept=accept)
        refs.extend(sel.windows)
    labels = np.array([dataset.recordings[r.recording].labels[r.start] for r in refs], dtype=np.int64)
    subjects = np.array([dataset.recordings[r.recording].subject for r in refs])
    return LabelledSegments(tuple(refs), labels, subjects)


def embed_segments(model: Model, dataset: Dataset, fold: Fold, segments: LabelledSegments,
                   spec: ClassificationSpec, batch_size: int = 64) -> np.ndarray:
    """Embeddings [N, D] of every segment, normalised with this fold's scaler."""
    raw, times = extract_segments(dataset, segments.refs, spec.length)
    values = fit_fold_scaler(dataset, fold).transform(raw)
    out = [interface.embed(model, SeriesBatch(values[a:a + batch_size], times[a:a + batch_size]))
           for a in range(0, len(values), batch_size)]
    return np.concatenate(out).astype(np.float64)


def budget_subset(labels: np.ndarray, budget: float, rng: np.random.Generator) -> np.ndarray:
    """Stratified share: ceil(budget * n_c) segments of every class c (at least one)."""
    keep = []
    for c in np.unique(labels):
        idx = np.flatnonzero(labels == c)
        k = max(1, int(np.ceil(budget * idx.size - 1e-9)))
        keep.append(rng.choice(idx, min(k, idx.size), replace=False))
    return np.sort(np.concatenate(keep))


@dataclass
class PooledPredictions:
    y_true: list[np.ndarray] = field(default_factory=list)
    y_pred: list[np.ndarray] = field(default_factory=list)
    proba: list[np.ndarray] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    subjects: list[np.ndarray] = field(default_factory=list)


def probe_fold(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, n_classes: int,
               max_iter: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and class probabilities [N, n_classes] (0 for classes absent from training).

    lbfgs minimises the convex L2-regularised log-loss from a zero start: the probe is a
    deterministic function of its training rows, so no seed enters here (docs/protocols.md)."""
    from sklearn.linear_model import LogisticRegression  # sklearn (with scipy, pandas) takes ~1.5 s to import
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=max_iter))
    probe.fit(x_train, y_train)
    proba = np.zeros((x_test.shape[0], n_classes))
    proba[:, probe.classes_] = probe.predict_proba(x_test)
    return probe.predict(x_test), proba


# One fold's head: (training rows of the budget subset, test rows, the training rows' labels, number of classes)
# -> (predicted labels [n_test], class probabilities [n_test, n_classes]); rows index labelled_segments' segments.
HeadFit = Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]
# A head: its fitter for a fold, asked once in every fold that has a test segment, before the budget is drawn.
Head = Callable[[Fold], HeadFit]
# A head on frozen embeddings: (fold, training rows' embeddings, their labels, test embeddings, number of classes).
EmbeddingFit = Callable[[Fold, np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]]


def checked(x: np.ndarray, n: int, fold: Fold) -> np.ndarray:
    """A fold's embeddings, refused when their shape or values are wrong (a probe on them would mislead)."""
    if x.shape[0] != n or not np.all(np.isfinite(x)):
        raise RuntimeError(f"embeddings for fold {fold.test_subject} have shape {x.shape} "
                           f"or non-finite values; expected {n} rows")
    return x


def embedding_head(embeddings: Callable[[Fold], np.ndarray], n: int, fit: EmbeddingFit) -> Head:
    """The head ``fit`` on ``embeddings(fold)`` [n, D] of every segment, checked in every fold."""
    def per_fold(fold: Fold) -> HeadFit:
        x = checked(embeddings(fold), n, fold)
        return lambda train, test, y, n_classes: fit(fold, x[train], y, x[test], n_classes)
    return per_fold


def linear_probe(embeddings: Callable[[Fold], np.ndarray], n: int, spec: ClassificationSpec) -> Head:
    """The paper's head: ``probe_fold`` on the fold's embeddings."""
    return embedding_head(embeddings, n, lambda fold, x_train, y, x_test, n_classes: probe_fold(
        x_train, y, x_test, n_classes, spec.probe_max_iter))


def random_fold(n_test: int, classes: np.ndarray, n_classes: int, rng: np.random.Generator):
    labels = rng.choice(classes, n_test)
    return labels, np.full((n_test, n_classes), 1.0 / n_classes)


def macro_scores(y_true: np.ndarray, y_pred: np.ndarray, proba: np.ndarray) -> tuple[float, float, list[str]]:
    """Macro-F1 over the classes present in truth or prediction; one-vs-rest Macro-AUROC over
    the classes that have positives and negatives in the pooled test set (others reported)."""
    from sklearn.metrics import f1_score, roc_auc_score

    notes = []
    f1 = float(f1_score(y_true, y_pred, average="macro", labels=np.union1d(y_true, y_pred), zero_division=0))
    aucs = []
    for c in range(proba.shape[1]):
        positives = y_true == c
        if positives.all() or not positives.any():
            notes.append(f"class {c}: AUROC undefined (no {'negatives' if positives.all() else 'positives'})")
            continue
        aucs.append(roc_auc_score(positives, proba[:, c]))
    return f1, (float(np.mean(aucs)) if aucs else float("nan")), notes


def fold_seed(seed: int, data: str, fold: str, budget: float) -> np.random.Generator:
    """The draw of one fold's label budget; ``data``: the dataset's ``content_id``, not its name."""
    return np.random.default_rng(stable_seed(seed, data, fold, "budget", budget))


@dataclass(frozen=True)
class ClassificationOutcome:
    macro_f1: float
    macro_auroc: float
    n_windows: int  # pooled test segments
    notes: tuple[str, ...]
    predictions: "SegmentPredictions | None" = None  # per test segment (breakdowns by subject)


@dataclass(frozen=True)
class SegmentPredictions:
    """Each pooled test segment's subject, true and predicted class (kept beside the row: harness.records.cell_files)."""

    subject: np.ndarray
    y_true: np.ndarray
    y_pred: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {"subject": self.subject.astype(str), "y_true": self.y_true, "y_pred": self.y_pred}


def evaluate_classification(
    dataset: Dataset, spec: ClassificationSpec, budget: float, seed: int,
    embeddings: Callable[[Fold], np.ndarray] | None, head: Head | None = None,
) -> ClassificationOutcome:
    """One (dataset, model, budget, seed) result; ``embeddings(fold)`` gives [N, D] for every
    segment of ``labelled_segments(dataset, spec, seed)`` under that fold's normalisation (the
    seed draws the segments, so the embeddings belong to this seed) for the paper's linear probe;
    ``head`` trains another head in its place (``protocols.classification_heads``) on the same
    segments, folds and budget subsets; neither = random baseline."""
    segments = labelled_segments(dataset, spec, seed)
    if segments.labels.size == 0:
        raise DatasetError(f"dataset {dataset.name!r}: no label-pure segment of {spec.length} samples")
    if head is not None and embeddings is not None:
        raise ValueError("evaluate_classification: embeddings (the paper's probe) or a head, not both")
    if embeddings is not None:
        head = linear_probe(embeddings, segments.labels.size, spec)
    n_classes = len(dataset.label_names or ())
    pooled = PooledPredictions()
    for fold in loso_folds(dataset):
        test = segments.subjects == fold.test_subject
        if not test.any():
            pooled.notes.append(f"fold {fold.test_subject}: no labelled test segment")
            continue
        rng = fold_seed(seed, dataset.content_id, fold.test_subject, budget)
        train_rows = np.flatnonzero(~test)
        y_train = segments.labels[train_rows]
        n_test = int(test.sum())
        if head is None:
            y_pred, proba = random_fold(n_test, np.unique(segments.labels), n_classes, rng)
        else:
            fit = head(fold)  # every fold's embeddings are checked, also where one class is left
            subset = budget_subset(y_train, budget, rng)
            classes = np.unique(y_train[subset])
            if classes.size < 2:
                pooled.notes.append(f"fold {fold.test_subject}: one class in the training subset, "
                                    "probe predicts it")
                y_pred = np.full(n_test, classes[0])
                proba = np.zeros((n_test, n_classes))
                proba[:, classes[0]] = 1.0
            else:
                y_pred, proba = fit(train_rows[subset], np.flatnonzero(test), y_train[subset], n_classes)
        pooled.y_true.append(segments.labels[test])
        pooled.subjects.append(segments.subjects[test])
        pooled.y_pred.append(np.asarray(y_pred))
        pooled.proba.append(proba)
    y_true = np.concatenate(pooled.y_true)
    y_pred = np.concatenate(pooled.y_pred)
    f1, auroc, notes = macro_scores(y_true, y_pred, np.concatenate(pooled.proba))
    return ClassificationOutcome(f1, auroc, int(y_true.size), tuple(pooled.notes + notes),
                                 SegmentPredictions(np.concatenate(pooled.subjects), y_true, y_pred))
