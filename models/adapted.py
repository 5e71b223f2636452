"""Registry entries of adapted models (issue #49): ``BASE@MODE`` for a pretrained model that can be fine-tuned.

Why entries of their own: an adapted model's rows must never share a key with its frozen model's (whose keys stay
byte-identical), its factory is its adaptation module (so that module is in the rows' code digest), and its
family, :data:`ADAPTED`, puts its rows in a table group of their own, ranked apart from zero-shot and supervised
rows. The mode and the budget's name are options of the entry, hence part of every row key.
Cheap: imports no torch.
"""

from __future__ import annotations

import dataclasses

from models.registry import ModelSpec
from protocols.adaptation import ADAPTED_MODES, DEFAULT_BUDGET, ZERO_SHOT

ADAPTED = "adapted"  # the family of models adapted to each fold's training subjects
SEPARATOR = "@"


def adapted_name(base: str, mode: str) -> str:
    return f"{base}{SEPARATOR}{mode}"


def split_name(name: str) -> tuple[str, str]:
    """``soter@head`` -> (``soter``, ``head``); a plain name -> (name, ``zero-shot``)."""
    base, sep, mode = name.rpartition(SEPARATOR)
    return (base, mode) if sep and mode in ADAPTED_MODES else (name, ZERO_SHOT)


def adapted_spec(base: ModelSpec, mode: str, factory: str, **options: object) -> ModelSpec:
    """The entry of ``base`` adapted in ``mode``: its weights, check and options, another factory; forecasting only."""
    name = adapted_name(base.name, mode)
    return dataclasses.replace(
        base, name=name, factory=factory, family=ADAPTED, default=False, tasks=("forecasting",),
        description=f"{base.name} ADAPTED ({mode}) to each fold's training subjects before it forecasts the test "
                    f"subject (docs/protocols.md, adaptation)",
        options={**base.options, **options, "name": name, "mode": mode, "budget": DEFAULT_BUDGET},
        note="", note_tasks=(), limitations=(), paper_name=None, paper_params=None)
