"""The CPU-training additions (issue #14): every speed-up equals the reference path, the sampler
options reproduce the paper's batch when off, per-query decoding, held-out loss, checksums."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from models.soter.io import CheckpointError, from_pretrained, save_pretrained, write_checksums
from models.soter.model import SoterModel
from models.soter.moe import zero_missing_grads
from models.soter.config import SoterConfig, preset
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import open_corpus, synthetic_stream, write_dataset
from models.soter.training.sampler import WindowSampler
from models.soter.training.trainer import Trainer

SOTER_FIELDS = {f.name for f in dataclasses.fields(SoterConfig)}  # what _cfg passes as model options

TINY = preset("soter-tiny")


@pytest.fixture(scope="module")
def val_corpus(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("val")
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=5, seed=9000), path)
    return path


def _cfg(corpus: Path, out: Path, **kw) -> TrainConfig:
    """The test run's config; keyword arguments named like SoterConfig fields are its model options."""
    base = dict(model="soter-tiny", corpus=str(corpus), out=str(out), steps=4, batch_size=3, max_length=40,
                min_length=16, warmup_steps=2, log_every=1, checkpoint_every=2, eval_every=1000, seed=42,
                lr=3e-3)
    options = {k: kw.pop(k) for k in list(kw) if k in SOTER_FIELDS}
    return TrainConfig(**{**base, **kw, "model_options": {**kw.pop("model_options", {}), **options}})


# -- grouped experts in single-process training == dense ------------------------------------------
def test_grouped_training_equals_dense_training(corpus, tmp_path):
    """Several AdamW steps (both regimes) with grouped experts end where the dense sum ends; an
    expert that received no token is updated as dense updates it (zero gradient, weight decay)."""
    runs = {}
    for mode in ("dense", "auto"):
        trainer = Trainer(_cfg(corpus, tmp_path / mode, weight_decay=0.1),
                          model_config=TINY.replace(expert_execution=mode, solver="rk4"))
        for _ in range(4):
            trainer.train_step()
        runs[mode] = trainer.model.state_dict()
    assert Trainer(_cfg(corpus, tmp_path / "x")).model.blocks[0].moe.grouped(torch.zeros(1, 2, TINY.hidden_size))
    for name, dense in runs["dense"].items():
        if name.endswith("attn.k.bias"):
            # softmax is invariant to a key bias (it adds the same q.b to every score): its gradient
            # is zero up to rounding, and Adam scales that rounding noise to full-size updates
            continue
        torch.testing.assert_close(runs["auto"][name], dense, rtol=2e-4, atol=2e-6, msg=name)


def test_missing_expert_gradients_are_filled_with_zeros_only():
    torch.manual_seed(0)
    model = SoterModel(TINY)
    for p in model.parameters():
        p.grad = None
    used = model.blocks[0].moe.experts[0].gate.weight
    used.grad = torch.ones_like(used)
    filled = zero_missing_grads(model)
    experts = [p for b in model.blocks for p in b.moe.experts.parameters()]
    assert filled == len(experts) - 1 and torch.equal(used.grad, torch.ones_like(used))
    assert all(p.grad is not None and (p is used or not p.grad.any()) for p in experts)
    assert model.blocks[0].attn.q.weight.grad is None  # only routed experts are ever filled


# -- sampler options ---------------------------------------------------------------------------------
def test_sampler_options_off_give_the_papers_batch(corpus):
    ds = open_corpus(corpus)
    plain = WindowSampler(ds, 40, 4, seed=3)
    explicit = WindowSampler(ds, 40, 4, seed=3, max_target_offset=1, next_step_prob=1.0, min_context=0)
    for step in range(6):
        a, b = plain.batch(step), explicit.batch(step)
        assert np.array_equal(a.values, b.values) and np.array_equal(a.observed, b.observed)
        assert a.values.shape[-1] == 41


