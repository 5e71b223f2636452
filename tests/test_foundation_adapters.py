"""Chronos-2, Chronos-Bolt, TimesFM 2.5 and TiRex adapters on TINY RANDOMLY INITIALISED models.

Each test builds a small model from its library's own classes, saves it the way the official
checkpoint is laid out, loads it through the adapter's real loading path (``--weights DIR``)
and runs the project's contract kit. Random weights exist only here; their forecasts mean
nothing. Offline: HF_HUB_OFFLINE=1 (tests/conftest.py). A test skips when its library is absent
(``pip install -c constraints.txt -e '.[foundation]'``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from baselines import foundation
from models.registry import NEEDS_PACKAGE, NEEDS_WEIGHTS, READY, ModelUnavailableError, get_spec
from baselines.testing import check_forecast_contract

QUANTILES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


def _with_weights(name: str, directory) -> object:
    spec = get_spec(name)
    return dataclasses.replace(spec, options={**spec.options, "weights": str(directory)})


# ---------------------------------------------------------------- tiny checkpoints (random weights)

@pytest.fixture(scope="module")
def tiny_chronos2(tmp_path_factory):
    pytest.importorskip("chronos", reason="chronos-forecasting not installed (extra 'chronos')")
    import torch
    from chronos import Chronos2Model, Chronos2Pipeline
    from chronos.chronos2.config import Chronos2CoreConfig

    torch.manual_seed(0)
    config = Chronos2CoreConfig(
        d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        chronos_config=dict(context_length=256, input_patch_size=16, output_patch_size=16, input_patch_stride=16,
                            quantiles=QUANTILES, use_reg_token=True, max_output_patches=4))
    config.architectures, config.chronos_pipeline_class = ["Chronos2Model"], "Chronos2Pipeline"
    folder = tmp_path_factory.mktemp("tiny-random-chronos-2")
    Chronos2Pipeline(Chronos2Model(config).eval()).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_chronos_bolt(tmp_path_factory):
    pytest.importorskip("chronos", reason="chronos-forecasting not installed (extra 'chronos')")
    import torch
    from chronos.chronos_bolt import ChronosBoltModelForForecasting
    from transformers import T5Config

    torch.manual_seed(0)
    config = T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_decoder_layers=1, num_heads=4, vocab_size=2,
                      pad_token_id=0, decoder_start_token_id=0, initializer_factor=0.05)
    config.chronos_config = dict(context_length=128, input_patch_size=16, input_patch_stride=16, quantiles=QUANTILES,
                                 use_reg_token=True, prediction_length=16)
    config.chronos_pipeline_class, config.architectures = "ChronosBoltPipeline", ["ChronosBoltModelForForecasting"]
    folder = tmp_path_factory.mktemp("tiny-random-chronos-bolt")
    ChronosBoltModelForForecasting(config).eval().save_pretrained(folder)
    return folder


def _tiny_timesfm_definition():
    from timesfm import configs
    from timesfm.timesfm_2p5.timesfm_2p5_base import TimesFM_2p5_200M_Definition

    full, d = TimesFM_2p5_200M_Definition(), 32
    block = lambda i, o, bias: configs.ResidualBlockConfig(input_dims=i, hidden_dims=d, output_dims=o,  # noqa: E731
                                                           use_bias=bias, activation="swish")
    return dataclasses.replace(
        full, tokenizer=block(2 * full.input_patch_len, d, True),
        stacked_transformers=configs.StackedTransformersConfig(num_layers=2, transformer=dataclasses.replace(
            full.stacked_transformers.transformer, model_dims=d, hidden_dims=d, num_heads=2)),
        output_projection_point=block(d, full.output_projection_point.output_dims, False),
        output_projection_quantiles=block(d, full.output_projection_quantiles.output_dims, False))


@pytest.fixture
def tiny_timesfm(tmp_path_factory, monkeypatch):
    pytest.importorskip("timesfm", reason="timesfm not installed (extra 'timesfm')")
    import torch
    from timesfm.timesfm_2p5 import timesfm_2p5_torch

    # the library sizes its module from a class attribute; shrink it for this test only
    monkeypatch.setattr(timesfm_2p5_torch.TimesFM_2p5_200M_torch_module, "config", _tiny_timesfm_definition())
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-random-timesfm-2.5")
    timesfm_2p5_torch.TimesFM_2p5_200M_torch(torch_compile=False).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_tirex(tmp_path_factory):
    pytest.importorskip("tirex", reason="tirex-ts not installed (extra 'tirex')")
    import torch
    from tirex.models.tirex import TiRexZero

    torch.manual_seed(0)
    hyper = {"model_config": {"input_patch_size": 32, "output_patch_size": 32, "quantiles": QUANTILES,
                              "block_kwargs": {"embedding_dim": 16, "num_heads": 2, "num_blocks": 2,
                                               "ffn_proj_factor": 2.0},
                              "input_ff_dim": 32},
             "train_ctx_len": 128}
    model = TiRexZero(backend="torch", **hyper)
    # The sLSTM cell's kernel and bias and its head-wise gate projections start as torch.empty:
    # uninitialised memory, finite or not depending on the machine. Give every one a fixed value.
    for module in model.modules():
        if hasattr(module, "_recurrent_kernel_"):
            torch.nn.init.normal_(module._recurrent_kernel_, std=0.1)
            torch.nn.init.zeros_(module._bias_)
        if type(module).__name__ == "LinearHeadwiseExpand":
            torch.nn.init.normal_(module.weight, std=0.1)
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert torch.isfinite(params).all() and params.abs().max() < 10, "a TiRex parameter is still uninitialised"
    folder = tmp_path_factory.mktemp("tiny-random-tirex")
    torch.save({"hyper_parameters": hyper, "state_dict": model.state_dict()}, folder / "model.ckpt")
    return folder


# ---------------------------------------------------------------- the contract kit on each adapter

def test_chronos2_meets_the_contract(tiny_chronos2):
    spec = _with_weights("chronos-2-base", tiny_chronos2)
    assert spec.status() == (READY, None)
    check_forecast_contract(spec, atol=1e-5)
    info = spec.load().describe()
    assert info["pipeline"] == "Chronos2Pipeline" and info["weights"] == str(tiny_chronos2)


def test_chronos2_forecasts_channels_jointly(tiny_chronos2):
    from baselines.testing import queries as _queries, series as _series
    from protocols import interface

    model = _with_weights("chronos-2-small", tiny_chronos2).load()
    assert model.capabilities.multivariate
    batch = _series(2, 3, 48)
    out = interface.forecast(model, batch, _queries(batch, 20))
    other = batch.values.copy()
    other[:, -1] = np.random.default_rng(1).standard_normal(other[:, -1].shape)  # (an affine change would be
    moved = interface.forecast(model, type(batch)(other, batch.timestamps), _queries(batch, 20))  # normalised away)
    assert np.abs(moved[:, 0] - out[:, 0]).max() > 1e-4  # group attention: channel 0 sees channel 2


def test_chronos_bolt_meets_the_contract(tiny_chronos_bolt):
    check_forecast_contract(_with_weights("chronos-bolt-small", tiny_chronos_bolt), atol=1e-5)


def test_timesfm_25_meets_the_contract(tiny_timesfm):
    check_forecast_contract(_with_weights("timesfm-2.5", tiny_timesfm), t=48, h=24, atol=1e-5)


def test_tirex_meets_the_contract(tiny_tirex):
    check_forecast_contract(_with_weights("tirex", tiny_tirex), atol=1e-5)


@pytest.mark.parametrize("name, fixture", [("chronos-2-small", "tiny_chronos2"),
                                           ("chronos-bolt-small", "tiny_chronos_bolt"),
                                           ("timesfm-2.5", "tiny_timesfm"), ("tirex", "tiny_tirex")])
def test_quantiles_come_with_the_unchanged_point_forecast(name, fixture, request):
    """The quantile path returns exactly the point forecast of the point path (RMSE/MAE do not depend on
    whether quantiles were asked for), and one finite forecast per decile, the median being the point."""
    from baselines.testing import queries as _queries, series as _series
    from protocols import interface

    model = _with_weights(name, request.getfixturevalue(fixture)).load()
    assert model.capabilities.quantiles
    batch = _series(3, 2, 48)
    point = interface.forecast(model, batch, _queries(batch, 24))
    again, quant = interface.forecast_quantiles(model, batch, _queries(batch, 24))
    np.testing.assert_array_equal(again, point)
    assert quant.shape == (3, 2, 24, len(interface.QUANTILE_LEVELS)) and np.isfinite(quant).all()
    # the 0.5 level is the point forecast (each adapter's point is its median); random weights can cross
    # their other quantiles, so their order says nothing here
    np.testing.assert_allclose(quant[..., interface.QUANTILE_LEVELS.index(0.5)], point, rtol=1e-5, atol=1e-6)


def test_unobserved_points_reach_the_model_as_missing(tiny_tirex):
    """A masked point's hidden value never changes the forecast."""
    from baselines.testing import queries as _queries, series as _series
    from protocols import interface
    from protocols.interface import SeriesBatch

    model = _with_weights("tirex", tiny_tirex).load()
    batch = _series(2, 1, 64)
    mask = np.ones_like(batch.mask)
    mask[:, :, 20:30] = False
    a, b = batch.values.copy(), batch.values.copy()
    b[:, :, 20:30] = 99.0
    q = _queries(batch, 8)
    np.testing.assert_allclose(interface.forecast(model, SeriesBatch(a, batch.timestamps, mask), q),
                               interface.forecast(model, SeriesBatch(b, batch.timestamps, mask), q))


