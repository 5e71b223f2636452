"""benchmarks/device_tree.sh: a lent accelerator only receives a checkout of at most 64 MiB (tracked and
untracked-not-ignored files), and the committed records, run states and checkpoints are far more, so a GPU
session first makes the checkout slim. Slim must travel, keep what the CUDA tests load, refuse commits (the
index then holds the deletion of every record), and `restore` must give back exactly the checkout it found."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "device_tree.sh"
LIMIT = 64 * 1024 * 1024


def _git(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=clone, capture_output=True, text=True)


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and this project's repository")
    target = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    shutil.copy(SCRIPT, target / "benchmarks" / "device_tree.sh")  # the script under test, committed or not
    return target


def _tree(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "benchmarks/device_tree.sh", *args], cwd=clone, capture_output=True, text=True)


def test_slim_travels_keeps_the_faithful_checkpoint_and_refuses_commits(clone):
    before = _git(clone, "status", "--porcelain").stdout
    slim = _tree(clone, "slim")
    assert slim.returncode == 0, slim.stderr
    size = _tree(clone, "size")
    assert size.returncode == 0, size.stdout + size.stderr
    assert int(size.stdout.split()[0]) <= LIMIT
    tracked = _git(clone, "ls-files").stdout.splitlines()
    assert not [f for f in tracked if f.startswith("results/")]
    assert "models/soter/checkpoints/soter-cpu-64/model.safetensors" in tracked  # tests/test_device.py loads it
    assert (clone / "results").is_dir()  # nothing leaves the disk
    commit = _git(clone, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "would delete")
    assert commit.returncode != 0 and "restore" in commit.stderr
    assert _tree(clone, "slim").returncode == 2  # twice is refused, not stacked
    restore = _tree(clone, "restore")
    assert restore.returncode == 0, restore.stderr
    assert _git(clone, "status", "--porcelain").stdout == before
    assert _git(clone, "diff", "--cached", "--quiet").returncode == 0
    assert not (clone / ".git" / "hooks" / "pre-commit").exists()
    assert _tree(clone, "restore").returncode == 2


def test_slim_refuses_a_staged_change(clone):
    (clone / "README.md").write_text((clone / "README.md").read_text() + "\nstaged\n")
    _git(clone, "add", "README.md")
    refused = _tree(clone, "slim")
    assert refused.returncode == 2 and "staged" in refused.stderr
    assert "results/" in _git(clone, "ls-files", "results").stdout.splitlines()[0]
