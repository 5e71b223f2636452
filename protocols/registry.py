"""One kind of registry for everything looked up by name: models, tasks, datasets, corpus readers.

Each registry keeps its items in registration order with who registered each, and applies one
duplicate policy: a name registered again with the *same* item (``same(earlier, new)``; equality by
default) replaces the entry, so a module imported twice registers harmlessly; a *different* item under
a registered name raises :class:`DuplicateNameError` naming both registrants, so a plugin never
silently replaces a built-in. An unknown name raises :class:`UnknownNameError` listing the known ones.

Plugins: each kind has one entry-point group (``soter_bench.models``, ``soter_bench.tasks``,
``soter_bench.datasets``, ``soter_bench.corpus_readers``). An entry point of a group names a module;
:meth:`Registry.load_plugins` imports every installed one once per process, after the built-ins, and the
module registers its items with the kind's ``register`` function exactly as a built-in does, so a plugin
meets the same duplicate policy. (The model registry keeps its richer entry points, ``module:object``
giving specs, in ``models.plugins``.)

It lives in ``protocols``, the lowest layer, so that every layer registers its things the same way.
"""

from __future__ import annotations

import importlib
import operator
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterator, TypeVar

from protocols.words import did_you_mean

T = TypeVar("T")


class DuplicateNameError(ValueError):
    """Two different items registered under one name; names who registered each."""


class PluginLoadError(RuntimeError):
    """An installed package's entry point failed to import; names the group, the entry point and its package."""


class UnknownNameError(KeyError):
    """A name nothing is registered under; lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0])


@dataclass
class Registry(Generic[T]):
    """name -> item, in registration order, with the duplicate policy of the module docstring."""

    kind: str  # what the items are, in messages: "model", "task", "dataset"
    same: Callable[[T, T], bool] = operator.eq  # when a second registration under a name is the same item
    sort_known: bool = False  # unknown-name errors list the known names sorted (else in registration order)
    duplicate_error: type[DuplicateNameError] = DuplicateNameError
    unknown_error: type[KeyError] = UnknownNameError
    entry_points: str = ""  # the entry-point group of this kind's plugins ("": none)
    _items: dict[str, T] = field(default_factory=dict, init=False, repr=False)
    _sources: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    _plugins_loaded: bool = field(default=False, init=False, repr=False)

    def add(self, name: str, item: T, source: str) -> T:
        """Register ``item`` under ``name``; ``source`` says who registers it (error messages)."""
        if name in self._items and not self.same(self._items[name], item):
            raise self.duplicate_error(f"{self.kind} name {name!r} is registered twice: by {source}, "
                                       f"and before by {self._sources[name]}")
        self._items[name] = item
        self._sources.setdefault(name, source)
        return item

    def load_plugins(self) -> None:
        """Import the module of every installed entry point of this kind's group (once per process); each
        registers its items itself. Callers load the built-ins first, so a plugin never comes before them."""
        if self._plugins_loaded or not self.entry_points:
            return
        self._plugins_loaded = True  # first: a plugin that looks names up while it loads does not load again
        from importlib.metadata import entry_points  # here: most commands never need it

        for ep in entry_points(group=self.entry_points):
            try:
                importlib.import_module(ep.module)
            except DuplicateNameError:
                raise  # names both registrants already
            except Exception as exc:  # an import error, or any error raised while the module runs
                dist = getattr(getattr(ep, "dist", None), "name", None) or "(unknown package)"
                raise PluginLoadError(f"plugin {dist!r} (entry point {self.entry_points}: {ep.name} = {ep.value}) "
                                      f"failed to import: {type(exc).__name__}: {exc}") from exc

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = sorted(self._items) if self.sort_known else list(self._items)
            raise self.unknown_error(f"unknown {self.kind} {name!r}{did_you_mean(name, known)}; known {self.kind}s: "
                                     f"{', '.join(known)}") from None

    def remove(self, name: str) -> T | None:
        """Unregister ``name`` (a test's own items; a plugin being unloaded)."""
        self._sources.pop(name, None)
        return self._items.pop(name, None)

    def source(self, name: str) -> str:
        return self._sources[name]

    def mapping(self) -> dict[str, T]:
        """A copy: name -> item, in registration order."""
        return dict(self._items)

    def copy(self) -> Registry[T]:
        """An independent registry with the same entries (a test registers into it and drops it)."""
        other = Registry(self.kind, self.same, self.sort_known, self.duplicate_error, self.unknown_error,
                         self.entry_points)
        other._plugins_loaded = self._plugins_loaded
        other._items, other._sources = dict(self._items), dict(self._sources)
        return other

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)
