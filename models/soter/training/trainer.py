"""The pre-training loop: one process or many (torchrun + DistributedDataParallel).

Per step: the sampler's batch for this rank (one dataset per step, a seeded regime coin:
full history with z = 0, or 15 % of the context masked, zero-filled, with the spline control),
the next-timestamp Huber loss, gradient accumulation, AdamW, linear warmup then cosine decay.
Checkpoints hold the model (safetensors), optimizer, scheduler, step and RNG state; they are
written to a temporary folder and renamed, so a crash never leaves a half checkpoint, and a
resumed run continues exactly (the sampler is a pure function of the step).
"""

from __future__ import annotations

import csv
import dataclasses
import gc
import json
import math
import os
import shutil
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist

from models.soter.config import SoterConfig
from models.soter.io import CheckpointError, from_pretrained, save_pretrained
from models.soter.model import SoterModel
from models.soter.moe import zero_missing_grads
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import open_corpus
from models.soter.training.sampler import Batch, WindowSampler

STATE_FILE = "trainer_state.pt"


def extension_of(theirs: SoterConfig, ours: SoterConfig) -> bool:
    """True when ``ours`` is ``theirs`` plus options that only add parameters: the damped trend on a
    last-value anchor, the log-dt input of the decoder's field, the anchor's mean reversion and short trend."""
    changes = {}
    if theirs.output_skip == "last-value" and ours.output_skip == "damped-trend":
        changes.update(output_skip=ours.output_skip, trend_points=ours.trend_points)
    if not theirs.field_dt and ours.field_dt:
        changes["field_dt"] = True
    if not theirs.mean_reversion and ours.mean_reversion:
        changes["mean_reversion"] = True
    if not theirs.short_trend_points and ours.short_trend_points:
        changes["short_trend_points"] = ours.short_trend_points
    return bool(changes) and dataclasses.replace(theirs, **changes) == ours


def load_extended(model: SoterModel, loaded: SoterModel, path: Path) -> None:
    """``loaded``'s weights into ``model`` (an extension of it): new parameters keep their initialisation, the
    field's first layer gets the old columns and a zero log-dt column."""
    theirs = loaded.state_dict()
    state = model.state_dict()
    unexpected = sorted(set(theirs) - set(state))
    if unexpected:
        raise CheckpointError(f"{path}: parameters {unexpected} have no place in the extended model")
    for name, value in theirs.items():
        target = state[name]
        if target.shape == value.shape:
            target.copy_(value)
        elif name == "decoder.field.layers.0.weight" and model.config.field_dt \
                and target.shape[:1] == value.shape[:1] and target.shape[1] == value.shape[1] + 1:
            target[:, :-1].copy_(value)
            target[:, -1].zero_()
        else:
            raise CheckpointError(f"{path}: {name} has shape {tuple(value.shape)}, the extended model "
                                  f"{tuple(target.shape)}")


def lr_factor(step: int, warmup: int, total: int) -> float:
    """Linear warmup over ``warmup`` steps, then cosine from 1 to 0 over the remaining steps."""
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def batch_loss(module: torch.nn.Module, batch: Batch, device: torch.device,
               aux_absolute_weight: float = 0.0) -> torch.Tensor:
    """The model's forward is the next-timestamp loss; ``module`` may be the DDP wrapper.  A batch with
    M > 1 targets per window passes them as [B, C, M] values at [B, M] times."""
    values = torch.as_tensor(batch.values, device=device)
    times = torch.as_tensor(batch.times, device=device)
    mask = torch.as_tensor(batch.observed, device=device)
    m = batch.n_targets
    target, target_time = (values[..., -1], times[:, -1]) if m == 1 else (values[..., -m:], times[:, -m:])
    return module(values[..., :-m], times[:, :-m], target, target_time, mask, batch.missing_regime,
                  aux_absolute_weight)


