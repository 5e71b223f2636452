"""Usage checks of a run's arguments before any work, in the user's words: every misspelt model at
once with "did you mean", a model that cannot do the task (exit 2, not forty `unavailable` rows whose
note blames the setting). The percentages of --rates and --budgets are checked as typed by their options
(``harness.registry.options.percentages``)."""

from __future__ import annotations

from collections.abc import Iterable

from protocols.specs import SpecError
from protocols.words import did_you_mean


def models_for(task: str) -> list[str]:
    """Every registered model that declares ``task`` (what a message offers instead)."""
    from models.registry import all_specs

    return sorted(name for name, spec in all_specs().items() if task in spec.tasks)


def check_models(task: str, names: Iterable[str], model_free: Iterable[str] = ()) -> None:
    """Raise one SpecError naming every unknown model of ``names`` (each with its closest name) and every
    model that does not declare ``task``; the list offered is the models that can do ``task``.
    A task no registered model declares (a plugin's) leaves capability to the task's per-cell check."""
    from models.registry import all_specs

    specs, free = all_specs(), set(model_free)
    declared = models_for(task)
    choices = [*(declared or sorted(specs)), *sorted(free)]
    names = [n for n in names if n not in free]
    unknown = [n for n in names if n not in specs]
    unable = [(n, specs[n].tasks) for n in names if declared and n in specs and task not in specs[n].tasks]
    problems = []
    if unknown:
        problems.append(f"unknown model{'s' if len(unknown) > 1 else ''} "
                        + ", ".join(f"{n!r}{did_you_mean(n, choices) or did_you_mean(n, specs)}" for n in unknown))
    if unable:
        what = "; ".join(f"{n} does {', '.join(t) or 'no task'}" for n, t in unable)
        problems.append(f"{'these models cannot' if len(unable) > 1 else 'this model cannot'} do {task} ({what})")
    if problems:  # one short line: the names offered are in `list models`, not here (they were 800 characters)
        raise SpecError(f"--models: {'; '.join(problems)}; `python -m harness list models` lists every model")
