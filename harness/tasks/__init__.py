"""Tasks: what a run evaluates, as objects (:class:`Task`), one module per task.

A task says how a :class:`~harness.run.runner.RunConfig` becomes its spec, which points (setting,
condition, level) and folds it plans, whether a model can take part, how one cell is evaluated
(the record row), and how its records become tables, figures and cells of the paper's tables (the
report).  The runner, cells, CLI, tables, figures, report and statistics look tasks up in the registry
(:mod:`harness.registry.tasks`) and never compare task names, so adding a task is one module plus one
:func:`register_task` call (docs/adding-a-task.md).
"""

from __future__ import annotations

from harness.registry.tasks import TASKS, UnknownTaskError, all_tasks, get_task, register_task
from harness.tasks import calibration, classification, forecasting, imputation, irregular, noise, physiology, shift
from harness.tasks import classification_heads
from harness.tasks.base import ErrorTask, Task, cells_frame, details, paper_cell

# the registration line: the built-in tasks, in the order of listings and reports
for _task in (forecasting.TASK, imputation.TASK, noise.TASK, classification.TASK, physiology.TASK,
              calibration.TASK, shift.TASK, irregular.TASK, classification_heads.TASK):
    register_task(_task)

__all__ = ["TASKS", "ErrorTask", "Task", "UnknownTaskError", "all_tasks", "cells_frame", "details", "get_task",
           "paper_cell", "register_task"]
