"""Models whose code is not on PyPI run from the user's checkout of their official repository.

Lag-Llama, NormWear and TF-C publish research code, not packages. A user who has a checkout
names it with an environment variable (``$SOTER_BENCH_<MODEL>_CODE``) or keeps the checkpoint
inside it (the weights directory or one of its parents is then the checkout). The code is
imported from there under a private module name, never copied into this project, and only
from a folder the user named: nothing that comes with a dataset or a checkpoint is executed.

Checkpoints of these models are pickles; :func:`load_state_dict` reads them with
``torch.load(weights_only=True)`` only.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from models.registry import NEEDS_CODE, NEEDS_WEIGHTS, ModelUnavailableError, Unavailable


@dataclass(frozen=True)
class CodeSource:
    """Where a model's code comes from and how to recognise a checkout of it."""

    model: str  # registry name, e.g. "normwear"
    repo: str  # https URL of the official repository
    env_var: str  # e.g. "SOTER_BENCH_NORMWEAR_CODE"
    markers: tuple[str, ...]  # files (relative paths) every checkout has
    licence: str  # of the code, as its repository states it

    def get_hint(self) -> str:
        return (f"on a machine with internet run `git clone {self.repo} DIR` ({self.licence}), bring DIR here and "
                f"set {self.env_var}=DIR (or keep the checkpoint inside DIR and pass --weights {self.model}=...)")

    def is_checkout(self, path: Path) -> bool:
        return all((path / marker).is_file() for marker in self.markers)


def find_checkout(source: CodeSource, weights: str | os.PathLike | None = None,
                  code: str | os.PathLike | None = None) -> Path:
    """The checkout folder: option ``code``, else ``$ENV_VAR``, else the weights directory or one of its
    parents; else raises :class:`ModelUnavailableError` saying how to get it."""
    given = code or os.environ.get(source.env_var)
    if given:
        path = Path(given).expanduser()
        if source.is_checkout(path):
            return path.resolve()
        raise ModelUnavailableError(
            f"{source.model}: {path} is not a checkout of {source.repo} (it needs {', '.join(source.markers)}); "
            f"{source.get_hint()}")
    if weights:
        start = Path(weights).expanduser().resolve()
        for folder in (start, *start.parents):
            if source.is_checkout(folder):
                return folder
    raise ModelUnavailableError(f"{source.model} needs its code, which is not on PyPI: {source.get_hint()}")


def _alias(source: CodeSource, root: Path) -> str:
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:10]
    return f"_soter_bench_{source.model.replace('-', '_')}_{digest}"


def import_from_checkout(source: CodeSource, root: Path, module: str) -> ModuleType:
    """Import ``module`` (dotted, relative to the checkout root, e.g. ``"modules.normwear"``) from the
    checkout as a package of its own, so its relative imports work and nothing is put on ``sys.path``;
    a module that imports its siblings absolutely (TF-C's ``from augmentations import ...``) is not
    supported, and the modules used here do not."""
    package = _alias(source, root)
    if package not in sys.modules:  # a bare package over the checkout (its own __init__.py is not run)
        pkg = ModuleType(package)
        pkg.__path__ = [str(root)]
        sys.modules[package] = pkg
    try:
        return importlib.import_module(f"{package}.{module}")
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith(package):
            raise ModelUnavailableError(
                f"{source.model}: its code in {root} imports {exc.name!r}, which is not installed here") from exc
        raise ModelUnavailableError(f"{source.model}: {root} has no module {module!r}: {exc}") from exc
    except Exception as exc:  # its code, or a package it imports, fails on import
        raise ModelUnavailableError(
            f"{source.model}: importing {module} from the checkout {root} failed: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc


STATE_DICT_KEYS = ("model", "model_state_dict", "state_dict")


def load_state_dict(model: str, path: Path) -> dict[str, Any]:
    """A state dict from a pickled checkpoint, read with ``torch.load(weights_only=True)`` (no code can run);
    a checkpoint that wraps it (``{"model": ...}``, ``{"model_state_dict": ...}``) is unwrapped."""
    import pickle

    import torch

    try:
        ckpt = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError, ValueError) as exc:
        raise ModelUnavailableError(
            f"{model}: cannot read the checkpoint {path} with torch.load(weights_only=True) (truncated, corrupt, or "
            f"a pickle holding more than tensors, which is never loaded): {str(exc).splitlines()[0]}") from exc
    if isinstance(ckpt, dict):
        for key in STATE_DICT_KEYS:
            if isinstance(ckpt.get(key), dict):
                ckpt = ckpt[key]
                break
    if not isinstance(ckpt, dict) or not ckpt or not all(isinstance(v, torch.Tensor) for v in ckpt.values()):
        raise ModelUnavailableError(f"{model}: {path} holds no state dict of tensors (keys tried: "
                                    f"{', '.join(STATE_DICT_KEYS)})")
    return ckpt


