"""Cells as Ray tasks: the executor seam on a Ray cluster (``run --executor ray``).

The driver stays the only writer of the record store; Ray only runs ``run_cell`` and hands each
row back, so caching, resume and interrupts behave as with local processes. Workers load the
datasets themselves (by name, or from paths and ``--data-root`` that every node must see):
a cell carries names, never data, so nothing large is shipped per task.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable, Iterable, Iterator, TypeVar

from harness.run.inflight import top_up

C = TypeVar("C")
R = TypeVar("R")

RAY_EXTRA = "pip install 'soter-bench[ray]'"
# environment the workers need to resolve the same models, data and caches as the driver
FORWARDED_ENV = ("SOTER_BENCH_PLUGINS", "SOTER_BENCH_DATA", "SOTER_BENCH_CACHE", "HF_HUB_OFFLINE", "HF_HOME")


class RayUnavailableError(RuntimeError):
    """``--executor ray`` without the ``ray`` package, or a cluster that cannot be reached."""


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailableError(f"--executor ray needs the Python package 'ray': {RAY_EXTRA}") from exc
    return ray


class RayExecutor:
    """Submit each cell as a Ray task with the resources ``resources(cell)`` asks for.

    Connects to ``address`` (``auto``, ``ray://host:10001``, or ``$RAY_ADDRESS`` when None), else
    starts a local instance, which it stops again on close. A cell whose worker dies (killed, out
    of memory, segfault) becomes ``on_lost(cell, error)``; the sweep goes on. Tasks are not
    retried: a cell that killed its worker once would most likely do it again.
    """

    def __init__(self, address: str | None = None, resources: Callable[[Any], dict[str, float]] | None = None,
                 num_cpus: int | None = None) -> None:
        ray = import_ray()
        self._ray = ray
        self._resources = resources or (lambda cell: {"num_cpus": 1})
        self._started = False
        self._pending: dict[Any, Any] = {}
        if not ray.is_initialized():
            env = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ}
            local = address is None and not os.environ.get("RAY_ADDRESS")
            try:
                ray.init(address=address, num_cpus=num_cpus if local else None, include_dashboard=False,
                         log_to_driver=False, logging_level=logging.WARNING, runtime_env={"env_vars": env})
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailableError(f"cannot connect to the Ray cluster at {address or os.environ.get('RAY_ADDRESS')}: "
                                          f"{exc}") from exc
            self._started = True

    @property
    def cluster_gpus(self) -> int:
        return int(self._ray.cluster_resources().get("GPU", 0))

    @property
    def cluster_cpus(self) -> int:
        return max(1, int(self._ray.cluster_resources().get("CPU", 1)))

    def run(self, fn: Callable[[C], R], cells: Iterable[C],
            on_lost: Callable[[C, BaseException], R] | None = None) -> Iterator[tuple[C, R]]:
        ray = self._ray
        task = ray.remote(max_retries=0)(fn)
        queue = iter(cells)
        limit = 2 * self.cluster_cpus
        exhausted = False
        while not exhausted or self._pending:
            if not exhausted:
                exhausted = top_up(queue, self._pending, limit,
                                   lambda cell: task.options(**self._resources(cell)).remote(cell))
            if not self._pending:
                break
            done, _ = ray.wait(list(self._pending), num_returns=1)
            for ref in done:
                cell = self._pending.pop(ref)
                try:
                    result = ray.get(ref)
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                        ray.exceptions.OutOfMemoryError, ray.exceptions.TaskCancelledError,
                        ray.exceptions.RayTaskError) as exc:
                    if on_lost is None:
                        raise
                    result = on_lost(cell, exc)
                yield cell, result

    def close(self) -> None:
        """Forget the tasks still in flight, and stop a local instance this executor started.

        Never ``ray.cancel``: in ray 2.x a cancel that races a task's completion reply fails a check
        in the driver's core worker (task_manager.cc "Tried to complete task that was not pending";
        ray-project/ray#54527), killing the driver with exit 1 instead of the interrupt's 130: it
        happened in CI, with and without ``force``. Nothing is lost by not cancelling: shutdown stops
        a local instance's workers; on a joined cluster Ray ends a driver's tasks when the driver
        exits, and in a process that goes on they finish and their results are discarded.
        """
        self._pending.clear()
        if self._started:
            self._ray.shutdown()
            self._started = False
