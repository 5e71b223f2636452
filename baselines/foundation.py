"""What every foundation-model baseline declares, and where its weights come from.

Each baseline module describes its models with a :class:`Card` (paper name and parameter count,
hub id, weight licence, capabilities, requirements) and registers them with :func:`register_card`,
naming the adapter class. An adapter subclasses :class:`FoundationModel`, which opens the card once
for all of them (name, capabilities, weights, seed, ``describe()``); the subclass loads the model.
This module imports nothing heavy: ``harness list`` reads the cards without loading a model.

Weights are looked up, in order (:func:`resolve_weights`):

1. ``--weights NAME=DIR`` (a local directory), or ``--weights NAME=ORG/REPO`` (a hub id, downloaded
   by the model's own library when online);
2. the TOML file named by ``$SOTER_BENCH_WEIGHTS`` (``NAME = "DIR"`` lines);
3. the card's hub id in the local Hugging Face cache (no network: read from disk only).

Nothing found: the model's rows are ``unavailable`` with the exact download command. Random
weights are never used outside tests.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from protocols.interface import Capabilities, Model
from models.registry import (NEEDS_FLAG, NEEDS_WEIGHTS, ModelSpec, ModelUnavailableError, Unavailable,
                             import_path, is_hub_id, register)

WEIGHTS_FILE_ENV = "SOTER_BENCH_WEIGHTS"


@dataclass(frozen=True)
class Card:
    """A foundation model as the paper compares it, and what it needs to run here."""

    name: str  # registry name, e.g. "chronos-2-base"
    paper_name: str  # as in the paper's tables, e.g. "Chronos2-Base"
    paper_params: str | None  # as printed in the paper ("Paras": parameters per inference step); None: not given
    hub_id: str | None  # Hugging Face repository of the official checkpoint; None: not on the hub
    source: str  # where the official weights are published (shown in the download message)
    licence: str  # of the weights
    requires: tuple[str, ...]  # importable modules
    extra: str | None  # pip extra of this project that installs them
    files: tuple[tuple[str, ...], ...]  # a weights directory must hold one file of each group
    capabilities: Capabilities = Capabilities()
    native_horizon: int | None = None  # steps produced per forward pass; longer ones are rolled out
    tasks: tuple[str, ...] = ("forecasting", "imputation", "noise")
    environment: str | None = None  # why ``requires`` does not install beside this project
    remote_code: bool = False  # loads the checkpoint's own Python code (trust_remote_code)
    notes: str = ""
    options: dict[str, Any] = field(default_factory=dict)

    def description(self) -> str:
        params = f"{self.paper_params} parameters in the paper" if self.paper_params else "no parameter count in the paper"
        hub = f"weights {self.hub_id}" if self.hub_id else f"weights from {self.source}"
        extra = f"; {self.notes}" if self.notes else ""
        return f"{self.paper_name} ({params}; {hub}){extra}"


CARDS: dict[str, Card] = {}


def register_card(card: Card, factory: type[Model] | Callable[..., Model] | str,
                  check: Callable[..., str | None] | str = "baselines.foundation:check") -> ModelSpec:
    """Register ``card`` under its name; it joins the default set only when its weights are found.

    ``factory`` (the adapter class, or a factory function) and ``check`` are kept by their import path
    (:func:`models.registry.import_path`); a ``"module:callable"`` string is still accepted."""
    factory, check = import_path(factory), import_path(check)
    CARDS[card.name] = card
    installed = all(importlib.util.find_spec(m.split(".")[0]) is not None for m in card.requires)
    default = (installed and check == "baselines.foundation:check" and not card.remote_code
               and _local_weights(card, None) is not None)
    return register(ModelSpec(
        name=card.name, factory=factory, description=card.description(), family="foundation",
        licence=card.licence, requires=card.requires, extra=card.extra, environment=card.environment,
        check=check, default=default, tasks=card.tasks,
        capabilities=card.capabilities, options={"card": card.name, **card.options},
        paper_name=card.paper_name, native_horizon=card.native_horizon, hub_weights=True, paper_params=card.paper_params,
    ))


class FoundationModel(Model):
    """An adapter of a card's model: the opening every foundation-model adapter shares, written once.

    ``__init__`` imports the library (a missing one fails first), looks up the card (name and
    capabilities), resolves the weights (never random: :func:`resolve_weights`), quiets transformers
    when the model loads through it, seeds torch and calls :meth:`_load`; ``describe()`` gives the
    name, the library's version, the weights and what ``_load`` returned. A subclass declares its
    options in its own ``__init__`` (the factory's signature: no ``**kwargs`` catch-all) and passes them
    on to ``super().__init__``, which hands them to ``_load``.
    """

    library: str | None = None  # distribution whose version describe() names, e.g. "tirex-ts"
    library_module: str | None = None  # its importable module, imported before anything else
    uses_transformers: bool = False  # loads through transformers: hide its progress bars

    def __init__(self, card: str, weights: str | None, device: str, seed: int, **options: Any) -> None:
        if self.library_module is not None:
            importlib.import_module(self.library_module)
        c: Card = CARDS[card]
        self.name, self.capabilities = c.name, c.capabilities
        source = self._weights(c, weights)
        if self.uses_transformers:
            quiet_transformers()
        seed_everything(seed)
        extra = self._load(source, device, **options)
        self._info: dict[str, object] = {"name": self.name}
        if self.library is not None:
            from importlib.metadata import version

            self._info[self.library] = version(self.library)
        self._info.update({"weights": source, **extra})

    def _weights(self, card: Card, weights: str | None) -> str:
        """Where the weights are (:func:`resolve_weights`); research-code models name a checkpoint file."""
        return resolve_weights(card, weights)

    def _load(self, source: str, device: str, **options: Any) -> dict[str, object]:
        """Loads the model from ``source`` onto ``device``; returns what ``describe()`` adds."""
        raise NotImplementedError

    def describe(self) -> dict[str, object]:
        return dict(self._info)


def check(card: str, weights: str | None = None, trust_remote_code: bool = False, **_: object) -> str | None:
    """Registry check: None when the model can load here, else what to do (cheap, no network)."""
    c = CARDS[card]
    if c.remote_code and not trust_remote_code:
        return Unavailable(
            f"{c.name} runs the Python code shipped with its checkpoint; review that code, then allow it "
            f"with --trust-remote-code {c.name} (and --weights {c.name}=DIR for a local snapshot)", NEEDS_FLAG)
    try:
        resolve_weights(c, weights)
    except ModelUnavailableError as exc:
        return Unavailable(str(exc), NEEDS_WEIGHTS)
    return None


def resolve_weights(card: Card, weights: str | os.PathLike | None) -> str:
    """A local directory holding the card's files, or a hub id to download from; else raises
    :class:`ModelUnavailableError` with the download command."""
    if weights is not None:
        text = str(weights)
        path = Path(text).expanduser()
        if path.exists():
            return str(_validated(card, path))
        if is_hub_id(text):
            cached = _hub_snapshot(text)
            if cached is not None and _missing(card, cached) is None:
                return str(cached)
            if _offline():
                raise ModelUnavailableError(
                    f"{card.name}: --weights {card.name}={text} is a hub id, but HF_HUB_OFFLINE is set and it is "
                    f"not in the local cache; {_download_hint(card, text)}")
            return text  # the model's library downloads it
        raise ModelUnavailableError(f"{card.name}: weights directory {text} does not exist; {_download_hint(card)}")
    local = _local_weights(card, None)
    if local is not None:
        return str(local)
    raise ModelUnavailableError(f"{card.name} needs its pretrained weights: {_download_hint(card)}")


def _local_weights(card: Card, _: object) -> Path | None:
    configured = _configured_weights().get(card.name)
    if configured:
        path = Path(configured).expanduser()
        if path.is_dir() and _missing(card, path) is None:
            return path
    if card.hub_id:
        cached = _hub_snapshot(card.hub_id)
        if cached is not None and _missing(card, cached) is None:
            return cached
    return None


def _validated(card: Card, path: Path) -> Path:
    if path.is_file():  # a checkpoint file named directly: use its folder
        path = path.parent
    missing = _missing(card, path)
    if missing:
        raise ModelUnavailableError(f"{card.name}: weights directory {path} lacks {missing}; "
                                    f"{_download_hint(card)}")
    return path


def _missing(card: Card, path: Path) -> str | None:
    for group in card.files:
        if not any(_has(path, pattern) for pattern in group):
            return " or ".join(group)
    return None


def _has(path: Path, pattern: str) -> bool:
    return any(path.glob(pattern)) if any(ch in pattern for ch in "*?[") else (path / pattern).is_file()


def _download_hint(card: Card, hub_id: str | None = None) -> str:
    repo = hub_id or card.hub_id
    if repo:
        return (f"download them with `hf download {repo} --local-dir DIR` and pass --weights {card.name}=DIR "
                f"(or name DIR in the TOML file ${WEIGHTS_FILE_ENV}), or, with internet, "
                f"--weights {card.name}={repo}")
    return (f"get the official checkpoint from {card.source}, put it in a directory DIR holding "
            f"{', '.join(' or '.join(g) for g in card.files)} and pass --weights {card.name}=DIR")


def _configured_weights() -> dict[str, str]:
    file = os.environ.get(WEIGHTS_FILE_ENV)
    if not file:
        return {}
    try:
        data = tomllib.loads(Path(file).expanduser().read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ModelUnavailableError(f"cannot read ${WEIGHTS_FILE_ENV}={file}: {exc}") from exc
    table = data.get("weights", data)
    return {str(k): str(v) for k, v in table.items() if isinstance(v, str)}


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def _hub_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot of ``repo_id`` (its ``main`` ref, else the newest), read from disk only."""
    root = _hub_cache() / f"models--{repo_id.replace('/', '--')}"
    ref = root / "refs" / "main"
    if ref.is_file():
        snap = root / "snapshots" / ref.read_text().strip()
        if snap.is_dir():
            return snap
    snaps = sorted((root / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
    return snaps[-1] if snaps else None


def seed_everything(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def quiet_transformers() -> None:
    """Hide transformers' weight-loading progress bars (they flood the sweep's log)."""
    try:
        from transformers.utils import logging as tf_logging

        tf_logging.disable_progress_bar()
        tf_logging.set_verbosity_error()
    except ImportError:
        pass
