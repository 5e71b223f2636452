"""Issue #44: a shipped SOTER entry is a checkpoint folder with an ``entry.toml``; no code per checkpoint."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from models.adapted import ADAPTED  # the adapted entries share their base's weights (issue #49)
from models.registry import all_specs, resolve
from models.soter.entries import CHECKPOINTS, ENTRY_FILE, EXTRA_ROOTS_ENV, EntryError, discover, read_entry

ROOT = Path(__file__).resolve().parents[2]
# the shipped entries: name -> (default weights folder, default runs, options beyond rollout and name)
SHIPPED = {
    "soter": ("soter-cpu-64", True, {}),
    "soter-autoregressive": ("soter-cpu-64", False, {}),
    "soter-anchored": ("soter-cpu-64-noaux", ("forecasting",), {"control_beyond": "hold", "output_bound": 0.5}),
}


def test_the_shipped_entries_are_the_faithful_and_one_departing():
    specs = {name: spec for name, spec in all_specs().items() if spec.default_weights and spec.family != ADAPTED}
    assert set(specs) == set(SHIPPED)
    for name, (folder, default, options) in SHIPPED.items():
        spec = specs[name]
        assert Path(resolve(spec.default_weights)()) == CHECKPOINTS / folder, name
        assert spec.default == default, name
        rollout = "autoregressive" if name == "soter-autoregressive" else "per-query"
        assert spec.options == {"rollout": rollout, "name": name, **options}, name
        assert spec.factory == "models.soter.adapter:load_soter"


def _checkpoint_copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / "checkpoints" / "my-soter"
    shutil.copytree(CHECKPOINTS / "soter-cpu-64", folder)
    (folder / ENTRY_FILE).write_text(f'name = "{name}"\nsummary = "a checkpoint I trained"\n'
                                     'default_tasks = []\n[options]\ncontrol_beyond = "hold"\n')
    return folder


def test_a_checkpoint_folder_is_an_entry_without_code(tmp_path):
    """A folder with an entry.toml under $SOTER_BENCH_CHECKPOINTS is listed and ready (a fresh process: the
    registry is read once per process)."""
    folder = _checkpoint_copy(tmp_path, "soter-mine")
    env = {**os.environ, EXTRA_ROOTS_ENV: str(folder.parent)}
    out = subprocess.run([sys.executable, "-m", "harness", "list", "models", "--long"], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.strip().startswith("soter-mine "))
    assert "ready" in line
    assert "checkpoint my-soter: a checkpoint I trained" in out
    assert "soter-mine" not in subprocess.run([sys.executable, "-m", "harness", "list", "models"], cwd=ROOT,
                                              capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("text, problem", [
    ('name = "my.soter"\nsummary = "x"\n', "name 'my.soter' may hold only letters, digits"),
    ('name = "mine/soter"\nsummary = "x"\n', "name 'mine/soter' may hold only letters, digits"),
    ('name = "mine"\nsummary = "x"\nfaithful = true\n', "faithful may be set only by the checkpoints shipped"),
    ('name = "mine"\nsummary = "x"\ndefault_tasks = ["forecasting"]\n', "default_tasks may be set only by"),
])
def test_an_external_entry_with_a_bad_name_or_claiming_the_papers_recipe_is_skipped_with_one_line(tmp_path, text,
                                                                                                problem):
    """`list models` once ended in a traceback on a dot in a name, and an external folder could call itself the
    paper's recipe and join every default run."""
    folder = _checkpoint_copy(tmp_path, "unused")
    (folder / ENTRY_FILE).write_text(text)
    roots = [CHECKPOINTS, folder.parent]
    assert set(discover(roots)) == set(discover([CHECKPOINTS]))
    from models.soter.entries import refused

    [line] = refused(roots)
    assert line.startswith(f"{folder / ENTRY_FILE}: ") and problem in line
    env = {**os.environ, EXTRA_ROOTS_ENV: str(folder.parent)}
    done = subprocess.run([sys.executable, "-m", "harness", "list", "models"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"skipped (not registered): {line}" in done.stdout


def test_a_shipped_entry_name_is_checked_too(tmp_path):
    (tmp_path / ENTRY_FILE).write_text('name = "soter.v2"\nsummary = "x"\n')
    with pytest.raises(EntryError, match="may hold only letters"):
        read_entry(tmp_path)


def test_two_folders_claiming_one_name_are_one_clear_error(tmp_path):
    _checkpoint_copy(tmp_path, "soter")
    with pytest.raises(EntryError, match="entry 'soter' is also"):
        discover([CHECKPOINTS, tmp_path / "checkpoints"])


@pytest.mark.parametrize("text, message", [
    ('summary = "x"\n', "name must be a non-empty string"),
    ('name = "x"\nsummary = "x"\ncolour = "red"\n', "unknown field"),
    ('name = "x"\nsummary = "x"\ndefault_tasks = ["forecast"]\n', "default_tasks: must be a list of tasks"),
    ('name = "x"\nsummary = "x"\n[options]\nweights = "/elsewhere"\n', "options must be a table of"),
    ('name = "x\n', "cannot be read"),
])
def test_a_malformed_entry_file_names_itself_and_the_problem(tmp_path, text, message):
    (tmp_path / ENTRY_FILE).write_text(text)
    with pytest.raises(EntryError, match=message) as err:
        read_entry(tmp_path)
    assert str(tmp_path / ENTRY_FILE) in str(err.value)


def test_the_lineage_table_in_the_docs_is_generated_from_its_data():
    from models.soter import lineage

    assert lineage.markdown() in (ROOT / "docs" / "soter.md").read_text()
    rows = lineage.rows()
    in_tree = {r["checkpoint"] for r in rows if r["where"] == "in the tree"}
    assert in_tree == {e.folder.name for e in discover().values()}  # every other one left the tree
    known = {r["checkpoint"] for r in rows}
    assert all(e.parent in known | {""} for e in discover().values())
