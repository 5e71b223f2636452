"""The key of a record row: a hash of its cell and its model's identity (docs/records.md).

A module of its own so that the store and the readers that match rows to configurations
(``harness.records.configurations``) share it without importing each other.
"""

from __future__ import annotations

import hashlib

from harness.registry.versions import unversioned

KEY_FIELDS: tuple[str, ...] = ("task", "dataset", "fold", "setting", "condition", "model", "seed", "protocol")
# the names the key hash spells the fields with: ``setting`` was ``window`` before issue #17, and the hash
# keeps the old spelling so that every key (and so every finished row of an existing records file) is unchanged
KEY_NAMES: dict[str, str] = {"setting": "window"}


def row_key(model_id: str = "", **fields: object) -> str:
    """The row's identity. ``model_id`` (``ModelSpec.identity``: a digest of the model's weights and
    options) enters only when non-empty, so rows of models without weights keep their keys, while a
    row computed with other weights, or written before weights were part of the key, never matches.
    The protocol enters without its version token (``harness.registry.versions``): a cell keeps its key across
    versions, and the version a row records decides whether it is current."""
    missing = [f for f in KEY_FIELDS if f not in fields]
    if missing:
        raise ValueError(f"row key needs {missing}")
    fields = {**fields, "protocol": unversioned(str(fields["task"]), str(fields["protocol"]))}
    text = "|".join(f"{KEY_NAMES.get(f, f)}={fields[f]}" for f in KEY_FIELDS) + (f"|model_id={model_id}" if model_id else "")
    return hashlib.sha1(text.encode()).hexdigest()[:16]
