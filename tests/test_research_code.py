"""NormWear and TF-C: adapters that run the code of the user's checkout of their repositories.

Their code is not on PyPI and cannot be fetched in CI, so these tests write fake checkouts into
tmp_path with the same layout and the same entry points (``modules/normwear.py``: ``NormWear`` and
``cwt_wrap``; ``code/TFC/model.py``: ``TFC(configs)`` whose encoders mix along the first axis, as
TF-C's sequence-first transformers do) and test everything up to their numerics: finding the
checkout, the registry status at each missing piece, checkpoint loading (``weights_only=True``,
unwrapping, mismatches, corrupt and malicious files), resampling, input alignment, channel
handling and the embedding contract. The last two tests run the same contract on random weights built
from the REAL classes of the upstream code: ``SOTER_BENCH_NORMWEAR_CODE`` / ``SOTER_BENCH_TFC_CODE`` when
set, else the unmodified copies staged in ``../shared/code`` (tests/upstream.py); skipped without either.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from baselines import checkout, normwear_model, tfc_model
from baselines.testing import check_embed_contract
from models.registry import NEEDS_CODE, NEEDS_WEIGHTS, READY, ModelSpec, ModelUnavailableError, all_specs
from protocols import interface
from protocols.interface import ModelInputError, SeriesBatch
from tests.upstream import require_code

FAKE_NORMWEAR = {
    "main_model.py": "# fake NormWear checkout (tests): the real one imports torchaudio here\n",
    "modules/patch_embed.py": "from timm.models.layers import to_2tuple  # as the real one does\n\n"
                              "TOKEN_DIM = to_2tuple(8)[0]\n",
    "modules/normwear.py": textwrap.dedent('''
        import torch
        import torch.nn as nn

        from .patch_embed import TOKEN_DIM  # a relative import, as the real module has


        class NormWear(nn.Module):
            def __init__(self, img_size, patch_size, mask_scheme, mask_prob, use_cwt, nvar, comb_freq, is_pretrain=True):
                super().__init__()
                assert img_size == (387, 65) and patch_size == (9, 5) and use_cwt and not comb_freq
                self.proj = nn.Linear(65, TOKEN_DIM)
                self.fuse = nn.Linear(TOKEN_DIM, TOKEN_DIM)
                if is_pretrain:
                    self.decoder_embed = nn.Linear(TOKEN_DIM, 4)

            @torch.no_grad()
            def get_signal_embedding(self, x, hidden_out=False, device=None):
                n, c, _, length, _ = x.shape
                tokens = torch.tanh(self.proj(x.mean(dim=2)))  # [n, c, L, E]
                cls = self.fuse(tokens.mean(dim=(1, 2)))  # shared across channels: the channels interact
                return torch.cat([cls[:, None, None, :].expand(n, c, 1, TOKEN_DIM), tokens], dim=2)


        def cwt_wrap(x, lowest_scale, largest_scale, step=1):
            scales = torch.arange(lowest_scale, largest_scale + step, step)  # 65 scales for (0.1, 64)
            d1 = x[:, 1:] - x[:, :-1]
            d2 = d1[:, 1:] - d1[:, :-1]
            z = torch.stack([x[:, 2:], d1[:, 1:], d2], dim=1)  # [bn, 3, L - 2]
            return z[..., None] * torch.cos(scales)  # [bn, 3, L - 2, 65]
        '''),
}

FAKE_TFC = {
    "code/TFC/main.py": "# fake TF-C checkout (tests)\n",
    "code/TFC/model.py": textwrap.dedent('''
        import torch
        from torch import nn


        class TFC(nn.Module):
            def __init__(self, configs):
                super().__init__()
                length = configs.TSlength_aligned
                self.mix_t = nn.Linear(length, length)
                self.mix_f = nn.Linear(length, length)
                self.projector_t = nn.Sequential(nn.Linear(length, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 128))
                self.projector_f = nn.Sequential(nn.Linear(length, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Linear(256, 128))

            def forward(self, x_in_t, x_in_f):
                # like a sequence-first transformer fed [N, 1, L]: positions along the first axis interact
                x = self.mix_t(x_in_t) + x_in_t.mean(dim=0, keepdim=True)
                f = self.mix_f(x_in_f) + x_in_f.mean(dim=0, keepdim=True)
                h_time, h_freq = x.reshape(x.shape[0], -1), f.reshape(f.shape[0], -1)
                return h_time, self.projector_t(h_time), h_freq, self.projector_f(h_freq)
        '''),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def normwear_checkout(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A fake NormWear checkout and, beside it, a folder with a checkpoint saved as its training code does."""
    root = _write(tmp_path / "NormWear", FAKE_NORMWEAR)
    with normwear_model.timm_helper():
        module = checkout.import_from_checkout(normwear_model.SOURCE, root, "modules.normwear")
    torch.manual_seed(1)
    net = module.NormWear(**normwear_model.ARCHITECTURE)
    weights = tmp_path / "normwear-weights"
    weights.mkdir()
    torch.save({"model": net.state_dict(), "epoch": 3}, weights / "normwear_checkpoint.pth")
    monkeypatch.delenv(normwear_model.SOURCE.env_var, raising=False)
    return root, weights


