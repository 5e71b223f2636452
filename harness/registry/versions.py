"""Declared protocol versions: what decides whether a finished record row is still current.

A row is the result of its task's protocol and its model's behaviour. Both are declared, not inferred from the
source: each task has a version (:data:`TASK_VERSIONS`, or a plugin task's ``version`` attribute) that its rows carry
as the first token of their ``protocol`` column (``forecasting-v1;maxw=16;...``), and each model a revision
(``ModelSpec.revision``, recorded in the row's identity). A change that moves a task's numbers bumps its version here;
one that moves a model's numbers bumps its revision. Rows of another version are out of date: a run recomputes them,
tables leave them out and say so, and ``harness stale`` lists the folders that hold them. Golden numbers
(``tests/golden``) prove, for every version, that an edit which bumps nothing moved nothing.

The code digest (``harness.records.code_identity``) stays in every row as provenance only: editing a comment, a
caption or a private name recomputes nothing.

Cheap: no torch, no pandas, no task module is imported here.
"""

from __future__ import annotations

# task -> its protocol's version. Bump when a change moves the numbers of the task's rows (windows drawn, scaling,
# metrics, the way a cell is evaluated), and say why in the list below; a bump of one task never touches another's.
TASK_VERSIONS: dict[str, int] = {
    "forecasting": 1,
    "imputation": 1,
    "noise": 1,
    "classification": 1,
    "physiology": 2,
    "calibration": 1,
    "shift": 1,
    "irregular": 1,
    "classification-heads": 1,
}
# History (task-vN: what moved):
#   every task v1: the protocols as of the declaration of versions (rows written before carry no token: v1).
#   physiology-v2: a forecast whose solve diverges (SOTER's faithful checkpoint on 20 s horizons reached ~1e17) is an
#     error row naming its windows and the cause, never a rate; v1 scored such forecasts (no rate detected, or one
#     detected in the diverged values). Forecasting and the other tasks keep v1: none of their committed or golden
#     rows diverges (recomputed: every number within 6.4e-8).

DEFAULT_VERSION = 1  # a plugin task that declares none, and rows written before versions were declared


def task_version(task: object) -> int:
    """The declared version of a task (a registered task object, or its name)."""
    name = task if isinstance(task, str) else getattr(task, "name", "")
    declared = None if isinstance(task, str) else getattr(task, "version", None)
    if isinstance(declared, int) and not isinstance(declared, bool):
        return declared
    return TASK_VERSIONS.get(str(name), DEFAULT_VERSION)


def version_token(task: str, version: int) -> str:
    """The first token of a row's ``protocol``: ``forecasting-v1``."""
    return f"{task}-v{version}"


def with_version(task: str, version: int, fingerprint: str) -> str:
    """A protocol fingerprint led by the task's version token."""
    return f"{version_token(task, version)};{fingerprint}" if fingerprint else version_token(task, version)


def split_version(task: str, protocol: str) -> tuple[int | None, str]:
    """(the version a ``protocol`` declares for ``task``, the protocol without that token); (None, protocol) for a
    row written before versions were declared."""
    text = str(protocol)
    prefix = f"{task}-v"
    if text.startswith(prefix):
        number, sep, rest = text[len(prefix):].partition(";")
        if number.isdigit():
            return int(number), rest
    return None, text


def protocol_version(task: str, protocol: str) -> int:
    """The version of ``task`` a row's ``protocol`` was computed under (rows written before: v1)."""
    found, _ = split_version(task, protocol)
    return DEFAULT_VERSION if found is None else found


def unversioned(task: str, protocol: str) -> str:
    """``protocol`` without its version token: what a row's key hashes, so that keys stay the same across
    versions (the version decides whether a row is current, the key which cell it is)."""
    return split_version(task, protocol)[1]


def stamped(task: str, protocol: str, version: int | None = None) -> str:
    """``protocol`` led by the token of ``version`` (default: the one it declares, else v1)."""
    found, rest = split_version(task, protocol)
    return with_version(task, version if version is not None else (found or DEFAULT_VERSION), rest)
