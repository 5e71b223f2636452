"""Models registered by name; nothing heavy is imported until a model is loaded.

Each entry points at a factory ``"package.module:callable"``.  The factory takes keyword
options (``weights``, ``device``, ``seed`` ...) and returns a :class:`models.interface.Model`.
An optional ``check`` callable tells, without loading anything heavy, whether the model can
run here; when it cannot, the runner writes rows with status ``unavailable`` and the reason.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from models.interface import Capabilities, Model


class UnknownModelError(KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


class ModelUnavailableError(RuntimeError):
    """The model cannot run here (missing weights, package or environment); says how to fix it."""


READY = "ready"
NEEDS_WEIGHTS = "needs weights"
NEEDS_PACKAGE = "needs package"
NEEDS_ENVIRONMENT = "needs environment"
NEEDS_FLAG = "needs flag"
NEEDS_CODE = "needs code"  # a model whose code is not on PyPI: the user points at a checkout of it


# factory parameters that say which model a registered name stands for (its card, worker, environment, name):
# another value is another model, registered under its own name, so they are no user options
REGISTRATION_OPTIONS = frozenset({"name", "card", "env", "worker", "worker_options"})
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


class Unavailable(str):
    """A reason a model cannot run here, with its kind (one of the NEEDS_* constants).

    A check may return a plain string; it counts as ``NEEDS_WEIGHTS``.
    """

    kind: str = NEEDS_WEIGHTS

    def __new__(cls, message: str, kind: str = NEEDS_WEIGHTS) -> "Unavailable":
        obj = super().__new__(cls, message)
        obj.kind = kind
        return obj


@dataclass(frozen=True)
class ModelSpec:
    name: str
    factory: str  # "module:callable"
    description: str
    family: str = "baseline"  # "baseline" | "statistical" | "foundation" | "soter"
    licence: str = "n/a (no weights)"
    requires: tuple[str, ...] = ()  # importable module names; a missing one makes it unavailable
    extra: str | None = None  # pip extra that installs ``requires``
    check: str | None = None  # "module:callable" returning None (ready) or a reason string
    # why ``requires`` cannot be installed beside this project (it then needs its own environment)
    environment: str | None = None
    capabilities: Capabilities | None = None  # for `harness list`; default: the factory class's
    # capabilities known only once loaded (they depend on the options, e.g. SOTER's per-channel mode)
    capabilities_on_load: bool = False
    default: bool = True  # part of the default model set of each task in ``tasks``
    tasks: tuple[str, ...] = ("forecasting", "imputation", "noise")  # tasks the model takes part in
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # printed under every table in which the model appears (e.g. how it was decoded)
    # "module:callable() -> path" of the weights the model loads when no --weights is given
    default_weights: str | None = None

    def unavailable_reason(self, **options: Any) -> str | None:
        """None when the model can be loaded here, else a message that says how to fix it."""
        for module in self.requires:
            if importlib.util.find_spec(module.split(".")[0]) is None:
                if self.environment:
                    return Unavailable(f"{self.name} needs the Python package {module!r}, which does not install "
                                       f"beside this project: {self.environment}", NEEDS_ENVIRONMENT)
                hint = f"pip install 'soter-bench[{self.extra}]'" if self.extra else f"pip install {module}"
                return Unavailable(f"{self.name} needs the Python package {module!r}: {hint}", NEEDS_PACKAGE)
        if self.check is not None:
            return _resolve(self.check)(**{**self.options, **options})
        return None

    def status(self, **options: Any) -> tuple[str, str | None]:
        """(status, reason): READY and None, or one of the NEEDS_* kinds and the message."""
        reason = self.unavailable_reason(**options)
        if reason is None:
            return READY, None
        return getattr(reason, "kind", NEEDS_WEIGHTS), str(reason)

    def identity(self, **options: Any) -> str:
        """What, beyond its name, determines this model's results: a digest of the weights it will
        load (``weights=`` or its default checkpoint) and its options. Empty for a model with neither,
        so that its record keys stay as they were."""
        weights = options.get("weights")
        if weights is None and self.default_weights is not None:
            weights = _resolve(self.default_weights)()
        parts = {k: v for k, v in {**self.options, **options}.items() if k not in ("weights", "seed", "name")}
        if weights is not None:
            path = Path(str(weights)).expanduser()
            parts["weights"] = weights_digest(path) if path.exists() else str(weights)  # a hub id stays a name
        if not parts:
            return ""
        text = "|".join(f"{k}={parts[k]}" for k in sorted(parts))
        return hashlib.sha1(text.encode()).hexdigest()[:12]

    def model_capabilities(self) -> Capabilities | None:
        """Declared capabilities, else the factory class's (imports the factory's module only); None
        for a model whose capabilities depend on its options (``capabilities_on_load``)."""
        if self.capabilities is not None:
            return self.capabilities
        if self.capabilities_on_load:
            return None  # and `harness list` need not import the factory's module (SOTER's: torch, ~2 s)
        try:
            target = _resolve(self.factory)
        except ImportError:
            return None
        caps = getattr(target, "capabilities", None)
        return caps if isinstance(caps, Capabilities) else None

    def option_names(self) -> tuple[str, ...]:
        """The options the factory names explicitly (sorted), minus ``REGISTRATION_OPTIONS``. A ``**kwargs``
        catch-all declares nothing: many factories take ``**_``, which would swallow a misspelt option.
        Imports the factory's module (for SOTER: torch), so call it only when options are given."""
        params = inspect.signature(_resolve(self.factory)).parameters.values()
        return tuple(sorted(p.name for p in params if p.kind in _NAMED and p.name not in REGISTRATION_OPTIONS))

    def load(self, **options: Any) -> Model:
        reason = self.unavailable_reason(**options)
        if reason is not None:
            raise ModelUnavailableError(reason)
        model = _resolve(self.factory)(**{**self.options, **options})
        if not isinstance(model, Model):
            raise TypeError(f"factory of {self.name!r} returned {type(model).__name__}, not a Model")
        return model