# ---------------------------------------------------------------- without weights: what to do

@pytest.mark.parametrize("name,hub", [("chronos-2-base", "amazon/chronos-2"), ("chronos-2-small", "autogluon/chronos-2-small"),
                                      ("timesfm-2.5", "google/timesfm-2.5-200m-pytorch"), ("tirex", "NX-AI/TiRex")])
def test_without_weights_the_message_names_the_download(name, hub, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    spec = get_spec(name)
    status, reason = spec.status()
    if status == NEEDS_PACKAGE:
        assert f"soter-bench[{spec.extra}]" in reason
        return
    assert status == NEEDS_WEIGHTS
    assert f"hf download {hub} --local-dir DIR" in reason and f"--weights {name}=DIR" in reason
    assert not spec.default  # no weights: never in the default set
    with pytest.raises(ModelUnavailableError, match="hf download"):
        spec.load()


def test_weights_directory_is_validated(tmp_path):
    card = foundation.CARDS["chronos-2-base"]
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelUnavailableError, match="lacks model.safetensors"):
        foundation.resolve_weights(card, tmp_path)
    with pytest.raises(ModelUnavailableError, match="does not exist"):
        foundation.resolve_weights(card, tmp_path / "nowhere")
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert foundation.resolve_weights(card, tmp_path) == str(tmp_path)
    assert foundation.check("chronos-2-base", weights=str(tmp_path)) is None


