"""Forecasts made outside the harness (issue #34): the export holds a model's exact inputs and no target,
and a predictions file is scored to the records a run of the same model writes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from harness.cli import main
from harness.external import export_windows, load_windows, save_predictions, score_predictions
from harness.external.layout import ExportFormatError
from harness.run.runner import RunConfig, execute
from harness.records.store import read_records
from harness.records.window_store import read_window_errors
from protocols.datasets.folder import write_folder_dataset
from protocols.imputation import build_task
from protocols.splits import get_fold
from protocols.datasets import load_dataset
from protocols.specs import ImputationSpec, Setting
from tests.conftest import make_dataset

SAME = ["status", "rmse", "mae", "sse", "sae", "n_points", "n_windows", "skipped_missing", "short_recordings",
        "details", "dataset", "fold", "setting", "condition", "seed", "protocol"]
TASKS = {  # small configurations of each exportable task
    "forecasting": {"settings": (Setting(48, 24), Setting(72, 36)), "max_windows_per_subject": 4},
    "noise": {"settings": (Setting(48, 24),), "levels": (0.0, 0.2), "max_windows_per_subject": 4},
    "imputation": {"rates": (0.5,), "seeds": (0, 1), "max_windows_per_subject": 3},
}


def _config(task: str, folder: Path, out: Path, **kw) -> RunConfig:
    """``kw``: the task's options by name (``settings``, ``rates`` ...) and ``seeds``."""
    options = {**TASKS[task], **kw}
    seeds = options.pop("seeds", None)
    return RunConfig(task=task, datasets=(str(folder),), models=("last-value",), out=out, progress=False,
                     device="cpu", seeds=seeds, options=options)


def last_value(windows) -> dict[str, np.ndarray]:
    """The last-value forecast, computed with numpy from the export alone: the last observed context value
    (imputation: the last observed value of the query's prefix, per channel)."""
    out = {}
    for unit, a in windows:
        if windows.manifest.kind == "forecast":
            out[unit.id] = np.repeat(a["context"][:, :, -1:], a["query_times"].shape[1], axis=2)
            continue
        pred = np.zeros(unit.prediction_shape)
        for q in range(unit.rows):
            for c in range(pred.shape[1]):
                seen = np.flatnonzero(a["mask"][q, c, :a["prefix_length"][q]])
                pred[q, c] = a["context"][q, c, seen[-1]]
        out[unit.id] = pred
    return out


def _scaled(dataset, fold: str, values: np.ndarray) -> np.ndarray:
    """MinMax of the fold's training subjects, computed here from the dataset (not by the harness's scaler)."""
    train = np.concatenate([r.values for r in dataset.recordings if r.subject != fold], axis=1)
    lo, hi = np.nanmin(train, axis=1), np.nanmax(train, axis=1)
    span = np.where(hi - lo > 0, hi - lo, 1.0)
    return (values - lo[:, None]) / span[:, None]


def true_values(windows, dataset_path: Path) -> dict[str, np.ndarray]:
    """What each unit's windows (queries) really hold next, taken from the dataset itself."""
    dataset = load_dataset(str(dataset_path))
    out = {}
    for unit, a in windows:
        recs = dataset.recordings
        if windows.manifest.kind == "forecast":
            context, horizon = map(int, unit.setting.split("/"))
            raw = [recs[r].values[:, s + context:s + context + horizon] for r, s in zip(a["recording"], a["start"])]
            out[unit.id] = np.stack([_scaled(dataset, unit.fold, v) for v in raw]) if raw else np.zeros((0,))
        else:
            raw = [recs[r].values[:, s + i] for r, s, i in zip(a["recording"], a["start"], a["position"])]
            out[unit.id] = np.stack([_scaled(dataset, unit.fold, v[:, None])[:, 0] for v in raw])
    return out


