"""Where model registrations come from: entry points and ``$SOTER_BENCH_PLUGINS`` modules (the registry's
plugin machinery, ``models.registry`` explains the sources and their order).

A module of its own so that the registry keeps one job (name -> ModelSpec). It does not import the
registry: :func:`load_entry_point` hands what an entry point's object gives to the registry's callback,
and who is being loaded (:data:`loading`) is read by the registry to name the plugin in errors.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Callable

from protocols.registry import DuplicateNameError

PLUGINS_ENV = "SOTER_BENCH_PLUGINS"
ENTRY_POINT_GROUP = "soter_bench.models"
DISTRIBUTION = "soter-bench"  # this project: its own entry points of ENTRY_POINT_GROUP are the built-in models
loading: list[object] = []  # the plugin being loaded (its str() describes it; None: a built-in), innermost last


class PluginError(RuntimeError):
    """A plugin (entry point or ``$SOTER_BENCH_PLUGINS`` module) could not register its models."""


class PluginImportError(ImportError, PluginError):
    """A plugin could not be imported; names the entry point and its distribution, or the module."""


class BuiltinModelsError(RuntimeError):
    """The built-in models' entry points were not found: this checkout is not pip-installed."""


class EntryPointPlugin:
    """An entry point as error messages name it: its distribution, group, name and value."""

    def __init__(self, ep: Any) -> None:
        self.ep = ep

    def __str__(self) -> str:
        dist = getattr(self.ep, "dist", None)
        try:
            dist_name = dist.name if dist is not None else None
        except Exception:  # a damaged METADATA file: the entry point still says enough
            dist_name = None
        return (f"plugin {dist_name or '(unknown distribution)'!r} "
                f"(entry point {ENTRY_POINT_GROUP}: {self.ep.name} = {self.ep.value})")


def failure(plugin: object, exc: Exception, importing: bool) -> PluginError:
    """A plugin's exception as one clear line naming the plugin (the original is chained to it)."""
    importing = importing or isinstance(exc, ImportError)
    reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
    if importing:
        return PluginImportError(f"{plugin} failed to import: {reason}")
    return PluginError(f"{plugin} failed: {reason}")


def load_entry_point(ep: Any, register_given: Callable[[object, Any], None], builtin: bool = False) -> None:
    """Loads one entry point; ``register_given(plugin, given)`` registers what its object gives. A built-in
    one's models are credited to their modules (as a module registering directly would be); a plugin's to the
    plugin, which duplicate-name errors name."""
    plugin = EntryPointPlugin(ep)
    loading.append(None if builtin else plugin)
    try:
        try:
            target = importlib.import_module(ep.module)  # which may register models itself
        except DuplicateNameError:
            raise  # names the plugin already
        except Exception as exc:  # an import error, or any error raised while the module runs
            raise failure(plugin, exc, importing=True) from exc
        if ep.attr is None:
            return
        for part in ep.attr.split("."):  # "module:object": a callable giving specs, or a spec itself
            if not hasattr(target, part):
                raise PluginError(f"{plugin}: module {ep.module!r} has no attribute {ep.attr!r}")
            target = getattr(target, part)
        try:
            given = target() if callable(target) else target
        except DuplicateNameError:
            raise
        except Exception as exc:
            raise failure(plugin, exc, importing=False) from exc
        register_given(plugin, given)
    finally:
        loading.pop()


def builtin_entry_points() -> list[Any]:
    """This distribution's own entry points of ENTRY_POINT_GROUP (the built-in models)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        eps = distribution(DISTRIBUTION).entry_points
    except PackageNotFoundError:
        eps = ()
    found = [ep for ep in eps if ep.group == ENTRY_POINT_GROUP]
    if not found:
        raise BuiltinModelsError(
            f"no built-in models: they register through the {ENTRY_POINT_GROUP!r} entry points of the installed "
            f"{DISTRIBUTION!r} distribution, and none was found (a checkout that is not installed, or whose "
            f"pyproject.toml changed since): run `pip install -e .` in the checkout")
    return found


_entry_points_loaded = False  # every entry point of ENTRY_POINT_GROUP loaded (once per process)
_done_entry_points: set[tuple[str, str]] = set()  # (name, value) of those loaded so far


def load_entry_points(register_given: Callable[[object, Any], None]) -> None:
    """The built-in models first (this distribution's entry points), then every other package's."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    from importlib.metadata import entry_points  # imported here: `--help` does not need it

    builtin = builtin_entry_points()
    for ep in (*builtin, *entry_points(group=ENTRY_POINT_GROUP)):
        key = (ep.name, ep.value)
        if key not in _done_entry_points:
            load_entry_point(ep, register_given, builtin=ep in builtin)
            _done_entry_points.add(key)
    _entry_points_loaded = True


def load_env_plugins() -> None:
    """The modules named in $SOTER_BENCH_PLUGINS (read on every call: tests change it)."""
    for module in filter(None, (m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(","))):
        if module in sys.modules:
            continue
        plugin = f"plugin module {module!r} named in ${PLUGINS_ENV}"
        loading.append(plugin)
        try:
            importlib.import_module(module)
        except DuplicateNameError:
            raise  # names the plugin already
        except Exception as exc:  # an import error, or any error raised while the module runs
            reason = str(exc) if isinstance(exc, ImportError) else f"{type(exc).__name__}: {exc}"
            raise PluginImportError(f"cannot import {plugin}: {reason}{_path_hint(module, exc)}") from exc
        finally:
            loading.pop()


def _path_hint(module: str, exc: Exception) -> str:
    """The usual cause when the plugin module itself (not one it imports) is not found: its folder is not
    on Python's path."""
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing is None or not (module == missing or module.startswith(missing + ".")):
        return ""
    return (f" (Python looks for it on sys.path: run from the folder holding {missing.replace('.', '/')}.py or "
            f"{missing.replace('.', '/')}/, or add that folder to PYTHONPATH, e.g. PYTHONPATH=/path/to/folder)")
