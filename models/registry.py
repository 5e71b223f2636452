"""Models registered by name; nothing heavy is imported until a model is loaded.

Each entry points at a factory ``"package.module:callable"``.  The factory takes keyword
options (``weights``, ``device``, ``seed`` ...) and returns a :class:`protocols.interface.Model`.
Its options are its named parameters, with no ``**kwargs`` catch-all: ``seed`` is always passed, and
an option it does not declare is an :class:`UnknownOptionError` naming the model and its options.
An optional ``check`` callable tells, without loading anything heavy, whether the model can
run here; when it cannot, the runner writes rows with status ``unavailable`` and the reason.

A model class registers itself with the :func:`register_model` decorator (its ``name`` attribute is
the registry name and its module and qualified name the factory string); :func:`register` takes a
:class:`ModelSpec` spelt out, for a factory whose module is too heavy to import when listing models.

Where registrations come from (:func:`all_specs` loads them on first use, each source once; the loading
itself is :mod:`models.plugins`):

1. the built-in models: the entry points of group ``soter_bench.models`` of the ``soter-bench``
   distribution itself (``baselines`` and ``models.soter.registration``, declared in this project's
   ``pyproject.toml``), loaded first.  This module never imports them by name: ``models`` is a lower
   layer than ``baselines`` (see docs/layout.md), and whoever assembles the registry names its
   members.  A checkout that is not pip-installed has no entry points, and :func:`all_specs` raises
   :class:`BuiltinModelsError` saying to run ``pip install -e .``;
2. installed packages, through the same entry-point group ``soter_bench.models``
   (``[project.entry-points."soter_bench.models"]`` in the package's ``pyproject.toml``).  An entry
   point's value is either

   - a module, ``name = "my_package.my_models"``: importing it registers its models by calling
     :func:`register`; or
   - an object in a module, ``name = "my_package.my_models:specs"``: a callable that returns a
     :class:`ModelSpec` or an iterable of them (or ``None`` when it registered them itself), or a
     :class:`ModelSpec` itself; the specs it gives are registered.

   The entry point's name only labels it in error messages; the models' names are their specs'.
3. the modules named, comma-separated, in ``$SOTER_BENCH_PLUGINS``: importing each registers its
   models (the quick route for a module that is not installed as a package).

Errors name the plugin: the entry point and its distribution, or the ``$SOTER_BENCH_PLUGINS``
module.  A plugin whose module raises on import (a missing dependency, a syntax error) raises
:class:`PluginImportError`, an ``ImportError``; a callable that raises, a missing attribute or
something given that is no ``ModelSpec`` raises :class:`PluginError`.  Both are ``RuntimeError``
subclasses, so the CLI prints the one line and exits 2.  The original exception is chained to the one raised.

The registry is a ``protocols.registry.Registry``, the one kind every registry is: the same spec registered
again is fine (a module imported twice); another spec under a registered name raises
:class:`DuplicateModelError` (a ``ValueError``) naming who registered each.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import typing
import re
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Required, TypedDict, TypeVar, Unpack

from models.factory_signature import static_parameters
from models.plugins import (ENTRY_POINT_GROUP, PLUGINS_ENV, BuiltinModelsError, PluginError,  # noqa: F401 (also
                            PluginImportError, load_entry_points, load_env_plugins, loading)  # importable from here)
from protocols.interface import Capabilities, Model
from protocols.registry import DuplicateNameError, Registry, UnknownNameError



class UnknownModelError(UnknownNameError):
    """A model name nothing is registered under; lists the known models."""


class UnknownOptionError(TypeError):
    """An option the model's factory does not declare (a misspelt key, or one meant for another model).

    Factories declare their options as named parameters, with no ``**kwargs`` catch-all, so that a wrong
    key is an error rather than silently ignored; :meth:`ModelSpec.load` names the model and its options."""


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
class Limitation:
    """A documented limitation of a model, as data: where its numbers are known to come from it (a task, parts
    of the row's protocol, the model's recorded options) and the note that explains it and names the option
    that lifts it. Every table holding such a row marks the row and prints the note under it (issue #51:
    ``harness.reporting.limitations``); a table without one is unchanged."""

    note: str  # what the numbers come from, and the fix (an option a user can set)
    tasks: tuple[str, ...] = ()  # the tasks it concerns (empty: every task)
    protocol: tuple[str, ...] = ()  # parts the row's protocol must hold, each a prefix: "mask=contiguous"
    # the model's recorded description (model_info: its describe(), which names an option where it departs
    # from the default) that lifts it: {"control_beyond": ("hold", "zero")}; absent: the default, not lifted
    lifted_by: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # the row's condition must start with one of these (empty: any condition): "impute renewal"
    conditions: tuple[str, ...] = ()

    def applies(self, task: str, protocol: str, info: Mapping[str, Any], condition: str = "") -> bool:
        """Whether a row of ``task`` with this ``protocol``, ``model_info`` and ``condition`` comes under the
        limitation."""
        if self.tasks and task not in self.tasks:
            return False
        if self.conditions and not any(str(condition).startswith(c) for c in self.conditions):
            return False
        parts = str(protocol).split(";")
        if not all(any(p.startswith(want) for p in parts) for want in self.protocol):
            return False
        return not any(str(info.get(option)) in values for option, values in self.lifted_by.items())


SUPERVISED = "supervised"  # the family of models trained on each fold's training subjects (Capabilities.fit)
TORCH_TOLERANCE = 1e-4  # torch's CPU kernels and ODE solvers: the same numbers to about this relative difference
# a family's declared tolerance (ModelSpec.tolerance overrides it): numpy baselines are exact, numba's statistical
# models exact to rounding, torch models within TORCH_TOLERANCE
FAMILY_TOLERANCE: dict[str, float] = {"baseline": 0.0, "statistical": 1e-9}
# how `harness list`, the tables and the report name a family where it must not be mistaken for another
FAMILY_LABELS = {SUPERVISED: "supervised (trained on the fold's training subjects)"}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    factory: str  # "module:callable"
    description: str
    family: str = "baseline"  # "baseline" | "statistical" | "foundation" | "soter" | "supervised" (trained per fold)
    licence: str = "n/a (no weights)"
    requires: tuple[str, ...] = ()  # importable module names; a missing one makes it unavailable
    extra: str | None = None  # pip extra that installs ``requires``
    check: str | None = None  # "module:callable" returning None (ready) or a reason string
    # why ``requires`` cannot be installed beside this project (it then needs its own environment)
    environment: str | None = None
    capabilities: Capabilities | None = None  # for `harness list`; default: the factory class's
    # capabilities known only once loaded (they depend on the options, e.g. SOTER's per-channel mode)
    capabilities_on_load: bool = False
    # part of the default model set of each task in ``tasks`` (True), of none (False), or of these tasks only
    default: bool | tuple[str, ...] = True
    tasks: tuple[str, ...] = ("forecasting", "imputation", "noise")  # tasks the model takes part in
    options: dict[str, Any] = field(default_factory=dict)
    note: str = ""  # printed under every table in which the model appears (e.g. how it was decoded)
    note_tasks: tuple[str, ...] = ()  # the tasks whose tables the note concerns (empty: every task's)
    # documented limitations (task, protocol, options -> a note naming the fix): marked on the rows they explain
    limitations: tuple[Limitation, ...] = ()
    # "module:callable() -> path" of the weights the model loads when no --weights is given: `load` passes it to the
    # factory as `weights` (so the factory need not import its registration: docs/records.md, the code digest)
    default_weights: str | None = None
    paper_name: str | None = None  # as the paper's tables name it (harness report); None: the paper has no row of it
    native_horizon: int | None = None  # steps one forward pass produces (`harness list`); None: not one number
    hub_weights: bool = False  # --weights may name a Hugging Face repository (ORG/REPO) instead of a folder
    paper_params: str | None = None  # its parameter count as the paper prints it (the System Overhead table)
    # its behaviour's declared revision: bump it when a change moves its numbers (harness.registry.versions). Rows
    # record it; it is no part of their key (a cell keeps its key, the revision decides whether its row is current)
    revision: int = 1
    # relative difference within which two runs' numbers count as the same (golden tests, `harness restamp`);
    # None: its family's (FAMILY_TOLERANCE): exact for numpy baselines, a float tolerance for torch models
    tolerance: float | None = None

    def numbers_tolerance(self) -> float:
        """The declared tolerance of its numbers (:attr:`tolerance`, else its family's)."""
        return self.tolerance if self.tolerance is not None else FAMILY_TOLERANCE.get(self.family, TORCH_TOLERANCE)

    def __post_init__(self) -> None:
        if not isinstance(self.revision, int) or isinstance(self.revision, bool) or self.revision < 1:
            raise ValueError(f"model {self.name!r}: revision must be a whole number >= 1, got {self.revision!r}")

    @property
    def supervised(self) -> bool:
        """Trained on each fold's training subjects: tables show it in its own group, never ranked with zero-shot."""
        return self.family == SUPERVISED

    def is_default_for(self, task: str) -> bool:
        """Whether a run of ``task`` with no ``--models`` includes this model."""
        if task not in self.tasks:
            return False
        return self.default if isinstance(self.default, bool) else task in self.default

    def default_label(self) -> str:
        """How `list` marks it: ``[default]``, ``[default: forecasting]``, or nothing."""
        if isinstance(self.default, bool):
            return "[default]" if self.default else ""
        return f"[default: {', '.join(self.default)}]" if self.default else ""

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
        return identity_digest(self.identity_parts(**options))

    def identity_parts(self, **options: Any) -> dict[str, Any]:
        """The options (registered and given, but the harness's seed) and the weights' digest (a hub id
        stays a name) that :meth:`identity` digests: what tells two configurations of a model apart."""
        weights = options.get("weights")
        if weights is None and self.default_weights is not None:
            weights = _resolve(self.default_weights)()
        parts = {k: v for k, v in {**self.options, **options}.items() if k not in ("weights", "seed", "name")}
        if weights is not None:
            path = Path(str(weights)).expanduser()
            parts["weights"] = weights_digest(path) if path.exists() else str(weights)
        return parts

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
        catch-all declares nothing (built-in factories have none: an undeclared option is an error in :meth:`load`).
        Read from the factory's source where it can be (``models.factory_signature``: no import, so no torch for
        SOTER before a misspelt option is reported), else from the imported factory."""
        static = static_parameters(self.factory)
        if static is not None:
            return tuple(sorted(n for n in static if n not in REGISTRATION_OPTIONS))
        params = inspect.signature(_resolve(self.factory)).parameters.values()
        return tuple(sorted(p.name for p in params if p.kind in _NAMED and p.name not in REGISTRATION_OPTIONS))

    def option_choices(self) -> dict[str, tuple[Any, ...]]:
        """The values an option may take, for the factory's parameters annotated ``Literal[...]`` (the others
        are not listed): a bad value is then a usage error before any work, not a failed load in every cell.
        Imports the factory's module; an annotation that does not resolve lists nothing."""
        return {name: typing.get_args(hint) for name, hint in self._hints().items()
                if typing.get_origin(hint) is typing.Literal and name not in REGISTRATION_OPTIONS}

    def option_types(self) -> dict[str, tuple[type, ...]]:
        """The types an option's value may have, for the factory's parameters annotated with plain types (``int``,
        ``float``, ``bool``, ``str``, ``Path``, ``None`` and unions of them; the others are not listed): a value of
        another type (``batch_size=lots``) is then a usage error before any work, not a failed load in every cell."""
        out = {}
        for name, hint in self._hints().items():
            union = typing.get_origin(hint) in (typing.Union, types.UnionType)
            args = typing.get_args(hint) if union else (hint,)
            if name not in REGISTRATION_OPTIONS and all(a in _PLAIN_TYPES for a in args):
                out[name] = tuple(args)
        return out

    def _hints(self) -> dict[str, Any]:
        """The factory's parameter annotations: from its source (``models.factory_signature``), else imported."""
        static = static_parameters(self.factory)
        if static is not None:
            return {name: hint for name, hint in static.items() if hint is not None}
        return _parameter_hints(_resolve(self.factory))

    def load(self, **options: Any) -> Model:
        reason = self.unavailable_reason(**options)
        if reason is not None:
            raise ModelUnavailableError(reason)
        factory = _resolve(self.factory)
        given = {**self.options, **options}
        if given.get("weights") is None and self.default_weights is not None:
            # the entry's own checkpoint, resolved here (as :meth:`identity_parts` does), so that a factory never
            # imports the registration that names it: registry edits leave the rows' code digest alone
            given["weights"] = _resolve(self.default_weights)()
        params = inspect.signature(factory).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            unknown = sorted(set(given) - {p.name for p in params if p.kind in _NAMED})
            if unknown:
                declared = self.option_names()
                raise UnknownOptionError(
                    f"model {self.name!r} has no option{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(repr(k) for k in unknown)}; "
                    + (f"its options: {', '.join(declared)}" if declared else "it takes no options"))
        model = factory(**given)
        if not isinstance(model, Model):
            raise TypeError(f"factory of {self.name!r} returned {type(model).__name__}, not a Model")
        return model


