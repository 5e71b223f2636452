"""The progress estimate follows each model's own cost; tables print no spread for one sample."""

from __future__ import annotations

import pytest

from harness.run.progress import CostEstimate
from harness.reporting.tables import TEXT_WIDTH, Column, Entry, Table, render


def test_time_left_weights_cells_by_their_models_cost():
    est = CostEstimate(["fast"] * 10 + ["slow"] * 10, prior={"slow": [3.0]})
    for _ in range(10):
        est.done("fast", 0.01)
    left, guessed = est.remaining()
    assert left == pytest.approx(30.0) and not guessed  # an average rate would say 10 x 1.5 s
    est.done("slow", 5.0)
    assert est.remaining()[0] == pytest.approx(9 * 5.0)  # the first (prior) cell paid for loading the model


def test_models_not_measured_yet_count_at_the_mean_and_say_so():
    est = CostEstimate(["a", "a", "b"])
    assert est.remaining() == (None, True)
    est.done("a", 2.0)
    left, guessed = est.remaining()
    assert left == pytest.approx(2 * 2.0) and guessed
    est.done("a", 0.5)  # the first cell loaded the model; the second is the cost per cell
    assert est.remaining() == (pytest.approx(0.5), True)
    est = CostEstimate(["a", "a", "b"])
    est.done("a", 2.0)
    est.skipped("a")
    assert est.remaining()[0] == pytest.approx(2.0)


def _table(n_columns: int, replicates: int) -> Table:
    cols = tuple(Column(f"dataset-{i}", "RMSE") for i in range(n_columns))
    entries = {("model", c): Entry(15.3612, 0.0 if replicates == 1 else 1.2, replicates, replicates, "ok")
               for c in cols}
    return Table("A caption long enough to need wrapping " * 5, cols, ("model",), entries,
                 ("a note " * 30,), ("model: how it ran " * 10,))


def test_one_sample_has_no_plus_minus_and_two_do():
    assert "±" not in render(_table(2, replicates=1)) and "15.36" in render(_table(2, replicates=1))
    assert "15.36±1.20" in render(_table(2, replicates=2))
    assert "±" not in render(_table(2, replicates=1), "markdown")


def test_text_tables_fit_100_columns_and_keep_every_cell():
    text = render(_table(12, replicates=3))
    assert max(len(line) for line in text.splitlines()) <= TEXT_WIDTH
    assert text.count("15.36±1.20") == 12
    assert text.count("dataset-11 RMSE") == 1
    assert "model: how it ran" in text
    assert "model: how it ran" not in render(_table(12, 3), with_model_notes=False)


def test_two_cells_of_each_unmeasured_model_run_first_and_nothing_is_lost():
    from harness.run.runner import _cost_probes_first

    class C:
        def __init__(self, model, i):
            self.model, self.i = model, i

    pending = [(C(m, i), {}) for m in ("fast", "slow") for i in range(4)]
    order = [(c.model, c.i) for c, _ in _cost_probes_first(pending, {})]
    assert order[:4] == [("fast", 0), ("fast", 1), ("slow", 0), ("slow", 1)]
    assert sorted(order) == sorted((c.model, c.i) for c, _ in pending)
    measured = _cost_probes_first(pending, {"fast": [0.1], "slow": [2.0]})
    assert [(c.model, c.i) for c, _ in measured] == [(c.model, c.i) for c, _ in pending]
