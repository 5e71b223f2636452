"""This run's numbers in the paper's names (:func:`our_cells`): the rows the report compares with the
transcribed paper tables and the study tables put beside them (:mod:`harness.reporting.study_tables`)."""

from __future__ import annotations

import re

import pandas as pd

DATASETS = {"heartrate": "HeartRate", "mitbih": "MIT-BIH", "scientisst-move": "ScientiSST MOVE",
            "ieee-ppg": "IEEE PPG", "mmash": "MMASH", "wdd": "WDD"}
AUTHORS = "soter-authors"
AUTHORS_LABEL = "SOTER (authors' checkpoint)"


def paper_model_names() -> dict[str, str]:
    from models.registry import all_specs

    names = {spec.name: spec.paper_name for spec in all_specs().values() if spec.paper_name}
    return {**names, "soter": "SOTER", AUTHORS: AUTHORS_LABEL, "random": "Random Baseline"}


OUR_CELL_COLUMNS = ["table", "model", "method", "dataset", "metric", "condition", "ours", "ours_std", "status",
                    "reason"]


def paper_dataset(name: str) -> str:
    """The paper's name of a records dataset (itself when the paper has none)."""
    return DATASETS.get(name, name)


def our_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """This run's numbers in the paper's names, conditions and scales (one row per cell): the cells of
    each registered task with records (``Task.paper_cells``), in registration order, the models and
    datasets given the paper's names."""
    from harness.registry.tasks import all_tasks

    names = paper_model_names()
    rows = []
    for task in all_tasks().values():
        if not (frame["task"] == task.name).any():
            continue
        registry = dict(zip(frame["model"], frame["model_name"])) if "model_name" in frame else {}
        for cell in task.paper_cells(frame, paper_dataset).to_dict("records"):
            rows.append({**cell, "method": _method(cell["model"], registry.get(cell["model"], cell["model"]), names),
                         "dataset": paper_dataset(cell["dataset"])})
    return pd.DataFrame(rows, columns=OUR_CELL_COLUMNS)


def _method(label: str, name: str, names: dict[str, str]) -> str:
    """The paper's name of a table row: a configuration's row (``soter [weights=...]``) keeps its suffix."""
    if label != name and label.startswith(name + " ["):
        return names.get(name, name) + label[len(name):]
    return names.get(label, label)


def paper_tolerance(value) -> str:
    """A tolerance as the paper printed it: 1e-5 (not 1e-05)."""
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{float(value):.0e}")