def test_target_offsets_and_context_lengths(corpus):
    ds = open_corpus(corpus)  # one synthetic dataset on a regular 64 Hz grid
    k_max = 12
    full = WindowSampler(ds, 40, 6, seed=5, max_target_offset=k_max, next_step_prob=0.3)  # full-length contexts
    opts = WindowSampler(ds, 40, 6, seed=5, max_target_offset=k_max, next_step_prob=0.3, min_context=10)
    paper = WindowSampler(ds, 40, 6, seed=5)
    lengths, offsets_seen = set(), set()
    for step in range(12):
        a, b, p = full.batch(step), opts.batch(step), paper.batch(step)
        length = opts.context_length(step)
        lengths.add(length)
        assert 10 <= length <= 40 and b.values.shape == (6, a.values.shape[1], length + 1)
        assert b.observed.shape == (6, a.values.shape[1], length)
        assert a.missing_regime == b.missing_regime == p.missing_regime and a.dataset == b.dataset == p.dataset
        k = opts.target_offsets(step, 0, b.missing_regime)
        if b.missing_regime:
            assert (k == 1).all()  # the spline control is never extrapolated over k samples
        offsets_seen.update(k.tolist())
        # the context is the newest part of the window; the target k samples after its last sample
        np.testing.assert_array_equal(b.values[..., :-1], a.values[..., 40 - length:40])
        np.testing.assert_array_equal(b.values[..., -1], a.values[..., -1])
        np.testing.assert_allclose(b.times[:, -1] - b.times[:, -2], k / 64.0, rtol=1e-9)
    assert len(lengths) > 3 and 1 in offsets_seen and max(offsets_seen) > 1
    halves = [WindowSampler(ds, 40, 3, seed=5, rank=r, world_size=2, max_target_offset=k_max, next_step_prob=0.3,
                            min_context=10).batch(4) for r in (0, 1)]
    np.testing.assert_array_equal(np.concatenate([h.values for h in halves]), opts.batch(4).values)
    with pytest.raises(ValueError, match="min_context"):
        WindowSampler(ds, 40, 2, seed=0, min_context=41)


def test_several_targets_per_window(corpus):
    """M targets per window: the context is the one-target sampler's, each target is the sample k after
    it (k drawn as for one target), the missingness regime keeps its one next-sample target."""
    ds = open_corpus(corpus)  # one synthetic dataset on a regular 64 Hz grid
    one = WindowSampler(ds, 40, 4, seed=5, max_target_offset=12, next_step_prob=0.3, min_context=10)
    many = WindowSampler(ds, 40, 4, seed=5, max_target_offset=12, next_step_prob=0.3, min_context=10,
                         targets_per_window=5)
    explicit = WindowSampler(ds, 40, 4, seed=5, max_target_offset=12, next_step_prob=0.3, min_context=10,
                             targets_per_window=1)
    regimes = set()
    for step in range(10):
        a, b = one.batch(step), many.batch(step)
        np.testing.assert_array_equal(explicit.batch(step).values, a.values)
        length = many.context_length(step)
        regimes.add(b.missing_regime)
        assert b.observed.shape == a.observed.shape == (4, a.values.shape[1], length)
        np.testing.assert_array_equal(b.values[..., :length], a.values[..., :length])
        if b.missing_regime:
            assert b.n_targets == 1 and np.array_equal(b.values, a.values) and np.array_equal(b.observed, a.observed)
            continue
        k = many.target_offsets(step, 0, False)
        assert b.n_targets == 5 and k.shape == (4, 5) and b.values.shape[-1] == length + 5
        np.testing.assert_allclose(b.times[:, length:] - b.times[:, length - 1:length], k / 64.0, rtol=1e-9)
        raw = _raw_windows(ds, step, 40 + 12)
        for j in range(5):  # target j is the raw window's sample k[:, j] after the context's last one
            rows = np.arange(4)
            np.testing.assert_array_equal(b.values[rows, :, length + j], raw[rows, :, 39 + k[:, j]])
    assert regimes == {True, False}
    with pytest.raises(ValueError, match="targets_per_window"):
        WindowSampler(ds, 40, 2, seed=0, targets_per_window=3)  # all targets would be the next sample
    with pytest.raises(ValueError, match="targets_per_window"):
        WindowSampler(ds, 40, 2, seed=0, max_target_offset=4, targets_per_window=0)


def _raw_windows(ds, step: int, window: int) -> np.ndarray:
    """The [B, C, window] windows a seed-5, batch-4 sampler draws at ``step`` before cutting context and
    targets out of them (a one-target sampler of the same window length draws the same starts)."""
    return WindowSampler(ds, window - 1, 4, seed=5).batch(step).values


def test_several_targets_loss_is_the_mean_of_single_target_losses():
    torch.manual_seed(0)
    model = SoterModel(TINY).double().eval()
    values = torch.randn(2, 3, 30, dtype=torch.float64)
    times = (torch.arange(40, dtype=torch.float64) / 50).repeat(2, 1)
    mask = torch.ones_like(values, dtype=torch.bool)
    query = torch.stack([times[0, [30, 33, 39]], times[1, [31, 30, 36]]])  # [B, M], per window its own offsets
    target = torch.randn(2, 3, 3, dtype=torch.float64)
    with torch.no_grad():
        several = model.next_step_loss(values, times[:, :30], target, query, mask, False)
        singles = [model.next_step_loss(values, times[:, :30], target[..., j], query[:, j], mask, False)
                   for j in range(3)]
        torch.testing.assert_close(several, torch.stack(singles).mean(), rtol=1e-9, atol=1e-12)
        with pytest.raises(ValueError, match="full-history"):
            model.next_step_loss(values, times[:, :30], target, query, mask, True)


