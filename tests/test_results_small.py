"""Issue #44: the tree stays small. Tracked under results/: each folder's records.csv and SOTER's own per-window
errors (results/README.md); rendered tables, figures, statistics, caches, run states and weights are regenerated."""

from __future__ import annotations

import fnmatch
import subprocess
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("results/.gitignore", "results/README.md", "results/regenerate.sh", "results/*/records.csv",
           "results/paper/*", "results/benchmarks/system_overhead.csv", "results/benchmarks/cell_costs.csv",
           "results/benchmarks/batched_rates.csv",
           "results/*/window_errors/*.npz")
MAX_FILES, MAX_BYTES = 1500, 50 * 2**20


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.decode().split("\0") if p]


def test_results_track_only_records_and_soter_window_errors():
    tracked = [p for p in _tracked() if p.startswith("results/")]
    odd = [p for p in tracked if not any(fnmatch.fnmatchcase(p, pattern) for pattern in ALLOWED)]
    assert not odd, f"rendered or derived files tracked under results/: {odd[:5]}"
    for path in (p for p in tracked if "/window_errors/" in p):
        folder = ROOT / path.split("/window_errors/")[0]
        records = pd.read_csv(folder / "records.csv", usecols=["key", "model"], dtype=str)
        models = set(records.loc[records["key"] == Path(path).stem, "model"])
        assert models and all(m.startswith("soter") for m in models), f"{path}: not a SOTER row's ({models})"


def test_the_tree_stays_small():
    tracked = _tracked()
    assert len(tracked) < MAX_FILES
    assert sum((ROOT / p).stat().st_size for p in tracked if (ROOT / p).is_file()) < MAX_BYTES

