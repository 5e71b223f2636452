"""SOTER's entries in the model registry (cheap: imports nothing heavy)."""

from __future__ import annotations

from pathlib import Path

from models.registry import ModelSpec, register

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
SHIPPED = CHECKPOINTS / "soter-small"
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


def checkpoint_dir(weights: str | Path | None = None) -> Path:
    return Path(weights).expanduser() if weights else SHIPPED


def check_checkpoint(weights: str | Path | None = None, **_: object) -> str | None:
    """None when a checkpoint (config.json + safetensors weights) is there, else how to get one."""
    folder = checkpoint_dir(weights)
    if (folder / "config.json").is_file() and any((folder / f).is_file() for f in _WEIGHT_FILES):
        return None
    where = f"--weights soter={weights}" if weights else f"{SHIPPED.relative_to(CHECKPOINTS.parents[2])}"
    return (f"no trained SOTER checkpoint found ({where}: needs config.json and model.safetensors); "
            "train one with the pre-training pipeline (issue #4) or pass --weights soter=DIR. "
            "Random weights are never used for SOTER rows.")


register(ModelSpec(
    name="soter", factory="models.soter.adapter:load_soter", family="soter",
    description="SOTER (paper model) from a trained checkpoint: forecast, causal CDE imputation, embedding",
    licence="MIT (this repository's weights)", check="models.soter.registration:check_checkpoint",
    tasks=("forecasting", "imputation", "noise", "classification"),
))

register(ModelSpec(
    name="soter-tiny-random", factory="models.soter.adapter:load_random_tiny", family="soter", default=False,
    description="RANDOM WEIGHTS - a randomly initialised soter-tiny for tests and smoke runs only, not SOTER results",
    licence="n/a (random weights)", tasks=("forecasting", "imputation", "noise", "classification"),
))


def check_authors_checkpoint(weights: str | Path | None = None, **_: object) -> str | None:
    from models.soter.authors import HUB_ID

    how = (f"download it on a machine with internet (`huggingface-cli download {HUB_ID} --local-dir DIR`), "
           "copy DIR here and pass --weights soter-authors=DIR")
    if not weights:
        return f"the authors' SOTER checkpoint is not bundled: {how}"
    folder = Path(weights).expanduser()
    files = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
    if (folder / "config.json").is_file() and any((folder / f).is_file() for f in files):
        return None
    return f"{folder}: needs config.json and model.safetensors (or pytorch_model.bin); {how}"


register(ModelSpec(
    name="soter-authors", factory="models.soter.adapter:load_authors", family="soter", default=False,
    description="SOTER with the authors' released weights (SII-fkchen/SOTER, their config incl. 12 layers), "
                "loaded through a parameter-name map (docs/soter-parity.md)",
    licence="see the authors' model card (SII-fkchen/SOTER on Hugging Face; not checked here)",
    check="models.soter.registration:check_authors_checkpoint",
    tasks=("forecasting", "imputation", "noise", "classification"),
))
