"""The one seam through which cells run: in process, in local processes, or on Ray (executor_ray).

A cell is a picklable description plus a top-level function; nothing in it may depend on
state of the process that submitted it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Iterable, Iterator, Protocol, TypeVar

from harness.run.inflight import top_up
from harness.run.names import EXECUTORS
from harness.run.stopping import raise_if_stopped

LOST_WORKER = "the worker running this cell was lost"  # how the row of a cell whose worker died begins

C = TypeVar("C")
R = TypeVar("R")


class Executor(Protocol):
    def run(self, fn: Callable[[C], R], cells: Iterable[C],
            on_lost: Callable[[C, BaseException], R] | None = None) -> Iterator[tuple[C, R]]:
        """Yield (cell, result) as each cell finishes, in any order. A cell whose worker was lost
        (an executor that can tell which cell that was) yields ``on_lost(cell, error)``."""
        ...

    def close(self) -> None: ...


class SerialExecutor:
    def run(self, fn: Callable[[C], R], cells: Iterable[C],
            on_lost: Callable[[C, BaseException], R] | None = None) -> Iterator[tuple[C, R]]:
        for cell in cells:
            raise_if_stopped()  # an interrupt swallowed where it landed (an import, a library): no next cell
            yield cell, fn(cell)

    def close(self) -> None:
        pass


def exit_when_orphaned(parent: int, poll_s: float = 0.5) -> threading.Thread:
    """Exit this process once ``parent`` is gone (it was reparented), however the parent died.

    A pool's workers otherwise outlive a parent killed with SIGKILL, idle and holding memory,
    forever. Polling ``getppid`` needs no platform-specific call and catches every way of dying.
    """
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    thread = threading.Thread(target=watch, name="exit-when-orphaned", daemon=True)
    thread.start()
    return thread


def _worker_init(parent: int) -> None:
    exit_when_orphaned(parent)
    # Two cores shared by N workers: one thread each, or they fight for the cores.
    from harness.run.threads import single_thread_unless_set

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    single_thread_unless_set(force=True)


class ProcessExecutor:
    """Local worker processes (spawned, so no state leaks from the parent).

    A worker that dies (killed, out of memory, a crash in native code) breaks Python's whole pool,
    and no future says whose cell killed it. The executor then starts a new pool and runs each cell
    that was in flight alone, in a pool of its own: a cell that kills that one too is the culprit and
    yields ``on_lost(cell, error)``; the others yield their results, and the sweep goes on.
    """

    def __init__(self, jobs: int) -> None:
        if jobs < 1:
            raise ValueError("jobs must be >= 1")
        self.jobs = jobs
        self._pool = self._new_pool(jobs)

    @staticmethod
    def _new_pool(workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_worker_init, initargs=(os.getpid(),))

    def run(self, fn: Callable[[C], R], cells: Iterable[C],
            on_lost: Callable[[C, BaseException], R] | None = None) -> Iterator[tuple[C, R]]:
        pending: dict[Future, C] = {}
        queue = iter(cells)
        exhausted = False
        while not exhausted or pending:
            raise_if_stopped()
            if not exhausted:  # the pool may have been replaced since the last round: look it up per call
                exhausted = top_up(queue, pending, 2 * self.jobs, lambda cell: self._pool.submit(fn, cell))
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            suspects: list[C] = []
            for fut in done:
                cell = pending.pop(fut)
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    if on_lost is None:
                        raise
                    suspects.append(cell)
                    continue
                yield cell, result
            if suspects:  # the pool is broken: every cell still in flight went down with it
                suspects += pending.values()
                pending.clear()
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool(self.jobs)
                for cell in suspects:
                    yield cell, self._run_alone(fn, cell, on_lost)

    def _run_alone(self, fn: Callable[[C], R], cell: C, on_lost: Callable[[C, BaseException], R]) -> R:
        pool = self._new_pool(1)
        try:
            return pool.submit(fn, cell).result()
        except BrokenProcessPool as exc:
            return on_lost(cell, exc)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def make_executor(jobs: int, kind: str = "local", address: str | None = None,
                  resources: Callable[[object], dict[str, float]] | None = None,
                  folder: str | os.PathLike | None = None) -> Executor:
    """``local``: in process (jobs 1) or ``jobs`` worker processes; ``ray``: Ray tasks on the cluster at
    ``address`` (else a local Ray instance with ``jobs`` CPUs when jobs > 1, all cores otherwise); ``submitit``:
    Slurm jobs (submitit's local processes without Slurm), ``2 * jobs`` in flight, their files under ``folder``."""
    if kind == "submitit":
        from pathlib import Path

        from harness.run.executor_submitit import SubmititExecutor

        return SubmititExecutor(Path(folder or "submitit"), jobs, resources)
    if kind == "ray":
        from harness.run.executor_ray import RayExecutor

        return RayExecutor(address, resources, num_cpus=jobs if jobs > 1 else None)
    if kind != "local":
        raise ValueError(f"unknown executor {kind!r}; known: {', '.join(EXECUTORS)}")
    return SerialExecutor() if jobs <= 1 else ProcessExecutor(jobs)
