"""Issue #49 item 3: classification heads beside the paper's linear probe (protocols.classification_heads), each
trained in the paper's loop (protocols.classification.evaluate_classification(..., head=...)).

The linear head is the paper's probe bit for bit; the MLP and the fine-tuned SOTER encoder train on the budget's
training-subject rows only (swapping the test subject's labels leaves its predictions unchanged), repeat under
one seed, and the fine-tuned encoder starts from the loaded weights in every fold and leaves them untouched.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from harness.registry.tasks import get_task
from harness.run import cells
from harness.run.cells import Cell
from protocols import classification as cls
from protocols import classification_heads as heads
from protocols.scaling import fit_fold_scaler
from protocols.specs import ClassificationSpec, SpecError
from protocols.splits import loso_folds
from protocols.windows import extract_segments
from tests.conftest import make_dataset

SPEC = heads.HeadsSpec(length=32, max_windows_per_subject=8, budgets=(0.25, 1.0), finetune_steps=3)
PAPER = ClassificationSpec(length=32, max_windows_per_subject=8, budgets=(0.25, 1.0))


def _dataset():
    return make_dataset(n_subjects=5, n_samples=600)


def _features(ds, segments, fold):
    """Label-free embeddings of the segments under the fold's normalisation: mean, std and slope per channel."""
    raw, _ = extract_segments(ds, segments.refs, SPEC.length)
    v = fit_fold_scaler(ds, fold).transform(raw)
    slope = v[:, :, -1] - v[:, :, 0]
    return np.concatenate([v.mean(2), v.std(2), slope], axis=1)


def _fit_of(ds, seed, head):
    segments = cls.labelled_segments(ds, SPEC, seed)

    def embeddings(fold):
        return _features(ds, segments, fold)
    if head == "linear":
        return cls.linear_probe(embeddings, segments.labels.size, SPEC)
    return heads.mlp_head(embeddings, segments.labels.size, SPEC,
                          lambda f: heads.head_seed(seed, ds.content_id, f.test_subject, head, 0.25))


def _evaluate(ds, budget, seed, head):
    return cls.evaluate_classification(ds, SPEC, budget, seed, None, head=head)


def _swapped(ds, subject):
    """The dataset with one subject's two classes swapped; its draws (seeded by the content) kept as they were."""
    recs = tuple(dataclasses.replace(r, labels=1 - r.labels) if r.subject == subject else r for r in ds.recordings)
    out = dataclasses.replace(ds, recordings=recs)
    out.__dict__["content_id"] = ds.content_id  # same segments, budget subsets and head seeds: only the labels differ
    return out


