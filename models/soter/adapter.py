"""SOTER behind the harness's model interface."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
import torch

from models.soter.config import SoterConfig, preset
from models.soter.model import ROLLOUTS, SoterModel
from models.soter.spline import BEYOND
from protocols.interface import Capabilities, Model, SeriesBatch

# how far an adaptive solve may move a row when its batch companions change (see batch_tolerance)
ADAPTIVE_BATCH_ATOL = 2e-2


class SoterAdapter(Model):
    capabilities = Capabilities(forecast=True, impute=True, embed=True, multivariate=True, min_context=2)

    def __init__(self, model: SoterModel, name: str = "soter", rollout: str = "autoregressive",
                 per_channel: bool = False, device: str = "cpu", batch_size: int = 256, source: str = "",
                 checkpoint: Path | None = None, control_beyond: str = "extrapolate") -> None:
        if rollout not in ROLLOUTS:
            raise ValueError(f"rollout must be one of {ROLLOUTS}, got {rollout!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if control_beyond not in BEYOND:
            raise ValueError(f"control_beyond must be one of {BEYOND}, got {control_beyond!r}")
        self.name = name
        self.model = model.to(device).eval()
        self.rollout, self.per_channel, self.device, self.batch_size = rollout, per_channel, device, batch_size
        self.source = source
        self.checkpoint = checkpoint  # the folder of our own checkpoint format, when loaded from one
        # imputation's control past a channel's last observation: the authors' spline extrapolation by default;
        # "hold" / "zero" are departures for long gaps (docs/stress-tests.md, "Why SOTER diverges inside gaps")
        self.control_beyond = control_beyond
        if per_channel:  # the official univariate evaluation: each channel alone
            self.capabilities = Capabilities(forecast=True, impute=True, embed=True, multivariate=False,
                                             min_context=2)

    @property
    def batch_tolerance(self) -> tuple[float, float] | None:
        """(rtol, atol) within which a row's forecast may differ between batch compositions.

        An adaptive ODE solver picks one step size for the whole batch (torchdiffeq's error norm spans
        every row), so a row's numerical error depends on the rows decoded with it. Measured with the
        step-10,000 soter-cpu-64 weights at rtol = atol = 1e-5 (dopri5): below 1e-4 with ordinary companions, up
        to 1.4e-2 (normalised units) when a companion holds 10-sigma values, as in the leakage probe
        (docs/soter.md, "Batch effects"). Declared with margin; a fixed-step solver is exact (None).
        """
        from models.soter.decoder import FIXED_STEP_SOLVERS

        if self.model.config.solver in FIXED_STEP_SOLVERS:
            return None
        return 0.0, ADAPTIVE_BATCH_ATOL

    def _tensors(self, batch: SeriesBatch):
        to = dict(device=self.device)
        return (torch.as_tensor(batch.values, dtype=torch.float32, **to),
                torch.as_tensor(batch.timestamps, dtype=torch.float64, **to),
                torch.as_tensor(batch.mask, **to))

    def _chunks(self, n: int):
        return range(0, n, self.batch_size)

    @torch.inference_mode()
    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        values, times, _ = self._tensors(batch)
        q = torch.as_tensor(query_times, dtype=torch.float64, device=self.device)
        out = [self.model.forecast(values[a:a + self.batch_size], times[a:a + self.batch_size],
                                   q[a:a + self.batch_size], self.rollout) for a in self._chunks(len(values))]
        return torch.cat(out).double().cpu().numpy()

    @torch.inference_mode()
    def _impute(self, batch: SeriesBatch, query_time: np.ndarray) -> np.ndarray:
        """CDE regime: zero-filled masked prefix, spline control from its observed points (past a
        channel's last observation as ``control_beyond`` says), one solve to the query time, no write-back."""
        values, times, mask = self._tensors(batch)
        q = torch.as_tensor(query_time, dtype=torch.float64, device=self.device)[:, None]
        out = [self.model.predict(values[a:a + self.batch_size], times[a:a + self.batch_size],
                                  mask[a:a + self.batch_size], q[a:a + self.batch_size], controlled=True,
                                  control_beyond=self.control_beyond)[..., 0]
               for a in self._chunks(len(values))]
        return torch.cat(out).double().cpu().numpy()

    @torch.inference_mode()
    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        values, times, mask = self._tensors(batch)
        out = [self.model.embed_batch(values[a:a + self.batch_size], times[a:a + self.batch_size],
                                      mask[a:a + self.batch_size]) for a in self._chunks(len(values))]
        return torch.cat(out).double().cpu().numpy()

    def describe(self) -> dict[str, object]:
        info = {"name": self.name, "source": self.source, "rollout": self.rollout, "per_channel": self.per_channel,
                "config": self.model.config.to_dict()}
        if self.control_beyond != "extrapolate":  # named only when departed from, so the default's records stay as they were
            info["control_beyond"] = self.control_beyond
        if self.checkpoint is not None and (self.checkpoint / "SHA256SUMS").is_file():
            from models.registry import weights_digest  # names the exact weights a record was computed with

            info["checkpoint"] = self.checkpoint.name
            info["checkpoint_sha256"] = weights_digest(self.checkpoint)
        return info


Rollout = Literal["autoregressive", "direct", "per-query"]  # models.soter.model.ROLLOUTS (tested equal)
Beyond = Literal["extrapolate", "hold", "zero"]  # models.soter.spline.BEYOND (tested equal)
SolverImpl = Literal["native", "torchdiffeq"]  # models.soter.config.SOLVER_IMPLS (tested equal)


def load_soter(weights: str | Path | None = None, rollout: Rollout = "autoregressive", per_channel: bool = False,
               device: str = "cpu", name: str = "soter", batch_size: int = 256, seed: int = 0,
               control_beyond: Beyond = "extrapolate", output_bound: float | None = None,
               solver_impl: SolverImpl = "native") -> SoterAdapter:
    """The trained checkpoint ``weights=DIR``: ``--weights``, else the one the entry ``name`` ships with, which the
    registry passes (its ``default_weights``; the entry's folder, ``models.soter.entries``). Not imported from the
    registration here: that module is outside the code whose digest tells a record's rows current (a new entry would
    otherwise mark every SOTER row stale). ``batch_size``: rows per forward pass (memory).
    ``seed``: passed by the harness to every model; unused, a trained SOTER is deterministic.
    ``control_beyond``: imputation's spline control past a channel's last observation (``extrapolate``, the
    authors'; ``hold`` or ``zero``: ``--model-option soter.control_beyond=hold``, docs/soter.md).
    ``output_bound``: clip every prediction to its context's range widened by this share of it (SoterConfig's
    option, issue #45; None: the checkpoint's own), so a checkpoint trained without it is bounded too.
    ``solver_impl``: the decoder's dopri5 solve, ``native`` (the default) or ``torchdiffeq`` (parity checks:
    ``--model-option soter.solver_impl=torchdiffeq``); it replaces the checkpoint config's (none of the shipped
    configs names one: they predate the native solve)."""
    from models.soter.io import from_pretrained

    if weights is None:
        raise ValueError(f"{name}: no checkpoint given (weights=DIR); load it through the registry "
                         "(models.registry.load_model), which passes the entry's shipped checkpoint")
    folder = Path(weights).expanduser()
    model = from_pretrained(folder)
    if output_bound is not None:
        model.config = model.config.replace(output_bound=float(output_bound))
    model.config = model.config.replace(solver_impl=str(solver_impl))
    model.decoder.cfg = model.config
    return SoterAdapter(model, name=name, rollout=rollout, per_channel=per_channel, device=device,
                        batch_size=batch_size, source=str(folder), checkpoint=folder, control_beyond=control_beyond)


def load_random_tiny(seed: int = 0, rollout: Rollout = "autoregressive", per_channel: bool = False,
                     config: str = "soter-tiny", device: str = "cpu", batch_size: int = 256) -> SoterAdapter:
    """RANDOM WEIGHTS: for tests and smoke runs only; never a SOTER result. The weights are drawn on the
    CPU, so every device gets the same model."""
    torch.manual_seed(seed)
    cfg: SoterConfig = preset(config)
    return SoterAdapter(SoterModel(cfg), name=f"{config}-random", rollout=rollout, per_channel=per_channel,
                        device=device, batch_size=batch_size, source=f"random initialisation, seed {seed}")


def load_authors(weights: str | Path | None = None, rollout: Rollout = "autoregressive", per_channel: bool = False,
                 device: str = "cpu", batch_size: int = 256, seed: int = 0) -> SoterAdapter:
    """The authors' released checkpoint from a local folder (``--weights soter-authors=DIR``).
    ``seed``: passed by the harness to every model; unused, the checkpoint is deterministic."""
    from models.soter.authors import from_authors

    if not weights:
        raise ValueError("soter-authors needs --weights soter-authors=DIR")
    return SoterAdapter(from_authors(weights), name="soter-authors", rollout=rollout, per_channel=per_channel,
                        device=device, batch_size=batch_size, source=f"authors' checkpoint {weights}")
