"""The harness: CLI, runner (cached, resumable), record store, tables and figures.

Issue #28 grouped its modules into sub-packages (``registry``, ``records``, ``run``, ``reporting``).
The old flat paths (``harness.cells``, ``harness.store``, ...) still import, with a DeprecationWarning,
as the very module at its new path: code written against the flat layout (branches begun before the
move, plugins) keeps working while it moves over. No file sits at an old path, so a merge that edits
one follows git's rename to the new file.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

# old path -> new path (README, "Layout"); deprecated, to be removed once no branch imports the old paths
MOVED: dict[str, str] = {
    "harness.code_identity": "harness.records.code_identity",
    "harness.configurations": "harness.records.configurations",
    "harness.keys": "harness.records.keys",
    "harness.store": "harness.records.store",
    "harness.window_store": "harness.records.window_store",
    "harness.task_registry": "harness.registry.tasks",
    "harness.figures": "harness.reporting.figures",
    "harness.paper": "harness.reporting.paper",
    "harness.report": "harness.reporting.report",
    "harness.stats": "harness.reporting.stats",
    "harness.stats_report": "harness.reporting.stats_report",
    "harness.tables": "harness.reporting.tables",
    "harness.cells": "harness.run.cells",
    "harness.executor": "harness.run.executor",
    "harness.executor_ray": "harness.run.executor_ray",
    "harness.inflight": "harness.run.inflight",
    "harness.progress": "harness.run.progress",
    "harness.runner": "harness.run.runner",
    # the modules main added in the old layout (issues #29, #31, #32, #35), moved when #28 merged main
    "harness.cell_files": "harness.records.cell_files",
    "harness.artefact_figure": "harness.reporting.artefact_figure",
    "harness.breakdown": "harness.reporting.breakdown",
    "harness.breakdown_figure": "harness.reporting.breakdown_figure",
    "harness.overhead": "harness.reporting.overhead",
    "harness.physiology_figure": "harness.reporting.physiology_figure",
    "harness.pretraining_marks": "harness.reporting.pretraining_marks",
    "harness.report_html": "harness.reporting.report_html",
    "harness.threads": "harness.run.threads",
    "harness.usage": "harness.run.usage",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an import of an old path with the module at its new one (the same object, not a copy)."""

    def find_spec(self, fullname: str, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {MOVED[spec.name]} (issue #28): import that", DeprecationWarning,
                      stacklevel=2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """The module at the new path is already executed."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())  # before the finders that would look for a file at the old path