@pytest.fixture
def tfc_checkout(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A fake TF-C checkout holding a checkpoint (L = 40) where TF-C's trainer saves one."""
    root = _write(tmp_path / "TFC-pretraining", FAKE_TFC)
    module = checkout.import_from_checkout(tfc_model.SOURCE, root, "code.TFC.model")
    torch.manual_seed(2)
    net = module.TFC(type("Configs", (), {"TSlength_aligned": 40})())
    saved = root / "code/experiments_logs/run1/saved_models"
    saved.mkdir(parents=True)
    torch.save({"model_state_dict": net.state_dict()}, saved / "ckp_last.pt")
    monkeypatch.delenv(tfc_model.SOURCE.env_var, raising=False)
    return root, saved


def _spec(name: str, **options) -> ModelSpec:
    factory = {"normwear": "baselines.normwear_model:NormWear", "tf-c": "baselines.tfc_model:TFC"}[name]
    return ModelSpec(f"{name}-fake", factory, "fake checkout", options={"card": name, **options})


def _batch(b: int, c: int, t: int, rate: float, seed: int = 0) -> SeriesBatch:
    rng = np.random.default_rng(seed)
    return SeriesBatch(rng.standard_normal((b, c, t)), np.tile(np.arange(t) / rate, (b, 1)))


# ---------------------------------------------------------------- status: what is missing, in order

def test_without_weights_both_need_weights_and_say_where_code_and_weights_come_from(monkeypatch, tmp_path):
    monkeypatch.setenv("SOTER_BENCH_WEIGHTS", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    for name, repo in (("normwear", "NormWear"), ("tf-c", "TFC-pretraining")):
        status, reason = all_specs()[name].status()
        assert status == NEEDS_WEIGHTS and repo in reason and "not on PyPI" in reason
        assert not all_specs()[name].default
        with pytest.raises(ModelUnavailableError, match="needs its pretrained weights"):
            all_specs()[name].load()


def test_with_weights_but_no_code_they_need_code(normwear_checkout, tfc_checkout, tmp_path):
    _, nw_weights = normwear_checkout
    status, reason = all_specs()["normwear"].status(weights=str(nw_weights))
    assert status == NEEDS_CODE and normwear_model.SOURCE.env_var in reason and "git clone" in reason
    lone = tmp_path / "lone"
    lone.mkdir()
    (lone / "ckp_last.pt").write_bytes((tfc_checkout[1] / "ckp_last.pt").read_bytes())
    status, reason = all_specs()["tf-c"].status(weights=str(lone))
    assert status == NEEDS_CODE and tfc_model.SOURCE.env_var in reason


def test_a_folder_that_is_not_a_checkout_is_named(normwear_checkout, monkeypatch, tmp_path):
    monkeypatch.setenv(normwear_model.SOURCE.env_var, str(tmp_path))
    status, reason = all_specs()["normwear"].status(weights=str(normwear_checkout[1]))
    assert status == NEEDS_CODE and f"{tmp_path} is not a checkout" in reason and "modules/normwear.py" in reason


def test_without_timm_its_one_helper_is_stood_in_only_while_its_code_is_imported(normwear_checkout, monkeypatch):
    root, weights = normwear_checkout
    monkeypatch.setattr(normwear_model, "_timm_failure", lambda: "ModuleNotFoundError: No module named 'timm'")
    monkeypatch.delitem(sys.modules, "timm", raising=False)
    with normwear_model.timm_helper() as used:
        from timm.models.layers import to_2tuple

        assert to_2tuple(3) == (3, 3) and to_2tuple([9, 5]) == (9, 5) and to_2tuple("ab") == ("ab", "ab")
    assert "stand-in" in used and "No module named 'timm'" in used
    assert "timm" not in sys.modules and "timm.models.layers" not in sys.modules  # nothing left behind
    model = _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)
    assert model.describe()["timm"].startswith("stand-in for timm.models.layers.to_2tuple")
    assert "timm" not in sys.modules


def test_with_weights_and_code_they_are_ready(normwear_checkout, tfc_checkout, monkeypatch):
    root, weights = normwear_checkout
    monkeypatch.setenv(normwear_model.SOURCE.env_var, str(root))
    assert all_specs()["normwear"].status(weights=str(weights)) == (READY, None)
    # TF-C's checkpoint lies inside its checkout: the checkout is found from it, no variable needed
    assert all_specs()["tf-c"].status(weights=str(tfc_checkout[1])) == (READY, None)


# ---------------------------------------------------------------- checkpoints

def test_checkpoints_are_unwrapped_and_loaded_strictly(normwear_checkout, tmp_path):
    root, weights = normwear_checkout
    file = weights / "normwear_checkpoint.pth"
    state = checkout.load_state_dict("normwear", file)
    assert "proj.weight" in state and "decoder_embed.weight" in state  # {"model": ...} unwrapped, epoch dropped
    model = _spec("normwear", weights=str(file), code=str(root)).load(seed=0)  # a file named directly
    assert model.describe()["weights"] == str(file.resolve())
    # an encoder-only checkpoint (no pre-training decoder) loads too
    encoder = {k: v for k, v in state.items() if not k.startswith("decoder_")}
    torch.save(encoder, tmp_path / "encoder.pth")
    _spec("normwear", weights=str(tmp_path / "encoder.pth"), code=str(root)).load(seed=0)


def test_a_checkpoint_of_another_shape_names_the_file_and_the_mismatch(normwear_checkout, tmp_path):
    root, weights = normwear_checkout
    state = checkout.load_state_dict("normwear", weights / "normwear_checkpoint.pth")
    state["proj.weight"] = torch.zeros(8, 64)
    state["surplus.bias"] = torch.zeros(2)
    torch.save(state, tmp_path / "other.pth")
    with pytest.raises(ModelUnavailableError, match=r"other\.pth does not fit.*unexpected: surplus\.bias.*shape: proj\.weight"):
        _spec("normwear", weights=str(tmp_path / "other.pth"), code=str(root)).load(seed=0)


def test_truncated_and_malicious_checkpoints_are_refused_and_nothing_runs(tfc_checkout, tmp_path):
    root, saved = tfc_checkout
    good = (saved / "ckp_last.pt").read_bytes()
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "ckp_last.pt").write_bytes(good[: len(good) // 2])
    with pytest.raises(ModelUnavailableError, match=r"cannot read the checkpoint .*ckp_last\.pt"):
        _spec("tf-c", weights=str(tmp_path / "cut"), code=str(root)).load(seed=0)

    (tmp_path / "other").mkdir()
    torch.save({"model_state_dict": {"encoder.weight": torch.zeros(2, 2)}}, tmp_path / "other" / "ckp_last.pt")
    with pytest.raises(ModelUnavailableError, match=r"has no projector_t\.0\.weight: not a TF-C checkpoint"):
        _spec("tf-c", weights=str(tmp_path / "other"), code=str(root)).load(seed=0)

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "evil").mkdir()
    torch.save({"model_state_dict": Payload()}, tmp_path / "evil" / "ckp_last.pt")
    with pytest.raises(ModelUnavailableError, match="weights_only=True"):
        _spec("tf-c", weights=str(tmp_path / "evil"), code=str(root)).load(seed=0)
    assert not marker.exists()


def test_several_checkpoints_in_one_folder_must_be_named(normwear_checkout):
    root, weights = normwear_checkout
    (weights / "another.pt").write_bytes((weights / "normwear_checkpoint.pth").read_bytes())
    with pytest.raises(ModelUnavailableError, match="several checkpoints"):
        _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)


