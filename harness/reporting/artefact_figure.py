"""One context window under every artefact kind at every severity of its default scale (``python -m harness
artefacts``): the figure that documents the severity scales of ``protocols.artefacts``.

The window is the first test window of the first subject's LOSO fold, normalised with that fold's scaler, and
every kind is drawn exactly as the noise task draws it (the same seed rule, the same sigma_c); ``placement``
places the events of motion and pops as ``--artefact-placement`` does (the other kinds have none)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from harness.reporting.figures import pyplot, save_png_pdf
from protocols.artefacts import ArtefactUnavailable, apply_artefact, unit_artefact
from protocols.data import Dataset, nominal_sampling_rate
from protocols.forecasting import fold_windows
from protocols.noise import channel_sigma, noise_draw
from protocols.specs import ARTEFACT_KINDS, ARTEFACT_PLACEMENTS, EVENT_ARTEFACTS, ArtefactSpec, ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds
from protocols.windows import stable_seed


def artefact_figure(dataset: Dataset, setting: Setting, out_dir: Path, channel: str | None = None, seed: int = 0,
                    mains_hz: float = 50.0, placement: str = ARTEFACT_PLACEMENTS[0]) -> list[Path]:
    fold = loso_folds(dataset)[0]
    arrays, _ = fold_windows(dataset, fold, setting, ForecastingSpec((setting,), SamplingSpec(seed=seed)))
    if arrays.context.shape[0] == 0:
        raise ValueError(f"no {setting.name} window in subject {fold.test_subject} of {dataset.name}")
    j = dataset.channels.index(channel) if channel else 0
    context = arrays.context[:1]
    sigma = channel_sigma(dataset, fold)
    fs = nominal_sampling_rate(dataset)
    t = np.arange(setting.context) / fs
    kinds = [k for k in ARTEFACT_KINDS if k != "gaussian"] + ["gaussian"]
    width = max(len(ArtefactSpec(k).default_levels) for k in kinds)
    plt = pyplot()
    fig, axes = plt.subplots(len(kinds), width, figsize=(2.6 * width, 1.7 * len(kinds)), sharex=True, squeeze=False)
    for r, kind in enumerate(kinds):
        spec = ArtefactSpec(kind, mains_hz, placement if kind in EVENT_ARTEFACTS else ARTEFACT_PLACEMENTS[0])
        rng = np.random.default_rng(stable_seed(seed, dataset.content_id, fold.test_subject, "artefact", kind,
                                                setting.context, setting.horizon))
        try:
            unit = (noise_draw(context.shape, seed, dataset.content_id, fold.test_subject, setting) if kind == "gaussian"
                    else unit_artefact(kind, context.shape, fs, rng, mains_hz, spec.placement))
            reason = None
        except ArtefactUnavailable as exc:
            unit, reason = None, str(exc)
        for c, level in enumerate(spec.default_levels):
            ax = axes[r, c]
            ax.plot(t, context[0, j], color="0.6", lw=0.8)
            if reason is None:
                corrupted = (context + level * sigma[None, :, None] * unit if kind == "gaussian"
                             else apply_artefact(kind, context, sigma, level, unit))
                ax.plot(t, corrupted[0, j], color=f"C{r}", lw=0.9)
            elif c == 0:
                ax.text(0.02, 0.5, "\n".join(textwrap.wrap("unavailable: " + reason, 34)), transform=ax.transAxes,
                        fontsize=5.5, va="center", clip_on=True)
            ax.set_title(f"{spec.condition(level)}", fontsize=8)
            ax.tick_params(labelsize=6)
        for c in range(len(spec.default_levels), width):
            axes[r, c].axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("seconds", fontsize=7)
    fig.suptitle(f"{dataset.name}, channel {dataset.channels[j]}, subject {fold.test_subject}: one {setting.name} "
                 f"context (grey: clean, normalised; colour: corrupted) at every severity; events placed "
                 f"{placement}", fontsize=9)
    fig.tight_layout()
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in dataset.name)
    paths = save_png_pdf(fig, Path(out_dir) / f"artefacts-{safe}-{dataset.channels[j]}")
    plt.close(fig)
    return paths
