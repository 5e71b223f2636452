"""Issue #15: the classification run seed draws the segments, so runs at a 100 % budget differ.

The seed sets each recording's segment grid offset and which segments a subject keeps under the
per-subject cap; the probe (lbfgs) stays deterministic, so one seed repeats exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.registry.tasks import get_task
from harness.run import cells, embeddings
from harness.run.cells import Cell
from protocols import classification as cls
from protocols.specs import ClassificationSpec
from tests.conftest import make_dataset

SPEC = ClassificationSpec(length=32, max_windows_per_subject=8, budgets=(1.0,))


def _dataset():
    return make_dataset(n_subjects=5, n_samples=600)  # label 0 then 1, change at sample 300


def _cell(seed: int, cache, model: str = "stat-features", level: float = 1.0) -> Cell:
    return Cell("classification", "toy", "all", str(SPEC.length), model, seed, SPEC, level=level,
                cache_dir=str(cache))


def _evaluate(cell: Cell, dataset) -> dict[str, object]:
    """One cell's row, without run_cell's timing and error capture."""
    return cells.evaluate_cell(get_task(cell.task), cell, dataset)


def test_the_seed_draws_the_segments_and_one_seed_repeats():
    ds = _dataset()
    a, again, b = (cls.labelled_segments(ds, SPEC, s) for s in (0, 0, 1))
    assert a.refs == again.refs
    assert a.refs != b.refs
    for segs, seed in ((a, 0), (b, 1)):
        for subject in ds.subjects:
            assert (segs.subjects == subject).sum() <= SPEC.max_windows_per_subject
        for ref, label in zip(segs.refs, segs.labels):
            rec = ds.recordings[ref.recording]
            assert (rec.labels[ref.start:ref.start + SPEC.length] == label).all()  # label-pure
            assert ref.start % SPEC.length == cls.segment_offset(ds, rec, SPEC, seed)  # on the seed's grid
    offsets = {cls.segment_offset(ds, rec, SPEC, s) for rec in ds.recordings for s in range(3)}
    assert len(offsets) > 1 and all(0 <= o < SPEC.length for o in offsets)


def test_full_budget_scores_differ_between_seeds_and_repeat_within_one(tmp_path):
    ds = _dataset()
    rows = {s: _evaluate(_cell(s, tmp_path / "cache"), ds) for s in (0, 1, 2)}
    fresh = _evaluate(_cell(0, tmp_path / "other-cache"), ds)  # recomputed, not read back
    cached = _evaluate(_cell(0, tmp_path / "cache"), ds)
    assert all(r["status"] == "ok" for r in (*rows.values(), fresh, cached))
    for row in (fresh, cached):
        assert (row["macro_f1"], row["macro_auroc"]) == (rows[0]["macro_f1"], rows[0]["macro_auroc"])
    f1 = np.array([r["macro_f1"] for r in rows.values()])
    auroc = np.array([r["macro_auroc"] for r in rows.values()])
    assert f1.std(ddof=1) > 0 and auroc.std(ddof=1) > 0  # the table's std over seeds is not 0


def test_each_seed_embeds_its_own_segments_and_budgets_share_the_pass(tmp_path, monkeypatch):
    ds = _dataset()
    embedded = []
    real = embeddings.embed_segments

    def spy(model, dataset, fold, segments, spec, *args, **kwargs):
        embedded.append(segments.refs)
        return real(model, dataset, fold, segments, spec, *args, **kwargs)

    monkeypatch.setattr(embeddings, "embed_segments", spy)
    n_folds = len(ds.subjects)
    for seed in (0, 1):
        before = len(embedded)
        for level in (1.0, 0.5):
            assert _evaluate(_cell(seed, tmp_path, level=level), ds)["status"] == "ok"
        assert len(embedded) - before == n_folds  # one pass per fold, shared by both budgets
        assert all(refs == cls.labelled_segments(ds, SPEC, seed).refs for refs in embedded[before:])
    keys = {embeddings.embedding_key(_cell(s, tmp_path, level=lv), ds) for s in (0, 1) for lv in (1.0, 0.5)}
    assert len(keys) == 2


@pytest.mark.parametrize("seed", [0, 1])
def test_probes_train_without_the_test_subject_and_score_all_its_segments(monkeypatch, seed):
    ds = _dataset()
    segs = cls.labelled_segments(ds, SPEC, seed)
    code = {s: i for i, s in enumerate(ds.subjects)}
    # features: subject code, segment index (so every row can be traced back), label
    feats = np.stack([[code[s], i, lab] for i, (s, lab) in enumerate(zip(segs.subjects, segs.labels))]).astype(float)
    seen = []
    real = cls.probe_fold

    def spy(x_train, y_train, x_test, *args):
        seen.append((x_train[:, :2].astype(int), x_test[:, :2].astype(int)))
        return real(x_train, y_train, x_test, *args)

    monkeypatch.setattr(cls, "probe_fold", spy)
    out = cls.evaluate_classification(ds, SPEC, 1.0, seed, lambda fold: feats)
    assert len(seen) == len(ds.subjects)
    for (train, test), subject in zip(seen, ds.subjects):
        expected = np.flatnonzero(segs.subjects == subject)
        assert set(test[:, 0]) == {code[subject]} and sorted(test[:, 1]) == list(expected)
        assert code[subject] not in set(train[:, 0])
        assert len(train) == len(segs.refs) - expected.size  # 100 %: every other subject's segment
    assert out.n_windows == len(segs.refs)
