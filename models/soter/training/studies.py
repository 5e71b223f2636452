"""The paper's training studies: SOTER variants trained with one recipe and budget, then evaluated.

    python -m models.soter.training.studies train --study ablation --corpus corpus --out runs/ablation \\
        --model soter-small --steps 2000 [--variants no-cd learned-router ...]
    python -m models.soter.training.studies evaluate --study ablation --out runs/ablation \\
        [--dataset mitbih --data-root DIR]

* ``ablation`` (Table "ablation"): each variant is evaluated zero-shot by the harness's forecasting
  protocol into ``OUT/<variant>/eval/records.csv`` (cached, resumable); ``OUT/ablation_records.csv``
  gathers them with the variant in a column.  ``CD Layer@k-th`` places the channel-dependent layer
  at the k-th of the backbone's layers (index k - 1), as in the paper; the full model has it on top.
* ``sensitivity`` (Appendix "Key Sensitivity Analysis"): prefix-DFT implementation (parallel vs
  loop) x solver (dopri5, rk4) x tolerance (1e-6 .. 1e-3), each evaluated as the paper does (256
  windows of 128/64, seed 42, of one dataset) with the mean seconds per training step from its
  log, into ``OUT/sensitivity.csv``.  rk4 is a fixed-step solver that ignores tolerances, so it is
  trained once per DFT implementation rather than four times.

Each variant trains into ``OUT/<variant>/`` and resumes when the command is rerun.
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


ABLATION: dict[str, Variant] = {
    "full": Variant("SOTER"),
    "no-cd": Variant("w/o CD Layer", {"cd_layer": None}),
    "learned-router": Variant("w/o PSD-MoE", {"router": "learned"}),
    # the control path acts only in the missingness regime, so the paper drops that regime too
    "no-cde": Variant("w/o Neural CDE", {"control": False}, {"missing_prob": 0.0}),
    "cd-5th": Variant("CD Layer@5th", cd_ordinal=5),
    "cd-4th": Variant("CD Layer@4th", cd_ordinal=4),
    "cd-3rd": Variant("CD Layer@3rd", cd_ordinal=3),
}


SENSITIVITY: dict[str, Variant] = {
    **{f"{dft}-dopri5-{tol:.0e}": Variant(f"{label}, dopri5, tol {tol:.0e}",
                                         {"dft_impl": impl, "solver": "dopri5", "rtol": tol, "atol": tol})
       for dft, impl, label in (("parallel", "fast", "parallel-prefix DFT"), ("loop", "loop", "loop DFT"))
       for tol in (1e-6, 1e-5, 1e-4, 1e-3)},
    **{f"{dft}-rk4": Variant(f"{label}, rk4", {"dft_impl": impl, "solver": "rk4"})
       for dft, impl, label in (("parallel", "fast", "parallel-prefix DFT"), ("loop", "loop", "loop DFT"))},
}
STUDIES = {"ablation": ABLATION, "sensitivity": SENSITIVITY}
VARIANTS = {**ABLATION, **SENSITIVITY}


def variant_configs(name: str, base: TrainConfig) -> tuple[TrainConfig, SoterConfig]:
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
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


def evaluate_sensitivity(out: Path, names: list[str], dataset: str, samples: int = 256, context: int = 128,
                         horizon: int = 64, seed: int = 42, rollout: str = "autoregressive", log=print):
    """Accuracy (the paper's 256 windows of 128/64, seed 42) and mean seconds per training step."""
    import pandas as pd

    from models.soter.io import from_pretrained
    from models.soter.training.quick_eval import sample_eval

    rows = []
    for name in names:
        folder = Path(out) / name
        pointer = folder / "latest"
        if not pointer.is_file():
            log(f"{name}: not trained (no {pointer}); skipped")
            continue
        model = from_pretrained(folder / pointer.read_text().strip())
        scores = sample_eval(model, dataset, samples, context, horizon, seed, rollout)
        log_rows = pd.read_csv(folder / "train_log.csv")
        c = model.config
        rows.append({"variant": name, "label": VARIANTS[name].label, "dft_impl": c.dft_impl, "solver": c.solver,
                     "tolerance": c.rtol if c.solver == "dopri5" else None, **scores,
                     "step_seconds": 1.0 / float(log_rows["steps_per_s"].iloc[-1]), "steps": int(log_rows["step"].max()),
                     "dataset": dataset, "rollout": rollout})
    table = pd.DataFrame(rows)
    table.to_csv(Path(out) / "sensitivity.csv", index=False)
    return table


def main(argv: list[str] | None = None) -> int:
    from models.soter.training.train import _add_config_flags

    p = argparse.ArgumentParser(prog="python -m models.soter.training.studies", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train every variant of a study with the same recipe and budget")
    tr.add_argument("--study", choices=list(STUDIES), required=True)
    _add_config_flags(tr)
    tr.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS), help="default: all of the study")
    ev = sub.add_parser("evaluate", help="evaluate every trained variant")
    ev.add_argument("--study", choices=list(STUDIES), required=True)
    ev.add_argument("--out", type=Path, required=True)
    ev.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS))
    ev.add_argument("--dataset", nargs="+", default=[], help="ablation: harness datasets; sensitivity: one dataset")
    ev.add_argument("--data-root", type=Path, default=None)
    ev.add_argument("--max-windows-per-subject", type=int, default=None, help="ablation only")
    args = p.parse_args(argv)
    names = args.variants or list(STUDIES[args.study])
    if args.command == "train":
        values = {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)}
        train(TrainConfig.from_dict(values), names)
        return 0
    if args.study == "ablation":
        table = evaluate(args.out, names, tuple(args.dataset), args.data_root, args.max_windows_per_subject)
        print(f"{len(table)} records -> {args.out / 'ablation_records.csv'}")
        return 0
    if len(args.dataset) != 1:
        p.error("sensitivity: name one --dataset (the paper uses mitbih)")
    if args.data_root is not None:
        import os

        os.environ["SOTER_BENCH_DATA"] = str(args.data_root)
    table = evaluate_sensitivity(args.out, names, args.dataset[0])
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
