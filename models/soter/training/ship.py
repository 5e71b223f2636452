"""Turn a training run into a shipped checkpoint: weights, checksums, logs and curves.

    python -m models.soter.training.ship --run runs/soter-cpu-64 --name soter-cpu-64 \\
        [--checkpoint checkpoint-00014000] [--eval-dataset mitbih:blocks=6 --data-root DIR]

Writes ``models/soter/checkpoints/<name>/`` (or ``--dest``): ``config.json`` and safetensors
weights (shards of at most 15 MiB), ``SHA256SUMS`` (verified on every load), ``TRAINING.json``
(steps, tokens seen, wall time, final losses, the training config), ``CORPUS.json`` (every corpus
dataset it trained on, with its recordings and source: ``models.soter.corpus_manifest``), the run's
``train_log.csv`` / ``val_log.csv``, ``quick_eval.csv`` (the paper's quick evaluation on every saved
checkpoint of the run: 32 windows of 128/64 of the first fold's test subject, seed 123) and
``training_curves.png``.  The optimizer state is not shipped.  ``MODEL_CARD.md`` is written by hand
from the harness's tables (the card says which commands produced them).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from models.soter.io import from_pretrained, save_pretrained, write_checksums
from models.soter.entries import CHECKPOINTS

if TYPE_CHECKING:
    import pandas as pd

MAX_SHARD_BYTES = 15 * 2**20
QUICK_EVAL = "quick_eval.csv"


def read_log(path: Path) -> pd.DataFrame:
    """A run's CSV log, one row per step: a step logged twice (a stopped run resumed before the log
    truncation on resume existed) keeps its last row."""
    import pandas as pd

    return pd.read_csv(path).drop_duplicates("step", keep="last").sort_values("step")


def checkpoints_of(run: Path) -> list[Path]:
    """Every ``checkpoint-<step>`` folder of a run, by step."""
    return sorted((p for p in run.glob("checkpoint-*") if p.is_dir()), key=lambda p: int(p.name.split("-")[1]))


def quick_eval_curve(run: Path, dataset: str, every: int = 1, samples: int = 32, context: int = 128,
                     horizon: int = 64, seed: int = 123, rollout: str = "per-query") -> Path:
    """The quick evaluation of every ``every``-th saved checkpoint (cached in ``run/quick_eval.csv``)."""
    from models.soter.training.quick_eval import sample_eval
    from models.soter.training.trainer import append_csv

    out = run / QUICK_EVAL
    done = set(read_log(out)["step"].astype(int)) if out.is_file() else set()
    ckpts = checkpoints_of(run)
    for i, ckpt in enumerate(ckpts):
        step = int(ckpt.name.split("-")[1])
        if step in done or (i % every and ckpt != ckpts[-1]):  # every k-th, and always the last
            continue
        scores = sample_eval(from_pretrained(ckpt), dataset, samples, context, horizon, seed, rollout)
        append_csv(out, {"step": step, **scores, "dataset": dataset, "rollout": rollout})
    return out


def dataset_label(dataset: str) -> str:
    """A quick-evaluation dataset as a figure title shows it: a folder by its own name (with its options),
    not the absolute path of the machine it was trained on, which overflowed the panel."""
    return Path(dataset).name if "/" in dataset else dataset


def plot_curves(run: Path, dest: Path, changes: list[int] = ()) -> Path:
    """Training loss (and its running mean), held-out loss, quick-evaluation RMSE/MAE against the step.
    ``changes``: steps from which the training options changed, drawn as dashed lines (the logged
    held-out loss uses the sampler of the options in force, so it is comparable only within a phase)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = read_log(run / "train_log.csv")
    panels = [("train_log.csv", "training loss (Huber)")]
    if (run / "val_log.csv").is_file():
        panels.append(("val_log.csv", "held-out loss (Huber)"))
    if (run / QUICK_EVAL).is_file():
        panels.append((QUICK_EVAL, "quick evaluation, x100"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.2))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (name, title) in zip(axes, panels):
        if name == "train_log.csv":
            ax.plot(train["step"], train["loss"], lw=0.5, alpha=0.4, label="logged steps")
            ax.plot(train["step"], train["loss"].rolling(20, min_periods=1).mean(), lw=1.5, label="running mean (20)")
            ax.set_yscale("log")
        elif name == "val_log.csv":
            val = read_log(run / name)
            ax.plot(val["step"], val["val_loss"], marker="o", ms=3, label="held-out corpus")
            ax.set_yscale("log")
        else:
            q = read_log(run / name)
            for metric in ("rmse", "mae"):
                ax.plot(q["step"], 100 * q[metric], marker="o", ms=3, label=metric.upper())
            title = f"{title}\n{dataset_label(q['dataset'].iloc[0])}, 128/64, {q['rollout'].iloc[0]}"
        for i, step in enumerate(changes):
            ax.axvline(step, color="grey", ls="--", lw=0.8, label="training options changed" if i == 0 else None)
        ax.set_xlabel("optimisation step")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = dest / "training_curves.png"
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _hardware() -> str:
    """The machine this runs on (the card states it is the one the run trained on)."""
    import os
    import platform

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return f"{model}, {os.cpu_count()} cores, {gpu}"


