"""Series generated on the fly in the training sampler: the generators' output, the mix, determinism, and that a
share of 0 leaves every batch as it was."""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np
import pytest

from models.soter.training.config import TrainConfig
from models.soter.training.corpus import CorpusDataset, open_corpus
from models.soter.training.generators import (GENERATORS, PHYSIOLOGICAL_RATES, SIGNAL_KIND, STATISTICAL_RATES,
                                              generated_span, generated_window, parse_mix)
from models.soter.training.sampler import WindowSampler
from models.soter.training.train import main

OPTIONS = dict(max_target_offset=6, next_step_prob=0.5, min_context=8, targets_per_window=3)


def _same(a, b) -> None:
    assert a.dataset == b.dataset and a.missing_regime == b.missing_regime and a.n_targets == b.n_targets
    for field in ("values", "times", "observed"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), field


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_every_generator_gives_finite_normalised_windows_at_its_rate(kind):
    for seed in range(3 if kind != "ecgsyn" else 1):
        values, times = generated_window(kind, seed, 90)
        assert values.shape == times.shape == (90,) and values.dtype == np.float32
        assert np.isfinite(values).all() and values.min() >= 0 and values.max() <= 1
        rate = 1.0 / float(np.diff(times).mean())
        low, high = PHYSIOLOGICAL_RATES if SIGNAL_KIND[kind] != "generic" else STATISTICAL_RATES
        assert low - 1e-6 <= rate <= high + 1e-6 and rate == pytest.approx(round(rate), rel=1e-9)
        np.testing.assert_allclose(np.diff(times), 1.0 / round(rate), rtol=1e-9)  # a regular grid at that rate
        span, span_rate = generated_span(kind, np.random.default_rng(seed), 90)
        assert span.size >= 90 and span.min() == 0 and span.max() == 1 and span_rate > 0


def test_windows_are_parts_of_a_longer_normalised_span():
    """Normalised over a span longer than the window, as the corpus over its dataset: windows do not all span
    exactly [0, 1]."""
    ranges = [np.ptp(generated_window("sarima", seed, 60)[0]) for seed in range(20)]
    assert min(ranges) < 0.999


def test_a_window_is_a_pure_function_of_its_seed():
    for kind in ("ecg", "gp"):
        a, b = generated_window(kind, 11, 50), generated_window(kind, 11, 50)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        assert not np.array_equal(a[0], generated_window(kind, 12, 50)[0])


def test_mix_is_parsed_normalised_and_checked():
    assert parse_mix("ecg=1, gp=3") == {"ecg": 0.25, "gp": 0.75}
    assert parse_mix("ecg=1,rsp=0") == {"ecg": 1.0}
    for bad, match in [("ekg=1", "ekg"), ("ecg", "NAME=WEIGHT"), ("ecg=x", "not a number"), ("ecg=-1", ">= 0"),
                       ("ecg=0", "no positive"), ("ecg=nan", ">= 0"), ("ecg=1,ecg=2", "twice")]:
        with pytest.raises(ValueError, match=match):
            parse_mix(bad)


def test_share_zero_gives_todays_batches_bit_for_bit(corpus):
    """The sampler without the new fields against share 0 (with any mix), the config's path included."""
    ds = open_corpus(corpus)
    for options in ({}, OPTIONS):
        today = WindowSampler(ds, 32, 3, seed=9, **options)
        explicit = WindowSampler(ds, 32, 3, seed=9, **options, generated_share=0.0, generators={"gp": 1.0})
        cfg = TrainConfig(max_length=32, min_length=16, batch_size=3, seed=9, generators="ecg=1", **options)
        configured = WindowSampler.from_config(ds, cfg)
        for step in range(8):
            _same(today.batch(step), explicit.batch(step))
            _same(today.batch(step), configured.batch(step))
            assert today.tokens(step) == configured.tokens(step)


def _fixed_corpus() -> list[CorpusDataset]:
    """Two in-memory datasets of seeded numbers (no simulator: the same bytes on every machine), one with a gap."""
    rng = np.random.default_rng(0)
    values = rng.random((2, 3000)).astype(np.float32)
    values[1, 700:705] = np.nan
    times = np.concatenate([np.arange(1800) / 50.0, 100 + np.arange(1200) / 25.0])
    return [CorpusDataset("a", values, times, np.array([0, 1800]), np.array([1800, 1200])),
            CorpusDataset("b", values[:1, :900] * 0.5, times[:900], np.array([0]), np.array([900]))]


