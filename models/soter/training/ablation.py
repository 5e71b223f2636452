"""The paper's ablation (Table "ablation"): SOTER variants trained with one recipe and budget,
then evaluated zero-shot by the harness's forecasting protocol.

    python -m models.soter.training.ablation train --corpus corpus --out runs/ablation \\
        --model soter-small --steps 2000 [--variants no-cd learned-router ...]
    python -m models.soter.training.ablation evaluate --out runs/ablation [--dataset mitbih --data-root DIR]

Each variant trains into ``OUT/<variant>/`` (resumable: rerun the same command), and is
evaluated into ``OUT/<variant>/eval/records.csv`` (the harness's cached, resumable store);
``OUT/ablation_records.csv`` gathers them with the variant in a column.  ``CD Layer@k-th``
places the channel-dependent layer at the k-th of the backbone's layers (index k - 1), as in the
paper; the full model has it on top.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.training.config import TrainConfig


@dataclass(frozen=True)
class Variant:
    label: str  # the paper's row name
    model: dict[str, Any] = field(default_factory=dict)  # SoterConfig overrides
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig overrides
    cd_ordinal: int | None = None  # CD layer at the k-th layer (1-based)


VARIANTS: dict[str, Variant] = {
    "full": Variant("SOTER"),
    "no-cd": Variant("w/o CD Layer", {"cd_layer": None}),
    "learned-router": Variant("w/o PSD-MoE", {"router": "learned"}),
    # the control path acts only in the missingness regime, so the paper drops that regime too
    "no-cde": Variant("w/o Neural CDE", {"control": False}, {"missing_prob": 0.0}),
    "cd-5th": Variant("CD Layer@5th", cd_ordinal=5),
    "cd-4th": Variant("CD Layer@4th", cd_ordinal=4),
    "cd-3rd": Variant("CD Layer@3rd", cd_ordinal=3),
}


def variant_configs(name: str, base: TrainConfig) -> tuple[TrainConfig, SoterConfig]:
    if name not in VARIANTS:
        raise ValueError(f"unknown ablation variant {name!r}; known: {', '.join(VARIANTS)}")
    v = VARIANTS[name]
    model = preset(base.model)
    if base.solver:
        model = dataclasses.replace(model, solver=base.solver)
    overrides = dict(v.model)
    if v.cd_ordinal is not None:
        if v.cd_ordinal > model.num_layers:
            raise ConfigError(f"{v.label}: {base.model} has only {model.num_layers} layers")
        overrides["cd_layer"] = v.cd_ordinal - 1
    model = dataclasses.replace(model, **overrides)
    train = dataclasses.replace(base, out=str(Path(base.out) / name), **v.train)
    return train, model


def train(base: TrainConfig, names: list[str], log=print) -> dict[str, Path]:
    from models.soter.training.trainer import Trainer

    finished = {}
    for name in names:
        cfg, model_cfg = variant_configs(name, base)
        trainer = Trainer(cfg, model_config=model_cfg)
        if trainer.resume():
            log(f"{name}: resumed at step {trainer.step}")
        trainer.fit(log=lambda line, name=name: log(f"{name}: {line}"))
        finished[name] = Path(cfg.out) / (Path(cfg.out) / "latest").read_text().strip()
    return finished


def evaluate(out: Path, names: list[str], datasets: tuple[str, ...] = (), data_root: Path | None = None,
             max_windows_per_subject: int | None = None, log=print):
    """Forecasting records of every trained variant, with ``variant`` and ``variant_label`` columns."""
    import pandas as pd

    from harness.runner import RunConfig, execute
    from harness.store import read_records

    frames = []
    for name in names:
        folder = Path(out) / name
        pointer = folder / "latest"
        if not pointer.is_file():
            log(f"{name}: not trained (no {pointer}); skipped")
            continue
        checkpoint = folder / pointer.read_text().strip()
        config = RunConfig(task="forecasting", datasets=datasets, models=("soter",), out=folder / "eval",
                           weights=(("soter", str(checkpoint)),), data_root=data_root,
                           max_windows_per_subject=max_windows_per_subject, progress=False)
        execute(config, log=lambda line, name=name: log(f"{name}: {line}"))
        records = read_records(folder / "eval" / "records.csv")
        frames.append(records.assign(variant=name, variant_label=VARIANTS[name].label, checkpoint=str(checkpoint)))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table.to_csv(Path(out) / "ablation_records.csv", index=False)
    return table


def main(argv: list[str] | None = None) -> int:
    from models.soter.training.train import _add_config_flags

    p = argparse.ArgumentParser(prog="python -m models.soter.training.ablation", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train every variant with the same recipe and budget")
    _add_config_flags(tr)
    tr.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ev = sub.add_parser("evaluate", help="zero-shot forecasting of every trained variant")
    ev.add_argument("--out", type=Path, required=True)
    ev.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ev.add_argument("--dataset", nargs="+", default=[])
    ev.add_argument("--data-root", type=Path, default=None)
    ev.add_argument("--max-windows-per-subject", type=int, default=None)
    args = p.parse_args(argv)
    if args.command == "train":
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
        train(TrainConfig.from_dict(values), args.variants)
        return 0
    table = evaluate(args.out, args.variants, tuple(args.dataset), args.data_root, args.max_windows_per_subject)
    print(f"{len(table)} records -> {args.out / 'ablation_records.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