class Trainer:
    def __init__(self, cfg: TrainConfig, device: str | None = None, model_config: SoterConfig | None = None) -> None:
        """``model_config`` replaces the preset named by ``cfg.model`` (ablation variants)."""
        self.cfg = cfg
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.owns_process_group = self.world_size > 1 and not dist.is_initialized()
        if self.owns_process_group:
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        if device is None:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        torch.manual_seed(cfg.seed)
        self.model = SoterModel(cfg.model_config(model_config))  # the run's model options applied last
        if cfg.embedding_init_std > 0:  # drawn after the model's own init: every other weight stays the same
            for weight in (self.model.embed.gate.weight, self.model.embed.value.weight):
                torch.nn.init.normal_(weight, std=cfg.embedding_init_std)
        if cfg.init_weights:
            self._init_from(Path(cfg.init_weights))
        self.model = self.model.to(self.device)
        self.module: torch.nn.Module = self.model
        self.fsdp = cfg.fsdp and self.world_size > 1
        if self.fsdp:  # FSDP2: each block, then the root, shards in place (self.module is self.model)
            from torch.distributed.fsdp import fully_shard

            for block in self.model.blocks:
                fully_shard(block)
            fully_shard(self.model)
        elif self.world_size > 1:
            self.module = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        self.opt = torch.optim.AdamW(self._param_groups(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                     weight_decay=cfg.weight_decay)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: lr_factor(s, cfg.warmup_steps, cfg.steps))
        self.sampler = WindowSampler.from_config(open_corpus(Path(cfg.corpus)), cfg, rank=self.rank,
                                                 world_size=self.world_size)
        self.val_sampler = None
        if cfg.val_corpus:  # fixed batches (steps 0..val_batches-1 of their own seeded sampler)
            self.val_sampler = WindowSampler.from_config(open_corpus(Path(cfg.val_corpus)), cfg, seed=cfg.seed + 1,
                                                         held_out=True)
        self.step = 0
        self.wall_before = 0.0  # training seconds of earlier processes (resumed runs)
        self._started = time.perf_counter()
        self.out = Path(cfg.out)

    def _param_groups(self):
        """Every parameter at ``lr``, but the submodules named in ``group_lr``, each in its own group at its rate
        (the schedule scales every group alike)."""
        heads = []
        for name, rate in self.cfg.group_lr.items():
            module = getattr(self.model, name, None)
            if not isinstance(module, torch.nn.Module):
                known = ", ".join(n for n, m in self.model.named_children())
                raise ValueError(f"group_lr: this model has no submodule {name!r} (a head exists only with its model "
                                 f"option, e.g. trend_head with output_skip damped-trend); its submodules: {known}")
            heads.append({"params": list(module.parameters()), "lr": rate})
        if not heads:
            return self.model.parameters()
        ids = {id(p) for g in heads for p in g["params"]}
        return [{"params": [p for p in self.model.parameters() if id(p) not in ids]}, *heads]

    def _load_matching(self, path: Path, what: str, loaded: SoterModel | None = None) -> SoterModel:
        """A checkpoint's model (checksums verified; ``loaded`` when already read) whose config must be this
        run's; the error names the fields that differ."""
        loaded = from_pretrained(path) if loaded is None else loaded
        if loaded.config != self.model.config:
            theirs, ours = dataclasses.asdict(loaded.config), dataclasses.asdict(self.model.config)
            diff = ", ".join(f"{k} {theirs[k]!r} (the run: {ours[k]!r})" for k in ours if theirs.get(k) != ours[k])
            raise CheckpointError(f"{path / 'config.json'}: {what} model config differs from this run's "
                                  f"--model {self.cfg.model}: {diff}")
        return loaded

    def _init_from(self, path: Path) -> None:
        """Start from a checkpoint's weights; its model config must be this run's, or this run's less options
        that only add to the model (:func:`extension_of`): the last-value anchor where this run adds the damped
        trend (the new head keeps its initialisation, close to the last-value model), a field without the log-dt
        input where this run adds it (the new column zero: exactly the checkpoint's model).  The loss's
        ``huber_delta`` is the run's own (training only: the weights are the same model's)."""
        loaded = from_pretrained(path)
        loaded.config = dataclasses.replace(loaded.config, huber_delta=self.model.config.huber_delta)
        if extension_of(loaded.config, self.model.config):
            load_extended(self.model, loaded, path)
        else:
            self.model.load_state_dict(self._load_matching(path, "the --init-weights", loaded).state_dict())

    def wall_seconds(self) -> float:
        """Wall-clock seconds spent training, summed over resumed runs."""
        return self.wall_before + time.perf_counter() - self._started

    def heldout_loss(self) -> float:
        """Mean loss over the validation corpus's fixed batches (no gradient; the same every call)."""
        if self.val_sampler is None:
            raise ValueError("no validation corpus (--val-corpus)")
        with torch.no_grad():
            losses = [batch_loss(self.model, self.val_sampler.batch(i), self.device, self.cfg.aux_absolute_weight).item()
                      for i in range(self.cfg.val_batches)]
        return sum(losses) / len(losses)

    # -- one optimisation step -------------------------------------------------------------------
    def train_step(self) -> float:
        cfg = self.cfg
        self.module.train()
        self.opt.zero_grad(set_to_none=True)
        total = 0.0
        self.last_tokens = 0
        autocast = (torch.autocast("cuda", dtype=torch.bfloat16) if cfg.bf16 and self.device.type == "cuda"
                    else nullcontext())
        for micro in range(cfg.grad_accum):
            batch = self.sampler.batch(self.step, micro)
            self.last_tokens += batch.observed.size * self.world_size  # B x C x L, all ranks
            last = micro == cfg.grad_accum - 1
            if self.fsdp:
                self.model.set_requires_gradient_sync(last)
                sync = nullcontext()
            else:
                sync = nullcontext() if last or self.world_size == 1 else self.module.no_sync()
            with sync, autocast:
                loss = batch_loss(self.module, batch, self.device, cfg.aux_absolute_weight)
                (loss / cfg.grad_accum).backward()
            total += loss.item() / cfg.grad_accum
        zero_missing_grads(self.model)  # grouped experts (CPU, one process): as the dense sum would
        self.opt.step()
        self.sched.step()
        self.step += 1
        return total

    # -- checkpoints ------------------------------------------------------------------------------
    def _full_state(self, optimizer: bool = True) -> tuple[dict | None, dict | None]:
        """(model state or None for the model's own, optimizer state); collective under FSDP."""
        if not self.fsdp:
            return None, self.opt.state_dict() if optimizer else None
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                             get_optimizer_state_dict)

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return (get_model_state_dict(self.model, options=options),
                get_optimizer_state_dict(self.model, self.opt, options=options) if optimizer else None)

    def save(self, name: str | None = None) -> Path:
        model_state, opt_state = self._full_state()  # every rank takes part under FSDP
        if self.rank != 0:
            return self.out
        self.out.mkdir(parents=True, exist_ok=True)
        final = self.out / (name or f"checkpoint-{self.step:08d}")
        tmp = Path(tempfile.mkdtemp(dir=self.out, prefix=".tmp-"))
        save_pretrained(self.model, tmp, state=model_state)
        # plain tensors and numbers only, so the state loads with torch.load(weights_only=True)
        torch.save({"step": self.step, "optimizer": opt_state, "scheduler": self.sched.state_dict(),
                    "torch_rng": torch.get_rng_state(), "config": json.dumps(self.cfg.to_dict()),
                    "fsdp": self.fsdp, "wall_seconds": self.wall_seconds()}, tmp / STATE_FILE)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        (self.out / "latest").write_text(final.name)
        return final

    def resume(self, path: Path | None = None) -> bool:
        """Continue from ``path`` or the latest checkpoint in ``out``; False when there is none."""
        if path is None:
            pointer = self.out / "latest"
            if not pointer.is_file():
                return False
            path = self.out / pointer.read_text().strip()
        path = Path(path)
        state_file = path / STATE_FILE
        try:
            state = torch.load(state_file, map_location="cpu", weights_only=True)
        except FileNotFoundError as exc:
            raise CheckpointError(f"{state_file}: missing trainer state") from exc
        except Exception as exc:  # a truncated or corrupt file
            raise CheckpointError(f"{state_file}: unreadable trainer state ({type(exc).__name__}: {exc})") from exc
        loaded = self._load_matching(path, "the checkpoint's")
        if bool(state.get("fsdp", False)) != self.fsdp:
            raise CheckpointError(f"{state_file}: written {'with' if state.get('fsdp') else 'without'} FSDP; resume "
                                  f"with --fsdp {'true' if state.get('fsdp') else 'false'} on more than one process")
        if self.fsdp:
            from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                                 set_optimizer_state_dict)

            options = StateDictOptions(full_state_dict=True)
            set_model_state_dict(self.model, loaded.state_dict(), options=options)
            set_optimizer_state_dict(self.model, self.opt, state["optimizer"], options=options)
        else:
            self.model.load_state_dict(loaded.state_dict())
            self.opt.load_state_dict(state["optimizer"])
        self.sched.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["torch_rng"])
        self.step = int(state["step"])
        self.wall_before = float(state.get("wall_seconds", 0.0))
        self._started = time.perf_counter()  # fit() restarts the clock too; this covers a save without fit
        if self.rank == 0:
            for log in ("train_log.csv", "val_log.csv", "quick_eval.csv"):
                _drop_rows_after(self.out / log, self.step)
        return True

    def _eval_model(self) -> SoterModel:
        """The model to evaluate on rank 0: itself, or under FSDP an unsharded copy of it."""
        if not self.fsdp:
            return self.model
        state, _ = self._full_state(optimizer=False)
        if self.rank != 0:
            return self.model
        copy = SoterModel(self.model.config)
        copy.load_state_dict(state)
        return copy.to(self.device)

    # -- the loop -------------------------------------------------------------------------------------
    def fit(self, log=print) -> None:
        cfg = self.cfg
        marks = {max(1, round(m * cfg.steps)): m for m in cfg.exposure_marks}
        started, first_step, tokens = time.perf_counter(), self.step, 0
        self._started = started
        log_file = self.out / "train_log.csv"
        while self.step < cfg.steps:
            loss = self.train_step()
            tokens += self.last_tokens
            if self.step % cfg.log_every == 0 or self.step == cfg.steps:
                elapsed = max(time.perf_counter() - started, 1e-9)
                rate = (self.step - first_step) / elapsed
                row = {"step": self.step, "loss": loss, "lr": self.sched.get_last_lr()[0], "steps_per_s": rate,
                       "tokens_per_s": tokens / elapsed, "eta_s": (cfg.steps - self.step) / max(rate, 1e-9),
                       "wall_s": self.wall_seconds()}
                if self.rank == 0:
                    append_csv(log_file, row)
                    log(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))
            if self.val_sampler is not None and (self.step % cfg.val_every == 0 or self.step == cfg.steps):
                if self.rank == 0:
                    append_csv(self.out / "val_log.csv", {"step": self.step, "val_loss": self.heldout_loss(),
                                                           "wall_s": self.wall_seconds()})
            if self.step in marks:
                self.save(f"exposure-{int(round(100 * marks[self.step])):03d}")
            if self.step % cfg.checkpoint_every == 0 or self.step == cfg.steps:
                self.save()
            if cfg.eval_dataset and (self.step % cfg.eval_every == 0 or self.step == cfg.steps):
                model = self._eval_model()  # collective under FSDP
                if self.rank == 0:
                    from models.soter.training.quick_eval import quick_eval

                    append_csv(self.out / "quick_eval.csv", {"step": self.step, **quick_eval(model, cfg)})
        if cfg.eval_dataset and self.rank == 0:
            from models.soter.training.quick_eval import plot_log

            plot_log(self.out)

    def close(self) -> None:
        """Destroy the process group this trainer created, after every rank got here. A process that exits
        with its group alive can abort in the backend's teardown (seen once under load: a gloo rank ended
        in std::terminate after its last checkpoint, failing the torchrun run)."""
        if self.owns_process_group and dist.is_initialized():
            dist.barrier()
            # FSDP's sharded parameters, their optimizer state and the DDP wrapper hold the group: released first, the
            # group is freed by destroy_process_group here, not by the interpreter's teardown in whatever order that
            # runs (a gloo rank still aborted in std::terminate once with the barrier alone, FSDP under load)
            self.opt = self.sched = self.module = self.model = None
            gc.collect()
            dist.destroy_process_group()
            self.owns_process_group = False


def _drop_rows_after(path: Path, step: int) -> None:
    """Rows a stopped run logged after the checkpoint it resumes from would be logged twice."""
    if not path.is_file():
        return
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    kept = [r for r in rows if int(r["step"]) <= step]
    if len(kept) == len(rows) or not rows:
        return
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(kept)
    os.replace(tmp, path)


def append_csv(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            writer.writeheader()
        writer.writerow(row)


