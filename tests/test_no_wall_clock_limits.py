"""No test depends on the machine's speed (issue #51): a test that gives a subprocess, a wait or a loop a number of
seconds fails on a machine that is busy or slower than the one it was written on (the README's test command once
failed for exactly this, under load). Tests wait for what they need instead (tests/waiting.py).

Looked for in every test module: a ``timeout=`` argument to any call (subprocess.run, communicate, wait, join,
result, ...) and a deadline computed from a clock (``time.time() + N``, ``time.monotonic() + N``,
``time.perf_counter() + N``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"time", "monotonic", "perf_counter"}


def wall_clock_limits(source: str) -> list[tuple[int, str]]:
    """(line, what) of every wall-clock limit in a module's source."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += [(node.lineno, "timeout=") for kw in node.keywords if kw.arg == "timeout"]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side in (node.left, node.right):
                if isinstance(side, ast.Call) and isinstance(side.func, ast.Attribute) and side.func.attr in CLOCKS:
                    found.append((node.lineno, f"a deadline from {side.func.attr}()"))
    return found


def test_the_finder_sees_each_kind_of_limit():
    source = ("import subprocess, time\n"
              "subprocess.run(['true'], timeout=60)\n"
              "deadline = time.time() + 10\n"
              "end = 5 + time.monotonic()\n"
              "proc.communicate(timeout=1)\n"
              "subprocess.run(['true'])\n")
    assert [line for line, _ in wall_clock_limits(source)] == [2, 3, 4, 5]


def test_no_test_module_waits_against_the_clock():
    offenders = [f"{path.relative_to(TESTS.parent)}:{line}: {what}"
                 for path in sorted(TESTS.rglob("*.py"))
                 for line, what in wall_clock_limits(path.read_text())]
    assert not offenders, "wall-clock limits in tests (wait for the event instead: tests/waiting.py):\n" + "\n".join(offenders)
