"""MOMENT worker: runs in the ``moment`` environment (momentfm 0.1.4), never in the main one.

Forecasting is zero-shot masked reconstruction, because the released checkpoints carry only the
pre-trained reconstruction head (momentfm's forecasting head is randomly initialised and must be
fine-tuned): the context is placed right-aligned in MOMENT's 512-step input, followed by a block of
``span`` masked steps (default 64: 8 whole patches, replaced by the learned mask embedding, as in
pre-training); the left remainder is padding (``input_mask`` 0, never attended). The reconstruction
of the masked block is the forecast -- what ``MOMENT.short_forecast`` does, without its roll (which
would drop context). The block does not depend on the horizon asked for, so step k's forecast is
the same whatever H (the harness's causal imputation relies on that); horizons beyond ``span`` are
rolled out block by block, each block appended to the context. Unobserved context points are
masked too (and RevIN's statistics skip them). A context longer than 512 - ``span`` keeps its latest
steps. The padding boundary falls inside a patch when T is not a multiple of 8; that partial patch
is not attended (up to 7 of the oldest context steps unused; the paper's windows are multiples of 8).

Embeddings: the context right-aligned with padding, MOMENT's ``embed`` (mean over the attended
patches of the last hidden state).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from _protocol import serve

SEQ_LEN, PATCH = 512, 8


def load(weights: str | None, options: dict[str, Any]):
    import momentfm
    import torch
    from momentfm import MOMENTPipeline

    torch.manual_seed(int(options.get("seed", 0)))
    model = MOMENTPipeline.from_pretrained(weights, model_kwargs={"task_name": "reconstruction"})
    model.init()
    model = model.to(options.get("device", "cpu")).eval()
    if model.config.seq_len != SEQ_LEN or model.config.patch_len != PATCH:
        raise ValueError(f"expected seq_len {SEQ_LEN} and patch_len {PATCH}, the checkpoint has "
                         f"{model.config.seq_len} and {model.config.patch_len}")
    device = next(model.parameters()).device
    span = int(options.get("span", 64))
    if span % PATCH or not 0 < span < SEQ_LEN:
        raise ValueError(f"span must be a positive multiple of {PATCH} below {SEQ_LEN}, got {span}")

    def layout(values: np.ndarray, observed: np.ndarray, masked: int):
        """[B, T] -> x, input_mask, mask [B, 512]: padding | context | ``masked`` steps to fill."""
        b, t = values.shape
        keep = min(t, SEQ_LEN - masked)
        start = SEQ_LEN - masked - keep
        x = np.zeros((b, SEQ_LEN), np.float32)
        input_mask = np.zeros((b, SEQ_LEN), np.float32)
        mask = np.zeros((b, SEQ_LEN), np.float32)
        x[:, start:start + keep] = values[:, t - keep:]
        input_mask[:, start:] = 1
        mask[:, start:start + keep] = observed[:, t - keep:]
        as_t = lambda a: torch.as_tensor(a, device=device)  # noqa: E731
        return as_t(x)[:, None, :], as_t(input_mask), as_t(mask)

    def forecast(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        values, observed = inputs["values"][:, 0].astype(np.float32), inputs["mask"][:, 0]
        if inputs["values"].shape[1] != 1:
            raise ValueError(f"MOMENT is per channel: expected [B, 1, T], got {inputs['values'].shape}")
        h, blocks = int(args["horizon"]), []
        while sum(b.shape[1] for b in blocks) < h:  # one block per pass; later blocks see the earlier ones
            x, input_mask, mask = layout(values, observed, span)
            with torch.no_grad():
                out = model.reconstruct(x_enc=x, input_mask=input_mask, mask=mask).reconstruction  # [B, 1, 512]
            block = out[:, 0, SEQ_LEN - span:].float().cpu().numpy()
            blocks.append(block)
            values = np.concatenate([values, block], axis=1)
            observed = np.concatenate([observed, np.ones_like(block, dtype=bool)], axis=1)
        return {"forecast": np.concatenate(blocks, axis=1)[:, None, :h]}

    def embed(inputs: dict[str, np.ndarray], args: dict[str, Any]) -> dict[str, np.ndarray]:
        values, observed = inputs["values"], inputs["mask"]
        x, input_mask, mask = layout(values[:, 0], observed[:, 0], 0)
        with torch.no_grad():
            out = model.embed(x_enc=x, input_mask=input_mask * mask, reduction="mean").embeddings  # [B, D]
        return {"embedding": out.float().cpu().numpy()}

    info = {"momentfm": momentfm.__version__ if hasattr(momentfm, "__version__") else _version("momentfm"),
            "torch": torch.__version__, "d_model": int(model.config.d_model),
            "forecast": f"zero-shot masked reconstruction of a {span}-step masked block after the context "
                        "(pre-trained reconstruction head; MOMENT's forecasting head is not pre-trained and is "
                        "not used)", "span": span,
            "embedding": "mean of the last hidden state over attended patches"}
    return {"forecast": forecast, "embed": embed}, info


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


if __name__ == "__main__":
    serve(load)
