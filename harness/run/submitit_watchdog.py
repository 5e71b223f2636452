"""A watchdog that ends a local submitit job once the driver that submitted it is gone (``--executor submitit``
without Slurm).

submitit's local job controller is meant to outlive the Python session that started it, so a driver killed with
SIGKILL cannot cancel its jobs: their controllers went on running them, and started them again on a requeue, for a
driver that would never record their rows. The driver starts this watchdog beside each job's controller; the
watchdog is the driver's child, so when the driver dies, however it dies, the watchdog is reparented and its parent
pid is no longer the driver's. It then kills the controller and every process under it, and exits; it exits too
once the controller has ended on its own. Linux only (it reads ``/proc``); elsewhere it is not started.

Run as ``python -m harness.run.submitit_watchdog DRIVER_PID CONTROLLER_PID``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 0.5
PROC = Path("/proc")


def available() -> bool:
    """Whether processes can be watched here (a ``/proc`` file system)."""
    return (PROC / "self" / "stat").is_file()


def start(driver: int, controller: int) -> subprocess.Popen | None:
    """Start the watchdog of one job's controller (None where ``/proc`` is missing)."""
    if not available():
        return None
    return subprocess.Popen([sys.executable, "-m", __name__, str(driver), str(controller)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def parents() -> dict[int, int]:
    """pid -> parent pid of every live process (zombies left out)."""
    found = {}
    for stat in PROC.glob("[0-9]*/stat"):
        try:
            state, parent = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue
        if state != "Z":
            found[int(stat.parent.name)] = int(parent)
    return found


def tree(root: int) -> list[int]:
    """``root`` and every live process below it, the root first."""
    children: dict[int, list[int]] = {}
    for pid, parent in parents().items():
        children.setdefault(parent, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def alive(pid: int) -> bool:
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def watch(driver: int, controller: int) -> None:
    """Until the controller ends: once the driver is gone, kill the controller first (so that it starts no job),
    then what ran under it."""
    while alive(controller):
        if os.getppid() != driver:
            for pid in tree(controller):  # collected before the kill: orphaned tasks lose their parent link
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            return
        time.sleep(POLL_S)


if __name__ == "__main__":
    if len(sys.argv) != 3 or not all(a.isdigit() for a in sys.argv[1:]):
        raise SystemExit(f"usage: python -m {__name__} DRIVER_PID CONTROLLER_PID")
    watch(int(sys.argv[1]), int(sys.argv[2]))