@pytest.mark.parametrize("task", list(TASKS))
def test_export_and_score_of_last_value_equals_its_run(task, folder, tmp_path):
    """Export, last-value in numpy outside the harness, score: the records of `run --models last-value`
    (metrics to 1e-12, per-window errors too), for forecasting, noise and imputation."""
    out = tmp_path / "out"
    config = _config(task, folder, out)
    execute(config, log=lambda m: None)
    windows = load_windows(export_windows(config, tmp_path / "windows") and tmp_path / "windows")
    save_predictions(tmp_path / "p.npz", windows, last_value(windows))
    summary = score_predictions(tmp_path / "windows", tmp_path / "p.npz", "last-value-numpy", out)
    assert summary.status_counts == {"ok": len(windows.units)}
    frame = read_records(out / "records.csv")
    ran = frame[frame["model"] == "last-value"].sort_values(["fold", "setting", "condition", "seed"])
    scored = frame[frame["model"] == "last-value-numpy"].sort_values(["fold", "setting", "condition", "seed"])
    assert len(ran) == len(scored) == len(windows.units) > 0
    for col in SAME:
        a, b = ran[col].to_numpy(), scored[col].to_numpy()
        if col in ("rmse", "mae", "sse", "sae"):
            np.testing.assert_allclose(b.astype(float), a.astype(float), rtol=1e-12, atol=1e-12)
        else:
            assert list(a) == list(b), col
    for (_, r), (_, s) in zip(ran.iterrows(), scored.iterrows()):
        mine, theirs = read_window_errors(out, s["key"]), read_window_errors(out, r["key"])
        assert (mine is None) == (theirs is None)
        for name in (theirs or {}):
            np.testing.assert_allclose(mine[name], theirs[name], rtol=1e-12, atol=1e-12) \
                if theirs[name].dtype.kind == "f" else np.testing.assert_array_equal(mine[name], theirs[name])


