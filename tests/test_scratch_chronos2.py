"""Corpus-matched baseline: Chronos-2 trained from scratch on the SOTER corpus (extra 'chronos')."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("chronos", reason="chronos-forecasting not installed (extra 'chronos')")

import torch  # noqa: E402

from harness.studies.chronos2_scratch import ScratchConfig, ScratchTrainer  # noqa: E402
from models.registry import get_spec  # noqa: E402
from models.soter.training.corpus import synthetic_stream, write_dataset  # noqa: E402
from protocols.interface import SeriesBatch, forecast  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus")
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), path)
    return path


def _cfg(corpus, out, **kw):
    return ScratchConfig(corpus=str(corpus), out=str(out), steps=2, batch_size=2, context=64, horizon=32,
                         architecture="tiny", checkpoint_every=1, log_every=1, **kw)


def test_training_resumes_exactly(corpus, tmp_path):
    straight = ScratchTrainer(_cfg(corpus, tmp_path / "a"))
    straight.fit(log=lambda line: None)
    half = ScratchTrainer(_cfg(corpus, tmp_path / "b"))
    half.train_step()
    half.save()
    resumed = ScratchTrainer(_cfg(corpus, tmp_path / "b"))
    assert resumed.resume() and resumed.step == 1
    resumed.fit(log=lambda line: None)
    for (k, v), (_, w) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert torch.equal(v, w), k
    assert (tmp_path / "a" / "checkpoint-00000002" / "model.safetensors").is_file()


def test_checkpoint_forecasts_through_the_chronos2_adapter(corpus, tmp_path):
    trainer = ScratchTrainer(_cfg(corpus, tmp_path / "c"))
    trainer.fit(log=lambda line: None)
    spec = get_spec("chronos-2-small")
    weights = str(tmp_path / "c" / "checkpoint-00000002")
    assert spec.unavailable_reason(weights=weights) is None
    model = spec.load(weights=weights)
    rng = np.random.default_rng(0)
    batch = SeriesBatch(values=rng.normal(size=(2, 3, 64)), timestamps=np.tile(np.arange(64.0), (2, 1)))
    pred = forecast(model, batch, np.tile(64.0 + np.arange(32.0), (2, 1)))
    assert pred.shape == (2, 3, 32) and np.isfinite(pred).all()
