"""Gate-assignment vectors of the topmost MoE layer and their similarity (the paper's routing
interpretability figure).

A segment's gate-assignment vector is the mean over its tokens of the router's combine weights at
the top block (top-k weights scattered over the E experts, zero elsewhere), averaged over channels
when a segment has several.  The figure is the pairwise cosine-similarity matrix of the segments,
grouped by signal type (the paper: five segments each of ECG, PPG and heart rate, seed 42).

    python -m models.soter.gates --weights DIR --signals ECG PPG RSP [--dataset NAME|PATH]
        [--segments 5] [--length 512] [--seed 42] [--out results/figures]

``--signals`` are channels of ``--dataset`` (default: the embedded cohort, whose ECG, PPG and
respiration span high to low frequency), or ``DATASET:CHANNEL`` pairs to mix datasets
(``mitbih:lead1 ieee-ppg:ppg1 heartrate:ppg`` as in the paper, with ``--data-root``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
            model.encode(values, timestamps)
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


def plot(matrix: np.ndarray, labels: list[str], per_group: int, path: Path, title: str) -> list[Path]:
    from harness.figures import _plt, _save

    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 4.4))
    im = ax.imshow(matrix, vmin=min(0.0, float(matrix.min())), vmax=1.0, cmap="viridis")
    ticks = [i * per_group + (per_group - 1) / 2 for i in range(len(labels))]
    ax.set_xticks(ticks, labels)
    ax.set_yticks(ticks, labels)
    for k in range(1, len(labels)):
        ax.axhline(k * per_group - 0.5, color="white", lw=1)
        ax.axvline(k * per_group - 0.5, color="white", lw=1)
    fig.colorbar(im, ax=ax, label="cosine similarity")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    files = _save(fig, path)
    plt.close(fig)
    return files


def main(argv: list[str] | None = None) -> int:
    from models.registry import get_spec
    from protocols.datasets import load_dataset

    p = argparse.ArgumentParser(prog="python -m models.soter.gates", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--weights", default=None, help="SOTER checkpoint folder (default: the shipped one)")
    p.add_argument("--model", default="soter", help="registry name (soter-tiny-random for a smoke run)")
    p.add_argument("--signals", nargs="+", default=["ECG", "PPG", "RSP"])
    p.add_argument("--dataset", default="synthetic-cohort")
    p.add_argument("--data-root", type=Path, default=None)
    p.add_argument("--segments", type=int, default=5)
    p.add_argument("--length", type=int, default=512)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--out", type=Path, default=Path("results/figures"))
    args = p.parse_args(argv)
    spec = get_spec(args.model)
    options = {"weights": args.weights} if args.weights else {}
    reason = spec.unavailable_reason(**options)
    if reason is not None:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    model = spec.load(**options).model
    vectors, labels = [], []
    for signal in args.signals:
        name, _, channel = signal.rpartition(":")
        dataset = load_dataset(name or args.dataset, data_root=args.data_root)
        values, times = sample_segments(dataset, channel, args.segments, args.length, args.seed)
        vectors.append(gate_vectors(model, torch.as_tensor(values, dtype=torch.float32), torch.as_tensor(times)))
        labels.append(signal)
    matrix = cosine_matrix(np.concatenate(vectors))
    random = "\nRANDOM WEIGHTS: not a result" if "random" in args.model else ""
    title = f"Top-layer gate similarity\n{args.segments} segments x {args.length} samples, seed {args.seed}{random}"
    stem = args.out / f"gate-similarity-{args.model}"
    for f in plot(matrix, labels, args.segments, stem, title):
        print(f)
    np.savetxt(stem.with_suffix(".csv"), matrix, delimiter=",", header=",".join(
        f"{lab}#{i}" for lab in labels for i in range(args.segments)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