def test_training_with_several_targets_runs_and_resumes_exactly(corpus, tmp_path):
    cfg = _cfg(corpus, tmp_path / "a", max_target_offset=8, next_step_prob=0.25, min_context=16,
               targets_per_window=4, steps=4, checkpoint_every=2)
    straight = Trainer(cfg)
    straight.fit(log=lambda m: None)
    half = Trainer(TrainConfig(**{**cfg.to_dict(), "out": str(tmp_path / "b")}))
    for _ in range(2):
        half.train_step()
    half.save()
    resumed = Trainer(TrainConfig(**{**cfg.to_dict(), "out": str(tmp_path / "b")}))
    assert resumed.resume() and resumed.step == 2
    resumed.fit(log=lambda m: None)
    for name, value in straight.model.state_dict().items():
        torch.testing.assert_close(resumed.model.state_dict()[name], value, rtol=0, atol=0, msg=name)


def test_heldout_loss_is_fixed_and_logged_with_cumulative_wall_time(corpus, val_corpus, tmp_path):
    cfg = _cfg(corpus, tmp_path, val_corpus=str(val_corpus), val_every=2, val_batches=2, max_target_offset=8,
               next_step_prob=0.5, min_context=16)
    trainer = Trainer(cfg)
    first = trainer.heldout_loss()
    assert first == trainer.heldout_loss() and np.isfinite(first)
    trainer.fit(log=lambda m: None)
    log = (tmp_path / "val_log.csv").read_text().splitlines()
    assert log[0] == "step,val_loss,wall_s" and [r.split(",")[0] for r in log[1:]] == ["2", "4"]
    resumed = Trainer(cfg.__class__(**{**cfg.to_dict(), "steps": 6}))
    assert resumed.resume() and resumed.wall_before > 0
    assert resumed.wall_seconds() >= resumed.wall_before


def test_shipped_summary_names_where_the_training_config_changed(corpus, tmp_path):
    from models.soter.training.ship import ship

    run = tmp_path / "run"
    first = Trainer(_cfg(corpus, run, steps=2, checkpoint_every=2))
    first.fit(log=lambda m: None)
    second = Trainer(_cfg(corpus, run, steps=4, checkpoint_every=2, max_target_offset=8, targets_per_window=3))
    assert second.resume() and second.step == 2
    second.fit(log=lambda m: None)
    summary = json.loads((ship(run, "x", dest=tmp_path / "shipped") / "TRAINING.json").read_text())
    assert summary["steps"] == 4 and summary["train_config"]["targets_per_window"] == 3
    assert summary["config_changes"] == [{"from_step": 2, "changed": {
        "steps": [2, 4], "max_target_offset": [1, 8], "targets_per_window": [1, 3]}}]
    # issue #35: the shipped folder lists the exact corpus it trained on (the overlap registry reads it)
    manifest = json.loads((tmp_path / "shipped" / "CORPUS.json").read_text())
    # issue #44: no path of the training machine in a shipped folder (outside the working directory: the folder's name)
    assert manifest["corpus"] == corpus.name == summary["train_config"]["corpus"] and "val_corpus" not in manifest
    assert str(tmp_path) not in (tmp_path / "shipped" / "TRAINING.json").read_text()
    assert [d["name"] for d in manifest["datasets"]] == ["synthetic-stream-1000"]
    assert manifest["datasets"][0]["recordings"][:2] == ["S01_rest", "S01_mental_stress"]


def test_a_new_run_can_start_from_a_checkpoints_weights(corpus, tmp_path):
    torch.manual_seed(1)
    source = SoterModel(TINY)
    save_pretrained(source, tmp_path / "ckpt")
    write_checksums(tmp_path / "ckpt")
    trainer = Trainer(_cfg(corpus, tmp_path / "run", init_weights=str(tmp_path / "ckpt")))
    assert trainer.step == 0
    for name, value in source.state_dict().items():
        assert torch.equal(trainer.model.state_dict()[name], value), name
    assert not torch.equal(Trainer(_cfg(corpus, tmp_path / "other")).model.embed.gate.weight,
                           source.embed.gate.weight)  # without it: the seeded random initialisation
    trainer.fit(log=lambda m: None)
    assert json.loads(torch.load(tmp_path / "run" / "checkpoint-00000004" / "trainer_state.pt",
                                 weights_only=True)["config"])["init_weights"] == str(tmp_path / "ckpt")
    save_pretrained(SoterModel(TINY.replace(hidden_size=TINY.hidden_size * 2)), tmp_path / "wide")
    with pytest.raises(CheckpointError, match="init-weights model config differs.*hidden_size"):
        Trainer(_cfg(corpus, tmp_path / "run2", init_weights=str(tmp_path / "wide")))