def load_into(model_name: str, module: Any, state: dict[str, Any], path: Path) -> None:
    """``load_state_dict(strict=True)`` with an error that names the file and the first mismatches."""
    own = module.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    wrong = [f"{k} {tuple(state[k].shape)} vs {tuple(own[k].shape)}" for k in own
             if k in state and tuple(state[k].shape) != tuple(own[k].shape)]
    if missing or unexpected or wrong:
        parts = [f"{label}: {', '.join(items[:4])}{' ...' if len(items) > 4 else ''}"
                 for label, items in (("missing", missing), ("unexpected", unexpected), ("shape", wrong)) if items]
        raise ModelUnavailableError(f"{model_name}: the checkpoint {path} does not fit the model built from its code "
                                    f"({'; '.join(parts)})")
    module.load_state_dict(state, strict=True)


def checkpoint_file(card: str, weights: str | None, patterns: tuple[str, ...], preferred: str | None = None) -> Path:
    """``--weights NAME=FILE`` names the file; a weights directory (:func:`resolve_weights`) must hold
    ``preferred`` or exactly one file matching ``patterns``."""
    from baselines.foundation import CARDS, resolve_weights

    if weights is not None and Path(weights).expanduser().is_file():
        return Path(weights).expanduser().resolve()
    folder = Path(resolve_weights(CARDS[card], weights))
    if preferred and (folder / preferred).is_file():
        return folder / preferred
    found = sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file()})
    if not found:
        raise ModelUnavailableError(f"{card}: no checkpoint ({' or '.join(patterns)}) in {folder}")
    if len(found) > 1:
        raise ModelUnavailableError(f"{card}: {folder} holds several checkpoints ({', '.join(p.name for p in found)}); "
                                    f"pass --weights {card}=FILE to name one")
    return found[0]


def open_model_code(source: CodeSource, file: Path, code: str | os.PathLike | None,
                    module: str) -> tuple[Path, ModuleType, dict[str, Any]]:
    """The checkout (found from ``code``, the variable or the checkpoint's folder), its ``module`` and the
    checkpoint's state dict: what every research-code adapter needs before building its model."""
    root = find_checkout(source, file.parent, code)
    return root, import_from_checkout(source, root, module), load_state_dict(source.model, file)


def check(source: CodeSource, locate: Callable[[str, str | None], Path], card: str, weights: str | None = None,
          code: str | None = None) -> str | None:
    """Registry check (cheap, imports nothing of the model): the checkpoint (``needs weights``), then the
    checkout (``needs code``)."""
    try:
        file = locate(card, weights)
    except ModelUnavailableError as exc:
        return Unavailable(f"{exc}. It also needs its code (not on PyPI): {source.get_hint()}", NEEDS_WEIGHTS)
    try:
        find_checkout(source, file.parent, code)
    except ModelUnavailableError as exc:
        return Unavailable(str(exc), NEEDS_CODE)
    return None
