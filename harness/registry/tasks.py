"""The task registry: name -> :class:`harness.tasks.Task`, in registration order, with each task's options
(the flags of ``run`` it reads: ``harness.registry.options``) and metrics (the numbers its rows hold:
``harness.registry.metrics``).

Like the model registry, it does not import the tasks it registers: the built-in tasks are registered
by :mod:`harness.tasks` (its registration line), which is imported by name on the first look-up, so
that every process (a worker included) finds them; tasks of plugins are loaded after them: modules named by
entry points of ``soter_bench.tasks`` (:data:`ENTRY_POINTS`), and those loaded with the models' plugins
(``$SOTER_BENCH_PLUGINS``, entry points of ``soter_bench.models``). It imports nothing else of the
harness, so every part of it may look tasks up here.

Duplicate policy (``protocols.registry``, the one kind every registry is): the same task class again
(its module imported twice) replaces the earlier instance; another class under a registered name is an
error naming both, so a plugin cannot silently replace ``forecasting``. A task's options and metrics are
registered with it: an option whose name or flag another task declares with another meaning, or a metric
whose name a built-in metric or another task gives another meaning, is refused the same way, so that a flag
and a metric mean one thing whichever task uses them.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.registry.metrics import BUILTIN_METRICS, Metric
from harness.registry.options import Option, clash, options_of
from protocols.registry import DuplicateNameError, Registry, UnknownNameError

BUILTIN_TASKS = "harness.tasks"  # the module whose import registers the built-in tasks
ENTRY_POINTS = "soter_bench.tasks"  # plugins' modules that register tasks (protocols.registry)


class UnknownTaskError(UnknownNameError, ValueError):
    """A task name nothing is registered under; lists the known tasks."""


def _same_class(earlier: Any, task: Any) -> bool:
    """One class defined twice: its module imported again (a reload), or run as a script and imported
    (``__main__``); a class of the same name in another module is another task."""
    a, b = type(earlier), type(task)
    return a.__qualname__ == b.__qualname__ and (a.__module__ == b.__module__ or "__main__" in (a.__module__, b.__module__))


TASKS: Registry[Any] = Registry("task", same=_same_class, unknown_error=UnknownTaskError, entry_points=ENTRY_POINTS)
_loading = False


def _load_builtins() -> None:
    global _loading
    if not _loading:
        _loading = True
        importlib.import_module(BUILTIN_TASKS)  # a no-op once imported


def _load_plugins() -> None:
    """The tasks' plugins (entry points of ``soter_bench.tasks``), then the models' (entry points of
    ``soter_bench.models``, ``$SOTER_BENCH_PLUGINS``): they may register tasks."""
    from models.registry import all_specs

    TASKS.load_plugins()
    all_specs()


def register_task(task: Any) -> Any:
    """Add ``task`` (a ``harness.tasks.Task``) and return it (the duplicate policy above)."""
    _load_builtins()  # the built-ins come first
    from_base = any(c.__name__ == "Task" and c.__module__ == "harness.tasks.base" for c in type(task).__mro__)
    if not from_base:
        raise TypeError(f"register_task expects a harness.tasks.Task, got {type(task).__name__}")
    if not task.name or not isinstance(task.name, str):
        raise ValueError(f"{type(task).__name__} has no name")
    others = [t for name, t in TASKS.mapping().items() if name != task.name]
    for problem in (*_option_clashes(task, others), *_metric_clashes(task, others)):
        raise DuplicateNameError(problem)
    return TASKS.add(task.name, task, f"{type(task).__module__}.{type(task).__qualname__}")


def _option_clashes(task: Any, others: list[Any]) -> list[str]:
    return [why for option in task.options for other in others for theirs in other.options
            if (why := clash(option, task.name, theirs, other.name))]


def _metric_clashes(task: Any, others: list[Any]) -> list[str]:
    known = {m.name: ("the built-in metric", m) for m in BUILTIN_METRICS}
    for other in others:
        known.update({m.name: (f"the metric of task {other.name!r}", m) for m in other.metrics if m.name not in known})
    return [f"metric {m.name!r} of task {task.name!r} differs from {known[m.name][0]} {m.name!r}"
            for m in task.metrics if m.name in known and known[m.name][1] != m]


def all_tasks() -> dict[str, Any]:
    """Every registered task, the plugins' included (so that the CLI offers them), in registration order."""
    _load_builtins()
    _load_plugins()
    return TASKS.mapping()


def get_task(name: str) -> Any:
    """The registered task ``name``; a clear error listing the known tasks otherwise."""
    _load_builtins()
    if name not in TASKS:
        _load_plugins()  # they may register tasks
    return TASKS.get(name)


def all_options() -> dict[Option, tuple[str, ...]]:
    """Every registered task's options, each once, with the names of the tasks that read it."""
    out: dict[Option, tuple[str, ...]] = {}
    for name, task in all_tasks().items():
        for option in task.options:
            out[option] = (*out.get(option, ()), name)
    return out


def task_options(name: str, given: dict[str, Any]) -> Any:
    """Task ``name``'s options (a frozen dataclass, ``harness.registry.options``) with the values ``given`` by
    option name; an option the task does not read is a SpecError naming its flag and the task's options."""
    return options_of(get_task(name), given,
                      lambda option: {o.name: o.flag for o in all_options()}.get(option, repr(option)))


def all_metrics() -> dict[str, Metric]:
    """name -> metric: the built-in ones, then those of every registered task (plugins are not loaded here: a
    reader sees the metrics of the tasks this process knows)."""
    _load_builtins()
    out = {m.name: m for m in BUILTIN_METRICS}
    for task in TASKS.mapping().values():
        out.update({m.name: m for m in task.metrics if m.name not in out})
    return out