def test_embedding_init_std_redraws_only_the_input_embedding(corpus, tmp_path):
    plain = Trainer(_cfg(corpus, tmp_path / "a")).model.state_dict()
    wide = Trainer(_cfg(corpus, tmp_path / "b", embedding_init_std=1.0)).model.state_dict()
    embed = {"embed.gate.weight", "embed.value.weight"}
    for name, value in plain.items():
        if name in embed:
            assert wide[name].std() > 0.5 and value.std() < 0.05, name
        else:
            assert torch.equal(wide[name], value), name


# -- per-query decoding -----------------------------------------------------------------------------------
def test_per_query_decoding_is_one_single_target_prediction_per_query():
    torch.manual_seed(0)
    model = SoterModel(TINY).double().eval()
    values = torch.randn(2, 3, 30, dtype=torch.float64)
    times = (torch.arange(36, dtype=torch.float64) / 50).repeat(2, 1)
    with torch.no_grad():
        each = model.forecast(values, times[:, :30], times[:, 30:], "per-query")
        for q in range(6):
            single = model.predict(values, times[:, :30], torch.ones_like(values, dtype=torch.bool),
                                   times[:, 30 + q:31 + q])
            torch.testing.assert_close(each[..., q:q + 1], single, rtol=1e-9, atol=1e-12)
        changed = values.clone()
        changed[..., -1] += 1.0
        assert not torch.allclose(model.forecast(changed, times[:, :30], times[:, 30:], "per-query"), each)
    with pytest.raises(ValueError, match="per-query"):
        model.forecast(values, times[:, :30], times[:, 30:], "sideways")


# -- checksums --------------------------------------------------------------------------------------------
def test_checksums_catch_a_flipped_byte_and_name_the_file(tmp_path):
    torch.manual_seed(0)
    save_pretrained(SoterModel(TINY), tmp_path)
    write_checksums(tmp_path)
    from_pretrained(tmp_path)  # verified and loaded
    weights = tmp_path / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="model.safetensors: SHA-256 does not match"):
        from_pretrained(tmp_path)
    weights.unlink()
    with pytest.raises(CheckpointError, match="listed in SHA256SUMS but missing"):
        from_pretrained(tmp_path)


def test_resume_drops_log_rows_of_the_stopped_run(corpus, tmp_path):
    cfg = _cfg(corpus, tmp_path, steps=4, checkpoint_every=2)
    trainer = Trainer(cfg)
    trainer.fit(log=lambda m: None)  # logs steps 1..4, checkpoints at 2 and 4
    (tmp_path / "latest").write_text("checkpoint-00000002")  # as if it had stopped after step 3
    resumed = Trainer(cfg)
    assert resumed.resume() and resumed.step == 2
    steps = [int(r.split(",")[0]) for r in (tmp_path / "train_log.csv").read_text().splitlines()[1:]]
    assert steps == [1, 2]
    resumed.fit(log=lambda m: None)
    steps = [int(r.split(",")[0]) for r in (tmp_path / "train_log.csv").read_text().splitlines()[1:]]
    assert steps == [1, 2, 3, 4]


# -- level diagnostics ---------------------------------------------------------------------------------------------
def test_level_diagnostics_on_held_out_windows(corpus, capsys, tmp_path):
    from models.soter.training.diagnose import level_diagnostics, main

    torch.manual_seed(0)
    model = SoterModel(TINY)
    first = level_diagnostics(model, corpus, context=40, batches=3, batch_size=4, targets=16)
    assert first == level_diagnostics(model, corpus, context=40, batches=3, batch_size=4, targets=16)
    assert first.windows == 12 and list(first.model) == list(first.last_value)
    assert set(first.model) <= {"1", "2-4", "5-16", "17-64"} and "17-64" in first.model
    assert all(np.isfinite(v) for v in (first.readout_at_last, *first.model.values(), *first.last_value.values()))
    # smooth 64 Hz signals: last value is far better one sample ahead than a quarter of a second ahead
    assert first.last_value[next(iter(first.last_value))] < first.last_value["17-64"]
    save_pretrained(model, tmp_path / "ckpt")
    assert main(["--checkpoint", str(tmp_path / "ckpt"), "--corpus", str(corpus), "--context", "40",
                 "--batches", "2"]) == 0
    assert "|readout(h_T) - x_T|" in capsys.readouterr().out


def test_quick_eval_panel_names_a_folder_by_its_name_not_the_training_machines_path():
    """The anchored checkpoint's curves showed the training machine's absolute held-out folder and overflowed the
    panel."""
    from models.soter.training.ship import dataset_label

    assert dataset_label("/data/x/heldout/mimic-3234460_0016:blocks=6") == "mimic-3234460_0016:blocks=6"
    assert dataset_label("mitbih:blocks=6") == "mitbih:blocks=6"
