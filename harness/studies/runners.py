"""The paper's training studies: SOTER variants trained with one recipe and budget, then evaluated.

    python -m harness.studies train --study ablation --corpus corpus --out runs/ablation \\
        --model soter-small --steps 2000 [--variants no-cd learned-router ...]
    python -m harness.studies evaluate --study ablation --out runs/ablation \\
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
* ``exposure`` (Table "pretraining_exposure"): nothing to train beyond one pre-training run, which
  keeps ``exposure-010/025/050/075/100`` checkpoints at those shares of its steps; ``evaluate
  --study exposure --out RUN`` (RUN: the ``--out`` of ``train fit``, or an ablation's ``OUT/full``)
  evaluates each as the ablation does (records under ``RUN/exposure-eval/``) into
  ``RUN/exposure_records.csv``.
* ``corpus-matched`` (Table "corpus_matched"): SOTER (``OUT/full``) and the Chronos-2 architecture
  trained from scratch (``OUT/chronos-2-scratch``, :mod:`harness.studies.chronos2_scratch`; the paper
  retrains MIRA, which does not install here) on the same corpus with the same steps, per-step batch,
  seed and optimiser recipe; ``evaluate`` scores both and the released Chronos2-Small (the paper's
  released-checkpoint row; ``unavailable`` without its weights) into ``OUT/corpus_matched_records.csv``.
  The paper's third variant, MIRA continued from its released checkpoint, has no counterpart here.

Each variant trains into ``OUT/<variant>/`` and resumes when the command is rerun.

The runners train (``models.soter.training``, :mod:`harness.studies.chronos2_scratch`) and then evaluate with the
harness's runner, so they sit in ``harness.studies``, above the runner and the tasks.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.soter.config import ConfigError, SoterConfig
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
# corpus-matched: (label, harness model, folder under OUT or None for the released weights)
CORPUS_MATCHED: dict[str, tuple[str, str, str | None]] = {
    "full": ("SOTER", "soter", "full"),
    "chronos-2-scratch": ("Chronos-2 (scratch)", "chronos-2-small", "chronos-2-scratch"),
    "chronos-2-released": ("Chronos2-Small", "chronos-2-small", None),
}
STUDIES = {"ablation": ABLATION, "sensitivity": SENSITIVITY}
VARIANTS = {**ABLATION, **SENSITIVITY}
OUTPUTS = {"ablation": "ablation_records.csv", "sensitivity": "sensitivity.csv", "exposure": "exposure_records.csv",
           "corpus-matched": "corpus_matched_records.csv"}  # what `evaluate` writes (read by `harness report`)


def variant_configs(name: str, base: TrainConfig) -> tuple[TrainConfig, SoterConfig]:
    """A variant's run and model: the variant's model options over the run's (so a `--model-option solver=rk4`
    handy for the other studies never turns the sensitivity grid's dopri5 runs into rk4 runs)."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    v = VARIANTS[name]
    overrides = {**base.model_options, **v.model}
    if v.cd_ordinal is not None:
        layers = base.model_config().num_layers
        if v.cd_ordinal > layers:
            raise ConfigError(f"{v.label}: {base.model} has only {layers} layers")
        overrides["cd_layer"] = v.cd_ordinal - 1
    train = dataclasses.replace(base, out=str(Path(base.out) / name), model_options=overrides, **v.train)
    return train, train.model_config()


def train(base: TrainConfig, names: list[str], log=print) -> dict[str, Path]:
    from models.soter.training.trainer import Trainer

    finished = {}
    for name in names:
        cfg, model_cfg = variant_configs(name, base)
        trainer = Trainer(cfg, model_config=model_cfg)
        if trainer.resume():
            log(f"{name}: resumed at step {trainer.step}")
        trainer.fit(log=lambda line, name=name: log(f"{name}: {line}"))
        trainer.close()
        finished[name] = Path(cfg.out) / (Path(cfg.out) / "latest").read_text().strip()
    return finished


def _latest(folder: Path) -> Path | None:
    pointer = Path(folder) / "latest"
    return Path(folder) / pointer.read_text().strip() if pointer.is_file() else None


