"""The SOTER checkpoint that ships with the harness (issue #14): intact, ready, usable."""

from __future__ import annotations

import json

import numpy as np
import pytest

from models.registry import READY, get_spec, load_model
from models.soter.io import CHECKSUMS, from_pretrained, verify_checksums
from models.soter.entries import discover, faithful_entry
from protocols import interface
from protocols.interface import SeriesBatch


SHIPPED_ENTRIES = discover()
SHIPPED = faithful_entry().folder
SHIPPED_NAME = SHIPPED.name
DEPARTING = [name for name, e in SHIPPED_ENTRIES.items() if not e.faithful]


@pytest.mark.parametrize("folder", [e.folder for e in SHIPPED_ENTRIES.values()],
                         ids=[e.folder.name for e in SHIPPED_ENTRIES.values()])
def test_shipped_files_are_intact_and_within_the_size_limits(folder):
    assert (folder / "config.json").is_file() and (folder / CHECKSUMS).is_file()
    verify_checksums(folder)  # every listed file present, SHA-256 equal
    listed = {line.split("  ")[1] for line in (folder / CHECKSUMS).read_text().splitlines()}
    weights = sorted(p for p in folder.glob("model*.safetensors"))
    assert weights and {p.name for p in weights} <= listed and "config.json" in listed
    assert max(p.stat().st_size for p in weights) <= 15 * 2**20
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 60 * 2**20
    assert (folder / "MODEL_CARD.md").is_file() and (folder / "training_curves.png").is_file()
    # which data it saw (the corpus's own index, written by `ship`): never the evaluation record
    seen = json.loads((folder / "CORPUS.json").read_text())["datasets"]
    assert seen and not any("mitbih" in d["name"].lower() or "100" in d["recordings"] for d in seen)
    model = from_pretrained(folder)
    assert model.config.hidden_size == 64 and model.config.num_layers == 6 and model.config.cd_layer == 5
    # the paper's model, or the entry that says it departs from it
    assert model.config.is_faithful == (folder == SHIPPED)


def test_list_models_says_which_soter_is_the_papers_recipe():
    assert "the paper's recipe" in get_spec("soter").description
    assert DEPARTING == ["soter-anchored"]  # one departing entry (issue #44)
    for departing in DEPARTING:
        assert "DEPARTING FROM THE PAPER" in get_spec(departing).description
        assert get_spec(departing).status()[0] == READY


def test_two_soter_rows_by_default_and_the_departing_one_in_forecasting_only():
    """Issue #44: the default forecasting run shows the paper's recipe and one departing entry; the departing entry
    stays opt-in for the slower default imputation, noise and classification runs, and `list` says so."""
    from harness.run.runner import default_models

    assert [m for m in default_models("forecasting") if m.startswith("soter")] == ["soter", "soter-anchored"]
    for task in ("imputation", "noise", "classification"):
        assert [m for m in default_models(task) if m.startswith("soter")] == ["soter"]
    assert get_spec("soter-anchored").default_label() == "[default: forecasting]"
    assert get_spec("soter").default_label() == "[default]"


def test_soter_is_ready_from_the_shipped_checkpoint_and_in_the_default_run():
    from harness.run.runner import default_models

    status, reason = get_spec("soter").status()
    assert status == READY, reason
    assert "soter" in default_models("forecasting") and "soter-autoregressive" not in default_models("forecasting")
    assert get_spec("soter").note and "per query" in get_spec("soter").note


@pytest.mark.parametrize("name, rollout, checkpoint",
                         [("soter-autoregressive", "autoregressive", SHIPPED_NAME)]
                         + [(name, "per-query", e.folder.name) for name, e in SHIPPED_ENTRIES.items()])
def test_shipped_forecasts_are_finite_deterministic_and_name_the_weights(name, rollout, checkpoint):
    t = np.arange(60) / 64.0
    values = np.stack([0.5 + 0.2 * np.sin(2 * np.pi * 1.1 * t), 0.4 + 0.1 * np.cos(2 * np.pi * 0.3 * t)])
    batch = SeriesBatch(np.stack([values, values[::-1]])[:, :, :48], np.tile(t[:48], (2, 1)))
    query = np.tile(t[48:56], (2, 1))
    model = load_model(name, seed=0)
    first = interface.forecast(model, batch, query)
    assert first.shape == (2, 2, 8) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, interface.forecast(load_model(name, seed=0), batch, query))
    info = model.describe()
    assert info["rollout"] == rollout and info["checkpoint"] == checkpoint and len(info["checkpoint_sha256"]) == 16
