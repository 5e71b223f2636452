"""``run --adapt MODE ... --adapt-budget NAME`` (issue #49): which adapted entries a run adds beside its models.

A model that can be adapted (a ``NAME@MODE`` entry is registered, ``models.adapted``) is run in each mode asked
for: ``zero-shot`` keeps its own rows (keys unchanged), ``head``/``full`` add ``NAME@head``/``NAME@full``. A model
that cannot be adapted (the baselines, the supervised models) is run as it is, whatever the modes.
"""

from __future__ import annotations

from protocols.adaptation import ADAPTED_MODES, MODES, ZERO_SHOT, get_budget
from protocols.specs import SpecError


def check_adaptation(modes: tuple[str, ...], budget: str | None) -> None:
    """Usage errors before any work: an unknown mode or budget, a budget without an adapted mode."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SpecError(f"--adapt: unknown mode(s) {', '.join(unknown)}; known: {', '.join(MODES)}")
    if budget is not None:
        get_budget(budget)
        if not any(m in ADAPTED_MODES for m in modes):
            raise SpecError("--adapt-budget needs --adapt head or full")


def adapted_models(models: tuple[str, ...], modes: tuple[str, ...]) -> tuple[str, ...]:
    """``models`` with their adapted entries in ``modes`` (in the order given; no modes: ``models`` unchanged)."""
    if not modes:
        return tuple(models)
    from models.adapted import adapted_name
    from models.registry import all_specs

    known = all_specs()
    out: list[str] = []
    for model in models:
        variants = [adapted_name(model, m) for m in ADAPTED_MODES if adapted_name(model, m) in known]
        if not variants:
            out.append(model)
            continue
        if ZERO_SHOT in modes:
            out.append(model)
        out += [adapted_name(model, m) for m in ADAPTED_MODES if m in modes and adapted_name(model, m) in known]
    return tuple(dict.fromkeys(out))


def is_adapted(model: str) -> bool:
    from models.adapted import ADAPTED
    from models.registry import all_specs

    spec = all_specs().get(model)
    return spec is not None and spec.family == ADAPTED