_PLAIN_TYPES = (int, float, bool, str, Path, type(None))


def _parameter_hints(factory: Callable[..., Any]) -> dict[str, Any]:
    """The resolved annotations of a factory's parameters (a class: its ``__init__``'s); {} when they do not
    resolve (an annotation naming what the module does not import)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        return {}
    hints.pop("return", None)
    return hints


def identity_digest(parts: dict[str, Any]) -> str:
    """:meth:`ModelSpec.identity` of its :meth:`ModelSpec.identity_parts` ("" for none)."""
    if not parts:
        return ""
    text = "|".join(f"{k}={parts[k]}" for k in sorted(parts))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


_NOT_WEIGHTS = frozenset({".md", ".txt", ".csv", ".png", ".pdf", ".jpg", ".jpeg", ".svg", ".log"})
# what a checksum list must cover to stand for a folder: the files a loader reads as the model
_MODEL_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".onnx", ".h5", ".msgpack",
                             ".npz", ".npy"})
CHECKSUMS = "SHA256SUMS"
_FILE_DIGESTS: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, inode) -> SHA-256 of the content


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's whole content, hashed once per process for a given path, size, mtime and
    inode (a cell that asks again, or a model describing its weights per cell, costs a stat)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _FILE_DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _FILE_DIGESTS[key] = h.hexdigest()
    return _FILE_DIGESTS[key]


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_hub_id(text: str) -> bool:
    """``ORG/REPO`` as the hub names repositories (not a relative path such as ``./x`` or ``~/x``)."""
    return bool(_HUB_ID.match(text)) and not text.startswith((".", "~"))


def weights_digest(path: Path) -> str:
    """A content digest of a weights folder (or file): every byte of every file but documents, logs,
    figures and hidden files. A ``SHA256SUMS`` in the folder stands for the files it lists only once
    verified here (every listed file present with that SHA-256) and when it lists every model file
    (``config.json``, shard indexes, weight files); its digest is then the list's, as before this check
    existed. Changing any byte of the weights changes the digest; copying or touching them, or editing a
    model card, does not. Each file is hashed once per process (:func:`file_sha256`)."""
    path = Path(path)
    base = path if path.is_dir() else path.parent
    files = sorted(f for f in (path.rglob("*") if path.is_dir() else [path]) if f.is_file()
                   and f.suffix.lower() not in _NOT_WEIGHTS
                   and not any(part.startswith(".") for part in f.relative_to(base).parts))
    if path.is_dir() and (path / CHECKSUMS).is_file():
        listed = _verified_checksums(path)
        model_files = {f.relative_to(path).as_posix() for f in files if f.name == "config.json"
                       or f.name.endswith(".index.json") or f.suffix.lower() in _MODEL_SUFFIXES}
        if listed is not None and model_files <= listed:
            return hashlib.sha256((path / CHECKSUMS).read_bytes()).hexdigest()[:16]
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.relative_to(base).as_posix()}|{f.stat().st_size}|{file_sha256(f)}|".encode())
    return h.hexdigest()[:16]


def _verified_checksums(folder: Path) -> set[str] | None:
    """The files a folder's ``SHA256SUMS`` lists, when every one is there with its listed SHA-256; else None."""
    listed = set()
    for line in (folder / CHECKSUMS).read_text(errors="replace").splitlines():
        digest, _, name = line.strip().partition("  ")
        name = name.lstrip("*")
        target = folder / name
        if not name or len(digest) != 64 or not target.is_file() or file_sha256(target) != digest.lower():
            return None
        listed.add(Path(name).as_posix())
    return listed or None


