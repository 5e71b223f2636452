"""Issue #28: every registry (models, tasks, datasets, corpus readers) is one kind, ``protocols.registry.Registry``, with one
duplicate policy: the same item again is fine, another item under a registered name is an error naming both
registrants, an unknown name lists the known ones."""

from __future__ import annotations

import pytest

from protocols.registry import DuplicateNameError, Registry, UnknownNameError


def test_the_same_item_again_replaces_it_another_is_refused_naming_both():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1, "module 'first'")
    reg.add("a", 1, "module 'again'")  # a module imported twice
    assert reg.mapping() == {"a": 1} and reg.source("a") == "module 'first'"
    with pytest.raises(DuplicateNameError, match="widget name 'a' is registered twice: by module 'other', "
                                                 "and before by module 'first'"):
        reg.add("a", 2, "module 'other'")
    assert reg["a"] == 1


def test_unknown_names_list_the_known_ones_in_registration_or_sorted_order():
    for sort_known, listed in ((False, "b, a"), (True, "a, b")):
        reg: Registry[int] = Registry("widget", sort_known=sort_known)
        for name in ("b", "a"):
            reg.add(name, 0, "here")
        with pytest.raises(UnknownNameError, match=f"unknown widget 'x'; known widgets: {listed}$"):
            reg.get("x")


def test_a_copy_is_independent():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1, "here")
    other = reg.copy()
    other.add("b", 2, "there")
    assert "b" not in reg and list(other) == ["a", "b"] and other.remove("b") == 2 and len(other) == 1


def test_models_tasks_and_datasets_are_registries_of_this_kind():
    from harness.registry.tasks import TASKS, UnknownTaskError, get_task
    from models.registry import DuplicateModelError, UnknownModelError, _MODELS, get_spec
    from protocols.datasets import _DATASETS, all_datasets

    get_task("forecasting"), get_spec("last-value"), all_datasets()
    assert all(isinstance(r, Registry) for r in (TASKS, _MODELS, _DATASETS))
    assert issubclass(DuplicateModelError, DuplicateNameError)
    for error in (UnknownModelError, UnknownTaskError):
        assert issubclass(error, UnknownNameError)
    assert issubclass(UnknownTaskError, ValueError)  # as before: callers catching ValueError still do


def test_a_dataset_name_cannot_be_taken_by_another_dataset(monkeypatch):
    """Before #28 a second dataset under a registered name silently replaced the first."""
    import protocols.datasets as datasets

    datasets.all_datasets()
    monkeypatch.setattr(datasets, "_DATASETS", datasets._DATASETS.copy())
    mine = datasets.DatasetSpec("synthetic-cohort", "my_package.data:load", "not the embedded cohort")
    with pytest.raises(DuplicateNameError, match="dataset name 'synthetic-cohort' is registered twice: by module "
                                                 "'tests.test_registry', and before by module 'protocols.datasets'"):
        datasets.register(mine)
    again = datasets.all_datasets()["synthetic-cohort"]
    assert datasets.register(again) is again  # the same spec again: fine


def _another_model(monkeypatch):
    from models import registry

    registry.all_specs()
    monkeypatch.setattr(registry, "_MODELS", registry._MODELS.copy())
    registry.register(registry.ModelSpec("last-value", "my_package.models:Last", "not the built-in"))


def _another_task(monkeypatch):
    from harness.registry import tasks
    from harness.tasks import Task

    class Forecasting(Task):  # another class under the built-in's name (its own module would do the same)
        name = "forecasting"

    tasks.all_tasks()
    monkeypatch.setattr(tasks, "TASKS", tasks.TASKS.copy())
    tasks.register_task(Forecasting())


def _another_dataset(monkeypatch):
    import protocols.datasets as datasets

    datasets.all_datasets()
    monkeypatch.setattr(datasets, "_DATASETS", datasets._DATASETS.copy())
    datasets.register(datasets.DatasetSpec("synthetic-cohort", "my_package.data:load", "not the embedded cohort"))


def _another_corpus_reader(monkeypatch):
    from models.soter.training import sources

    monkeypatch.setattr(sources, "READERS", sources.READERS.copy())
    sources.register_reader("wesad", "my_package.wesad:read")


@pytest.mark.parametrize("kind, name, before, register", [
    ("model", "last-value", "module 'baselines.naive'", _another_model),
    ("task", "forecasting", "harness.tasks.forecasting.Forecasting", _another_task),
    ("dataset", "synthetic-cohort", "module 'protocols.datasets'", _another_dataset),
    ("corpus reader", "wesad", "module 'models.soter.training.sources'", _another_corpus_reader),
])
def test_a_duplicate_name_is_refused_the_same_way_in_every_registry(kind, name, before, register, monkeypatch):
    """Another item under a registered name: a DuplicateNameError of one wording naming both registrants, and
    the registered item stays."""
    with pytest.raises(DuplicateNameError, match=rf"^{kind} name '{name}' is registered twice: by .*tests\.test_registry"
                                                 rf".*, and before by {before}$"):
        register(monkeypatch)


def test_corpus_readers_are_a_registry_of_this_kind_and_read_lazily():
    from models.soter.training.sources import READERS, register_reader

    assert isinstance(READERS, Registry) and "wesad" in READERS
    assert all(target.startswith("models.soter.training.sources.") and target.endswith(":read")
               for target in READERS.mapping().values())
    assert register_reader("wesad", READERS["wesad"]) == READERS["wesad"]  # the same reader again: fine
    with pytest.raises(ValueError, match="a corpus reader is 'module:function'"):
        register_reader("mine", "my_package.mine")
    assert "mine" not in READERS


def test_a_task_class_named_like_a_built_in_in_another_module_is_another_task(monkeypatch):
    """Before, tasks were compared by class name only: a plugin's module-level ``Forecasting`` silently replaced
    the built-in task."""
    from harness.registry import tasks
    from harness.tasks import Task

    tasks.all_tasks()
    monkeypatch.setattr(tasks, "TASKS", tasks.TASKS.copy())
    builtin = tasks.TASKS["forecasting"]
    impostor = type("Forecasting", (Task,), {"name": "forecasting", "__module__": "my_plugin.tasks"})
    with pytest.raises(DuplicateNameError, match="by my_plugin.tasks.Forecasting, and before by "
                                                 "harness.tasks.forecasting.Forecasting"):
        tasks.register_task(impostor())
    again = type("Forecasting", (Task,), {"name": "forecasting", "__module__": "harness.tasks.forecasting"})
    tasks.register_task(again())  # the built-in's module imported again (a reload): it replaces the earlier one
    assert tasks.TASKS["forecasting"] is not builtin and type(tasks.TASKS["forecasting"]) is again