def training_summary(run: Path, checkpoint: str) -> dict:
    """Steps, tokens seen (recomputed from the seeded sampler), wall time and losses of a run."""
    import json

    import torch

    from models.soter.training.config import TrainConfig
    from models.soter.training.corpus import open_corpus
    from models.soter.training.sampler import WindowSampler

    state = torch.load(run / checkpoint / "trainer_state.pt", map_location="cpu", weights_only=True)
    cfg = TrainConfig.from_dict(json.loads(state["config"]))
    step = int(state["step"])
    sampler = WindowSampler.from_config(open_corpus(Path(cfg.corpus)), cfg)
    tokens = sum(sampler.tokens(s, m) for s in range(step) for m in range(cfg.grad_accum))
    train = read_log(run / "train_log.csv")
    train = train[train["step"] <= step]
    summary = {"checkpoint": checkpoint, "steps": step, "tokens_seen": int(tokens),
               "windows_seen": step * cfg.batch_size * cfg.grad_accum,
               "wall_seconds": round(float(state.get("wall_seconds", 0.0)), 1),
               "final_train_loss_mean_last_10_logs": float(train["loss"].tail(10).mean()),
               "hardware": _hardware(), "torch": torch.__version__, "train_config": _portable(cfg.to_dict())}
    changes = config_changes(run, step)
    if changes:
        summary["config_changes"] = changes
    if (run / "val_log.csv").is_file():
        val = read_log(run / "val_log.csv")
        val = val[val["step"] <= step]
        summary["final_heldout_loss"] = float(val["val_loss"].iloc[-1])
    return summary


def _portable(config: dict) -> dict:
    """The config's paths as shipped files record them (``portable_path``)."""
    from models.soter.corpus_manifest import portable_path

    return {k: portable_path(v) if k in ("corpus", "out", "init_weights", "val_corpus") and v else v
            for k, v in config.items()}


def config_changes(run: Path, up_to: int) -> list[dict]:
    """Where the run's training config changed (a resume with other options or another ``--steps``),
    read from the configs its saved checkpoints were written with: ``train_config`` alone would
    describe every step by the last phase's options."""
    import json

    import torch

    changes, previous, previous_step = [], None, 0
    for ckpt in checkpoints_of(run):
        step = int(ckpt.name.split("-")[1])
        if step > up_to:
            break
        state = torch.load(ckpt / "trainer_state.pt", map_location="cpu", weights_only=True)
        config = _portable(json.loads(state["config"]))
        if previous is not None:
            changed = {k: [previous.get(k), v] for k, v in config.items() if previous.get(k) != v}
            if changed:  # the new options took effect when the run resumed from the previous checkpoint
                changes.append({"from_step": previous_step, "changed": changed})
        previous, previous_step = config, step
    return changes


def torch_config(checkpoint: Path) -> dict:
    """The training config a run's checkpoint was saved with (its paths as given to the run)."""
    import json

    import torch

    return json.loads(torch.load(checkpoint / "trainer_state.pt", map_location="cpu", weights_only=True)["config"])


def ship(run: Path, name: str, checkpoint: str | None = None, dest: Path | None = None) -> Path:
    """Copy the run's checkpoint (``latest`` by default) into ``dest`` with checksums and logs."""
    run = Path(run)
    checkpoint = checkpoint or (run / "latest").read_text().strip()
    model = from_pretrained(run / checkpoint)
    dest = Path(dest) if dest else CHECKPOINTS / name
    dest.mkdir(parents=True, exist_ok=True)
    save_pretrained(model, dest, max_shard_bytes=MAX_SHARD_BYTES)
    for log in ("train_log.csv", "val_log.csv", QUICK_EVAL):
        if (run / log).is_file():
            read_log(run / log).to_csv(dest / log, index=False)
    import json

    summary = training_summary(run, checkpoint)
    (dest / "TRAINING.json").write_text(json.dumps(summary, indent=2) + "\n")
    from models.soter.corpus_manifest import write_manifest

    state = torch_config(run / checkpoint)  # the exact sources, for the pre-training overlap registry (models.pretraining)
    write_manifest(dest, Path(state["corpus"]), Path(state["val_corpus"]) if state.get("val_corpus") else None)
    write_checksums(dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.training.ship", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True, help="the training run's --out folder")
    p.add_argument("--name", required=True, help="folder name under models/soter/checkpoints/")
    p.add_argument("--checkpoint", default=None, help="default: the run's latest")
    p.add_argument("--dest", type=Path, default=None)
    p.add_argument("--eval-dataset", default="", help="quick evaluation on every saved checkpoint (e.g. "
                                                       "mitbih:blocks=6 with --data-root)")
    p.add_argument("--eval-every", type=int, default=1, help="evaluate every k-th saved checkpoint")
    p.add_argument("--data-root", type=Path, default=None)
    args = p.parse_args(argv)
    if args.data_root is not None:
        import os

        os.environ["SOTER_BENCH_DATA"] = str(args.data_root.resolve())
    if args.eval_dataset:
        quick_eval_curve(args.run, args.eval_dataset, args.eval_every)
    dest = ship(args.run, args.name, args.checkpoint, args.dest)
    import json

    summary = json.loads((dest / "TRAINING.json").read_text())
    plot_curves(args.run, dest, [c["from_step"] for c in summary.get("config_changes", [])])
    print(f"shipped {args.run} -> {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
