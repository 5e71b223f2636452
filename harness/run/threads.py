"""One compute thread per run process unless the user asks for more (issue #32).

SOTER's forecasts are thousands of small torch ops (an ODE solve per query) plus numba's parallel
routing kernel; with two threads each op ends at an OpenMP barrier. On a busy CPU (a shared laptop, a
login node) the partner thread is often descheduled, and every barrier then waits a scheduler time
slice: SOTER's cells ran 40-115x slower beside other work, while one thread only loses its fair share
(benchmarks/soter_threads_busy.py, BENCHMARKS.md). ``OMP_NUM_THREADS`` does not reach numba's pool,
so both are set here. Thread counts do not change which numbers a cell computes: numba's kernel gives
each output to one thread, and torch's CPU kernels agree to float rounding.

The limit never imports torch (most of a cached rerun's CPU when no model needs it): it sets the environment
variable, which torch reads when a model imports it, and tells a torch imported already directly, or the one a
model imported (:func:`limit_loaded_torch`: in case an OpenMP runtime had started before the variable was set).
It is set when a run starts, not before NumPy's import, so that NumPy's BLAS keeps the threads it always had.
"""

from __future__ import annotations

import os
import sys

TORCH_ENV = "OMP_NUM_THREADS"  # torch's intra-op threads (and every OpenMP pool started after this)
NUMBA_ENV = "NUMBA_NUM_THREADS"

_torch_pending = False  # one torch thread asked for before torch was imported


def single_thread_unless_set(force: bool = False) -> dict[str, int | None]:
    """Use one torch and one numba thread, except where the user set ``OMP_NUM_THREADS`` or
    ``NUMBA_NUM_THREADS`` themselves (``force``: always one, as pool workers sharing the cores do).
    Returns the thread counts now in force (None: that library is not imported, so it starts with the
    environment's count)."""
    global _torch_pending
    counts: dict[str, int | None] = {"torch": None, "numba": None}
    if force or TORCH_ENV not in os.environ:
        os.environ[TORCH_ENV] = "1"  # OpenMP pools started later (torch, a model's own library) read it
        if "torch" in sys.modules:
            sys.modules["torch"].set_num_threads(1)
        else:
            _torch_pending = True
    if force or NUMBA_ENV not in os.environ:
        if "numba" in sys.modules:  # imported already: its pool size is fixed, the threads it uses are not
            sys.modules["numba"].set_num_threads(1)
        else:
            os.environ[NUMBA_ENV] = "1"
    if "torch" in sys.modules:
        counts["torch"] = sys.modules["torch"].get_num_threads()
    if "numba" in sys.modules:
        counts["numba"] = sys.modules["numba"].get_num_threads()
    return counts


def limit_loaded_torch() -> None:
    """After a model loads: a torch it imported after the run's limit gets one thread as well (it read the
    environment when it started, unless an OpenMP runtime had started before the variable was set)."""
    global _torch_pending
    if _torch_pending and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
        _torch_pending = False
