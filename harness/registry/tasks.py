"""The task registry: name -> :class:`harness.tasks.Task`, in registration order.

Like the model registry, it does not import the tasks it registers: the built-in tasks are registered
by :mod:`harness.tasks` (its registration line), which is imported by name on the first look-up, so
that every process (a worker included) finds them; tasks of plugins (``$SOTER_BENCH_PLUGINS``, entry
points of ``soter_bench.models``) are loaded on a miss.  It imports nothing of the harness, so every
module may look tasks up here.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

BUILTIN_TASKS = "harness.tasks"  # the module whose import registers the built-in tasks
TASKS: dict[str, Any] = {}  # name -> task, in registration order (the order of listings and reports)
_loading = False


class UnknownTaskError(ValueError):
    pass


def _load_builtins() -> None:
    global _loading
    if not _loading:
        _loading = True
        importlib.import_module(BUILTIN_TASKS)  # a no-op once imported


def register_task(task: Any) -> Any:
    """Add ``task`` (a ``harness.tasks.Task``) to :data:`TASKS` and return it. Another task class under a
    registered name is an error (a plugin must not silently replace ``forecasting``); the same class
    again (its module imported twice) replaces the earlier instance."""
    _load_builtins()  # the built-ins come first
    from_base = any(c.__name__ == "Task" and c.__module__ == "harness.tasks.base" for c in type(task).__mro__)
    if not from_base:
        raise TypeError(f"register_task expects a harness.tasks.Task, got {type(task).__name__}")
    if not task.name or not isinstance(task.name, str):
        raise ValueError(f"{type(task).__name__} has no name")
    earlier = TASKS.get(task.name)
    if earlier is not None and type(earlier).__qualname__ != type(task).__qualname__:
        raise ValueError(f"task name {task.name!r} is registered twice: by {type(earlier).__module__}."
                         f"{type(earlier).__qualname__} and by {type(task).__module__}.{type(task).__qualname__}")
    TASKS[task.name] = task
    return task


def all_tasks() -> dict[str, Any]:
    """Every registered task: the built-ins, and those of ``$SOTER_BENCH_PLUGINS`` modules when it is set
    (so that the CLI offers them; entry points are loaded on a look-up miss, :func:`get_task`)."""
    _load_builtins()
    if os.environ.get("SOTER_BENCH_PLUGINS"):
        from models.registry import all_specs

        all_specs()
    return TASKS


def get_task(name: str) -> Any:
    """The registered task ``name``; a clear error listing the known tasks otherwise."""
    _load_builtins()
    if name not in TASKS:
        from models.registry import all_specs

        all_specs()  # imports the model plugins, which may register tasks
    try:
        return TASKS[name]
    except KeyError:
        raise UnknownTaskError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}") from None