def test_hub_id_offline_and_not_cached_is_unavailable(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    reason = foundation.check("tirex", weights="NX-AI/TiRex")
    assert reason.kind == NEEDS_WEIGHTS and "HF_HUB_OFFLINE" in reason
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # online: the library downloads it on load
    assert foundation.resolve_weights(foundation.CARDS["tirex"], "NX-AI/TiRex") == "NX-AI/TiRex"


def test_weights_found_in_the_hub_cache_and_the_config_file(monkeypatch, tmp_path):
    repo = tmp_path / "hub" / "models--NX-AI--TiRex"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "model.ckpt").write_bytes(b"")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert foundation.resolve_weights(foundation.CARDS["tirex"], None) == str(snap)

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    local = tmp_path / "my-tirex"
    local.mkdir()
    (local / "model.ckpt").write_bytes(b"")
    config = tmp_path / "weights.toml"
    config.write_text(f'[weights]\ntirex = "{local}"\n')
    monkeypatch.setenv(foundation.WEIGHTS_FILE_ENV, str(config))
    assert foundation.resolve_weights(foundation.CARDS["tirex"], None) == str(local)


# ---------------------------------------------------------------- status kinds and `harness list`

def test_status_kinds_for_a_missing_package_and_a_separate_environment():
    from models.registry import NEEDS_ENVIRONMENT, ModelSpec

    pkg = ModelSpec("x", "x:y", "test", requires=("no_such_module_xyz",), extra="foo")
    env = dataclasses.replace(pkg, environment="it pins transformers==4.33.3")
    assert pkg.status()[0] == NEEDS_PACKAGE and "soter-bench[foo]" in pkg.status()[1]
    assert env.status()[0] == NEEDS_ENVIRONMENT and "transformers==4.33.3" in env.status()[1]


