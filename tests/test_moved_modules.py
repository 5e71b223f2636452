"""The flat harness paths of before issue #28 still import, as the modules at their new paths (for branches
and plugins written against the flat layout), with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import harness

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old", sorted(harness.MOVED))
def test_an_old_path_is_the_module_at_its_new_path(old, monkeypatch):
    new = harness.MOVED[old]
    monkeypatch.delitem(sys.modules, old, raising=False)  # import afresh, so that the warning is raised
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert getattr(harness, old.rsplit(".", 1)[1]) is module  # ``from harness import cells`` too
    assert not (REPO / (old.replace(".", "/") + ".py")).exists()  # no file: a merge follows git's rename


def test_a_name_that_never_existed_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("harness.no_such_module")
