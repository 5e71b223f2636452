"""The names a run's flags take and where it writes by default: no imports, so that the CLI's parser offers them
without importing the runner (``--help`` and a usage error start fast)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_OUT = Path("results/runs/default")
RECORDS_FILE = "records.csv"
EXECUTORS = ("local", "ray", "submitit")