def test_harness_list_shows_status_capabilities_and_licence(capsys, monkeypatch, tmp_path):
    from harness.cli import main

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert main(["list", "models", "--long"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    tirex = next(i for i, line in enumerate(lines) if line.split()[:1] == ["tirex"])
    assert "NXAI Community License" in lines[tirex]
    assert lines[tirex].split()[1:3] in (["needs", "weights"], ["needs", "package"])
    assert "35.29M parameters in the paper" in lines[tirex + 1]
    assert "capabilities: forecast+quantiles, per channel, context 32.., native horizon 32" in lines[tirex + 2]
    last_value = next(line for line in lines if line.split()[:1] == ["last-value"])
    assert last_value.split()[1] == "ready"


# ---------------------------------------------------------------- the shared opening (FoundationModel)

class _TinyAdapter(foundation.FoundationModel):
    """A FoundationModel whose "model" is its weights folder (test only)."""

    library, library_module = "numpy", "numpy"

    def __init__(self, card: str, weights: str | None = None, device: str = "cpu", seed: int = 0,
                 scale: float = 1.0) -> None:
        super().__init__(card, weights, device, seed, scale=scale)

    def _load(self, source: str, device: str, scale: float) -> dict[str, object]:
        self.scale = scale
        return {"scale": scale, "device": device}


class _MissingLibrary(_TinyAdapter):
    library, library_module = "no-such-dist-xyz", "no_such_module_xyz"


@pytest.fixture
def tiny_card(monkeypatch, tmp_path):
    from protocols.interface import Capabilities

    card = foundation.Card("test-tiny-card", "Tiny", None, None, source="nowhere", licence="n/a", requires=(),
                           extra=None, files=(("w.bin",),), capabilities=Capabilities(multivariate=True))
    monkeypatch.setitem(foundation.CARDS, card.name, card)
    (tmp_path / "w.bin").write_bytes(b"")
    return card, tmp_path


def test_foundation_model_opens_the_card_once_for_every_adapter(tiny_card):
    card, folder = tiny_card
    model = _TinyAdapter(card.name, weights=str(folder), scale=2.0)
    assert (model.name, model.capabilities, model.scale) == (card.name, card.capabilities, 2.0)
    info = model.describe()
    assert list(info) == ["name", "numpy", "weights", "scale", "device"]  # the order the adapters always had
    assert info == {"name": card.name, "numpy": np.__version__, "weights": str(folder), "scale": 2.0, "device": "cpu"}
    with pytest.raises(ModelUnavailableError, match="does not exist"):  # never random weights
        _TinyAdapter(card.name, weights=str(folder / "nowhere"))
    with pytest.raises(ImportError, match="no_such_module_xyz"):  # the library first, as the adapters did
        _MissingLibrary(card.name, weights=str(folder / "nowhere"))


def test_register_card_takes_the_adapter_class_or_its_path(monkeypatch, tiny_card):
    from models import registry

    card, _ = tiny_card
    registry.all_specs()  # the built-ins loaded first: the copy below is what the test may change
    monkeypatch.setattr(registry, "_MODELS", registry._MODELS.copy())
    spec = foundation.register_card(card, _TinyAdapter)
    assert spec.factory == "tests.test_foundation_adapters:_TinyAdapter"
    assert spec.check == "baselines.foundation:check"
    assert foundation.register_card(card, "tests.test_foundation_adapters:_TinyAdapter") == spec
    assert foundation.register_card(card, _TinyAdapter, check=foundation.check) == spec
    assert {get_spec("chronos-2-base").factory, get_spec("tirex").factory, get_spec("normwear").check} == {
        "baselines.chronos_model:Chronos", "baselines.tirex_model:TiRex", "baselines.normwear_model:check"}