def _forecasting_records(model: str, weights: Path | None, eval_dir: Path, datasets: tuple[str, ...],
                         data_root: Path | None, max_windows_per_subject: int | None, log):
    """The harness's zero-shot forecasting protocol on one checkpoint (records cached in ``eval_dir``)."""
    from harness.run.runner import RunConfig, execute
    from harness.records.store import read_records

    config = RunConfig(task="forecasting", datasets=datasets, models=(model,), out=eval_dir,
                       weights=((model, str(weights)),) if weights is not None else (), data_root=data_root,
                       options={"max_windows_per_subject": max_windows_per_subject}, progress=False)
    execute(config, log=log)
    return read_records(eval_dir / "records.csv")


def _gather(frames: list, path: Path):
    import pandas as pd

    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    table.to_csv(path, index=False)
    return table


def evaluate(out: Path, names: list[str], datasets: tuple[str, ...] = (), data_root: Path | None = None,
             max_windows_per_subject: int | None = None, log=print):
    """Forecasting records of every trained variant, with ``variant`` and ``variant_label`` columns."""
    frames = []
    for name in names:
        folder = Path(out) / name
        checkpoint = _latest(folder)
        if checkpoint is None:
            log(f"{name}: not trained (no {folder / 'latest'}); skipped")
            continue
        records = _forecasting_records("soter", checkpoint, folder / "eval", datasets, data_root,
                                       max_windows_per_subject, lambda line, name=name: log(f"{name}: {line}"))
        frames.append(records.assign(variant=name, variant_label=VARIANTS[name].label, checkpoint=str(checkpoint)))
    return _gather(frames, Path(out) / OUTPUTS["ablation"])


def evaluate_exposure(run: Path, datasets: tuple[str, ...] = (), data_root: Path | None = None,
                      max_windows_per_subject: int | None = None, log=print):
    """Forecasting records of each ``exposure-NNN`` checkpoint of one pre-training run (the paper's
    cumulative-exposure table), labelled ``NNN%``, into ``RUN/exposure_records.csv``."""
    run = Path(run)
    frames = []
    checkpoints = sorted(p for p in run.glob("exposure-[0-9][0-9][0-9]") if (p / "config.json").is_file())
    if not checkpoints:
        log(f"no exposure-NNN checkpoints in {run} (they are written by `train fit` at 10/25/50/75/100 % of --steps)")
    for checkpoint in checkpoints:
        share = int(checkpoint.name.split("-")[1])
        records = _forecasting_records("soter", checkpoint, run / "exposure-eval" / checkpoint.name, datasets,
                                       data_root, max_windows_per_subject,
                                       lambda line, name=checkpoint.name: log(f"{name}: {line}"))
        frames.append(records.assign(variant=checkpoint.name, variant_label=f"{share}%", exposure=share / 100,
                                     checkpoint=str(checkpoint)))
    return _gather(frames, run / OUTPUTS["exposure"])


def train_corpus_matched(base: TrainConfig, architecture: str = "6x512", horizon: int = 64, config_json: str = "",
                         log=print) -> dict[str, Path]:
    """SOTER (``OUT/full``) and Chronos-2 from scratch (``OUT/chronos-2-scratch``) on one corpus: the same
    steps, windows per step (``batch_size x grad_accum``), seed, and optimiser recipe; Chronos-2's
    context is SOTER's ``max_length``, its horizon ``horizon`` (its own quantile loss needs one).  One
    process: the Chronos-2 trainer does not run under torchrun, where SOTER's batch would be larger."""
    from harness.studies.chronos2_scratch import ScratchConfig, ScratchTrainer

    done = train(base, ["full"], log=log)
    cfg = ScratchConfig(corpus=base.corpus, out=str(Path(base.out) / "chronos-2-scratch"), steps=base.steps,
                        batch_size=base.batch_size * base.grad_accum, context=base.max_length, horizon=horizon,
                        architecture=architecture, config_json=config_json, lr=base.lr, betas=base.betas,
                        eps=base.eps, weight_decay=base.weight_decay, warmup_steps=base.warmup_steps, seed=base.seed,
                        checkpoint_every=base.checkpoint_every, log_every=base.log_every)
    trainer = ScratchTrainer(cfg)
    if trainer.resume():
        log(f"chronos-2-scratch: resumed at step {trainer.step}")
    trainer.fit(log=lambda line: log(f"chronos-2-scratch: {line}"))
    done["chronos-2-scratch"] = _latest(Path(cfg.out))
    return done


