"""The task base classes (re-exported by :mod:`harness.tasks`): :class:`Task` and :class:`ErrorTask`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from harness.registry.metrics import MAE, RMSE, Metric
from harness.registry.options import Option

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from harness.run.cells import Cell
    from harness.reporting.tables import Table
    from protocols.data import Dataset
    from protocols.interface import Model


PAPER_CELL_COLUMNS = ("table", "model", "dataset", "metric", "condition", "ours", "ours_std", "status", "reason")


class Task:
    """One task.  Subclass it, set :attr:`name`, implement :meth:`spec`, :meth:`points`,
    :meth:`evaluate` and :meth:`tables`; the rest has defaults."""

    name: str = ""
    description: str = ""
    default_seeds: tuple[int, ...] = (0,)  # seeds of a run that gives no --seeds
    scores_windows: bool = False  # writes per-window errors: the statistics (leaderboard, tests) apply
    horizon_curves: bool = False  # statistics: draw the error by horizon step
    model_free: tuple[str, ...] = ()  # pseudo-models run without loading a model (classification's random)
    figure: str | None = None  # what the task's figure shows (report's list); None: the task draws none
    options: tuple[Option, ...] = ()  # its flags of `run` (harness.registry.options); spec() gets their values
    metrics: tuple[Metric, ...] = ()  # the numbers its rows hold (harness.registry.metrics): evaluate() returns them
    ok_fields: tuple[str, ...] = ()  # record columns an ok row holds besides its metrics (error tasks: the sums)

    # -- planning ---------------------------------------------------------------------------
    def spec(self, options: Any, seed: int) -> Any:
        """The task's spec (anything with ``fingerprint()``) for one seed, from its options (a frozen
        dataclass with a field per entry of :attr:`options`: the value given, else the option's default);
        raise ``protocols.specs.SpecError`` for a bad value (checked when the RunConfig is made)."""
        raise NotImplementedError

    def points(self, spec: Any) -> list[tuple[Any, str, float | None]]:
        """The (setting, condition, level) combinations of a spec: one cell per point, fold, model and seed.
        The setting is typed: a ``protocols.specs.Setting`` (context/horizon) for forecasting-type tasks, else e.g.
        a segment length (an int) or a string; the cell carries it as ``cell.point``, and the records its name
        (``harness.run.cells.setting_name``: "96/48", "96")."""
        raise NotImplementedError

    def folds(self, dataset: Dataset) -> list[str]:
        """The folds a dataset is evaluated on (default: each subject held out once)."""
        from protocols.splits import loso_folds

        return [f.test_subject for f in loso_folds(dataset)]

    def default_models(self) -> tuple[str, ...]:
        """The registry's default models that declare this task, then :attr:`model_free`."""
        from models.registry import all_specs

        names = tuple(name for name, spec in all_specs().items() if spec.is_default_for(self.name))
        return names + self.model_free

    # -- one cell ---------------------------------------------------------------------------
    def capable(self, model: Model, cell: Cell) -> str | None:
        """Why ``model`` cannot take part in ``cell`` (the row is then ``unavailable``); None: it can."""
        return None

    def evaluate(self, cell: Cell, dataset: Dataset, model: Model | None) -> dict[str, object]:
        """The record row of one cell: ``status`` and the task's metric columns.  ``model`` is None for
        the pseudo-models of :attr:`model_free`.  Raise for failures: the cell records the error."""
        raise NotImplementedError

    def consumed_lengths(self, cell: Cell) -> tuple[int | None, int | None]:
        """(context, horizon) in samples that the protocol hands a model in ``cell``, before any resampling of the
        model's (``Model.consumed``): a setting's context and horizon, a segment length with no horizon
        (imputation, classification); (None, None) for a point that names neither."""
        point = cell.point
        if hasattr(point, "context") and hasattr(point, "horizon"):
            return int(point.context), int(point.horizon)
        if isinstance(point, (int, np.integer)) and not isinstance(point, bool):
            return int(point), None
        return None, None

    def planned_windows(self, cell: Cell, dataset: Dataset) -> int | None:
        """How many windows the protocol selected for scoring in ``cell``, counted apart from scoring them: a row
        whose ``n_windows`` differs scored another number than planned and is no result. None: the task does not
        count them (its rows are not checked)."""
        return None

    def ok_row_problem(self, row: Mapping[str, str]) -> str | None:
        """Why an ok row of this task (a records line: every value a string, "" when empty) is no result (None:
        it is one): each of its :attr:`metrics` and :attr:`ok_fields` must be present and a finite number (a
        metric registered ``nan_when_ok`` may be NaN). An empty field would otherwise read as NaN and drop out
        of a table's sums silently. The records store asks this of every ok row it writes or reads."""
        from harness.records.row_metrics import in_details

        extra = in_details(row.get("details") or "")  # a plugin's metrics live in details
        wanted = [(m.name, m.nan_when_ok) for m in self.metrics] + [(f, False) for f in self.ok_fields]
        for name, may_be_nan in wanted:
            value = row.get(name, extra.get(name))
            if value is None or value == "":
                return f"an ok row without {name}: a result holds every metric of its task"
            try:
                number = float(value)
            except (TypeError, ValueError):
                return f"{name} {str(value)[:40]!r} is not a number"
            if np.isinf(number) or (np.isnan(number) and not may_be_nan):
                return f"an ok row with {name} {value!r}: a metric that is not finite is no result"
        return None

    # -- records -> tables and figures --------------------------------------------------------
    def tables(self, frame: pd.DataFrame, models: list[str] | None = None,
               datasets: list[str] | None = None) -> list[tuple[str, Table]]:
        """Every table of the task as (file stem, table), from a records frame (all tasks' rows)."""
        raise NotImplementedError

    def figures(self, frame: pd.DataFrame, out_dir: Path) -> list[Path]:
        """The task's figure files (PNG and PDF) under ``out_dir``; none when the records support none."""
        return []

    def figure_missing(self, frame: pd.DataFrame) -> str:
        """Why :meth:`figures` drew nothing although the records hold rows of the task."""
        return f"no {self.name} cell finished ok"

    # -- records -> the paper's tables (harness report) ---------------------------------------
    def paper_cells(self, frame: pd.DataFrame, paper_dataset: Callable[[str], str]) -> pd.DataFrame:
        """The task's numbers as cells of the paper's tables (``harness report`` compares them with the
        paper's): one row per cell with :data:`PAPER_CELL_COLUMNS` (``table``: the paper's label,
        ``tab:...``; ``metric`` and ``condition`` as the paper's transcription names them; ``ours`` and
        ``ours_std`` x ``harness.reporting.tables.SCALE``; rows with no number give ``status`` and ``reason``), from a
        records frame (all tasks' rows).  Models and datasets keep the records' names: the report puts
        the paper's on them; ``paper_dataset`` gives the paper's name of a dataset, for a name a task makes
        of several (classification's average column).  Default: none (the paper has no table of the task)."""
        return cells_frame([])

    def __repr__(self) -> str:
        return f"<task {self.name}>"


