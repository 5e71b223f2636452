"""What the commands share: the checks of an output folder, and a task's tables, figures and statistics printed
and written there (after `run`, `merge` and `table`). The heavy libraries are imported on use."""

from __future__ import annotations

import os
from pathlib import Path

from protocols.specs import SpecError

EXIT_NOTHING_SCORED = 1  # the command worked but produced no result: a script must not take it for success


def output_folder(path: Path, flag: str, create: bool = True) -> None:
    """``--out`` must name a folder (or nothing yet, when the command creates it)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise SpecError(f"{flag} {path} is a file, not a folder")
    if create and not path.exists():
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecError(f"{flag} {path}: cannot create the folder ({exc.strerror or exc})") from None


def read_only(folder: Path) -> bool:
    """Whether ``folder`` sits on a read-only file system (``os.access`` says yes to root there too)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def stat_tasks() -> tuple[str, ...]:
    from harness.reporting.stats_report import stat_tasks

    return stat_tasks()


def publish(frame, task: str, out: Path, models: list[str] | None, datasets: list[str] | None,
            style: str = "text") -> None:
    """Print the task's tables and write them (txt, md, tex) and its figures under ``out``."""
    from harness.reporting.figures import task_figures
    from harness.records.input_sensitivity import read_verdicts
    from harness.reporting.pretraining_marks import marked_task_tables, read_declared_sources
    from harness.reporting.tables import render

    folder = out / "tables"
    folder.mkdir(parents=True, exist_ok=True)
    model_notes: dict[str, None] = {}  # printed once per run, after every table (each file keeps its own)
    verdicts = read_verdicts(out)
    shown: set[str] = set()  # a table in several families' sets (shift=0 is every kind's) is printed once
    for stem, table in marked_task_tables(frame, task, models, datasets, read_declared_sources(out), verdicts):
        text = render(table, style, with_model_notes=False)
        if text not in shown:
            print(text)
            shown.add(text)
        model_notes.update(dict.fromkeys(table.model_notes))
        for fmt, ext in (("text", "txt"), ("markdown", "md"), ("latex", "tex")):
            (folder / f"{stem}.{ext}").write_text(render(table, fmt))
    for note in model_notes:
        print(f"note: {note}")
    if verdicts:  # run --probe-input: the probe's verdicts (harness.reporting.input_sensitivity)
        from harness.reporting.input_sensitivity import verdict_table

        print(verdict_table(verdicts, "markdown" if style == "markdown" else "text"))
        for fmt, ext in (("text", "txt"), ("markdown", "md")):
            (folder / f"input_sensitivity.{ext}").write_text(verdict_table(verdicts, fmt))
    for path in task_figures(frame, task, out / "figures"):
        if path.suffix == ".png":
            print(f"figure: {path}")


def print_statistics(frame, task: str, out: Path, reference: str | None, quiet: bool = False) -> None:
    from harness.reporting.stats_report import stat_tasks, write_statistics

    if task not in stat_tasks():
        raise ValueError(f"--stats covers the tasks that score windows ({', '.join(stat_tasks())}), not {task}")
    done = write_statistics(frame[frame["task"] == task], out, out / "statistics", reference=reference)
    if quiet:
        return
    folder = out / "statistics"
    for name in (f"leaderboard_{task}.txt", f"significance_rmse_{task}_grid.txt"):
        if (folder / name).exists():
            print((folder / name).read_text())
    for line in done.produced:
        print(f"statistics: {line}")
    for what, why in done.missing:
        print(f"not computed: {what}: {why}")
