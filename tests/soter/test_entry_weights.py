"""Each SOTER entry runs its own shipped checkpoint, which the registry passes to the factory: the adapter never
imports the registration, so registering a new entry (a registry edit) leaves every SOTER row's code digest as it
was (harness.records.code_identity: the registry decides what runs, not the numbers)."""

from __future__ import annotations

import pytest

from harness.records.code_identity import source_closure
from models.registry import load_model
from models.soter.adapter import load_soter
from models.soter.entries import discover, faithful_entry

SHIPPED_ENTRIES = discover()


def test_the_registration_is_outside_the_code_of_soter_rows():
    """A row's code digest covers exactly this closure (code_digest), so a registry edit changes no digest."""
    closure = source_closure("models.soter.adapter")
    assert "models.soter.model" in closure  # the code that computes the numbers is in it
    assert "models.soter.registration" not in closure


@pytest.mark.parametrize("name", [*SHIPPED_ENTRIES, "soter-autoregressive"])
def test_every_entry_loads_its_own_shipped_checkpoint(name):
    folder = SHIPPED_ENTRIES.get(name, faithful_entry()).folder
    assert load_model(name).checkpoint == folder


def test_the_factory_without_weights_is_one_clear_error():
    with pytest.raises(ValueError, match="no checkpoint given"):
        load_soter(name="soter-anchored")