def test_code_that_fails_on_import_is_a_clear_error(tmp_path):
    root = _write(tmp_path / "broken", {**FAKE_NORMWEAR, "modules/normwear.py": "raise RuntimeError('boom')\n"})
    with pytest.raises(ModelUnavailableError, match=r"importing modules\.normwear from the checkout .* RuntimeError: boom"):
        checkout.import_from_checkout(normwear_model.SOURCE, root, "modules.normwear")


# ---------------------------------------------------------------- NormWear's input handling

def test_normwear_resamples_only_above_256_hz_as_its_downstream_code_does(normwear_checkout):
    root, weights = normwear_checkout
    model = _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)
    seen = []
    cwt = model._cwt
    model._cwt = lambda x, *a: seen.append(x.shape[-1]) or cwt(x, *a)
    interface.embed(model, _batch(2, 3, 128, rate=64.0))
    interface.embed(model, _batch(2, 3, 128, rate=500.0))
    interface.embed(model, _batch(2, 3, 130, rate=256.0))
    assert seen == [128, 17, 130]  # 128 samples at 500 Hz are 16.64 at 65 Hz
    always = _spec("normwear", weights=str(weights), code=str(root), resample="always").load(seed=0)
    always._cwt = lambda x, *a: seen.append(x.shape[-1]) or cwt(x, *a)
    interface.embed(always, _batch(1, 1, 128, rate=64.0))
    assert seen[-1] == 130  # 128 * 65 / 64
    with pytest.raises(ValueError, match="resample must be one of"):
        _spec("normwear", weights=str(weights), code=str(root), resample="sometimes").load()


