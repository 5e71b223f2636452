"""Every foundation baseline of the paper has an adapter that says what it needs (offline)."""

from __future__ import annotations

import pytest

from baselines.foundation import CARDS
from models.registry import NEEDS_FLAG, NEEDS_PACKAGE, NEEDS_WEIGHTS, get_spec

# the paper's forecasting table (name, Paras) and its classification-only baselines
PAPER = {"Timer": "84.14M", "TTM": "0.805M", "Lag-Llama": "2.451M", "TiRex": "35.29M", "MOMENT-Large": "341.3M",
         "MOMENT-Base": "109.6M", "MOMENT-Small": "35.34M", "MoiraiMoE-Base": "935.1M", "MoiraiMoE-Small": "117.0M",
         "Moirai2.0-Small": "11.39M", "TimesFM 1.0": "203.6M", "TimesFM 2.0": "498.8M", "TimesFM 2.5": "231.3M",
         "TimeMoE-Large": "453.2M", "TimeMoE-Base": "113.3M", "Chronos2-Base": "119.5M", "Chronos2-Small": "27.93M",
         "Sundial-Base": "128.3M", "Aurora": "210.8M", "MIRA-Large": "339.9M", "NormWear": None, "TF-C": None}


def test_every_paper_baseline_has_an_adapter_with_its_paper_parameter_count():
    by_paper_name = {card.paper_name: card for card in CARDS.values()}
    assert set(PAPER) <= set(by_paper_name)
    for name, params in PAPER.items():
        card = by_paper_name[name]
        assert card.paper_params == params, name
        assert card.licence and card.source
        get_spec(card.name)  # registered


@pytest.mark.parametrize("name", ["timer-base", "sundial-base", "timemoe-base", "timemoe-large", "mira-large", "aurora"])
def test_remote_code_models_need_the_explicit_flag_then_weights(name, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    spec = get_spec(name)
    status, reason = spec.status()
    if status == NEEDS_PACKAGE:
        pytest.skip("transformers not installed")
    assert status == NEEDS_FLAG and f"--trust-remote-code {name}" in reason
    status, reason = spec.status(trust_remote_code=True)
    assert status == NEEDS_WEIGHTS and f"--weights {name}=DIR" in reason
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    status, reason = spec.status(trust_remote_code=True, weights=str(tmp_path))
    assert status == NEEDS_WEIGHTS and "modeling_*.py" in reason  # a snapshot without its code


def test_timer_declares_the_papers_two_windows():
    caps = get_spec("timer-base").model_capabilities()
    assert caps.supports_setting(96, 48) and caps.supports_setting(128, 64) and not caps.supports_setting(48, 24)


def test_the_run_command_passes_the_flag_to_the_model_options():
    from harness.run.runner import RunConfig, _model_options

    config = RunConfig(models=("timer-base",), weights=(("timer-base", "/w"),), trust_remote_code=("timer-base",))
    assert dict(_model_options(config, "timer-base")) == {"seed": 0, "weights": "/w", "trust_remote_code": True}
    assert "trust_remote_code" not in dict(_model_options(config, "last-value"))


def test_the_model_spec_carries_what_the_harness_read_from_the_cards():
    """Issue #28: the harness reads a model's paper name, native horizon and whether --weights may be a hub id
    from its ModelSpec; it no longer reaches into ``baselines.foundation.CARDS``."""
    from pathlib import Path

    from harness.reporting.paper_cells import paper_model_names
    from models.registry import all_specs

    specs = all_specs()
    assert CARDS
    for name, card in CARDS.items():
        spec = specs[name]
        assert (spec.paper_name, spec.native_horizon, spec.hub_weights) == (card.paper_name, card.native_horizon, True)
        assert paper_model_names()[name] == card.paper_name
    assert not specs["last-value"].hub_weights and specs["last-value"].paper_name is None
    harness = Path(__file__).resolve().parents[1] / "harness"
    assert not [p for p in harness.rglob("*.py") if "CARDS" in p.read_text()]


def test_weights_may_name_a_hub_repository_only_for_models_that_load_from_the_hub(tmp_path):
    from harness.run.runner import _check_weights_path
    from protocols.specs import SpecError

    card = next(iter(CARDS))
    _check_weights_path(card, "some-org/some-model")  # its library downloads it
    _check_weights_path("soter", str(tmp_path))  # a folder that exists
    with pytest.raises(SpecError, match="does not exist \\(and it is not a hub id ORG/REPO\\)$"):
        _check_weights_path(card, "./not/here")
    with pytest.raises(SpecError, match="some-org/some-model does not exist$"):
        _check_weights_path("soter", "some-org/some-model")