class ErrorTask(Task):
    """Tasks scored by RMSE and MAE, folds pooled exactly (``harness.reporting.tables.pooled``); a table cell is
    the mean and std over :attr:`replicates`."""

    metrics = (RMSE, MAE)
    ok_fields = ("sse", "sae", "n_points")  # the error sums: folds pool exactly
    replicates: tuple[str, ...] = ("seed",)  # record columns whose values are the replicates
    replicate_words: str = "seeds"  # the replicates in words (notes on incomplete cells)
    title: str = ""  # caption start of a condition table
    over: str = "seeds"  # caption: "mean ± std over ..."
    figure_stem: str = ""  # file name of the figure (no suffix)
    figure_metrics: tuple[str, ...] = ()  # rows of the figure (one per metric); () draws no figure
    x_label: str = ""  # the figure's x axis: the condition's level
    x_ticks: str | None = None  # tick format at the conditions ("{:g}%"); None: matplotlib's
    unit: str = "window"  # what a cell scores ("no window of ... could be scored")

    def family(self, condition: str) -> str:
        """The named option (beyond the paper's protocol) a condition belongs to, e.g. a mask or an artefact;
        "" for the paper's.  Each family has its own tables and figure; the paper's keep their file names."""
        return ""

    def family_label(self, family: str) -> str:
        """The x axis of a family's figure (default: the task's)."""
        return self.x_label

    def families(self, frame) -> list[tuple[str, Any]]:
        """(family, the task's rows of it), the paper's first."""
        rows = frame[frame["task"] == self.name]
        names = rows["condition"].map(self.family) if len(rows) else rows["condition"]
        return [(f, rows[names == f]) for f in sorted(set(names), key=lambda f: (f != "", f))]

    def tables(self, frame, models=None, datasets=None):
        from harness.reporting.tables import file_stem, condition_tables

        out = []
        for family, rows in self.families(frame) or [("", frame)]:
            prefix = f"{self.name}_{family_stem(family)}_" if family else f"{self.name}_"
            out += [(prefix + file_stem(c), t) for c, t in condition_tables(rows, self.name, models, datasets)]
        return out

    def figures(self, frame, out_dir):
        from harness.reporting.figures import error_panels, save_figure

        if not self.figure_metrics:
            return []
        paths = []
        for family, rows in self.families(frame):
            stem = f"{self.figure_stem}_{family_stem(family)}" if family else self.figure_stem
            grid = error_panels(rows, self.name, self.figure_metrics, self.family_label(family) if family else None)
            paths += save_figure(grid, out_dir / stem)
        return paths

    def error_row(self, cell: Cell, out: Any, extra: dict[str, object] | None = None,
                  nothing_scored: str | None = None) -> dict[str, object]:
        """The row of a protocol result with ``errors`` (``protocols.metrics``), ``n_windows``,
        ``skipped_missing``, ``short_recordings`` and, where kept, per-window ``windows``.
        ``nothing_scored``: the task's own reason when nothing was scored (else the generic one)."""
        from harness.run.cells import WINDOW_ERRORS

        extra = extra or {}
        e = out.errors
        counts = {"n_windows": out.n_windows, "skipped_missing": out.skipped_missing,
                  "short_recordings": out.short_recordings}
        problem = ((nothing_scored if e.n == 0 else None)
                   or self._unscored_reason(cell, e, out.short_recordings, out.skipped_missing))
        if problem:
            return {"status": "error", "error": problem, "n_points": e.n, **counts, **extra}
        row = {"status": "ok", "rmse": e.rmse, "mae": e.mae, "sse": e.sse, "sae": e.sae, "n_points": e.n,
               **counts, **extra}
        windows = getattr(out, "windows", None)
        if windows is not None:  # per-window statistics: the runner writes them beside the records
            row[WINDOW_ERRORS] = windows.arrays()
        add_cell_files(row, channel_errors=getattr(out, "channels", None), masks=getattr(out, "mask", None))
        return row

    def _unscored_reason(self, cell: Cell, errors, short_recordings: int, skipped_missing: int) -> str | None:
        """Why a cell's metrics are no result (None: they are): nothing scored, or not finite numbers."""
        if errors.n == 0:
            return (f"no {self.unit} of {cell.setting} samples could be "
                    f"scored for test subject {cell.fold}: {short_recordings} recording(s) shorter than that, "
                    f"{skipped_missing} candidate(s) skipped for missing values or time gaps")
        bad = [name for name, v in (("RMSE", errors.rmse), ("MAE", errors.mae)) if not np.isfinite(v)]
        if bad:
            return (f"{' and '.join(bad)} not finite over {errors.n} points: the forecasts or the data hold values "
                    "beyond float range (check the data for extreme values)")
        return None


