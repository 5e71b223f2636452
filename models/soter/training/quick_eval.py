"""The paper's quick evaluation during pre-training: 32 held-out windows, 128/64, seed 123.

The windows come from the first LOSO fold of the evaluation dataset (its test subject), with
MinMax fitted on that fold's training subjects, as the harness's forecasting protocol does.
Direct rollout (one solve per window) keeps it cheap; RMSE and MAE in normalised space.
"""

from __future__ import annotations

from pathlib import Path

import torch

from models.soter.adapter import SoterAdapter
from models.soter.model import SoterModel
from models.soter.training.config import TrainConfig
from protocols.datasets import load_dataset
from protocols.forecasting import evaluate_forecasting
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds


def quick_eval(model: SoterModel, cfg: TrainConfig) -> dict[str, float]:
    return sample_eval(model, cfg.eval_dataset, cfg.eval_samples, cfg.eval_context, cfg.eval_horizon, cfg.eval_seed)


def sample_eval(model: SoterModel, dataset_name: str, samples: int, context: int, horizon: int, seed: int,
                rollout: str = "direct") -> dict[str, float]:
    """RMSE / MAE of ``samples`` windows of the first LOSO fold's test subject (normalised space)."""
    dataset = load_dataset(dataset_name)
    fold = loso_folds(dataset)[0]
    setting = Setting(context, horizon)
    spec = ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=samples, seed=seed))
    was_training = model.training
    device = next(model.parameters()).device
    try:
        adapter = SoterAdapter(model, rollout=rollout, device=str(device))
        with torch.inference_mode():
            out = evaluate_forecasting(adapter, dataset, fold, setting, spec)
    finally:
        model.train(was_training)
    return {"rmse": out.errors.rmse, "mae": out.errors.mae, "windows": out.n_windows}


def plot_log(out: Path) -> list[Path]:
    """The pre-training log figure: quick-evaluation RMSE and MAE against the step (PNG, PDF)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    path = Path(out) / "quick_eval.csv"
    if not path.exists():
        return []
    log = pd.read_csv(path)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for metric in ("rmse", "mae"):
        ax.plot(log["step"], log[metric], marker="o", ms=3, label=metric.upper())
    ax.set_xlabel("optimisation step")
    ax.set_ylabel("error (normalised)")
    ax.set_title("Quick evaluation during pre-training")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    files = [Path(out) / "pretrain_log.png", Path(out) / "pretrain_log.pdf"]
    for f in files:
        fig.savefig(f, dpi=150)
    plt.close(fig)
    return files