def test_normwear_embeds_rows_of_different_rates_each_at_its_own(normwear_checkout):
    root, weights = normwear_checkout
    model = _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)
    fast, slow = _batch(1, 2, 128, rate=500.0, seed=1), _batch(1, 2, 128, rate=64.0, seed=2)
    mixed = SeriesBatch(np.concatenate([fast.values, slow.values]), np.concatenate([fast.timestamps, slow.timestamps]))
    out = interface.embed(model, mixed)
    np.testing.assert_allclose(out[0], interface.embed(model, fast)[0], rtol=1e-6)
    np.testing.assert_allclose(out[1], interface.embed(model, slow)[0], rtol=1e-6)


def test_normwear_concatenates_channels_and_its_channels_interact(normwear_checkout):
    root, weights = normwear_checkout
    model = _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)
    batch = _batch(2, 3, 64, rate=64.0)
    out = interface.embed(model, batch)
    assert out.shape == (2, 3 * 8)
    moved = batch.values.copy()
    moved[:, 2] *= 3
    again = interface.embed(model, SeriesBatch(moved, batch.timestamps))
    assert not np.allclose(again[:, :8], out[:, :8])  # channel 0's vector feels channel 2 (the [CLS] fusion)


def test_a_window_too_short_after_resampling_is_a_clear_error(normwear_checkout):
    root, weights = normwear_checkout
    model = _spec("normwear", weights=str(weights), code=str(root)).load(seed=0)
    with pytest.raises(ModelInputError, match=r"at least 11 samples at 65 Hz after resampling, got 7"):
        interface.embed(model, _batch(1, 2, 40, rate=400.0))


def test_normwear_meets_the_embedding_contract(normwear_checkout):
    root, weights = normwear_checkout
    check_embed_contract(_spec("normwear", weights=str(weights), code=str(root)))


# ---------------------------------------------------------------- TF-C's input handling