def resolve(target: str) -> Callable[..., Any]:
    """The object a ``"module:attribute"`` string names (a factory, a check, a default-weights function)."""
    return _resolve(target)


def _resolve(target: str) -> Callable[..., Any]:
    module_name, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):  # a nested class: "Outer.Inner"
        obj = getattr(obj, part)
    return obj


class DuplicateModelError(DuplicateNameError):
    """Two different models registered under one name; names who registered each."""


# name -> spec (protocols.registry: the same spec again is fine, another spec under a registered name is an error)
_MODELS: Registry[ModelSpec] = Registry("model", sort_known=True, duplicate_error=DuplicateModelError,
                                        unknown_error=UnknownModelError)
def register(spec: ModelSpec) -> ModelSpec:
    return _register(spec, sys._getframe(1).f_globals.get("__name__", "?"))


def _register(spec: ModelSpec, module: str) -> ModelSpec:
    """Registers ``spec``, crediting ``module`` (and the plugin being loaded) in duplicate-name errors."""
    return _MODELS.add(spec.name, spec, _describe(loading[-1] if loading else None, module))


def import_path(obj: Any) -> str:
    """``"module:qualname"`` of a module-level class or function: what a worker process re-imports it by.

    A specification keeps this string, not the object, so that listing models imports no model's
    module and a spec pickles to a worker. ``obj`` passed as a string is returned unchanged."""
    if isinstance(obj, str):
        return obj
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not callable(obj) or not isinstance(module, str) or not isinstance(qualname, str):
        raise TypeError(f"{obj!r} is no class or function defined in a module")
    if "<locals>" in qualname.split("."):
        raise TypeError(f"{module}.{qualname} is defined inside a function, so a worker process cannot import "
                        f"it by name: define it at the top level of a module")
    return f"{module}:{qualname}"


