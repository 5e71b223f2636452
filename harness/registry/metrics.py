"""Metrics: the numbers a task records in each row, and how tables show them.

A task declares its metrics (``Task.metrics``); registering the task registers them
(``harness.registry.tasks``). The built-in ones below have record columns of their own; a plugin's
metric is kept in the row's ``details`` (under ``metrics``), so that records files keep one header
whatever tasks wrote into them, and every reader gives it a column of its name (docs/records.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One number per row: its name (record column or ``details`` key), its label in tables and which way is
    better (tables bold the best)."""

    name: str  # "rmse"; a Python identifier
    label: str  # "RMSE": column headers, the report
    higher_is_better: bool = False
    nan_when_ok: bool = False  # an ok row may hold NaN (Macro-AUROC: undefined when a test fold lacks a class)

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.label:
            raise ValueError(f"a metric needs an identifier as its name and a label, got {self.name!r}, {self.label!r}")


RMSE = Metric("rmse", "RMSE")
MAE = Metric("mae", "MAE")
MACRO_F1 = Metric("macro_f1", "Macro-F1", higher_is_better=True)
MACRO_AUROC = Metric("macro_auroc", "Macro-AUROC", higher_is_better=True, nan_when_ok=True)
BUILTIN_METRICS: tuple[Metric, ...] = (RMSE, MAE, MACRO_F1, MACRO_AUROC)  # each has its record column
