"""Corpus-matched comparison: the Chronos-2 architecture trained from scratch on our corpus.

The paper retrains MIRA on its corpus; MIRA's code is not installable here, Chronos-2's is
(``chronos-forecasting``, extra ``chronos``), and it is one of the paper's baselines, so it is the
architecture we retrain.  Same corpus, same seeded window sampler, same steps and per-step batch as
SOTER's run, and SOTER's optimiser recipe (AdamW 3e-4, betas 0.9/0.95, weight decay 0.01, 20
warmup steps then cosine); the loss is Chronos-2's own (quantile loss on the horizon).  The
channels of a window form one Chronos-2 group, so they are forecast jointly, as in its
multivariate mode.  Checkpoints are Chronos-2 pipelines: evaluate one with
``python -m harness run forecasting --models chronos-2-small --weights chronos-2-small=OUT/checkpoint-N``.

    python -m harness.studies.chronos2_scratch --corpus corpus --out runs/chronos2-scratch --steps 2000 \\
        [--architecture 6x512 | --config-json path/to/chronos-2/config.json] [--resume]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path


# d_model, d_ff, layers, heads, head dim: "tiny" for tests; "6x512" a T5-small-like size (the
# released Chronos-2 small config is not readable offline: pass it with --config-json when you have it)
ARCHITECTURES = {"tiny": (32, 64, 2, 4, 8), "6x512": (512, 2048, 6, 8, 64)}
QUANTILES = [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
STATE_FILE = "trainer_state.pt"


@dataclass(frozen=True)
class ScratchConfig:
    corpus: str
    out: str
    steps: int = 1000
    batch_size: int = 8
    context: int = 512
    horizon: int = 64
    architecture: str = "6x512"
    config_json: str = ""
    patch_size: int = 16
    lr: float = 3e-4
    betas: tuple[float, float] = (0.9, 0.95)
    eps: float = 1e-8
    weight_decay: float = 0.01
    warmup_steps: int = 20
    seed: int = 42
    checkpoint_every: int = 200
    log_every: int = 10


def _require_chronos():
    try:
        import chronos  # noqa: F401
    except ImportError as exc:
        raise SystemExit("training Chronos-2 from scratch needs chronos-forecasting: "
                         "pip install -c constraints.txt -e '.[chronos]'") from exc


def build_model(cfg: ScratchConfig):
    from chronos import Chronos2Model
    from chronos.chronos2.config import Chronos2CoreConfig

    if cfg.config_json:
        config = Chronos2CoreConfig.from_json_file(cfg.config_json)
    else:
        if cfg.architecture not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {cfg.architecture!r}; known: {', '.join(ARCHITECTURES)}")
        d_model, d_ff, layers, heads, d_kv = ARCHITECTURES[cfg.architecture]
        patches = math.ceil(cfg.horizon / cfg.patch_size)
        config = Chronos2CoreConfig(
            d_model=d_model, d_ff=d_ff, num_layers=layers, num_heads=heads, d_kv=d_kv,
            chronos_config=dict(context_length=cfg.context, input_patch_size=cfg.patch_size,
                                output_patch_size=cfg.patch_size, input_patch_stride=cfg.patch_size,
                                quantiles=QUANTILES, use_reg_token=True, max_output_patches=max(patches, 4)))
    config.architectures, config.chronos_pipeline_class = ["Chronos2Model"], "Chronos2Pipeline"
    return Chronos2Model(config)


class ScratchTrainer:
    def __init__(self, cfg: ScratchConfig) -> None:
        _require_chronos()
        import torch

        from models.soter.training.corpus import open_corpus
        from models.soter.training.sampler import WindowSampler
        from models.soter.training.trainer import lr_factor

        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.model = build_model(cfg)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                     weight_decay=cfg.weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: lr_factor(s, cfg.warmup_steps, cfg.steps))
        # the window is context + horizon samples: the sampler's "max_length + 1"
        self.sampler = WindowSampler(open_corpus(Path(cfg.corpus)), cfg.context + cfg.horizon - 1, cfg.batch_size,
                                     cfg.seed, missing_prob=0.0)
        self.step = 0
        self.out = Path(cfg.out)

    def train_step(self) -> float:
        import torch

        batch = self.sampler.batch(self.step)
        b, c, _ = batch.values.shape
        rows = torch.as_tensor(batch.values.reshape(b * c, -1), dtype=torch.float32)
        groups = torch.arange(b).repeat_interleave(c)  # the channels of one window form one group
        self.model.train()
        self.opt.zero_grad(set_to_none=True)
        out = self.model(context=rows[:, :self.cfg.context], group_ids=groups,
                         num_output_patches=math.ceil(self.cfg.horizon / self.cfg.patch_size),
                         future_target=rows[:, self.cfg.context:])
        out.loss.backward()
        self.opt.step()
        self.sched.step()
        self.step += 1
        return float(out.loss.detach())

    def save(self) -> Path:
        import torch
        from chronos import Chronos2Pipeline

        self.out.mkdir(parents=True, exist_ok=True)
        final = self.out / f"checkpoint-{self.step:08d}"
        tmp = Path(tempfile.mkdtemp(dir=self.out, prefix=".tmp-"))
        Chronos2Pipeline(self.model.eval()).save_pretrained(tmp)
        torch.save({"step": self.step, "optimizer": self.opt.state_dict(), "scheduler": self.sched.state_dict(),
                    "torch_rng": torch.get_rng_state(), "config": json.dumps(asdict(self.cfg))}, tmp / STATE_FILE)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        (self.out / "latest").write_text(final.name)
        return final

    def resume(self) -> bool:
        import torch
        from chronos import Chronos2Model

        pointer = self.out / "latest"
        if not pointer.is_file():
            return False
        path = self.out / pointer.read_text().strip()
        state = torch.load(path / STATE_FILE, map_location="cpu", weights_only=True)
        self.model.load_state_dict(Chronos2Model.from_pretrained(path).state_dict())
        self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        self.step = int(state["step"])
        return True

    def fit(self, log=print) -> None:
        started, first = time.perf_counter(), self.step
        while self.step < self.cfg.steps:
            loss = self.train_step()
            if self.step % self.cfg.log_every == 0 or self.step == self.cfg.steps:
                rate = (self.step - first) / max(time.perf_counter() - started, 1e-9)
                log(f"step={self.step} loss={loss:.4g} steps_per_s={rate:.3g}")
            if self.step % self.cfg.checkpoint_every == 0 or self.step == self.cfg.steps:
                self.save()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.studies.chronos2_scratch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True)
    p.add_argument("--out", required=True)
    for name, default in asdict(ScratchConfig("", "")).items():
        if name in ("corpus", "out", "betas"):
            continue
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default,
                       help=f"(default: {default})")
    p.add_argument("--resume", action="store_true")
    args = vars(p.parse_args(argv))
    resume = args.pop("resume")
    trainer = ScratchTrainer(ScratchConfig(**args))
    if resume and trainer.resume():
        print(f"resumed at step {trainer.step}", file=sys.stderr)
    trainer.fit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
