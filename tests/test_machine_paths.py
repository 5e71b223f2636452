"""Issue #44: no tracked file holds an absolute path of a developer's machine (the project's work tree, a home
folder, root's home), which leaked from training runs into corpus manifests, table notes, records and docs.

Files name paths relative to the repository, beside it (``../shared/...``) or by a placeholder (``CORPUS``, ``DIR``);
a test that needs a literal absolute path uses a neutral one such as ``/data/x``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_TOP_LEVEL = ("work", "root")  # whole trees of a developer's machine (spelt apart so that this file does not match)
MACHINE_PATH = re.compile(
    r"(?<![\w.~/-])"  # an absolute path, not the tail of a URL, a relative path or a home-relative one
    r"(?:/(?:" + "|".join(_TOP_LEVEL) + r")/"
    r"|/home/[\w.-]+/"
    r"|/Users/[\w.-]+/"
    r"|[A-Za-z]:\\Users\\[^\\\s]+\\)"
)
BINARY_SNIFF = 8192  # a NUL byte in the first 8 KiB marks a binary file, as git and grep decide


def machine_paths(text: str) -> list[tuple[int, str]]:
    """(line number, line) of every line of ``text`` that holds a machine path."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]


def _tracked_files() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout with git installed: there is no list of tracked files to scan")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in listed.decode().split("\0") if name]


def _text(path: Path) -> str | None:
    """The file's text, or None for a binary file or one that is tracked but absent from the working tree."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    if b"\0" in data[:BINARY_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_no_tracked_file_holds_a_path_of_a_developer_s_machine():
    hits = []
    for path in _tracked_files():
        text = _text(path)
        if text is None:
            continue
        rel = path.relative_to(REPO).as_posix()
        hits += [f"{rel}:{n}: {line[:160]}" for n, line in machine_paths(text)]
    assert not hits, (f"{len(hits)} line(s) name a path of a developer's machine; write it relative to the repository, "
                      "as ../shared/..., or as a placeholder (CORPUS, DIR):\n" + "\n".join(hits))


def _path(*parts: str) -> str:
    return "/" + "/".join(parts)


@pytest.mark.parametrize("line", [
    f"corpus {_path('work', 'train', 'corpus2')} (generated)",
    f'"source": "{_path("work", "wt-loaders", "models", "soter", "checkpoints", "soter-cpu-64")}"',
    f"cite = \"{_path('work', 'shared', 'notes', 'datasets.md')}\"",
    f"cd {_path('home', 'alice', 'soter-bench')}",
    f"HOME={_path('root', '.cache')}",
    f"`{_path('Users', 'bob', 'data', 'wfdb')}`",
    "C:" + "\\".join(["", "Users", "carol", "soter-bench", ""]),
])
def test_the_pattern_finds_a_machine_path(line):
    assert machine_paths(line) == [(1, line)]


@pytest.mark.parametrize("line", [
    "--data-root ../shared/data/wfdb",
    "--data-root /data/x",
    "https://example.org/work/paper.pdf and github.com/owner/root/tree",
    "~/work/notes and ~/.cache/soter-bench",
    "results/runs/work/records.csv, /tmp/wt-start",
    "the home folder, /home alone, /Users alone",
])
def test_the_pattern_leaves_relative_urls_and_neutral_paths_alone(line):
    assert machine_paths(line) == []
