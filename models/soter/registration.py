"""SOTER's entries in the model registry (cheap: imports nothing heavy).

Every shipped checkpoint folder with an ``entry.toml`` is an entry (``models.soter.entries``: no code per
checkpoint); registered here by hand are only the entries that are not a folder of their own: the paper's
autoregressive rollout of the faithful checkpoint, the authors' released weights and a random tiny model.
"""

from __future__ import annotations

from pathlib import Path

from models.registry import ModelSpec, register
from models.soter.entries import CHECKPOINTS, discover

for _entry in discover().values():
    register(_entry.spec())

_FAITHFUL = "models.soter.entries:ENTRIES.soter"
register(ModelSpec(
    name="soter-autoregressive", factory="models.soter.adapter:load_soter", family="soter", capabilities_on_load=True,
    default=False, description="the faithful soter checkpoint with the paper's autoregressive rollout (one backbone "
    "pass per horizon step)", licence="MIT (this repository's weights)", check=f"{_FAITHFUL}.check",
    tasks=("forecasting", "noise"), options={"rollout": "autoregressive", "name": "soter-autoregressive"},
    default_weights=f"{_FAITHFUL}.checkpoint_dir"))

register(ModelSpec(
    name="soter-tiny-random", factory="models.soter.adapter:load_random_tiny", family="soter", capabilities_on_load=True,
    default=False, licence="n/a (random weights)", tasks=("forecasting", "imputation", "noise", "classification"),
    description="RANDOM WEIGHTS - a randomly initialised soter-tiny for tests and smoke runs only, not SOTER results"))


def check_authors_checkpoint(weights: str | Path | None = None, **_: object) -> str | None:
    from models.soter.config import AUTHORS_HUB_ID as HUB_ID  # models.soter.authors would import torch

    how = (f"download it on a machine with internet (`hf download {HUB_ID} --local-dir DIR`), "
           "copy DIR here and pass --weights soter-authors=DIR")
    if not weights:
        return f"the authors' SOTER checkpoint is not bundled: {how}"
    folder = Path(weights).expanduser()
    files = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")
    if (folder / "config.json").is_file() and any((folder / f).is_file() for f in files):
        return None
    return f"{folder}: needs config.json and model.safetensors (or pytorch_model.bin); {how}"


register(ModelSpec(
    name="soter-authors", factory="models.soter.adapter:load_authors", family="soter", capabilities_on_load=True,
    default=False, description="SOTER with the authors' released weights (SII-fkchen/SOTER, their config incl. 12 "
    "layers), loaded through a parameter-name map (docs/soter-parity.md)",
    licence="see the authors' model card (SII-fkchen/SOTER on Hugging Face; not checked here)",
    check="models.soter.registration:check_authors_checkpoint",
    tasks=("forecasting", "imputation", "noise", "classification")))

__all__ = ["CHECKPOINTS", "check_authors_checkpoint"]


def _register_adapted() -> None:
    """``ENTRY@head`` and ``ENTRY@full`` of every shipped entry (and of the random tiny model, for tests): SOTER
    fine-tuned per fold by ``models.soter.adaptation`` (issue #49)."""
    from models.adapted import adapted_spec
    from models.registry import registered_spec
    from protocols.adaptation import ADAPTED_MODES

    factory = "models.soter.adaptation:load_adapted_soter"
    for name in [*discover(), "soter-tiny-random"]:
        base = registered_spec(name)
        for mode in ADAPTED_MODES:
            extra = {"random_tiny": True} if name == "soter-tiny-random" else {"rollout": base.options.get("rollout", "per-query")}
            register(adapted_spec(base, mode, factory, **extra))


_register_adapted()