_NOT_WEIGHTS = frozenset({".md", ".txt", ".csv", ".png", ".pdf", ".jpg", ".jpeg", ".svg", ".log"})


def weights_digest(path: Path, sample: int = 1 << 20) -> str:
    """A content digest of a weights folder (or file), cheap for multi-GB checkpoints: ``SHA256SUMS``
    when the folder has one; else small files (configs, shard indexes) whole and large ones by size
    and their first and last MiB, skipping documents, logs and figures. Replacing the weights changes
    it; copying or touching them, or editing a model card, does not."""
    if path.is_dir() and (path / "SHA256SUMS").is_file():  # a shipped checkpoint lists its weights' digests
        return hashlib.sha256((path / "SHA256SUMS").read_bytes()).hexdigest()[:16]
    h = hashlib.sha256()
    base = path if path.is_dir() else path.parent
    files = sorted(f for f in (path.rglob("*") if path.is_dir() else [path]) if f.is_file()
                   and f.suffix.lower() not in _NOT_WEIGHTS
                   and not any(part.startswith(".") for part in f.relative_to(base).parts))
    for f in files:
        size = f.stat().st_size
        h.update(f"{f.relative_to(base)}|{size}|".encode())
        with open(f, "rb") as fh:
            if size <= 2 * sample:
                h.update(fh.read())
            else:
                h.update(fh.read(sample))
                fh.seek(size - sample)
                h.update(fh.read(sample))
    return h.hexdigest()[:16]


def _resolve(target: str) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


_REGISTRY: dict[str, ModelSpec] = {}


def register(spec: ModelSpec) -> ModelSpec:
    if spec.name in _REGISTRY and _REGISTRY[spec.name] != spec:
        raise ValueError(f"model name {spec.name!r} is registered twice")
    _REGISTRY[spec.name] = spec
    return spec


PLUGINS_ENV = "SOTER_BENCH_PLUGINS"


def _ensure_builtin() -> None:
    # Importing these packages registers their specs (cheap: no heavy imports).
    importlib.import_module("baselines")
    importlib.import_module("models.soter.registration")
    # A user's own models: comma-separated importable modules that call register().
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(f"cannot import plugin module {module!r} named in ${PLUGINS_ENV}: {exc}") from exc


def all_specs() -> dict[str, ModelSpec]:
    _ensure_builtin()
    return dict(_REGISTRY)


def get_spec(name: str) -> ModelSpec:
    specs = all_specs()
    if name not in specs:
        raise UnknownModelError(
            f"unknown model {name!r}; known models: {', '.join(sorted(specs))}"
        )
    return specs[name]


def load_model(name: str, **options: Any) -> Model:
    return get_spec(name).load(**options)