class SpecFields(TypedDict, total=False):
    """The :class:`ModelSpec` fields :func:`register_model` takes (all but ``name`` and ``factory``)."""

    description: Required[str]
    family: str
    licence: str
    requires: tuple[str, ...]
    extra: str | None
    check: str | None
    environment: str | None
    capabilities: Capabilities | None
    capabilities_on_load: bool
    default: bool | tuple[str, ...]
    tasks: tuple[str, ...]
    options: dict[str, Any]
    note: str
    note_tasks: tuple[str, ...]
    limitations: tuple[Limitation, ...]
    default_weights: str | None
    paper_name: str | None
    native_horizon: int | None
    hub_weights: bool
    paper_params: str | None
    revision: int
    tolerance: float | None


_Factory = TypeVar("_Factory", bound=Callable[..., Any])


def register_model(*, name: str | None = None, **spec: Unpack[SpecFields]) -> Callable[[_Factory], _Factory]:
    """Class (or factory function) decorator: registers it under its name, written once.

    A :class:`Model` subclass is registered under the ``name`` it defines itself (the one ``describe()``
    and the records show); a factory function takes ``name=``. The factory string is derived from the
    object's module and qualified name (:func:`import_path`), so nothing else has to repeat them. The
    object is returned unchanged."""

    def decorate(obj: _Factory) -> _Factory:
        factory = import_path(obj)
        if isinstance(obj, type):
            own = vars(obj).get("name")
            if not isinstance(own, str) or not own:
                raise TypeError(f"register_model: class {obj.__qualname__} defines no name of its own: give it a "
                                f"class attribute `name = \"...\"` (a non-empty string), its registry name")
            if name is not None and name != own:
                raise TypeError(f"register_model: class {obj.__qualname__} is named {own!r} by its `name` "
                                f"attribute, not {name!r}")
            model_name = own
        elif not isinstance(name, str) or not name:
            raise TypeError(f"register_model: factory function {obj.__qualname__} needs name=\"...\" "
                            f"(a non-empty string), its registry name")
        else:
            model_name = name
        _register(ModelSpec(name=model_name, factory=factory, **spec), obj.__module__)
        return obj

    return decorate


