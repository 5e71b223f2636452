"""Issue #28: every registry (models, tasks, datasets) is one kind, ``protocols.registry.Registry``, with one
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
