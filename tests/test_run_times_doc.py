"""Issue #51 item 5: every task's default run time on this machine is in one table (docs/run-times.md, measured by
benchmarks/harness_tasks.py), and the README and docs/commands.md give the default run one time, that table's."""

from __future__ import annotations

import re
from pathlib import Path

from harness.registry.tasks import all_tasks

REPO = Path(__file__).resolve().parents[1]
DURATION = re.compile(r"\b\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?\s*(?:s|min|minutes|seconds)\b(?! \w+ per)")


def _table() -> dict[str, dict[str, str]]:
    lines = [line for line in (REPO / "docs" / "run-times.md").read_text().splitlines()
             if line.startswith("|") and not line.startswith("|---")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")))) for line in lines[1:]]
    return {row["task"]: row for row in rows if row.get("task") in all_tasks()}


def test_every_registered_task_has_a_measured_default_run_time():
    table = _table()
    assert set(table) == set(all_tasks())
    for task, row in table.items():
        # a measured time, or a measured lower bound for a run stopped unfinished (its cells so far in the text)
        assert re.fullmatch(r"(more than )?\d+ s", row["first run"]), (task, row)
        assert row["load average before -> after"], task  # the load is stated


def test_the_readme_and_the_commands_give_the_default_run_the_tables_time():
    first = _table()["forecasting"]["first run"]
    readme = (REPO / "README.md").read_text()
    assert "docs/run-times.md" in readme
    assert DURATION.findall(readme) == [first], DURATION.findall(readme)
    commands = (REPO / "docs" / "commands.md").read_text()
    default_section = commands.split("## The default run", 1)[1].split("\n## ", 1)[0]
    assert "run-times.md" in default_section
    assert DURATION.findall(default_section) in ([], [first]), DURATION.findall(default_section)
