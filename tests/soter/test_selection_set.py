"""Issue #45: the broad selection set is frozen (its data match the fingerprints written before any run it scores)
and held out from training by construction (build-corpus never writes one of its recordings), and its score is the
geometric mean of the ratios to the best naive baseline per set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.commands.selection import NAIVE, best_naive
from models.soter.training import selection_set
from models.soter.training.selection_set import HELD_OUT, SETS, SelectionSetError, fingerprint, load_set

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="needs ../shared/data beside the clone (the CI provides it)")


def test_the_set_covers_the_modalities_and_sources_the_issue_asks_for():
    real = [s for s in SETS]
    assert len(real) >= 8 and len({s.source.split(",")[0].split(" (")[0] for s in real}) >= 3
    modalities = {m.strip() for s in real for m in s.modality.split(",")}
    assert {"ECG", "PPG", "RESP", "EDA"} <= modalities
    assert all(len(s.sha256) == 64 for s in real)  # every set frozen
    assert len(selection_set.dataset_names()) == len(SETS) + 1  # and the synthetic seed set


@needs_data
@pytest.mark.parametrize("s", [s for s in SETS if s.kind != "heartpy"], ids=lambda s: s.name)
def test_each_set_is_the_frozen_one(s):
    assert fingerprint(load_set(s, DATA)) == s.sha256


@pytest.mark.parametrize("s", [s for s in SETS if s.kind == "heartpy"], ids=lambda s: s.name)
def test_the_heartpy_sets_are_the_frozen_ones(s):
    pytest.importorskip("heartpy", reason="the selection extra (pip install 'soter-bench[selection]')")
    assert fingerprint(load_set(s, DATA)) == s.sha256


@needs_data
def test_a_changed_recording_is_refused(tmp_path, monkeypatch):
    changed = tuple(s if s.name != "sel-biosppy-resp" else selection_set.SelectionSet(
        s.name, s.source, s.modality, s.kind, s.path, s.blocks, rate=30.0, sha256=s.sha256) for s in SETS)
    monkeypatch.setattr(selection_set, "SETS", changed)
    with pytest.raises(SelectionSetError, match="sel-biosppy-resp: its data differ from the frozen selection set"):
        selection_set.build(tmp_path, DATA)


@needs_data
def test_build_corpus_never_writes_a_recording_of_the_selection_set(tmp_path):
    """The corpus index (each dataset's index.json) of a corpus built from every staged source with the default
    flags holds none of the set's recordings (MIMIC-III s25047, a103l, 03700181, the BioSPPy clips)."""
    from models.soter.training.train import main

    out = tmp_path / "corpus"
    main(["build-corpus", "--out", str(out), "--synthetic-subjects", "0", "--wfdb", str(DATA / "wfdb"),
          "--mimic3wdb", str(DATA / "wfdb-python-sample" / "multi-segment" / "s25047"),
          "--biosppy", str(DATA / "biosppy-examples")])
    recordings = {r for f in out.glob("*/index.json") for r in json.loads(f.read_text())["recordings"]}
    assert recordings and not recordings & set(HELD_OUT)
    assert not any(r.startswith("3234460") for r in recordings)  # s25047's segments
    assert {"s0010_re", "emg"} <= recordings  # the rest is read


def _records(values: dict[tuple[str, str], tuple[float, float]]) -> pd.DataFrame:
    rows = []
    for (dataset, model), (rmse, mae) in values.items():
        for setting in ("48/24", "72/36"):
            rows.append({"key": f"{dataset}{model}{setting}", "task": "forecasting", "dataset": dataset, "fold": "F1",
                         "setting": setting, "condition": "clean", "model": model, "seed": 0, "protocol": "p",
                         "status": "ok", "rmse": rmse, "mae": mae, "sse": rmse ** 2 * 10, "sae": mae * 10,
                         "n_points": 10, "n_windows": 1, "model_info": "{}", "error": "", "details": ""})
    return pd.DataFrame(rows)


def test_the_score_is_the_geometric_mean_of_ratios_to_the_best_naive_baseline():
    values = {}
    for dataset, best in (("a", 2.0), ("b", 4.0)):
        for i, naive in enumerate(NAIVE):
            values[(dataset, naive)] = (best + i, best + 2 - i * 0.5)  # RMSE best: last value; MAE best: seasonal
    values[("a", "m")] = (1.0, 1.0)  # ratios 1 / 2 and 1 / 2.5: beats every naive baseline on a
    values[("b", "m")] = (8.0, 2.5)  # ratios 8 / 4 and 2.5 / 4.5: not on b (RMSE)
    table, summary = best_naive(_records(values))
    row = summary.set_index("model").loc["m"]
    assert row["score"] == pytest.approx(float(np.exp(np.mean(np.log([0.5, 0.4, 2.0, 2.5 / 4.5])))))
    assert row["sets_beating_every_naive"] == 1 and row["sets"] == 2
    mine = table[table["model"] == "m"]
    assert set(mine["rmse_best_naive"]) == {"last-value"} and set(mine["mae_best_naive"]) == {"seasonal-naive"}


def test_a_tie_within_float32_rounding_is_not_a_win():
    """A naive-residual SOTER at step 0 forecasts window mean in float32: its ratio to window mean is 1 +- 1e-7,
    which must not count as beating every naive baseline (it did: 5 of 13 sets for the untrained model)."""
    values = {(d, naive): (2.0 + i, 2.0 + i) for d in ("a", "b") for i, naive in enumerate(NAIVE)}
    values[("a", "m")] = (2.0 * (1 - 1e-7), 2.0 * (1 - 1e-7))  # the best naive baseline, rounded in float32
    values[("b", "m")] = (2.0 * 0.99, 2.0 * 0.99)  # a real win
    summary = best_naive(_records(values))[1].set_index("model")
    assert summary.loc["m", "sets_beating_every_naive"] == 1
