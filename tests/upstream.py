"""Where the tests find the upstream source code of the baselines (never copied into this project).

``../shared/code/`` beside the repository holds unmodified upstream copies (its README says what, from
where, under which licence). A test asks for one by the variable its adapter reads (``SOTER_BENCH_*_CODE``):
the variable wins when set, else the staged folder; when neither exists the test is skipped, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_CODE = Path(__file__).resolve().parents[1].parent / "shared" / "code"


def staged_code(env_var: str, folder: str) -> Path | None:
    """``$env_var`` if set, else ``../shared/code/<folder>`` if it exists, else None."""
    given = os.environ.get(env_var)
    if given:
        return Path(given).expanduser()
    path = SHARED_CODE / folder
    return path if path.is_dir() else None


def require_code(env_var: str, folder: str) -> Path:
    """The upstream code folder, or skip the test with the reason."""
    path = staged_code(env_var, folder)
    if path is None:
        pytest.skip(f"no upstream code: set {env_var} to a checkout, or stage it in {SHARED_CODE / folder}")
    return path