def evaluate_corpus_matched(out: Path, names: list[str] | None = None, datasets: tuple[str, ...] = (),
                            data_root: Path | None = None, max_windows_per_subject: int | None = None, log=print):
    """Forecasting records of SOTER, the scratch Chronos-2 and the released Chronos2-Small, labelled."""
    frames = []
    for name in names or list(CORPUS_MATCHED):
        label, model, folder = CORPUS_MATCHED[name]
        checkpoint = _latest(Path(out) / folder) if folder else None
        if folder and checkpoint is None:
            log(f"{name}: not trained (no {Path(out) / folder / 'latest'}); skipped")
            continue
        records = _forecasting_records(model, checkpoint, Path(out) / (folder or name) / "eval", datasets, data_root,
                                       max_windows_per_subject, lambda line, name=name: log(f"{name}: {line}"))
        frames.append(records.assign(variant=name, variant_label=label,
                                     checkpoint=str(checkpoint) if checkpoint else "released"))
    return _gather(frames, Path(out) / OUTPUTS["corpus-matched"])


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
                     "dataset": dataset, "rollout": rollout, "context": context, "horizon": horizon,
                     "samples": samples, "seed": seed})
    table = pd.DataFrame(rows)
    table.to_csv(Path(out) / OUTPUTS["sensitivity"], index=False)
    return table


def main(argv: list[str] | None = None) -> int:
    from models.soter.training.train import _add_config_flags, config_from_args

    p = argparse.ArgumentParser(prog="python -m harness.studies", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train every variant of a study with the same recipe and budget")
    tr.add_argument("--study", choices=[*STUDIES, "corpus-matched"], required=True,
                    help="exposure needs no study training: its checkpoints come from any `train fit` run")
    _add_config_flags(tr)
    tr.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS), help="default: all of the study")
    tr.add_argument("--scratch-architecture", default="6x512", help="corpus-matched: Chronos-2 size (tiny, 6x512)")
    tr.add_argument("--scratch-config-json", default="", help="corpus-matched: a Chronos-2 config.json instead")
    tr.add_argument("--scratch-horizon", type=int, default=64, help="corpus-matched: Chronos-2's training horizon")
    ev = sub.add_parser("evaluate", help="evaluate every trained variant")
    ev.add_argument("--study", choices=list(OUTPUTS), required=True)
    ev.add_argument("--out", type=Path, required=True, help="the study's --out (exposure: the pre-training run)")
    ev.add_argument("--variants", nargs="+", default=None, choices=[*VARIANTS, *CORPUS_MATCHED])
    ev.add_argument("--dataset", nargs="+", default=[], help="sensitivity: one dataset; the others: harness datasets")
    ev.add_argument("--data-root", type=Path, default=None)
    ev.add_argument("--max-windows-per-subject", type=int, default=None, help="not sensitivity")
    args = p.parse_args(argv)
    known = {"ablation": ABLATION, "sensitivity": SENSITIVITY,
             "corpus-matched": CORPUS_MATCHED if args.command == "evaluate" else {}}.get(args.study, {})
    if args.variants and (set(args.variants) - set(known)):
        p.error(f"{args.study} has no variant(s) {sorted(set(args.variants) - set(known))}; known: "
                f"{', '.join(known) or 'none to choose'}")
    if args.command == "train":
        try:
            base = config_from_args(args)
        except ValueError as exc:
            p.error(str(exc))
        if args.study == "corpus-matched":
            train_corpus_matched(base, args.scratch_architecture, args.scratch_horizon, args.scratch_config_json)
        else:
            train(base, args.variants or list(STUDIES[args.study]))
        return 0
    forecasting = (tuple(args.dataset), args.data_root, args.max_windows_per_subject)
    if args.study == "ablation":
        table = evaluate(args.out, args.variants or list(ABLATION), *forecasting)
    elif args.study == "exposure":
        table = evaluate_exposure(args.out, *forecasting)
    elif args.study == "corpus-matched":
        table = evaluate_corpus_matched(args.out, args.variants, *forecasting)
    else:
        if len(args.dataset) != 1:
            p.error("sensitivity: name one --dataset (the paper uses mitbih)")
        if args.data_root is not None:
            import os

            os.environ["SOTER_BENCH_DATA"] = str(args.data_root)
        table = evaluate_sensitivity(args.out, args.variants or list(SENSITIVITY), args.dataset[0])
        print(table.to_string(index=False))
    print(f"{len(table)} rows -> {args.out / OUTPUTS[args.study]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