def test_share_zero_and_no_augmentation_give_the_batches_of_the_sampler_before_them():
    """The digest of 12 batches (with and without the options beyond the paper) as the sampler drew them before
    generated data and augmentation existed."""
    digest = hashlib.sha256()
    for kw in ({}, dict(max_target_offset=6, next_step_prob=0.5, min_context=8, targets_per_window=3, max_stride=2)):
        sampler = WindowSampler(_fixed_corpus(), 32, 2, seed=5, **kw, generated_share=0.0, generators={"gp": 1.0},
                                augment={})
        for step in range(6):
            b = sampler.batch(step)
            for array in (b.values, b.times, b.observed):
                digest.update(np.ascontiguousarray(array).tobytes())
            digest.update(f"{b.dataset}{b.missing_regime}{b.n_targets}".encode())
    assert digest.hexdigest() == "8293a43a229f6af15986e31dab80a8e2c973afa6004899a2c073cd82a886fbbc"


def test_generated_steps_keep_the_batch_structure_and_are_pure_functions_of_the_step(corpus):
    ds = open_corpus(corpus)
    sampler = WindowSampler(ds, 32, 4, seed=3, **OPTIONS, generated_share=0.5,
                            generators={"sarima": 1.0, "gp": 1.0, "rsp": 1.0})
    today = WindowSampler(ds, 32, 4, seed=3, **OPTIONS)
    kinds, regimes = set(), set()
    for step in range(16):
        b = sampler.batch(step)
        _same(b, sampler.batch(step))  # same seed and step -> same batch
        regimes.add(b.missing_regime)
        length = sampler.context_length(step)
        m = 1 if b.missing_regime else 3
        assert b.missing_regime == today.batch(step).missing_regime  # the regime coin is the corpus's
        if not b.dataset.startswith("generated:"):
            _same(b, today.batch(step))  # a corpus step is today's batch
            continue
        kinds.add(b.dataset)
        assert b.values.shape == (4, 1, length + m) and b.times.shape == (4, length + m)
        assert b.observed.shape == (4, 1, length) and b.n_targets == m
        assert np.isfinite(b.values).all() and b.values.min() >= 0 and b.values.max() <= 1
        assert np.all(np.diff(b.times[:, :length], axis=1) > 0)
        assert np.all(b.times[:, length:] > b.times[:, [length - 1]])  # targets after the context
        assert b.observed.all() != b.missing_regime  # the mask of the regime
        assert sampler.tokens(step) == 4 * length == b.observed.size
    assert len(kinds) >= 2 and regimes == {True, False}
    everything = WindowSampler(ds, 32, 4, seed=3, generated_share=1.0, generators={"sarima": 1.0})
    assert all(everything.batch(s).dataset == "generated:sarima" for s in range(4))


def test_generated_batches_shard_across_ranks(corpus):
    ds = open_corpus(corpus)
    kw = dict(seed=4, **OPTIONS, generated_share=1.0, generators={"sarima": 1.0}, missing_prob=1.0)
    whole = WindowSampler(ds, 32, 6, **kw).batch(2)  # windows 0-3 and 4-5 share a series: the first straddles
    halves = [WindowSampler(ds, 32, 3, rank=r, world_size=2, **kw).batch(2) for r in (0, 1)]
    for field in ("values", "times", "observed"):
        np.testing.assert_array_equal(np.concatenate([getattr(h, field) for h in halves]), getattr(whole, field))
    assert whole.missing_regime and not whole.observed.all()


def test_held_out_batches_are_never_generated(corpus):
    ds = open_corpus(corpus)
    cfg = TrainConfig(max_length=32, min_length=16, batch_size=2, generated_share=1.0)
    assert WindowSampler.from_config(ds, cfg).batch(0).dataset.startswith("generated:")
    held = WindowSampler.from_config(ds, cfg, seed=cfg.seed + 1, held_out=True)
    _same(held.batch(0), WindowSampler(ds, 32, 2, seed=cfg.seed + 1).batch(0))