def _describe(plugin: object, module: str) -> str:
    """Who registered a model: the plugin being loaded (if any) and the module that called register() (or
    that defines the class ``@register_model`` registered)."""
    if plugin is None:
        return f"module {module!r}"
    return str(plugin) if module == __name__ else f"{plugin}, module {module!r}"


def _register_given(plugin: object, given: Any) -> None:
    """Registers what an entry point's object gave: a ModelSpec, an iterable of them, or None."""
    if given is None:
        return
    if isinstance(given, ModelSpec):
        given = (given,)
    elif isinstance(given, (str, bytes)) or not hasattr(given, "__iter__"):
        raise PluginError(f"{plugin} gave {type(given).__name__}; it must give a ModelSpec, "
                          f"an iterable of ModelSpecs or None")
    for spec in given:
        if not isinstance(spec, ModelSpec):
            raise PluginError(f"{plugin} gave a {type(spec).__name__} among its specs; "
                              f"every item must be a ModelSpec")
        register(spec)


def _ensure_builtin() -> None:
    # Importing the entry points' modules registers their specs (cheap: no heavy imports).
    load_entry_points(_register_given)  # the built-in models, then installed packages' (group soter_bench.models)
    load_env_plugins()  # a user's modules named in $SOTER_BENCH_PLUGINS


def all_specs() -> dict[str, ModelSpec]:
    _ensure_builtin()
    return _MODELS.mapping()


def get_spec(name: str) -> ModelSpec:
    _ensure_builtin()
    return _MODELS.get(name)


def registered_spec(name: str) -> ModelSpec:
    """A spec registered already, without loading the plugins: for a module that registers entries derived from
    another while the plugins load (``get_spec`` there would load every plugin from inside one, so a broken plugin
    would be blamed on the built-ins)."""
    return _MODELS.get(name)


def load_model(name: str, **options: Any) -> Model:
    return get_spec(name).load(**options)
