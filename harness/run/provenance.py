"""What a cell's row consumed (docs/records.md, provenance columns): the context and horizon its model actually
worked on, in samples and in seconds, at the rate it saw; the windows the protocol planned against those scored; the
seconds its model spent training and inferring.

Reproductions drift on what nobody recorded (a context length an adapter changed, a capped series count): every
row says it. The lengths and the plan are derived from the cell, the dataset and the model's own declaration
(``Model.consumed``), so a re-stamp (``harness.run.restamp``) fills them for rows that predate them; the seconds
are measured (``protocols.interface.CLOCK``) and only a run gives them.
"""

from __future__ import annotations

from typing import Any

from protocols.data import Dataset
from protocols.interface import CLOCK, Model


def consumed(task: Any, cell: Any, dataset: Dataset, model: Model | None) -> dict[str, object]:
    """The consumed lengths and rate of ``cell``: the task's (``Task.consumed_lengths``) at the dataset's rate,
    after the model's resampling (``Model.consumed``); None where they are not defined (a dataset without a
    declared rate has no lengths in seconds)."""
    context, horizon = task.consumed_lengths(cell)
    rate = dataset.sampling_rate
    if model is not None and context is not None:
        handed = rate
        context, rate = model.consumed(context, handed)
        if horizon is not None:
            horizon = model.consumed(horizon, handed)[0]
    return {"context_samples": context, "horizon_samples": horizon, "context_seconds": _seconds(context, rate),
            "horizon_seconds": _seconds(horizon, rate), "sampling_rate": rate}


def _seconds(samples: int | None, rate: float | None) -> float | None:
    return None if samples is None or not rate else samples / rate


def measured(before: tuple[float, float], model: Model | None, row: dict[str, object]) -> dict[str, object]:
    """Training seconds (a model trained per fold: ``capabilities.fit``, the supervised and adapted entries) and
    inference seconds per scored window, from the model clock's reading ``before`` the cell and now."""
    training, inference = (now - then for now, then in zip(CLOCK.reading(), before))
    windows = row.get("n_windows")
    fits = model is not None and model.capabilities.fit
    return {"training_seconds": training if fits else None,
            "inference_seconds_per_window": inference / windows if isinstance(windows, int) and windows > 0
            and model is not None else None}


def planned_problem(row: dict[str, object], planned: int | None) -> str | None:
    """Why an ok row is no result because it scored another number of windows than the protocol planned."""
    scored = row.get("n_windows")
    if row.get("status") != "ok" or planned is None or scored is None or int(scored) == planned:  # type: ignore[arg-type]
        return None
    return (f"scored {scored} windows but the protocol selected {planned} for scoring: "
            f"{abs(planned - int(scored))} {'missing' if int(scored) < planned else 'too many'}")  # type: ignore[arg-type]


KEPT_WHEN_COUNTS_DIFFER = ("n_points", "n_windows", "skipped_missing", "short_recordings", "details", "model_info")


def counted(row: dict[str, object], planned: int | None) -> dict[str, object]:
    """``row`` with ``windows_planned``; an ok row whose scored windows differ from the plan becomes an error row
    naming the difference (its metrics and per-window files dropped: a partial score is no result)."""
    problem = planned_problem(row, planned)
    if problem is None:
        return {**row, "windows_planned": planned}
    kept = {k: row[k] for k in KEPT_WHEN_COUNTS_DIFFER if k in row}
    return {**kept, "status": "error", "error": problem, "windows_planned": planned}


def identity_changes(out: object, rows: dict[str, dict[str, str]], fields: list[dict[str, object]],
                     identities: dict[str, dict[str, Any]], task: str, version: int) -> list[str]:
    """One line per identity a folder's rows hold that this run's differs from: other data under a dataset's name,
    other weights under a model's name, another version of the task. Such rows are never pooled with this run's
    (another data fingerprint or weights digest is another key, shown as another dataset or configuration; another
    version's cells are computed again and tables show the current one only): the lines say so, once each."""
    from harness.records.configurations import row_identity
    from harness.records.store import data_of
    from harness.registry.versions import protocol_version

    data_now: dict[str, set[str]] = {}
    for f in fields:
        data_now.setdefault(str(f["dataset"]), set()).add(data_of(str(f["protocol"])))
    weights_now = {m: i.get("weights") for m, i in identities.items() if i.get("weights")}
    old_data: dict[str, set[str]] = {}
    old_weights: dict[str, set[str]] = {}
    old_versions: dict[int, int] = {}
    for row in rows.values():
        if row["task"] != task:
            continue
        fp = row.get("data_fingerprint") or data_of(row["protocol"])
        if row["dataset"] in data_now and fp and fp not in data_now[row["dataset"]]:
            old_data.setdefault(row["dataset"], set()).add(fp)
        weights = (row_identity(row["model_info"]) or {}).get("weights")
        if row["model"] in weights_now and weights and weights != weights_now[row["model"]]:
            old_weights.setdefault(row["model"], set()).add(str(weights))
        found = protocol_version(task, row["protocol"])
        if found != version:
            old_versions[found] = old_versions.get(found, 0) + 1
    lines = [f"{out} holds rows of {name} with data {', '.join(sorted(old))}; this run's data is "
             f"{', '.join(sorted(data_now[name]))}: kept apart, shown as two datasets"
             for name, old in old_data.items()]
    lines += [f"{out} holds rows of {model} with weights {', '.join(sorted(old))}; this run's weights are "
              f"{weights_now[model]}: kept apart, shown as two configurations" for model, old in old_weights.items()]
    lines += [f"{out} holds {n} {task} rows of {task}-v{old}; this run computes {task}-v{version}: never pooled "
              f"(their cells are computed again; tables show {task}-v{version} only)"
              for old, n in sorted(old_versions.items())]
    return lines