def family_stem(family: str) -> str:
    """A family's part of a file name: no dots (a figure's suffix would cut ``0.5s``), no spaces."""
    return "".join(ch if ch.isalnum() or ch == "-" else "_" for ch in family.replace(".", "p"))


def add_cell_files(row: dict[str, object], **arrays: Any) -> None:
    """Put arrays a cell keeps beside its row (``harness.records.cell_files``: folder -> object with ``arrays()``)
    into ``row``; None values are left out."""
    from harness.records.cell_files import CELL_FILES

    files = {folder: value.arrays() for folder, value in arrays.items() if value is not None}
    if files:
        row.setdefault(CELL_FILES, {}).update(files)


def paper_cell(table: str, model: str, dataset: str, metric: str, condition: str, ours: float, ours_std: float,
               status: str = "ok", reason: str = "") -> dict[str, object]:
    """One row of :meth:`Task.paper_cells`."""
    return {"table": table, "model": model, "dataset": dataset, "metric": metric, "condition": condition,
            "ours": ours, "ours_std": ours_std, "status": status, "reason": reason}


def cells_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """The frame :meth:`Task.paper_cells` returns, from :func:`paper_cell` rows (none: an empty frame)."""
    import pandas as pd

    return pd.DataFrame(rows, columns=list(PAPER_CELL_COLUMNS))


def details(**values: object) -> str:
    """The ``details`` column: a JSON object."""
    return json.dumps(values)


def details_notes(column: Any) -> tuple[str, ...]:
    """The ``notes`` of the rows' ``details`` (JSON, as :func:`details` writes them), each once, sorted: what a
    table says under it (a row without details, or with unreadable ones, adds none)."""
    notes: set[str] = set()
    for text in column:
        if isinstance(text, str) and text:
            try:
                notes.update(json.loads(text).get("notes", []))
            except (ValueError, AttributeError):
                continue
    return tuple(sorted(notes))
