"""Usage checks on a run's model list, before any work: a model that cannot do the task is the
user's mistake (exit 2), not forty `unavailable` rows whose note blames the setting."""

from __future__ import annotations

from collections.abc import Iterable

from protocols.specs import SpecError


def models_for(task: str) -> list[str]:
    """Every registered model that declares ``task`` (what a message offers instead)."""
    from models.registry import all_specs

    return sorted(name for name, spec in all_specs().items() if task in spec.tasks)


def check_models(task: str, names: Iterable[str], model_free: Iterable[str] = ()) -> None:
    """Raise one SpecError naming every model of ``names`` that does not declare ``task``."""
    from models.registry import get_spec

    free = set(model_free)
    unable = [(n, get_spec(n).tasks) for n in names if n not in free and task not in get_spec(n).tasks]
    if not unable:
        return
    what = "; ".join(f"{n} does {', '.join(t) or 'no task'}" for n, t in unable)
    raise SpecError(f"--models: {'these models cannot' if len(unable) > 1 else 'this model cannot'} do {task} "
                    f"({what}); models for {task}: {', '.join([*models_for(task), *sorted(free)])}")
