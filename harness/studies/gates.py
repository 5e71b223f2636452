"""The paper's routing interpretability figure: the pairwise cosine similarity of the top MoE layer's
gate-assignment vectors of segments grouped by signal type (the computations:
:mod:`models.soter.gates`).

    python -m harness.studies.gates --weights DIR --signals ECG PPG RSP [--dataset NAME|PATH]
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

from models.soter.gates import cosine_matrix, gate_vectors, sample_segments


def plot(matrix: np.ndarray, labels: list[str], per_group: int, path: Path, title: str) -> list[Path]:
    from harness.reporting.figures import pyplot, save_png_pdf  # matplotlib: imported on use

    plt = pyplot()
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
    files = save_png_pdf(fig, path)
    plt.close(fig)
    return files


def main(argv: list[str] | None = None) -> int:
    from models.registry import get_spec
    from protocols.datasets import load_dataset

    p = argparse.ArgumentParser(prog="python -m harness.studies.gates", description=__doc__,
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