def test_the_cli_exports_and_scores(folder, tmp_path, capsys):
    windows, out = tmp_path / "w", tmp_path / "out"
    assert main(["windows", "export", "forecasting", "--dataset", str(folder), "--settings", "48/24",
                 "--max-windows-per-subject", "3", "--out", str(windows)]) == 0
    loaded = load_windows(windows)
    save_predictions(tmp_path / "p.npz", loaded, last_value(loaded))
    assert main(["score", "forecasting", "--export", str(windows), "--predictions", str(tmp_path / "p.npz"),
                 "--model", "mine", "--out", str(out)]) == 0
    assert main(["run", "forecasting", "--dataset", str(folder), "--settings", "48/24", "--models", "last-value",
                 "--max-windows-per-subject", "3", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.startswith(("mine", "last-value"))}
    numbers = {m: [re.match(r"[-\d.]+", cell).group() for cell in cells] for m, cells in rows.items()}
    assert numbers["mine"] == numbers["last-value"]  # beside the others, the same numbers
    # forecasts made elsewhere: their pre-training data are unknown, so their cells carry that mark (issue #35)
    assert all("?" in cell for cell in rows["mine"]) and not any("?" in cell for cell in rows["last-value"])
    assert "mine: forecasts made outside the harness" in text
    from harness.reporting.report import write_report

    write_report(out, tmp_path / "report")
    assert "| mine |" in (tmp_path / "report" / "tables" / "forecasting.md").read_text()
    assert "mine" in (tmp_path / "report" / "statistics" / "leaderboard_forecasting.csv").read_text()


def _all_numbers(folder: Path) -> tuple[bytes, np.ndarray]:
    """Every byte of every export file, and every number in its arrays."""
    blobs, numbers = b"", []
    for path in sorted(folder.iterdir()):
        blobs += path.read_bytes()
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as data:
                numbers += [data[k].ravel().astype(float) for k in data.files if data[k].dtype.kind == "f"]
    return blobs, np.concatenate(numbers)


def test_the_export_holds_no_target_value(folder, tmp_path):
    """Every window's target, taken from the dataset, is searched for in every export file (bytes and
    numbers): none is found where no exported context covers it (with stride = horizon a later window's
    context may cover an earlier window's horizon: the model of a run is handed that context too)."""
    config = _config("forecasting", folder, tmp_path / "o", settings=(Setting(48, 24),), max_windows_per_subject=3)
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    truth = true_values(windows, folder)
    blobs, numbers = _all_numbers(tmp_path / "w")
    covered = set()  # (fold, recording, sample) handed to a model as context in some unit of that fold
    for unit, a in windows:
        for r, s in zip(a["recording"], a["start"]):
            covered |= {(unit.fold, int(r), k) for k in range(s, s + int(unit.setting.split("/")[0]))}
    checked = 0
    for unit, a in windows:
        context = int(unit.setting.split("/")[0])
        for w, (r, s) in enumerate(zip(a["recording"], a["start"])):
            for step in range(truth[unit.id].shape[2]):
                if (unit.fold, int(r), int(s) + context + step) in covered:
                    continue
                values = truth[unit.id][w, :, step]
                assert not np.isin(values, numbers).any(), (unit.id, w, step)
                assert not any(v.tobytes() in blobs for v in values.astype(np.float64))
                checked += values.size
    assert checked > 0.5 * sum(t.size for t in truth.values())  # most targets are checked, few excused


def test_the_imputation_export_holds_no_scored_value(folder, tmp_path):
    """Every scored value (a missing channel at a query's position, taken from the protocol's own task) is
    searched for. Its own unit's file never holds it; the other files hold it only where another seed or rate
    observes it (every seed and rate imputes the same segments with other values missing, and a run hands
    that observed value to the model of that cell)."""
    config = _config("imputation", folder, tmp_path / "o", rates=(0.25, 0.5))
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    blobs, numbers = _all_numbers(tmp_path / "w")
    observed = set()  # (fold, recording, sample, channel) handed to a model as an observed value
    for unit, a in windows:
        for q in range(unit.rows):
            seen = np.argwhere(a["mask"][q, :, :a["prefix_length"][q]])
            observed |= {(unit.fold, int(a["recording"][q]), int(a["start"][q]) + int(k), int(c)) for c, k in seen}
    dataset = load_dataset(str(folder))
    own = elsewhere = 0
    for unit, a in windows:
        mine = (tmp_path / "w" / unit.file).read_bytes()
        spec = ImputationSpec(rates=(0.25, 0.5), max_windows_per_subject=3)
        task, selection = build_task(dataset, get_fold(dataset, unit.fold), spec, unit.level, unit.seed)
        for b, i in task.queries:
            ref = selection.windows[b]
            for c in np.flatnonzero(~task.observed[b, :, i]):
                value = task.values[b, c, i]
                assert not np.isin(value, a["context"]) and value.tobytes() not in mine
                own += 1
                if (unit.fold, ref.recording, ref.start + i, int(c)) not in observed:
                    assert not np.isin(value, numbers) and value.tobytes() not in blobs
                    elsewhere += 1
    assert own > 100 and elsewhere > 10


@pytest.mark.parametrize("task", ["forecasting", "imputation"])
def test_scoring_the_true_values_gives_error_zero(task, folder, tmp_path):
    config = _config(task, folder, tmp_path / "o")
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    save_predictions(tmp_path / "truth.npz", windows, true_values(windows, folder))
    score_predictions(tmp_path / "w", tmp_path / "truth.npz", "oracle", tmp_path / "out")
    frame = read_records(tmp_path / "out" / "records.csv")
    assert (frame["status"] == "ok").all() and frame["n_points"].sum() > 0
    assert frame["rmse"].max() < 1e-12 and frame["mae"].max() < 1e-12


def test_quantile_forecasts_are_scored(folder, tmp_path):
    """Quantiles at the manifest's levels give the CRPS estimate; the true values at every level give 0."""
    config = _config("forecasting", folder, tmp_path / "o", settings=(Setting(48, 24),))
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    truth = true_values(windows, folder)
    levels = len(windows.manifest.quantile_levels)
    quantiles = {k: np.repeat(v[..., None], levels, axis=-1) for k, v in truth.items()}
    save_predictions(tmp_path / "q.npz", windows, truth, quantiles)
    score_predictions(tmp_path / "w", tmp_path / "q.npz", "oracle-q", tmp_path / "out")
    keys = read_records(tmp_path / "out" / "records.csv")["key"]
    losses = [read_window_errors(tmp_path / "out", k)["quantile_loss"] for k in keys]
    assert all(np.all(q == 0) for q in losses) and sum(q.size for q in losses) > 0


def _bad(kind: str, arrays: dict[str, np.ndarray], windows) -> dict[str, object]:
    first = windows.units[0].id
    if kind == "missing window":
        arrays[first] = arrays[first][:-1]
    elif kind == "missing unit":
        del arrays[first]
    elif kind == "wrong shape":
        arrays[first] = arrays[first][:, :, :-1]
    elif kind == "NaN":
        arrays[first][1, 0, 3] = np.nan
    elif kind == "fingerprint":
        arrays["fingerprint"] = np.array("0" * 64)
    elif kind == "pickle":
        arrays[first] = np.array([{"a": 1}] * 2, dtype=object)
    return arrays


@pytest.mark.parametrize("kind, words", [
    ("missing window", "answers 3 of 4 rows: window 3"), ("missing unit", "no predictions for unit u00000"),
    ("wrong shape", "expected (4, 2, 24)"), ("NaN", "window 1 (recording"), ("fingerprint", "does not match"),
    ("pickle", "without pickled objects"),
])
def test_a_bad_predictions_file_is_refused_with_one_line_and_nothing_appended(kind, words, folder, tmp_path, capsys):
    out = tmp_path / "out"
    config = _config("forecasting", folder, out, settings=(Setting(48, 24),))
    execute(config, log=lambda m: None)
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    arrays = {"fingerprint": np.array(windows.manifest.fingerprint), **last_value(windows)}
    np.savez(tmp_path / "bad.npz", **_bad(kind, arrays, windows))
    before = (out / "records.csv").read_bytes()
    errors_before = sorted(p.name for p in (out / "window_errors").iterdir())
    capsys.readouterr()
    code = main(["score", "forecasting", "--export", str(tmp_path / "w"), "--predictions", str(tmp_path / "bad.npz"),
                 "--model", "bad-model", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err
    assert (out / "records.csv").read_bytes() == before
    assert sorted(p.name for p in (out / "window_errors").iterdir()) == errors_before


def test_a_registered_model_name_and_a_changed_dataset_are_refused(folder, tmp_path, capsys):
    config = _config("forecasting", folder, tmp_path / "o", settings=(Setting(48, 24),))
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    save_predictions(tmp_path / "p.npz", windows, last_value(windows))
    args = ["score", "forecasting", "--export", str(tmp_path / "w"), "--predictions", str(tmp_path / "p.npz"),
            "--out", str(tmp_path / "out")]
    assert main([*args, "--model", "last-value"]) == 2
    assert "registered model" in capsys.readouterr().err
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300, seed=1), folder)  # other data, same place
    with pytest.raises(ExportFormatError, match="dataset or protocol differs"):
        score_predictions(tmp_path / "w", tmp_path / "p.npz", "mine", tmp_path / "out")
    assert not (tmp_path / "out" / "records.csv").exists()


def test_exporting_classification_or_into_a_used_folder_is_refused(folder, tmp_path, capsys):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "x").write_text("x")
    assert main(["windows", "export", "forecasting", "--dataset", str(folder), "--out", str(tmp_path / "used")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    with pytest.raises(ValueError, match="cannot be exported"):
        export_windows(RunConfig(task="classification", datasets=(str(folder),)), tmp_path / "c")


def test_rows_scored_under_an_older_task_version_are_left_out(folder, tmp_path, monkeypatch):
    """A scored row carries its task's version like every row: a bump leaves it out of the tables, with a note; a
    code edit alone (another digest) does not."""
    from harness.records.configurations import code_problem, parse_info, with_identity
    from harness.registry import versions

    config = _config("forecasting", folder, tmp_path / "o", settings=(Setting(48, 24),))
    export_windows(config, tmp_path / "w")
    windows = load_windows(tmp_path / "w")
    save_predictions(tmp_path / "p.npz", windows, last_value(windows))
    score_predictions(tmp_path / "w", tmp_path / "p.npz", "mine", tmp_path / "out")
    rows = read_records(tmp_path / "out" / "records.csv")
    assert code_problem(rows, "forecasting") == "" and rows["protocol"].str.startswith("forecasting-v1;").all()
    identity = parse_info(rows["model_info"].iloc[0])["identity"]
    edited = rows.assign(model_info=[with_identity(i, {**identity, "code": "0" * 12}) for i in rows["model_info"]])
    assert code_problem(edited, "forecasting") == ""
    monkeypatch.setitem(versions.TASK_VERSIONS, "forecasting", 2)
    from harness.records import configurations

    configurations.current_task_version.cache_clear()
    try:
        bumped = read_records(tmp_path / "out" / "records.csv")
        assert bumped.empty and "rows of forecasting-v1 (now v2)" in bumped.attrs["older_versions"]["forecasting"]
    finally:
        configurations.current_task_version.cache_clear()


def test_the_worked_example_of_the_docs_runs(folder, tmp_path, monkeypatch, capsys):
    """docs/external.md's Python example, on a small export of the same name: it scores every unit."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "external.md").read_text()
    example = text.split("## Worked example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    assert main(["windows", "export", "forecasting", "--dataset", str(folder), "--settings", "48/24", "96/48",
                 "--max-windows-per-subject", "3", "--out", "exports/cohort-forecasting"]) == 0
    exec(compile(example, "docs/external.md", "exec"), {})
    frame = read_records(tmp_path / "results" / "runs" / "default" / "records.csv")
    assert set(frame["model"]) == {"seasonal-numpy"} and (frame["status"] == "ok").all() and len(frame) == 6
