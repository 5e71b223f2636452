"""A progress bar whose estimate of the time left follows each model's own cost.

Cells of one model run one after the other, and models differ in cost by orders of magnitude
(last value: milliseconds per cell; SOTER: seconds), so a bar that extrapolates the average rate
is wrong by minutes: fast cells first say "8 s left" when 44 s remain. This one keeps the mean
seconds per cell of each model, measured in this run or read from earlier rows of the same
record store, and estimates the rest as the sum over models of cells left x that model's mean
(leaving out its first cell, which also loads the model, once there are more; models not measured
yet count at the mean of those that are, and the estimate says so with "~").
"""

from __future__ import annotations

import sys
import time
from collections import Counter, defaultdict
from typing import Callable, Iterable, Mapping, TypeVar

T = TypeVar("T")


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


class CostEstimate:
    """Seconds left, from per-model mean cell costs."""

    def __init__(self, models: Iterable[str], prior: dict[str, list[float]] | None = None) -> None:
        self.left: Counter[str] = Counter(models)
        self._seconds: dict[str, list[float]] = defaultdict(list, {m: list(v) for m, v in (prior or {}).items()})

    def done(self, model: str, seconds: float | None) -> None:
        self.left[model] -= 1
        if seconds is not None:
            self._seconds[model].append(seconds)

    def skipped(self, model: str) -> None:
        self.left[model] -= 1

    def remaining(self) -> tuple[float | None, bool]:
        """(seconds left or None when nothing is measured yet, whether some models are guessed)."""
        # a model's first cell also loads it: once there is more, it is left out of the mean
        means = {m: (sum(v[1:]) / len(v[1:]) if len(v) > 1 else v[0]) for m, v in self._seconds.items() if v}
        if not means:
            return None, True
        fallback = sum(means.values()) / len(means)
        pending = {m: n for m, n in self.left.items() if n > 0}
        guessed = any(m not in means for m in pending)
        return sum(n * means.get(m, fallback) for m, n in pending.items()), guessed


class Progress:
    """tqdm bar (stderr) with the current cell and a per-model estimate; off when stderr is not a terminal."""

    def __init__(self, task: str, models: list[str], prior: dict[str, list[float]] | None = None,
                 enabled: bool = True) -> None:
        from tqdm import tqdm

        self.estimate = CostEstimate(models, prior)
        self.enabled = enabled and bool(models) and sys.stderr.isatty()
        self._bar = tqdm(total=len(models), desc=task, unit="cell", file=sys.stderr, disable=not self.enabled,
                         bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]")
        self._started = time.perf_counter()

    def running(self, model: str, dataset: str, setting: str) -> None:
        self._now = f"{model} on {dataset} {setting}"
        self._refresh()

    def finished(self, model: str, seconds: float | None) -> None:
        self.estimate.done(model, seconds)
        self._bar.update(1)
        self._refresh()

    def skipped(self, model: str) -> None:
        self.estimate.skipped(model)
        self._bar.update(1)
        self._refresh()

    def _refresh(self) -> None:
        if not self.enabled:
            return
        left, guessed = self.estimate.remaining()
        eta = "estimating" if left is None else f"{'~' if guessed else ''}{_clock(left)} left"
        now = getattr(self, "_now", "")
        self._bar.set_postfix_str(f"{eta}; {now}" if now else eta, refresh=True)

    def close(self) -> None:
        self._bar.close()


def cost_probes_first(items: list[T], model_of: Callable[[T], str], measured: Mapping[str, object]) -> list[T]:
    """Run two cells of every model whose cost is unknown (not in ``measured``) first (the first one pays for
    loading the model), so the time-left estimate knows every model's cost after a few cells. Records do not
    depend on the order; each such model loads once more. ``merge`` orders a serial run's rows by it too."""
    first: dict[str, list[int]] = {}
    for i, item in enumerate(items):
        model = model_of(item)
        if model not in measured and len(first.setdefault(model, [])) < 2:
            first[model].append(i)
    if len(first) < 2:
        return list(items)
    early = [i for idx in first.values() for i in idx]
    taken = set(early)
    return [items[i] for i in early] + [p for i, p in enumerate(items) if i not in taken]