def test_bad_values_are_one_clear_error(capsys):
    for kw, match in [(dict(generated_share=1.5), "generated_share"), (dict(generators="ecg=1,foo=2"), "foo")]:
        with pytest.raises(ValueError, match=match):
            TrainConfig(**kw)
    with pytest.raises(ValueError, match="generated_share"):
        WindowSampler([], 32, 2, seed=0, generated_share=-0.1)
    for flags, match in [(["--generated-share", "2"], "generated_share"), (["--generators", "ecg=a"], "not a number")]:
        with pytest.raises(SystemExit) as exit_:
            main(["fit", "--corpus", "nowhere", *flags])
        assert exit_.value.code == 2 and match in capsys.readouterr().err


def test_a_config_with_the_new_fields_round_trips():
    cfg = TrainConfig(generated_share=0.25, generators="ecg=1,gp=1")
    again = TrainConfig.from_dict(cfg.to_dict())
    assert again == cfg and dataclasses.asdict(again)["generators"] == "ecg=1,gp=1"


def test_a_resumed_run_with_generated_steps_continues_exactly(corpus, tmp_path):
    import torch

    from models.soter.training.trainer import Trainer

    def cfg(out):
        return TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(out), steps=4, batch_size=2, max_length=32,
                           min_length=16, warmup_steps=2, log_every=1, checkpoint_every=2, eval_every=1000, seed=42,
                           generated_share=0.5, generators="sarima=1,gp=1")

    straight = Trainer(cfg(tmp_path / "a"))
    assert {straight.sampler.generator(s) is None for s in range(4)} == {True, False}  # both kinds of step
    straight.fit(log=lambda m: None)
    half = Trainer(cfg(tmp_path / "b"))
    half.train_step()
    half.train_step()
    half.save()
    resumed = Trainer(cfg(tmp_path / "b"))
    assert resumed.resume() and resumed.step == 2
    resumed.fit(log=lambda m: None)
    for (k, v), (_, w) in zip(straight.model.state_dict().items(), resumed.model.state_dict().items()):
        assert torch.equal(v, w), k


def test_an_ecgsyn_draw_whose_rr_process_runs_away_is_refused_not_hung(monkeypatch):
    """Rule V16's arm A hung at step 5681 (seed 60, series 1: 180 bpm over 15 s at 60 Hz): ecgsyn's RR process went
    negative on its few frequency bins and its beat loop never ended. The draw is now refused before the call (and
    drawn again from the same stream), and the check changes nothing in a draw it lets through."""
    import numpy as np

    from models.soter.training import generators
    from protocols.windows import stable_seed

    nk = generators._neurokit()
    with pytest.raises(ValueError, match="RR process out of range"):
        generators._refuse_runaway_rr(nk, 15, 60, 179.97401444909784, 2.2879750228822937, _hung_seed())
    rng = np.random.default_rng(stable_seed(60, "generated-series", 5681, 0, 1))
    values, rate = generators.generated_span("ecgsyn", rng, 320)
    assert np.isfinite(values).all() and rate > 0
    kept = generators.ecgsyn(np.random.default_rng(stable_seed(60, "generated-series", 5681, 0, 0)), 548)
    monkeypatch.setattr(generators, "_refuse_runaway_rr", lambda *args: None)
    unchecked = generators.ecgsyn(np.random.default_rng(stable_seed(60, "generated-series", 5681, 0, 0)), 548)
    np.testing.assert_array_equal(kept[0], unchecked[0])
    assert kept[1] == unchecked[1]


def _hung_seed() -> int:
    """The neurokit2 seed the hung draw passed (the stream's draws before it replayed)."""
    import numpy as np

    from models.soter.training import generators
    from protocols.windows import stable_seed

    rng = np.random.default_rng(stable_seed(60, "generated-series", 5681, 0, 1))
    n = max(320, int(np.ceil(320 * rng.uniform(*generators.SPAN_FACTOR))))
    generators._rate(rng, generators.PHYSIOLOGICAL_RATES)
    rng.uniform(40, 180), rng.uniform(0.0, 5.0), rng.uniform(0.0, 0.1), rng.uniform(0.6, 1.4, 5), rng.uniform(0.6, 1.4, 5)
    assert n == 722
    return int(rng.integers(2**31))
