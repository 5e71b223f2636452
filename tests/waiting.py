"""Waiting in tests without a wall-clock limit (issue #51): a test waits for what it needs (rows written, a process
ended, workers gone), never for a number of seconds, so a busy or slow machine makes it slower, not red.

A bug that stops the awaited thing from ever happening shows as a hang, which CI's own limit ends; a deadline would
instead fail a correct build on a machine slower than the one it was tuned on. tests/test_no_wall_clock_limits.py
keeps deadlines and ``timeout=`` out of the tests."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

POLL_SECONDS = 0.05  # how often a condition is looked at; the only number of seconds here


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen | None = None, what: str = "") -> None:
    """Returns once ``condition()`` holds; fails the test if ``proc`` ended before it did (it never will then)."""
    while not condition():
        if proc is not None and proc.poll() is not None:
            if condition():
                return
            _, err = proc.communicate()
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what or 'the condition held'}:\n"
                                 f"{err.decode() if isinstance(err, bytes) else err}")
        time.sleep(POLL_SECONDS)


def wait_for_lines(path: Path, lines: int, proc: subprocess.Popen | None = None) -> None:
    """Returns once ``path`` holds at least ``lines`` lines (a record store's header and rows)."""
    wait_until(lambda: path.exists() and len(path.read_text().splitlines()) >= lines, proc,
               f"{path.name} held {lines} lines")
