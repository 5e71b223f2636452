"""SIGINT and SIGTERM stop a run, even when the code they land in swallows the interrupt.

Python turns a signal into an exception wherever the main thread is; code that catches it goes on as if nothing
happened: scikit-learn's MLPClassifier ends its training early on a KeyboardInterrupt (and returns a head trained
on fewer epochs), a library's ``except BaseException`` around an optional import swallows it. So the handlers
here also *remember* the signal: :func:`raise_if_stopped`, called before a cell's row is written and before the
next cell starts, raises it again, and a remembered signal is never written as a result (the half-trained
head's row is dropped; the same command recomputes it on resume).

:func:`stop_on_signals` installs the handlers and puts back the ones it found when it ends (tests call a run in
process: a handler left installed would outlive the run). It imports nothing heavy, so that ``python -m harness``
installs it before its imports, which can take long on a busy machine.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager
from typing import Iterator

EXIT_INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a job stopped by Ctrl-C
EXIT_TERMINATED = 143  # 128 + SIGTERM

_received: list[int] = []  # signals received while the handlers are installed, first first
_depth = [0]  # nested stop_on_signals (the command, then the run it starts)


class Terminated(KeyboardInterrupt):
    """SIGTERM (sent by `kill`, Slurm and Ray before they kill a job): stop as on Ctrl-C."""


def _stop(signum: int, frame) -> None:
    _received.append(signum)
    raise _exception(signum)


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise (KeyboardInterrupt, :class:`Terminated`) and are remembered, whatever dispositions
    the caller passed down (a background job of a non-interactive shell starts with SIGINT ignored). The previous
    handlers are back when the block ends, however it ends. Outside the main thread nothing is installed."""
    previous = _install()
    if previous is None:  # not the main thread: signals reach the main thread only
        yield
        return
    if _depth[0] == 0:
        _received.clear()  # a signal of an earlier command in this process is no reason to stop this one
    _depth[0] += 1
    try:
        yield
    finally:
        _depth[0] -= 1
        if _depth[0] == 0:
            _received.clear()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _install() -> dict[int, object] | None:
    """Install :func:`_stop` for SIGINT and SIGTERM: the previous handlers, or None where it cannot be."""
    previous: dict[int, object] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, _stop)
    except ValueError:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        return None
    return previous


def stopped() -> int | None:
    """The first SIGINT or SIGTERM received since the outermost :func:`stop_on_signals` began, or None."""
    return _received[0] if _received else None


def raise_if_stopped() -> None:
    """Raise the interrupt of a signal received earlier, which the code it landed in may have swallowed."""
    signum = stopped()
    if signum is not None:
        raise _exception(signum)


def exit_status(exc: KeyboardInterrupt) -> int:
    """130 for Ctrl-C (SIGINT, or a KeyboardInterrupt raised by code), 143 for SIGTERM."""
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
