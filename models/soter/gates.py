"""Gate-assignment vectors of the topmost MoE layer and their similarity (the paper's routing
interpretability figure).

A segment's gate-assignment vector is the mean over its tokens of the router's combine weights at
the top block (top-k weights scattered over the E experts, zero elsewhere), averaged over channels
when a segment has several.  The figure is the pairwise cosine-similarity matrix of the segments,
grouped by signal type (the paper: five segments each of ECG, PPG and heart rate, seed 42).

The computations live here, beside the model; the figure and its command (``python -m harness.studies.gates``)
in :mod:`harness.studies.gates`, which draws with the harness's figure helpers.
"""

from __future__ import annotations

import numpy as np
import torch

from models.soter.model import SoterModel


def gate_vectors(model: SoterModel, values: torch.Tensor, timestamps: torch.Tensor, layer: int = -1) -> np.ndarray:
    """[B, E] gate-assignment vectors of ``layer`` (default: the top one) for values [B, C, T]."""
    moe = model.blocks[layer].moe
    captured: dict[str, torch.Tensor] = {}
    route = moe.route

    def recording(x: torch.Tensor):
        logits, idx, w, aux = route(x)
        combine = torch.zeros(*x.shape[:-1], model.config.num_experts, dtype=torch.float32, device=x.device)
        captured["combine"] = combine.scatter_(-1, idx, w.float())
        return logits, idx, w, aux

    moe.route = recording  # an instance attribute shadows the method for this one call
    try:
        with torch.inference_mode():
            everything = torch.ones_like(values, dtype=torch.bool)
            model.encode(model.model_inputs(values, everything, timestamps)[0], timestamps)
    finally:
        del moe.route
    b, c = values.shape[:2]
    return captured["combine"].mean(dim=1).view(b, c, -1).mean(dim=1).cpu().numpy()


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norm > 0, norm, 1.0)
    return unit @ unit.T


def sample_segments(dataset, channel: str, n: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` gap-free segments of one channel, MinMax-normalised per segment: values [n, 1, L], times [n, L]."""
    from protocols.specs import SamplingSpec
    from protocols.windows import extract_segments, select_segments

    single = dataset.select_channels((channel,))
    refs = []
    for subject in single.subjects:
        refs.extend(select_segments(single, subject, length, length, SamplingSpec(max_windows_per_subject=n,
                                                                                 seed=seed), "gates").windows)
    if len(refs) < n:
        raise ValueError(f"{dataset.name}:{channel}: only {len(refs)} gap-free segments of {length} samples")
    rng = np.random.default_rng(seed)
    chosen = tuple(refs[i] for i in sorted(rng.choice(len(refs), n, replace=False)))
    values, times = extract_segments(single, chosen, length)
    lo, hi = values.min(axis=2, keepdims=True), values.max(axis=2, keepdims=True)
    return (values - lo) / np.where(hi > lo, hi - lo, 1.0), times
