"""Cells as submitit jobs: Slurm jobs where ``sbatch`` exists, else submitit's local processes (``run --executor
submitit``).

As with Ray, the process you started stays the only writer of the record store: a job only runs ``run_cell`` and
hands its row back (pickled in ``<out>/submitit``), so caching, resume and interrupts behave as with ``--jobs``.
Slurm parameters (partition, time, account ...) come from ``$SOTER_BENCH_SUBMITIT`` (a JSON object passed to
``update_parameters``, e.g. ``{"slurm_partition": "cpu", "timeout_min": 60}``); a cell whose model runs on a GPU
asks for one (``gpus_per_node``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from harness.run.inflight import top_up

C = TypeVar("C")
R = TypeVar("R")

SUBMITIT_EXTRA = "pip install -c constraints.txt 'soter-bench[submitit]'"
PARAMETERS_ENV = "SOTER_BENCH_SUBMITIT"


class SubmititUnavailableError(RuntimeError):
    """``--executor submitit`` without the ``submitit`` package, or parameters it refuses."""


class SubmititExecutor:
    """Submit each cell as a job; at most ``2 * jobs`` in flight (``--jobs``), polled every ``poll_s`` seconds. A job
    that dies (killed, out of memory, its node lost, the time limit) yields ``on_lost(cell, error)``; the sweep goes
    on and a rerun retries it."""

    def __init__(self, folder: Path, jobs: int = 1, resources: Callable[[Any], dict[str, float]] | None = None,
                 poll_s: float = 0.2) -> None:
        try:
            import submitit
        except ImportError as exc:
            raise SubmititUnavailableError(f"--executor submitit needs the Python package 'submitit': "
                                           f"{SUBMITIT_EXTRA}") from exc
        try:
            extra = json.loads(os.environ.get(PARAMETERS_ENV) or "{}")
        except ValueError as exc:
            raise SubmititUnavailableError(f"${PARAMETERS_ENV} is no JSON object: {exc}") from None
        if not isinstance(extra, dict):
            raise SubmititUnavailableError(f"${PARAMETERS_ENV} must be a JSON object of submitit parameters")
        self._executor = submitit.AutoExecutor(folder=str(folder))
        self._extra = extra
        self._resources = resources or (lambda cell: {"num_cpus": 1})
        self._limit = 2 * max(1, jobs)
        self._poll_s = poll_s
        self._pending: dict[Any, Any] = {}
        self._watchdogs: list[Any] = []
        self.cluster = self._executor.cluster  # slurm | local

    def _submit(self, fn: Callable[[C], R], cell: C):
        wants = self._resources(cell)
        parameters = {"cpus_per_task": int(wants.get("num_cpus", 1)), **self._extra}
        if wants.get("num_gpus"):
            parameters["gpus_per_node"] = int(wants["num_gpus"])
        try:
            self._executor.update_parameters(**parameters)
        except (TypeError, ValueError) as exc:
            raise SubmititUnavailableError(f"submitit refuses the parameters {parameters}: {exc}") from None
        job = self._executor.submit(fn, cell)
        if self.cluster == "local" and str(job.job_id).isdigit():  # its controller must not outlive this driver
            from harness.run import submitit_watchdog

            self._watchdogs.append(submitit_watchdog.start(os.getpid(), int(job.job_id)))
        return job

    def run(self, fn: Callable[[C], R], cells: Iterable[C],
            on_lost: Callable[[C, BaseException], R] | None = None) -> Iterator[tuple[C, R]]:
        queue = iter(cells)
        exhausted = False
        while not exhausted or self._pending:
            if not exhausted:
                exhausted = top_up(queue, self._pending, self._limit, lambda cell: self._submit(fn, cell))
            if not self._pending:
                break
            done = [job for job in self._pending if job.done()]
            if not done:
                time.sleep(self._poll_s)
                continue
            for job in done:
                cell = self._pending.pop(job)
                try:
                    result = job.result()
                except Exception as exc:  # the job died: run_cell itself never raises
                    if on_lost is None:
                        raise
                    result = on_lost(cell, exc)
                yield cell, result

    def close(self) -> None:
        """Cancel the jobs still in flight (an interrupt, an error): their rows were never written."""
        for job in list(self._pending):
            try:
                job.cancel(check=False)
            except Exception:  # a job that finished meanwhile
                pass
        self._pending.clear()