@pytest.mark.parametrize("budget", [0.1, 0.25, 1.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_linear_head_gives_the_papers_numbers_bit_for_bit(budget, seed):
    ds = _dataset()
    segments = cls.labelled_segments(ds, PAPER, seed)
    paper = cls.evaluate_classification(ds, PAPER, budget, seed, lambda fold: _features(ds, segments, fold))
    ours = _evaluate(ds, budget, seed, _fit_of(ds, seed, "linear"))
    assert (ours.macro_f1, ours.macro_auroc, ours.n_windows, ours.notes) == \
        (paper.macro_f1, paper.macro_auroc, paper.n_windows, paper.notes)
    for name, value in paper.predictions.arrays().items():
        np.testing.assert_array_equal(ours.predictions.arrays()[name], value)


def test_linear_cell_equals_the_classification_tasks_cell(tmp_path):
    ds = _dataset()

    def row(task, spec, condition):
        cell = Cell(task, "toy", "all", "32", "stat-features", 0, spec, condition=condition, level=0.25,
                    cache_dir=str(tmp_path / task))
        return cells.evaluate_cell(get_task(task), cell, ds)

    paper = row("classification", PAPER, "budget=25%")
    linear, mlp = (row("classification-heads", SPEC, heads.condition(h, 0.25)) for h in ("linear", "mlp"))
    assert paper["status"] == linear["status"] == mlp["status"] == "ok"
    assert (linear["macro_f1"], linear["macro_auroc"]) == (paper["macro_f1"], paper["macro_auroc"])
    assert (mlp["macro_f1"], mlp["macro_auroc"]) != (paper["macro_f1"], paper["macro_auroc"])


def test_embeddings_and_a_head_together_are_refused():
    """The paper's probe reads the embeddings, a head brings its own: given both, one would be silently unused."""
    ds = _dataset()
    segments = cls.labelled_segments(ds, SPEC, 0)
    with pytest.raises(ValueError, match="not both"):
        cls.evaluate_classification(ds, SPEC, 0.25, 0, lambda fold: _features(ds, segments, fold),
                                    head=_fit_of(ds, 0, "mlp"))


def test_mlp_head_repeats_under_a_seed_and_differs_from_linear():
    ds = _dataset()
    a, again = (_evaluate(ds, 0.25, 0, _fit_of(ds, 0, "mlp")) for _ in range(2))
    linear = _evaluate(ds, 0.25, 0, _fit_of(ds, 0, "linear"))
    assert (a.macro_f1, a.macro_auroc) == (again.macro_f1, again.macro_auroc)
    np.testing.assert_array_equal(a.predictions.y_pred, again.predictions.y_pred)
    assert a.macro_auroc != linear.macro_auroc


@pytest.mark.parametrize("head", ["linear", "mlp"])
def test_a_head_never_sees_the_test_subjects_labels(head):
    ds = _dataset()
    subject = ds.subjects[2]
    swapped = _swapped(ds, subject)
    seen = []

    def spying(data):
        fit_of = _fit_of(data, 0, head)

        def outer(fold):
            inner = fit_of(fold)

            def fit(train, test, y, n_classes):
                segs = cls.labelled_segments(data, SPEC, 0)
                seen.append((fold.test_subject, set(segs.subjects[train])))
                return inner(train, test, y, n_classes)
            return fit
        return outer

    a = _evaluate(ds, 0.25, 0, spying(ds))
    b = _evaluate(swapped, 0.25, 0, spying(swapped))
    assert seen and all(test not in train for test, train in seen)
    rows = a.predictions.subject == subject
    assert rows.any()
    np.testing.assert_array_equal(a.predictions.y_true[rows], 1 - b.predictions.y_true[rows])  # the labels moved
    np.testing.assert_array_equal(a.predictions.y_pred[rows], b.predictions.y_pred[rows])  # its predictions did not


def test_heads_are_named_and_checked():
    assert heads.head_of(heads.condition("mlp", 0.05)) == "mlp"
    assert heads.condition("mlp", 0.05) == "mlp:budget=5%"
    with pytest.raises(SpecError, match="--heads ridge"):
        heads.HeadsSpec(heads=("ridge",))
    assert heads.HeadsSpec().fingerprint() != heads.HeadsSpec(mlp_hidden=8).fingerprint()


# -- the fine-tuned SOTER encoder (soter-tiny-random) ------------------------------------------------------------
def _tiny():
    from models.soter.adapter import load_random_tiny

    return load_random_tiny(seed=0)


def _finetune_fit_of(adapter, ds, seed, calls=None):
    from models.soter.classifier_finetune import finetune_predict

    segments = cls.labelled_segments(ds, SPEC, seed)
    raw, times = extract_segments(ds, segments.refs, SPEC.length)

    def fit_of(fold):
        values = fit_fold_scaler(ds, fold).transform(raw)

        def fit(train, test, y, n_classes):
            if calls is not None:
                calls.append((fold.test_subject, set(segments.subjects[train])))
            return finetune_predict(adapter, values, times, train, test, y, n_classes, SPEC.finetune_steps,
                                    SPEC.finetune_lr, heads.head_seed(seed, ds.content_id, fold.test_subject,
                                                                      "finetune", 0.25))
        return fit
    return fit_of


def test_finetune_repeats_never_sees_the_test_subject_and_reloads_the_weights():
    import torch

    ds = _dataset()
    adapter = _tiny()
    before = {k: v.clone() for k, v in adapter.model.state_dict().items()}
    calls = []
    a = _evaluate(ds, 0.25, 0, _finetune_fit_of(adapter, ds, 0, calls))
    assert all(torch.equal(before[k], v) for k, v in adapter.model.state_dict().items())  # the loaded weights stay
    again = _evaluate(ds, 0.25, 0, _finetune_fit_of(adapter, ds, 0))
    assert (a.macro_f1, a.macro_auroc) == (again.macro_f1, again.macro_auroc)
    assert calls and all(test not in train for test, train in calls)
    # each fold starts from the loaded weights: the last fold alone gives what it gave after the others
    last = loso_folds(ds)[-1].test_subject
    alone = _evaluate(ds, 0.25, 0, lambda fold: (
        _finetune_fit_of(adapter, ds, 0)(fold) if fold.test_subject == last else
        (lambda train, test, y, n: (np.full(test.size, y[0]), np.eye(2)[np.full(test.size, y[0])]))))
    rows = a.predictions.subject == last
    np.testing.assert_array_equal(alone.predictions.y_pred[alone.predictions.subject == last],
                                  a.predictions.y_pred[rows])
    # and the test subject's labels do not reach it
    swapped = _swapped(ds, last)
    b = _evaluate(swapped, 0.25, 0, _finetune_fit_of(adapter, swapped, 0))
    np.testing.assert_array_equal(a.predictions.y_pred[rows], b.predictions.y_pred[rows])


def test_finetune_is_unavailable_for_models_other_than_soter():
    task = get_task("classification-heads")
    cell = Cell("classification-heads", "toy", "all", "32", "stat-features", 0, SPEC,
                condition=heads.condition("finetune", 0.25), level=0.25)
    from models.registry import load_model

    why = task.capable(load_model("stat-features"), cell)
    assert why and "not a SOTER entry" in why
    assert task.capable(_tiny(), cell) is None


def test_a_run_tables_a_row_per_model_and_head_per_budget_with_the_models_overlap(folder, tmp_path):
    from harness.cli import main
    from harness.records.store import read_records
    from harness.reporting.pretraining_marks import marked_task_tables

    out = tmp_path / "run"
    assert main(["run", "classification-heads", "--dataset", str(folder), "--models", "stat-features",
                 "--heads", "linear", "mlp", "finetune", "--budgets", "50", "100", "--seeds", "0",
                 "--segment-length", "32", "--out", str(out), "--no-progress"]) == 0
    frame = read_records(out / "records.csv")
    assert sorted(frame["condition"]) == sorted(heads.condition(h, b) for h in ("linear", "mlp", "finetune")
                                                for b in (0.5, 1.0))
    assert set(frame.loc[frame["condition"].str.startswith("finetune"), "status"]) == {"unavailable"}
    tables = dict(marked_task_tables(frame, "classification-heads"))
    assert list(tables) == ["classification-heads_50", "classification-heads_100"]
    table = tables["classification-heads_100"]
    assert table.models == ("stat-features [head=linear]", "stat-features [head=mlp]", "stat-features [head=finetune]")
    # the row's model is read back for its pre-training overlap (stat-features: none), not left unknown
    assert {e.overlap for (m, _), e in table.entries.items() if e.status == "ok"} == {"no"}


def test_a_sigterm_in_the_mlp_heads_training_stops_the_run_without_its_row(folder, tmp_path, monkeypatch, capsys):
    """scikit-learn's MLPClassifier catches the KeyboardInterrupt of a signal and returns a head trained on fewer
    epochs: the run must stop anyway (143), without that cell's row, and resume to an uninterrupted run's records."""
    import os
    import signal

    from sklearn.neural_network import MLPClassifier

    from harness.cli import main
    from harness.records.store import read_records

    original, epochs = MLPClassifier._update_no_improvement_count, []

    def epoch(self, *args, **kwargs):
        epochs.append(1)
        if len(epochs) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # inside scikit-learn's `except KeyboardInterrupt`
        return original(self, *args, **kwargs)

    def argv(out):
        return ["run", "classification-heads", "--dataset", str(folder), "--models", "stat-features", "--heads",
                "linear", "mlp", "--budgets", "100", "--seeds", "0", "--segment-length", "32", "--out", str(out),
                "--no-progress"]

    monkeypatch.setattr(MLPClassifier, "_update_no_improvement_count", epoch)
    handler = signal.getsignal(signal.SIGTERM)
    assert main(argv(tmp_path / "o")) == 143
    assert "terminated: every finished row is kept" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is handler
    frame = read_records(tmp_path / "o" / "records.csv")
    assert not frame["condition"].str.startswith("mlp").any()  # the half-trained head left no row
    monkeypatch.setattr(MLPClassifier, "_update_no_improvement_count", original)
    assert main(argv(tmp_path / "o")) == 0  # resumes
    assert main(argv(tmp_path / "clean")) == 0
    columns = ["key", "status", "macro_f1", "macro_auroc", "n_windows"]
    resumed, clean = (read_records(tmp_path / d / "records.csv")[columns].sort_values("key").reset_index(drop=True)
                      for d in ("o", "clean"))
    import pandas as pd

    pd.testing.assert_frame_equal(resumed, clean)
