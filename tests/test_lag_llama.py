"""Lag-Llama (baselines/isolated.py, baselines/workers/lag_llama_worker.py), offline and without its code.

Lag-Llama's code (github) and checkpoint (Hugging Face) cannot be fetched here. These fast tests cover
everything up to them: the card's status and messages, the checkpoint's safe loading (a pickle naming
anything beyond the allow-list is refused before it runs), and the worker's logic against a tiny FAKE
``lag_llama`` package (and fake ``gluonts`` classes) written into tmp_path that imitates the estimator
API, run through the real worker protocol under this very Python (as test_isolated.py does).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from baselines import isolated
from baselines.testing import check_forecast_contract, queries as _queries, series as _series
from models.registry import NEEDS_CODE, NEEDS_WEIGHTS, READY, ModelSpec, ModelUnavailableError, get_spec
from protocols import interface
from protocols.interface import SeriesBatch
from tests.test_isolated import env_pins, refuse_environments

torch = pytest.importorskip("torch")
WORKER = isolated.WORKERS_DIR / "lag_llama_worker.py"

FAKE = {
    "lag_llama/__init__.py": "",
    "lag_llama/gluon/__init__.py": "",
    "gluon_utils/scalers/robust_scaler.py": "",  # the real gluon_utils has no __init__.py
    "gluonts/__init__.py": "__version__ = 'fake'\n",
    "gluonts/torch/__init__.py": "",
    "gluonts/torch/distributions/__init__.py": "",
    "gluonts/torch/distributions/studentT.py": "class StudentTOutput:\n    def __init__(self):\n        self.args_dim = 3\n",
    "gluonts/torch/modules/__init__.py": "",
    "gluonts/torch/modules/loss.py": "class NegativeLogLikelihood:\n    def __init__(self):\n        self.beta = 0.0\n",
    # imitates LagLlamaEstimator's API: create_lightning_module / create_transformation / create_predictor,
    # predictor.predict(entries) -> forecasts with .samples [num_parallel_samples, prediction_length],
    # drawn step by step (as Lag-Llama's autoregressive sampling) for batch_size entries at a time, each
    # entry's paths one block of num_parallel_samples rows (Lag-Llama's repeat_interleave), a StudentT
    # draw per step over the whole batch; the loaded weight scales the level
    "lag_llama/gluon/estimator.py": '''
        import numpy as np
        import torch

        CALLS = []

        class LagLlamaEstimator:
            def __init__(self, prediction_length, context_length=None, input_size=1, n_layer=1, n_embd_per_head=32,
                         n_head=4, scaling="mean", time_feat=False, rope_scaling=None, batch_size=32,
                         num_parallel_samples=100, device=None, **kwargs):
                assert input_size == 1 and batch_size >= 1 and not kwargs
                self.prediction_length, self.context_length = prediction_length, context_length
                self.batch_size = batch_size
                self.num_parallel_samples, self.rope_scaling = num_parallel_samples, rope_scaling
                self.lags_seq = [0, 1, 6]

            def create_lightning_module(self, use_kv_cache=False):
                return Module()

            def create_transformation(self):
                return "transformation"

            def create_predictor(self, transformation, module):
                return Predictor(self, module)

        class Module(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.level = torch.nn.Parameter(torch.zeros(1))

        class Forecast:
            def __init__(self, samples):
                self.samples = samples

        class Predictor:
            def __init__(self, estimator, module):
                self.estimator, self.module = estimator, module

            def predict(self, dataset):
                dataset = list(dataset)
                s, p = self.estimator.num_parallel_samples, self.estimator.prediction_length
                for a in range(0, len(dataset), self.estimator.batch_size):
                    entries = dataset[a:a + self.estimator.batch_size]
                    lasts = []
                    for entry in entries:
                        y = np.asarray(entry["target"], dtype=float)
                        assert entry["start"] is not None and y.ndim == 1
                        lasts.append(y[~np.isnan(y)][-1])
                    level = torch.tensor(lasts).repeat_interleave(s) * float(self.module.level)
                    paths = []
                    for _ in range(p):
                        step = torch.distributions.StudentT(torch.full_like(level, 5.0)).sample()
                        level = level + 0.1 * step + 0.01 * torch.randn(level.shape[0])
                        paths.append(level.numpy())
                    paths = np.stack(paths, axis=1)
                    for k in range(len(entries)):
                        yield Forecast(paths[k * s:(k + 1) * s])
    ''',
}


@pytest.fixture
def fake_code(tmp_path, monkeypatch):
    """A fake Lag-Llama checkout with a checkpoint saved from its fake classes; returns the folder."""
    code = tmp_path / "lag-llama"
    for name, text in FAKE.items():
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(code))
    # the fake gluonts, not an installed one (the `supervised` extra installs gluonts 0.17, which another test may
    # have imported already): set the real modules aside while the checkpoint is pickled, then put them back
    real = {m: sys.modules.pop(m) for m in list(sys.modules) if m == "gluonts" or m.startswith("gluonts.")}
    try:
        from gluonts.torch.distributions.studentT import StudentTOutput
        from gluonts.torch.modules.loss import NegativeLogLikelihood

        ckpt = {"hyper_parameters": {"context_length": 32, "loss": NegativeLogLikelihood(),
                                     "model_kwargs": {"input_size": 1, "context_length": 32, "n_layer": 1,
                                                      "n_embd_per_head": 4, "n_head": 2, "scaling": "robust",
                                                      "time_feat": True, "lags_seq": [0, 1, 6],
                                                      "distr_output": StudentTOutput()}},
                "state_dict": {"level": torch.tensor([2.0])}}
        torch.save(ckpt, code / "lag-llama.ckpt")
    finally:
        for mod in [m for m in sys.modules if m == "gluonts" or m.startswith("gluonts.")]:
            del sys.modules[mod]
        sys.modules.update(real)
    return code


def lag_llama_model(code: Path, seed: int = 0, **options: object) -> isolated.WorkerModel:
    return isolated.WorkerModel("lag-llama", get_spec("lag-llama").model_capabilities(), sys.executable, WORKER,
                                weights=str(code), options={"code": str(code), "num_samples": 9, **options},
                                seed=seed)



def test_quantiles_come_from_the_median_s_own_paths(fake_code):
    model = lag_llama_model(fake_code)
    assert model.capabilities.quantiles and model.describe()["quantile_levels"] == "any"
    batch = _series(2, 2, 40)
    q = _queries(batch, 6)
    point, quant = interface.forecast_quantiles(model, batch, q)
    np.testing.assert_array_equal(point, interface.forecast(model, batch, q))
    assert quant.shape == (2, 2, 6, 9) and (np.diff(quant, axis=-1) >= 0).all()
    np.testing.assert_allclose(quant[..., 4], point, atol=1e-5)  # 9 paths: the 0.5 level is the median
    model.close()


# ---------------------------------------------------------------- the card

def test_without_weights_it_needs_weights_and_says_both_downloads(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv(isolated.LAG_LLAMA_CODE_ENV, raising=False)
    spec = get_spec("lag-llama")
    status, reason = spec.status()
    assert status == NEEDS_WEIGHTS and not spec.default
    assert "hf download time-series-foundation-models/Lag-Llama lag-llama.ckpt --local-dir DIR" in reason
    assert "git clone https://github.com/time-series-foundation-models/lag-llama DIR" in reason
    with pytest.raises(ModelUnavailableError, match="hf download"):
        spec.load()


def test_with_weights_but_no_code_it_needs_code(monkeypatch, tmp_path):
    monkeypatch.delenv(isolated.LAG_LLAMA_CODE_ENV, raising=False)
    (tmp_path / "lag-llama.ckpt").write_bytes(b"")
    spec = get_spec("lag-llama")
    status, reason = spec.status(weights=str(tmp_path))
    assert status == NEEDS_CODE and "not on PyPI" in reason
    assert "git clone https://github.com/time-series-foundation-models/lag-llama DIR" in reason
    assert isolated.LAG_LLAMA_CODE_ENV in reason
    monkeypatch.setenv(isolated.LAG_LLAMA_CODE_ENV, str(tmp_path / "nowhere"))
    status, reason = spec.status(weights=str(tmp_path))
    assert status == NEEDS_CODE and "is not a checkout" in reason
    with pytest.raises(ModelUnavailableError, match="is not a checkout"):
        spec.load(weights=str(tmp_path))


def test_with_weights_and_code_it_is_ready_and_loading_makes_its_environment(fake_code, monkeypatch, tmp_path):
    monkeypatch.delenv(isolated.LAG_LLAMA_CODE_ENV, raising=False)
    spec = get_spec("lag-llama")
    assert spec.status(weights=str(fake_code)) == (READY, None)  # the checkout holds the checkpoint
    weights = tmp_path / "w"
    weights.mkdir()
    (weights / "lag-llama.ckpt").write_bytes(b"")
    monkeypatch.setenv(isolated.LAG_LLAMA_CODE_ENV, str(fake_code))
    assert spec.status(weights=str(weights)) == (READY, None)
    seen = refuse_environments(monkeypatch)
    with pytest.raises(ModelUnavailableError, match="no network"):
        spec.load(weights=str(weights))
    assert seen == ["lag-llama"]
    assert "lag-llama.txt" in isolated.ENVS["lag-llama"].requirements


def test_the_env_file_pins_every_requirement_and_never_torch():
    pins = env_pins("lag-llama")
    assert pins and all("==" in line for line in pins)
    assert "gluonts==0.14.4" in pins and not any(line.startswith("torch") for line in pins)


# ---------------------------------------------------------------- the checkpoint's safe loading

class _RunsCode:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_checkpoint_carrying_code_is_refused_and_never_runs(fake_code, tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil"
    evil.mkdir()
    torch.save({"hyper_parameters": {"x": _RunsCode(marker)}, "state_dict": {}}, evil / "lag-llama.ckpt")
    with pytest.raises(isolated.WorkerError, match=r"(?s)refused to load .*weights_only=True.*allow-list"):
        isolated.WorkerModel("lag-llama", get_spec("lag-llama").model_capabilities(), sys.executable, WORKER,
                             weights=str(evil), options={"code": str(fake_code)})
    assert not marker.exists()


def test_the_worker_names_the_code_it_needs(tmp_path):
    with pytest.raises(isolated.WorkerError, match="not a Lag-Llama checkout"):
        isolated.WorkerModel("lag-llama", get_spec("lag-llama").model_capabilities(), sys.executable, WORKER,
                             weights=str(tmp_path), options={"code": str(tmp_path)})


# ---------------------------------------------------------------- the worker's logic (fake lag_llama)

def test_the_worker_forecasts_the_median_of_seeded_samples_per_channel(fake_code):
    model = lag_llama_model(fake_code)
    batch = _series(3, 2, 40)
    out = interface.forecast(model, batch, _queries(batch, 5))
    assert out.shape == (3, 2, 5) and np.isfinite(out).all()
    # the fake level is last * weight (2.0 from the checkpoint's state_dict): the weights were loaded
    np.testing.assert_allclose(out[:, :, 0], 2 * batch.values[:, :, -1], atol=0.2)
    info = model.describe()
    assert info["num_samples"] == 9 and info["span"] == 64 and info["context_length"] == 32
    assert info["lag_llama_code"] == str(fake_code.resolve()) and "weights_only=True" in info["checkpoint_loading"]
    assert "median of 9" in info["point"]
    # step k does not depend on H, and a series' draws do not depend on the others in the batch
    longer = interface.forecast(model, batch, _queries(batch, 70))
    np.testing.assert_allclose(longer[:, :, :5], out, atol=1e-6)
    single = interface.forecast(model, SeriesBatch(batch.values[2:, 1:], batch.timestamps[2:]), _queries(batch, 5)[2:])
    np.testing.assert_allclose(single[0, 0], out[2, 1], atol=1e-6)
    model.close()


def test_series_batched_in_one_call_draw_exactly_what_each_draws_alone(fake_code):
    # the fake draws a StudentT step (normal and gamma draws) and a normal per step over the whole batch, as
    # Lag-Llama does: each series' block of paths must still be the one it draws predicted on its own
    batch = _series(5, 3, 40)
    q = _queries(batch, 7)
    alone = lag_llama_model(fake_code, batch=1)
    together = lag_llama_model(fake_code, batch=4)  # 15 series: calls of 4, 4, 4 and 3
    assert together.describe()["series_per_call"] == 4 and alone.describe()["series_per_call"] == 1
    point_alone, quant_alone = interface.forecast_quantiles(alone, batch, q)
    point, quant = interface.forecast_quantiles(together, batch, q)
    np.testing.assert_array_equal(point, point_alone)
    np.testing.assert_array_equal(quant, quant_alone)
    alone.close()
    together.close()


def test_unobserved_points_reach_lag_llama_as_nan(fake_code):
    model = lag_llama_model(fake_code)
    values = np.tile(np.arange(20, dtype=float), (1, 1, 1))
    mask = np.ones_like(values, dtype=bool)
    mask[..., -3:] = False  # the fake uses the last observed value: 16
    batch = SeriesBatch(values, np.arange(20, dtype=float)[None] / 10, mask)
    out = interface.forecast(model, batch, _queries(batch, 1))
    np.testing.assert_allclose(out[0, 0, 0], 2 * 16, atol=0.2)


def test_a_longer_context_scales_rope(fake_code):
    model = lag_llama_model(fake_code, context_length=128)
    assert model.describe()["context_length"] == 128 and model.describe()["trained_context_length"] == 32


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_the_worker_meets_the_contract(fake_code):
    check_forecast_contract(ModelSpec("lag-llama-fake", "tests.test_lag_llama:contract_model", "fake"), b=3, c=2)


_CONTRACT_CODE: list[Path] = []


def contract_model(seed: int = 0, **_: object) -> isolated.WorkerModel:
    return lag_llama_model(_CONTRACT_CODE[-1], seed=seed)


@pytest.fixture(autouse=True)
def _contract_code(request):
    if "fake_code" in request.fixturenames:
        _CONTRACT_CODE.append(request.getfixturevalue("fake_code"))
    yield
    _CONTRACT_CODE.clear()
