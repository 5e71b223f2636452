"""The SOTER checkpoint that ships with the harness (issue #14): intact, ready, usable."""

from __future__ import annotations

import numpy as np
import pytest

from models.registry import READY, get_spec, load_model
from models.soter.io import CHECKSUMS, from_pretrained, verify_checksums
from models.soter.registration import SHIPPED, SHIPPED_NAME
from protocols import interface
from protocols.interface import SeriesBatch


def test_shipped_files_are_intact_and_within_the_size_limits():
    assert (SHIPPED / "config.json").is_file() and (SHIPPED / CHECKSUMS).is_file()
    verify_checksums(SHIPPED)  # every listed file present, SHA-256 equal
    listed = {line.split("  ")[1] for line in (SHIPPED / CHECKSUMS).read_text().splitlines()}
    weights = sorted(p for p in SHIPPED.glob("model*.safetensors"))
    assert weights and {p.name for p in weights} <= listed and "config.json" in listed
    assert max(p.stat().st_size for p in weights) <= 15 * 2**20
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) <= 60 * 2**20
    assert (SHIPPED / "MODEL_CARD.md").is_file() and (SHIPPED / "training_curves.png").is_file()
    model = from_pretrained(SHIPPED)
    assert model.config.hidden_size == 64 and model.config.num_layers == 6 and model.config.cd_layer == 5


def test_soter_is_ready_from_the_shipped_checkpoint_and_in_the_default_run():
    from harness.run.runner import default_models

    status, reason = get_spec("soter").status()
    assert status == READY, reason
    assert "soter" in default_models("forecasting") and "soter-autoregressive" not in default_models("forecasting")
    assert get_spec("soter").note and "per query" in get_spec("soter").note


@pytest.mark.parametrize("name, rollout", [("soter", "per-query"), ("soter-autoregressive", "autoregressive")])
def test_shipped_forecasts_are_finite_deterministic_and_name_the_weights(name, rollout):
    t = np.arange(60) / 64.0
    values = np.stack([0.5 + 0.2 * np.sin(2 * np.pi * 1.1 * t), 0.4 + 0.1 * np.cos(2 * np.pi * 0.3 * t)])
    batch = SeriesBatch(np.stack([values, values[::-1]])[:, :, :48], np.tile(t[:48], (2, 1)))
    query = np.tile(t[48:56], (2, 1))
    model = load_model(name, seed=0)
    first = interface.forecast(model, batch, query)
    assert first.shape == (2, 2, 8) and np.isfinite(first).all()
    np.testing.assert_array_equal(first, interface.forecast(load_model(name, seed=0), batch, query))
    info = model.describe()
    assert info["rollout"] == rollout and info["checkpoint"] == SHIPPED_NAME and len(info["checkpoint_sha256"]) == 16
