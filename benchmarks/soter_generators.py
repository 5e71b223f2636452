"""Cost of the training data generated on the fly (and of augmentation) against a SOTER training step.

Usage: python benchmarks/soter_generators.py [--recipe models/soter/recipes/v15-base.toml] [--rounds 12]
       [--generators MIX] [--augment SPEC] [--threads 1]

Windows of the recipe's length (max_length + max_target_offset: 320 for v15-base), batches of its batch size.
Prints, in CPU seconds (``time.process_time``: this process alone, whatever else runs):
1. per generator: the median seconds per batch and windows per second;
2. interleaved rounds (A B C D E A B C D E ...): a generated step's batch (the mix's generator drawn per step, as in
   training), a training step (forward, backward, AdamW) of the recipe's model on that batch (one channel), a
   corpus batch without and with ``--augment``, a training step on the corpus batch (four channels); the medians
   and the median per-round ratio generated batch / training step.
The corpus is a small synthetic one written to a temporary folder (two subjects at 64 Hz, ECG, PPG, RSP, EDA).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from models.soter.model import SoterModel  # noqa: E402
from models.soter.training.config import TrainConfig, read_recipe  # noqa: E402
from models.soter.training.corpus import open_corpus, synthetic_stream, write_dataset  # noqa: E402
from models.soter.training.generators import DEFAULT_MIX, GENERATORS, parse_mix  # noqa: E402
from models.soter.training.sampler import WindowSampler  # noqa: E402
from models.soter.training.trainer import batch_loss  # noqa: E402


def cpu_seconds(call) -> tuple[float, object]:
    t0 = time.process_time()
    out = call()
    return time.process_time() - t0, out


def per_generator(datasets, cfg: TrainConfig, rounds: int) -> dict[str, float]:
    """CPU seconds per generated batch of each generator alone, as the sampler draws it (windows cut in groups from
    one series each)."""
    out = {}
    print(f"## per generator: the sampler's generated batches of {cfg.batch_size} windows (CPU s per batch, median)")
    for kind in GENERATORS:
        sampler = WindowSampler(datasets, cfg.max_length, cfg.batch_size, cfg.seed, cfg.missing_prob,
                                cfg.missing_rate, max_target_offset=cfg.max_target_offset,
                                next_step_prob=cfg.next_step_prob, min_context=cfg.min_context,
                                targets_per_window=cfg.targets_per_window, generated_share=1.0, generators={kind: 1.0})
        n = max(3, rounds // 4) if kind == "ecgsyn" else rounds
        seconds = [cpu_seconds(lambda r=r: sampler.batch(r))[0] for r in range(n)]
        med = statistics.median(seconds)
        print(f"{kind:8s} {med:.4f} s/batch  {cfg.batch_size / med:8.0f} windows/s  ({n} batches)")
        out[kind] = med
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--recipe", type=Path, default=REPO / "models/soter/recipes/v15-base.toml")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--generators", default=DEFAULT_MIX)
    p.add_argument("--augment", default="decimate=0.2,resample=0.2,scale=0.3,offset=0.3,flip=0.3")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--skip-generators", action="store_true", help="only the interleaved rounds")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    recipe = read_recipe(args.recipe)
    with tempfile.TemporaryDirectory() as tmp:
        write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=30, seed=1000), Path(tmp))
        datasets = open_corpus(Path(tmp))
        cfg = TrainConfig.from_dict({**recipe, "corpus": tmp, "generated_share": 1.0, "generators": args.generators})
        generated = WindowSampler.from_config(datasets, cfg)
        plain = WindowSampler.from_config(datasets, TrainConfig.from_dict({**recipe, "corpus": tmp}))
        augmented = WindowSampler.from_config(datasets, TrainConfig.from_dict({**recipe, "corpus": tmp,
                                                                                "augment": args.augment}))
        window = generated.window
        print(f"# {args.recipe.name}: {cfg.model}, batch {cfg.batch_size}, window {window} (context {cfg.max_length}"
              f" + K {cfg.max_target_offset}), threads {args.threads}, torch {torch.__version__}")
        costs = {} if args.skip_generators else per_generator(datasets, cfg, args.rounds)
        if costs:
            expected = sum(w * costs[k] for k, w in parse_mix(args.generators).items())
            print(f"expected CPU s per generated batch under the mix: {expected:.4f}")
        torch.manual_seed(0)
        model = SoterModel(cfg.model_config()).train()
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                weight_decay=cfg.weight_decay)

        def step(batch) -> None:
            loss = batch_loss(model, batch, torch.device("cpu"), cfg.aux_absolute_weight)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

        rows: dict[str, list[float]] = {"generated batch": [], "training step": [], "corpus batch": [],
                                        "augmented corpus batch": [], "training step, corpus": []}
        kinds = []
        for r in range(args.rounds + 1):  # the first round warms up
            s, batch = cpu_seconds(lambda r=r: generated.batch(r))
            t, _ = cpu_seconds(lambda: step(batch))
            c, corpus_batch = cpu_seconds(lambda r=r: plain.batch(r))
            a, _ = cpu_seconds(lambda r=r: augmented.batch(r))
            u, _ = cpu_seconds(lambda: step(corpus_batch))
            if r:
                for key, value in zip(rows, (s, t, c, a, u)):
                    rows[key].append(value)
                kinds.append(batch.dataset.split(":")[1])
        ratios = [g / t for g, t in zip(rows["generated batch"], rows["training step"])]
        print(f"## {args.rounds} interleaved rounds (CPU s, median; generators drawn {sorted(set(kinds))})")
        for key, values in rows.items():
            print(f"{key:24s} {statistics.median(values):.4f} s  (mean {np.mean(values):.4f})")
        mean_over_step = np.mean(rows["generated batch"]) / statistics.median(rows["training step"])
        print(f"generated batch / training step: median {statistics.median(ratios):.3f}, "
              f"mean of the generated batches / median step {mean_over_step:.3f}")
        print(f"mix {args.generators!r}; augment {args.augment!r}")


if __name__ == "__main__":
    main()
