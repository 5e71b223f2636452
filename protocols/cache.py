"""The on-disk cache folder of this project: ``$SOTER_BENCH_CACHE``, else ``~/.cache/soter-bench``.

A module of its own (no dataset code, nothing heavy) so that every layer can name the folder:
the synthetic cohort's arrays, the isolated environments of ``baselines.isolated``.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "SOTER_BENCH_CACHE"


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "soter-bench")