def test_tfc_reads_its_input_length_from_the_checkpoint_and_aligns_windows_to_it(tfc_checkout):
    root, saved = tfc_checkout
    model = _spec("tf-c", weights=str(saved)).load(seed=0)
    assert model.length == 40 and model.describe()["input_length"] == 40
    x = np.arange(1.0, 51.0)[None, None]
    np.testing.assert_array_equal(model.aligned(x)[0, 0], np.arange(11.0, 51.0))  # the newest 40
    short = model.aligned(np.ones((1, 1, 25)))[0, 0]
    assert short[:15].tolist() == [0.0] * 15 and short[15:].tolist() == [1.0] * 25  # zero-padded on the left


def test_tfc_embeds_each_channel_alone_unless_asked_to_mix_them(tfc_checkout):
    root, saved = tfc_checkout
    batch = _batch(2, 3, 64, rate=64.0)
    moved = batch.values.copy()
    moved[:, 2] = moved[:, 2] * 3 + 1
    alone = _spec("tf-c", weights=str(saved)).load(seed=0)
    out, again = interface.embed(alone, batch), interface.embed(alone, SeriesBatch(moved, batch.timestamps))
    assert out.shape == (2, 3 * 256)
    np.testing.assert_allclose(again[:, :512], out[:, :512], atol=1e-6)  # channels 0 and 1 unchanged
    assert not np.allclose(again[:, 512:], out[:, 512:])
    mixed = _spec("tf-c", weights=str(saved), attention="channels").load(seed=0)
    out, again = interface.embed(mixed, batch), interface.embed(mixed, SeriesBatch(moved, batch.timestamps))
    assert not np.allclose(again[:, :256], out[:, :256])  # NormWear's benchmark call: channels share attention


def test_tfc_frequency_view_is_the_fft_magnitude_of_the_aligned_input(tfc_checkout):
    root, saved = tfc_checkout
    model = _spec("tf-c", weights=str(saved)).load(seed=0)
    seen = []
    forward = model._model.forward
    model._model.forward = lambda t, f: seen.append((t.clone(), f.clone())) or forward(t, f)
    batch = _batch(1, 1, 30, rate=10.0)
    interface.embed(model, batch)
    x_t, x_f = seen[0]
    assert x_t.shape == (1, 1, 40)
    expected = np.abs(np.fft.fft(model.aligned(batch.values)[0, 0]))
    np.testing.assert_allclose(x_f[0, 0].numpy(), expected, rtol=1e-5, atol=1e-5)


def test_tfc_meets_the_embedding_contract(tfc_checkout):
    root, saved = tfc_checkout
    check_embed_contract(_spec("tf-c", weights=str(saved)))
    check_embed_contract(_spec("tf-c", weights=str(saved), attention="channels"))


# ---------------------------------------------------------------- the real code, where a checkout is at hand

def test_real_tfc_code_with_random_weights_meets_the_contract(tmp_path):
    root = require_code("SOTER_BENCH_TFC_CODE", "tfc")
    module = checkout.import_from_checkout(tfc_model.SOURCE, root, "code.TFC.model")
    torch.manual_seed(0)
    net = module.TFC(type("Configs", (), {"TSlength_aligned": 178})())
    torch.save({"model_state_dict": net.state_dict()}, tmp_path / "ckp_last.pt")
    check_embed_contract(_spec("tf-c", weights=str(tmp_path), code=str(root)), t=128)


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_real_normwear_code_with_random_weights_meets_the_contract(tmp_path):
    root = require_code("SOTER_BENCH_NORMWEAR_CODE", "normwear")
    with normwear_model.timm_helper():
        module = checkout.import_from_checkout(normwear_model.SOURCE, root, "modules.normwear")
    torch.manual_seed(0)
    net = module.NormWear(**normwear_model.ARCHITECTURE)
    torch.save({"model": net.state_dict()}, tmp_path / "normwear.pth")
    check_embed_contract(_spec("normwear", weights=str(tmp_path), code=str(root)), t=64, b=3, c=2, rtol=1e-4, atol=1e-5)
