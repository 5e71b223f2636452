"""Keeping a bounded number of cells in flight: the one loop step every parallel executor shares."""

from __future__ import annotations

from typing import Callable, Iterator, TypeVar

C = TypeVar("C")
_END = object()


def top_up(queue: Iterator[C], pending: dict, limit: int, submit: Callable[[C], object]) -> bool:
    """Submit cells drawn from ``queue`` until ``limit`` are in ``pending`` (handle -> cell); True once
    ``queue`` is exhausted.

    Drawn lazily, so that the caller may skip cells another run finished meanwhile; bounded, so that
    an interrupt cancels little work. Every executor that keeps cells in flight fills them this way."""
    while len(pending) < limit:
        cell = next(queue, _END)
        if cell is _END:
            return True
        pending[submit(cell)] = cell
    return False
