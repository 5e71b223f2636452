"""The breakdowns that read the test windows again (``table TASK --by beats|quality|atlas``): each one's table and
figure, from the rows' stored per-window errors (forecasting and noise keep them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from harness.reporting.breakdown import Breakdown

WINDOW_BREAKDOWNS = ("beats", "quality", "atlas")  # the choices of `table --by` that read the windows again


def publish_window_breakdown(frame: pd.DataFrame, task: str, out: Path, by: str, data_root: Path | None = None
                             ) -> tuple[list[tuple[str, Breakdown]], list[Path]]:
    """([(stem, table)], figures under ``out/figures``) of one window breakdown."""
    from harness.registry.tasks import get_task

    if by not in WINDOW_BREAKDOWNS:
        raise ValueError(f"unknown window breakdown {by!r}; known: {', '.join(WINDOW_BREAKDOWNS)}")
    if not getattr(get_task(task), "scores_windows", False):
        raise ValueError(f"{task} has no breakdown by {by}: it keeps no per-window forecast errors "
                         "(forecasting and noise do)")
    folder = Path(out) / "figures"
    if by == "beats":
        from harness.reporting.beat_table import beat_figure, by_beats

        table, cases = by_beats(frame, task, out, data_root)
        return [(f"{task}_by_beats", table)], beat_figure(cases, folder / f"{task}_by_beats")
    if by == "quality":
        from harness.reporting.quality_bands import by_quality, quality_figure

        table, scored = by_quality(frame, task, out, data_root)
        return [(f"{task}_by_quality", table)], quality_figure(scored, folder / f"{task}_by_quality")
    from harness.reporting.atlas import atlas_figure, atlas_table

    table, top = atlas_table(frame, task, out)
    files, notes = atlas_figure(frame, top, out, folder / f"{task}_atlas", data_root)
    table = dataclasses.replace(table, notes=tuple(dict.fromkeys(table.notes + tuple(notes))))
    return [(f"{task}_atlas", table)], files
