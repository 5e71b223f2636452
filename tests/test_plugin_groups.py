"""Issue #28: one entry-point group per kind. Tasks, datasets and corpus readers come from plugins the way
models do: an installed package's entry point of ``soter_bench.tasks``, ``soter_bench.datasets`` or
``soter_bench.corpus_readers`` names a module that registers its items with the kind's ``register`` function,
loaded after the built-ins, once per process, under the one duplicate policy (``protocols.registry``).

The plugin package is unpacked as pip leaves one (a ``.dist-info`` folder beside its modules) into a folder put
on ``sys.path``; each test gives the registry a fresh copy, so the built-ins stay as they were."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from protocols.registry import DuplicateNameError, PluginLoadError

DATASET_MODULE = """
from protocols.datasets import DatasetSpec, register

register(DatasetSpec("plugged-data", "{module}:load", "a plugin's dataset"))
"""
DUPLICATE_DATASET_MODULE = """
from protocols.datasets import DatasetSpec, register

register(DatasetSpec("synthetic-cohort", "{module}:load", "not the embedded cohort"))
"""
READER_MODULE = """
from models.soter.training.sources import register_reader

register_reader("plugged-reader", "{module}:read")
"""
TASK_MODULE = """
from harness.registry.metrics import MAE
from harness.tasks import Task, register_task


class Plugged(Task):
    name = "plugged-task"
    description = "a plugin's task"
    metrics = (MAE,)


register_task(Plugged())
"""


def _install(root: Path, monkeypatch, group: str, module: str, source: str) -> None:
    """A package ``plug_<module>`` with one entry point of ``group`` naming ``module``, on sys.path."""
    dist = root / f"plug_{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: plug-{module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\nplugged = {module}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source.format(module=module)))
    monkeypatch.syspath_prepend(str(root))


def _fresh(monkeypatch, owner, attr: str):
    """The registry ``owner.attr`` replaced by a copy that has not loaded plugins yet (the built-ins kept)."""
    registry = getattr(owner, attr).copy()
    registry._plugins_loaded = False
    monkeypatch.setattr(owner, attr, registry)
    return registry


def test_a_dataset_plugin_registers_through_its_group(tmp_path, monkeypatch):
    import protocols.datasets as datasets

    datasets.all_datasets()  # the built-ins first
    _fresh(monkeypatch, datasets, "_DATASETS")
    _install(tmp_path, monkeypatch, datasets.ENTRY_POINTS, "plug_data", DATASET_MODULE)
    found = datasets.all_datasets()
    assert found["plugged-data"].loader == "plug_data:load"
    assert list(found)[-1] == "plugged-data"  # after the built-ins
    assert datasets._DATASETS.source("plugged-data") == "module 'plug_data'"


def test_a_corpus_reader_plugin_registers_through_its_group(tmp_path, monkeypatch):
    from models.soter.training import sources

    _fresh(monkeypatch, sources, "READERS")
    _install(tmp_path, monkeypatch, sources.ENTRY_POINTS, "plug_reader", READER_MODULE)
    assert sources.all_readers()["plugged-reader"] == "plug_reader:read"
    assert "wesad" in sources.all_readers()  # the built-ins stay


def test_a_task_plugin_registers_through_its_group(tmp_path, monkeypatch):
    from harness.registry import tasks

    tasks.all_tasks()
    _fresh(monkeypatch, tasks, "TASKS")
    _install(tmp_path, monkeypatch, tasks.ENTRY_POINTS, "plug_task", TASK_MODULE)
    assert tasks.get_task("plugged-task").description == "a plugin's task"
    assert "forecasting" in tasks.all_tasks()


def test_a_plugin_taking_a_built_in_name_is_refused_naming_both(tmp_path, monkeypatch):
    import protocols.datasets as datasets

    datasets.all_datasets()
    _fresh(monkeypatch, datasets, "_DATASETS")
    _install(tmp_path, monkeypatch, datasets.ENTRY_POINTS, "plug_dup", DUPLICATE_DATASET_MODULE)
    with pytest.raises(DuplicateNameError, match="dataset name 'synthetic-cohort' is registered twice: by module "
                                                 "'plug_dup', and before by module 'protocols.datasets'"):
        datasets.all_datasets()


def test_a_plugin_that_fails_to_import_is_one_clear_error_naming_its_entry_point(tmp_path, monkeypatch):
    from models.soter.training import sources

    _fresh(monkeypatch, sources, "READERS")
    _install(tmp_path, monkeypatch, sources.ENTRY_POINTS, "plug_broken", "import not_installed_anywhere\n")
    with pytest.raises(PluginLoadError, match=r"^plugin 'plug-plug_broken' \(entry point soter_bench.corpus_readers: "
                                              r"plugged = plug_broken\) failed to import: ModuleNotFoundError"):
        sources.all_readers()
