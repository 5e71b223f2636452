"""The units (cells without a model) of an export, planned by the runner's own :func:`harness.run.runner.plan`,
so that their cells, specs and record fields (the protocol column included) are those of a run.

``plan`` plans cells for registered models; the units are planned with :data:`PLANNER` (a baseline that
loads nothing), whose name and identity are then replaced by the scored model's: nothing of the planner
reaches an export or a record.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from harness.run.cells import Cell
from harness.run.runner import RunConfig, plan
from harness.registry.tasks import get_task
from protocols.specs import Setting

PLANNER = "last-value"
# the manifest's fields of the RunConfig that decide an export's units (everything else is how a run is executed)
CONFIG_FIELDS = ("task", "datasets", "settings", "seeds", "max_windows_per_subject", "segment_length",
                 "noise_levels", "missing_rates")


# the manifest's names of the task options it records (harness.registry.options) -> the options' names
OPTION_FIELDS = {"settings": "settings", "max_windows_per_subject": "max_windows_per_subject",
                 "segment_length": "segment_length", "noise_levels": "levels", "missing_rates": "rates"}


def config_fields(config: RunConfig, datasets: list[str]) -> dict[str, Any]:
    """The manifest's record of ``config``: JSON values that :func:`run_config` turns back into it.
    ``datasets``: the references the units were planned with (folder paths resolved, defaults named).
    Noise levels and missing rates not given are recorded as None (the task's own defaults)."""
    given = dict(config.options)
    settings = given.get("settings")
    return {"task": config.task,
            "datasets": list(datasets),
            "settings": None if settings is None else [s.name for s in settings],
            "seeds": list(config.run_seeds),
            "max_windows_per_subject": given.get("max_windows_per_subject"),
            "segment_length": given.get("segment_length"),
            # None: the task's own defaults (the paper's levels and rates), as a run without the flags
            "noise_levels": None if given.get("levels") is None else list(given["levels"]),
            "missing_rates": None if given.get("rates") is None else list(given["rates"])}


def _floats(values: Any) -> tuple[float, ...] | None:
    return None if values is None else tuple(float(v) for v in values)


def task_options(task: str, values: dict[str, Any]) -> dict[str, Any]:
    """The options of ``task`` among ``values`` (by option name), those given (not None): the levels and rates a
    manifest records for every task are passed to the tasks that read them only."""
    names = {o.name for o in get_task(task).options}
    return {name: value for name, value in values.items() if value is not None and name in names}


def run_config(fields: dict[str, Any], data_root: Path | None = None) -> RunConfig:
    """The RunConfig of a manifest's ``config`` (``data_root``: where this machine keeps the datasets)."""
    unknown = sorted(set(fields) - set(CONFIG_FIELDS))
    if unknown:
        raise ValueError(f"unknown configuration fields {unknown} in the manifest")
    settings = fields.get("settings")
    values = {"settings": None if settings is None else tuple(Setting.parse(s) for s in settings),
              "max_windows_per_subject": fields.get("max_windows_per_subject"),
              "segment_length": fields.get("segment_length"),
              "levels": _floats(fields.get("noise_levels")),
              "rates": _floats(fields.get("missing_rates"))}
    return RunConfig(task=fields["task"], datasets=tuple(fields["datasets"]), models=(PLANNER,),
                     options=task_options(fields["task"], values), seeds=tuple(int(s) for s in fields["seeds"]),
                     device="cpu", progress=False, data_root=data_root)


def plan_units(config: RunConfig) -> list[tuple[Cell, dict[str, object]]]:
    """Every unit of ``config`` as (cell, record fields without model and key), in the run's order."""
    planning = dataclasses.replace(config, models=(PLANNER,), device="cpu", progress=False)
    cells, _ = plan(planning)
    out = []
    for cell, fields in cells:
        cell = dataclasses.replace(cell, model="", model_options=(), model_id="", cache_dir=None)
        out.append((cell, {k: v for k, v in fields.items() if k not in ("model", "key")}))
    return out
