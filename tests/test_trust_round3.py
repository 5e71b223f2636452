"""Issue #46, numbers you can trust (round three): caches keyed by the code, sampling parameters never pooled,
the code digest covering the worker scripts, inputs checked from their headers before they are read, ok rows
with every metric, reports whose defaults work, aggregates over shared cells, ranks within a group, and the
paper comparison saying what "ours" is."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.records.store import read_records

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, env: dict | None = None, limit: int | None = None) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` in a fresh process (a plugin edited between calls is imported anew; a file-size
    ``limit`` makes the disk "full")."""
    def shrink() -> None:
        if limit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, preexec_fn=shrink)


# -- the embedding cache follows the version rule: a declared revision, never an old pass ------------------
EMBEDDER = '''
import numpy as np
from models.registry import register_model
from protocols.interface import Capabilities, Model

FACTOR = {factor}


@register_model(description="test only: mean and std, scaled", default=False, tasks=("classification",),
                revision={revision})
class ScaledEmbedder(Model):
    name = "test-scaled-embedder"
    capabilities = Capabilities(forecast=False, embed=True, multivariate=True)

    def __init__(self, seed: int = 0) -> None:
        pass

    def _embed(self, batch):
        return FACTOR * np.concatenate([batch.values.mean(axis=2), batch.values.std(axis=2)], axis=1)
'''


def _embedder(tmp_path: Path, factor: float, revision: int = 1) -> dict[str, str]:
    (tmp_path / "embed_plugin.py").write_text(textwrap.dedent(EMBEDDER.format(factor=factor, revision=revision)))
    return {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "SOTER_BENCH_PLUGINS": "embed_plugin"}


def _classify(folder: Path, out: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    return _cli("run", "classification", "--dataset", str(folder), "--models", "test-scaled-embedder", "--budgets",
                "50", "100", "--seeds", "0", "--segment-length", "32", "--max-windows-per-subject", "6", "--out",
                str(out), "--no-progress", *extra, env=env)


def _scores(out: Path) -> pd.DataFrame:
    rows = read_records(out / "records.csv")
    return rows[["key", "status", "macro_f1", "macro_auroc"]].sort_values("key").reset_index(drop=True)


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_an_edited_model_is_never_served_its_old_embeddings(folder, tmp_path):
    out = tmp_path / "out"
    first = _classify(folder, out, _embedder(tmp_path, 1.0))
    assert first.returncode == 0, first.stderr
    before = _scores(out)
    changed = _classify(folder, out, _embedder(tmp_path, 0.0, revision=2))  # the embedding multiplied by zero
    assert changed.returncode == 0, changed.stderr
    assert "2 of them recomputed: their task's version or model's revision changed" in changed.stdout
    fresh = _classify(folder, tmp_path / "fresh", _embedder(tmp_path, 0.0, revision=2))
    assert fresh.returncode == 0, fresh.stderr
    after = _scores(out)
    pd.testing.assert_frame_equal(after, _scores(tmp_path / "fresh"))  # what a fresh folder gives
    assert not np.allclose(after["macro_f1"], before["macro_f1"])  # and not the old code's numbers
    rerun = _classify(folder, out, _embedder(tmp_path, 0.0, revision=2), "--rerun")
    assert rerun.returncode == 0, rerun.stderr
    pd.testing.assert_frame_equal(_scores(out), after)
    modes = {p.stat().st_mode & 0o777 for p in (out / "cache" / "embeddings").rglob("*.npy")}
    assert modes and modes == {(tmp_path / "fresh" / "records.csv").stat().st_mode & 0o777}  # the records' mode


# -- item 3: the code digest covers the worker scripts ---------------------------------------------------
WORKERS = REPO / "baselines" / "workers"
# every model served by a worker script, and its script (MOMENT, Moirai, Lag-Llama, TTM, TimesFM 1.0/2.0, the
# remote-code models)
WORKER_OF = {
    "moment-small": "moment_worker.py", "moment-base": "moment_worker.py", "moment-large": "moment_worker.py",
    "moirai-moe-small": "moirai_worker.py", "moirai-moe-base": "moirai_worker.py",
    "moirai-2.0-small": "moirai_worker.py", "lag-llama": "lag_llama_worker.py", "ttm": "ttm_worker.py",
    "timesfm-1.0": "timesfm1_worker.py", "timesfm-2.0": "timesfm1_worker.py", "timer-base": "remote_code_worker.py",
    "sundial-base": "remote_code_worker.py", "timemoe-base": "remote_code_worker.py",
    "timemoe-large": "remote_code_worker.py", "mira-large": "remote_code_worker.py",
}


def test_the_code_digest_covers_every_worker_script_a_model_runs():
    from harness.records.code_identity import code_files, row_modules
    from models.registry import all_specs

    named = {name: spec.options["worker"] for name, spec in all_specs().items() if "worker" in spec.options}
    assert set(named) <= set(WORKER_OF) and all(WORKER_OF[m] == w for m, w in named.items())  # the list is whole
    scripts = sorted(p.name for p in WORKERS.glob("*.py") if p.name not in ("__init__.py", "build_random.py"))
    assert sorted(set(WORKER_OF.values()) | {"_protocol.py"}) == scripts  # every worker script serves a model
    for model, script in WORKER_OF.items():
        files = {p.resolve() for p in code_files(row_modules(model, "forecasting")).values()}
        assert {(WORKERS / script).resolve(), (WORKERS / "_protocol.py").resolve()} <= files, model
        assert (REPO / "baselines" / "envs" / f"{all_specs()[model].options.get('env', 'x')}.txt").resolve() in files \
            or "env" not in all_specs()[model].options, model


def test_editing_a_script_a_module_runs_changes_the_code_digest(tmp_path, monkeypatch):
    from harness.records import code_identity

    package = tmp_path / "runs_scripts_pkg"
    (package / "workers").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "adapter.py").write_text('RUNS_FILES = ("workers/*.py",)\n')
    worker = package / "workers" / "worker.py"
    worker.write_text("print(1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = code_identity.code_digest(("runs_scripts_pkg.adapter",))
    worker.write_text("print(2)\n")
    assert code_identity.code_digest(("runs_scripts_pkg.adapter",)) != before


# -- item 5: an ok row holds every metric of its task ------------------------------------------------------
def _small_run(folder: Path, out: Path, models=("last-value",), **options):
    from harness.run.runner import RunConfig, execute
    from protocols.specs import Setting

    options = {"settings": (Setting(48, 24),), "max_windows_per_subject": 2, **options}
    return execute(RunConfig(datasets=(str(folder),), models=tuple(models), out=out, options=options, progress=False),
                   log=lambda m: None)


def _blank(path: Path, column: str) -> None:
    """Empty ``column`` in the first ok row of a records file (as a hand edit or a broken writer would)."""
    import csv

    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    at = rows[0].index(column)
    first = next(i for i, r in enumerate(rows[1:], start=1) if r[rows[0].index("status")] == "ok")
    rows[first][at] = ""
    with open(path, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


@pytest.mark.parametrize("column", ["sse", "n_points", "sae"])
def test_an_ok_row_without_an_error_sum_is_refused_not_read_as_nan(column, folder, tmp_path, capsys):
    from harness.cli import main
    from harness.records.store import RecordStoreError

    run = _small_run(folder, tmp_path / "out")
    _blank(run.records_path, column)
    with pytest.raises(RecordStoreError, match=f"line 2: an ok row without {column}"):
        read_records(run.records_path)
    capsys.readouterr()
    assert main(["table", "forecasting", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"an ok row without {column}" in err
    assert main(["repair", "--out", str(tmp_path / "out")]) == 0
    assert len(read_records(run.records_path)) == run.planned - 1  # the row moved aside, the others kept


def test_each_task_names_what_an_ok_row_holds():
    from harness.records.store import COLUMNS, row_problem

    row = dict.fromkeys(COLUMNS, "")
    row.update(key="k", task="classification", status="ok", macro_f1="0.5", macro_auroc="nan")
    assert row_problem(row) is None  # Macro-AUROC is undefined when a fold lacks a class
    assert "without macro_f1" in row_problem({**row, "macro_f1": ""})
    assert "without macro_auroc" in row_problem({**row, "macro_auroc": ""})
    # physiology: the sums always; RMSE and MAE exactly when a (span, channel) pair was scored
    rate = {**dict.fromkeys(COLUMNS, ""), "key": "k", "task": "physiology", "status": "ok", "sse": "0.0",
            "sae": "0.0", "n_points": "0"}
    assert row_problem(rate) is None  # every prediction without a rate: no error to average, the sums pool
    assert "without mae" in row_problem({**rate, "n_points": "3", "sse": "1.0", "sae": "1.0", "rmse": "0.5"})
    assert "no (span, channel) pair was scored" in row_problem({**rate, "rmse": "0.1", "mae": "0.1"})
    assert "without sse" in row_problem({**rate, "sse": ""})


def test_a_row_the_store_refuses_becomes_an_error_row_and_the_sweep_goes_on(tmp_path):
    from harness.records.store import RecordStore
    from harness.run.runner import _write_result

    store = RecordStore(tmp_path / "records.csv")
    fields = {"task": "forecasting", "dataset": "toy", "fold": "S1", "setting": "48/24", "condition": "clean",
              "model": "m", "seed": 0, "protocol": "p", "key": "0123456789abcdef"}
    _write_result(store, {**fields, "status": "ok", "rmse": 0.1, "mae": 0.1, "sse": 1.0, "sae": 1.0})  # no n_points
    row = RecordStore(tmp_path / "records.csv", readonly=True).get("0123456789abcdef")
    assert row["status"] == "error" and "an ok row without n_points" in row["error"]


# -- item 2: rows of two samplings are never pooled ---------------------------------------------------------
def _table_numbers(out: Path) -> dict[str, list[str]]:
    """`harness table forecasting` in Markdown: header cell -> the last-value row's numbers."""
    import contextlib
    import io

    from harness.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    lines = [line for line in printed.getvalue().splitlines() if line.startswith("|")]
    header = [c.strip().replace("\\", "") for c in lines[0].strip("|").split("|")]  # Markdown escapes [ ]
    row = next(line for line in lines if line.startswith("| last-value"))
    return dict(zip(header[1:], [c.strip().split(" ")[0] for c in row.strip("|").split("|")[1:]]))


def test_a_table_never_pools_rows_of_two_window_counts(folder, tmp_path):
    both = tmp_path / "both"
    _small_run(folder, both, max_windows_per_subject=2)
    _small_run(folder, both, max_windows_per_subject=4)
    _small_run(folder, tmp_path / "two", max_windows_per_subject=2)
    _small_run(folder, tmp_path / "four", max_windows_per_subject=4)
    shown = _table_numbers(both)
    alone_two, alone_four = _table_numbers(tmp_path / "two"), _table_numbers(tmp_path / "four")
    assert alone_two != alone_four  # the two samplings give other numbers
    assert {k.replace("toy [maxw=2] ", "toy "): v for k, v in shown.items() if "maxw=2" in k} == alone_two
    assert {k.replace("toy [maxw=4] ", "toy "): v for k, v in shown.items() if "maxw=4" in k} == alone_four
    assert len(shown) == 4  # two columns a sampling, no pooled one
    frame = read_records(both / "records.csv")
    assert set(frame["dataset"]) == {"toy [maxw=2]", "toy [maxw=4]"} and set(frame["dataset_name"]) == {"toy"}
    assert set(read_records(tmp_path / "two" / "records.csv")["dataset"]) == {"toy"}  # one sampling: its name


# -- item 4: inputs checked from their headers and sizes before any array is read --------------------------
def _export(folder: Path, tmp_path: Path):
    from harness.external import export_windows, load_windows
    from harness.run.runner import RunConfig
    from protocols.specs import Setting

    config = RunConfig(datasets=(str(folder),), models=("last-value",), out=tmp_path / "o", progress=False,
                       device="cpu", options={"settings": (Setting(48, 24),), "max_windows_per_subject": 2})
    export_windows(config, tmp_path / "w")
    return load_windows(tmp_path / "w")


def _bomb(path: Path, fingerprint: str, unit: str, megabytes: int) -> None:
    """An npz whose unit array is ``megabytes`` of zeros, deflated (a few hundred KB on disk)."""
    import zipfile

    header = {"descr": "<f8", "fortran_order": False, "shape": (megabytes << 17,)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("fingerprint.npy", "w") as member:
            np.lib.format.write_array(member, np.array(fingerprint))
        with archive.open(f"{unit}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, header)
            zeros = bytes(1 << 20)
            for _ in range(megabytes):
                member.write(zeros)


def test_a_zip_bomb_is_refused_from_its_headers_without_inflating_it(folder, tmp_path):
    import tracemalloc

    from harness.external import score_predictions
    from harness.external.score import PredictionsError

    windows = _export(folder, tmp_path)
    bomb = tmp_path / "bomb.npz"
    _bomb(bomb, windows.manifest.fingerprint, windows.units[0].id, megabytes=96)
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(PredictionsError, match=r"of shape \(12582912,\), expected \(2, 2, 24\)"):
            score_predictions(tmp_path / "w", bomb, "bomb", tmp_path / "out")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20  # the 96 MB array was never allocated, nor inflated
    assert not (tmp_path / "out" / "records.csv").exists()


def test_an_npz_is_checked_against_its_limits_before_any_array_is_read(tmp_path, monkeypatch):
    import zipfile

    from harness.external import npz_reader
    from harness.external.npz_reader import NpzError, npz_headers

    good = tmp_path / "good.npz"
    np.savez(good, a=np.zeros((4, 3)), b=np.arange(5))
    headers = npz_headers(good)
    assert {n: (h.shape, h.dtype.str) for n, h in headers.items()} == {"a": ((4, 3), "<f8"), "b": ((5,), "<i8")}
    assert np.array_equal(npz_reader.read_array(good, headers["b"]), np.arange(5))
    with pytest.raises(NpzError, match="more than the 0 MiB"):
        npz_headers(good, limit=100)  # the documented size limit, all arrays together
    monkeypatch.setattr(npz_reader, "MAX_ENTRIES", 1)
    with pytest.raises(NpzError, match="2 zip members"):
        npz_headers(good)  # counted from the end record, before zipfile parses the directory
    monkeypatch.undo()
    lying = tmp_path / "lying.npz"  # a header that claims more than its member holds
    with zipfile.ZipFile(lying, "w") as archive, archive.open("a.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 9,)})
        member.write(bytes(16))
    with pytest.raises(NpzError, match=r"declares shape \(1000000000,\)"):
        npz_headers(lying)
    nested = tmp_path / "nested.npz"
    with zipfile.ZipFile(nested, "w") as archive:
        archive.writestr("../a.npy", b"")
    with pytest.raises(NpzError, match="no array of an npz file"):
        npz_headers(nested)
    text = tmp_path / "text.npz"
    text.write_text("model,window,value\n")
    with pytest.raises(NpzError, match=r"not an npz file \(a zip of .npy arrays\)"):
        npz_headers(text)


def test_a_text_file_named_npz_is_one_line_naming_what_it_is_not(folder, tmp_path, capsys):
    from harness.cli import main

    _export(folder, tmp_path)
    (tmp_path / "p.npz").write_text("these are not predictions\n")
    capsys.readouterr()
    assert main(["score", "forecasting", "--export", str(tmp_path / "w"), "--predictions", str(tmp_path / "p.npz"),
                 "--model", "mine", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an npz file (a zip of .npy arrays)" in err and "allow_pickle" not in err


def test_a_manifest_naming_a_file_outside_its_folder_is_refused_unread(folder, tmp_path):
    import dataclasses
    import json

    from harness.external.layout import ExportFormatError, Manifest, Unit, read_manifest

    _export(folder, tmp_path)
    (tmp_path / "outside").mkdir()
    value = json.loads((tmp_path / "w" / "manifest.json").read_text())
    units = [Unit.from_json(u) for u in value["units"]]
    units[0] = dataclasses.replace(units[0], file="../outside/u.npz")
    (tmp_path / "outside" / "u.npz").write_bytes((tmp_path / "w" / "u00000.npz").read_bytes())
    manifest = Manifest(value["task"], value["kind"], value["config"], tuple(units),
                        tuple(value["quantile_levels"])).with_fingerprint()  # consistent, as a hostile export is
    (tmp_path / "w" / "manifest.json").write_text(manifest.to_json())
    with pytest.raises(ExportFormatError, match="is not a file name inside the export's folder"):
        read_manifest(tmp_path / "w")


# -- item 7: the accuracy-versus-cost figure averages every model over the cells they share ---------------
def test_accuracy_against_cost_is_a_mean_over_the_cells_every_model_finished():
    from harness.reporting.overhead import accuracy_points

    ours = pd.DataFrame([{"model": m, "weights": "trained", "status": "ok", "seconds_per_sample": s}
                         for m, s in (("soter", 0.05), ("last-value", 0.001), ("drift", 0.001))])
    rows = []
    for setting, hard in (("48/24", 1.0), ("96/48", 3.0)):  # the longer setting is harder for everyone
        for model, err in (("soter", 0.04), ("last-value", 0.06)):
            if model == "last-value" and setting == "96/48":
                continue  # last value ran the easy setting only
            rows.append({"task": "forecasting", "status": "ok", "dataset": "d", "fold": "S1", "setting": setting,
                         "condition": "clean", "seed": 0, "model": model, "rmse": err * hard, "model_info": ""})
    rows.append({"task": "forecasting", "status": "ok", "dataset": "other", "fold": "S9", "setting": "48/24",
                 "condition": "clean", "seed": 0, "model": "drift", "rmse": 0.5, "model_info": ""})
    left_out: list = []
    points = accuracy_points(ours, pd.DataFrame(rows), {"soter": "SOTER"}, left_out).set_index("model")
    # on the one cell both finished SOTER is the better; its own mean (4.0 and 12.0 -> 8.0) would read worse
    assert points.loc["SOTER", "rmse_x100"] == pytest.approx(4.0)
    assert points.loc["last-value", "rmse_x100"] == pytest.approx(6.0)
    assert set(points["cells"]) == {1} and "drift" not in points.index
    assert any(what.endswith("drift") and "shares no forecasting cell" in why for what, why in left_out)


# -- item 8: ranks within a group: zero-shot, supervised, scored from a predictions file -------------------
def test_rows_scored_from_a_file_are_ranked_in_a_group_of_their_own(folder, tmp_path):
    from harness.external import save_predictions, score_predictions
    from harness.reporting.stats_report import leaderboard
    from harness.reporting.tables import SCORED_GROUP, error_table, render
    from tests.test_external import last_value

    out = tmp_path / "out"
    _small_run(folder, out, ("last-value", "drift", "seasonal-naive"))
    windows = _export(folder, tmp_path)
    almost = {k: v + 0.001 for k, v in last_value(windows).items()}  # a hair from last value, made "elsewhere"
    save_predictions(tmp_path / "p.npz", windows, almost)
    score_predictions(tmp_path / "w", tmp_path / "p.npz", "mine", out)
    frame = read_records(out / "records.csv")
    board, _ = leaderboard(frame, {}, "forecasting")
    alone, _ = leaderboard(frame[frame.model != "mine"], {}, "forecasting")
    ranked = ["avg_rank", "wins", "ties", "losses", "cells_completed"]
    pd.testing.assert_frame_equal(board.loc[list(alone.index), ranked], alone[ranked])
    assert board.loc["mine", "group"] == SCORED_GROUP and board.loc["mine", ["wins", "ties", "losses"]].sum() == 0
    assert np.isfinite(board.loc["mine", "skill"])  # its ratio to the baseline: comparable across groups
    table = error_table(frame, "forecasting")
    assert table.scored == ("mine",)
    text = render(table).splitlines()
    at = text.index("-- scored from a predictions file --")
    assert text[at + 1].startswith("mine") and not any(m in text[at + 1] for m in "¹²")
    # item 11: its pre-training overlap note names where it was read, and no empty date
    import contextlib
    import io

    from harness.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    note = next(line for line in printed.getvalue().splitlines() if line.startswith("? mine: pre-training overlap"))
    assert note.endswith("(pretraining\\_overlap.toml)") and "checked" not in note


# -- item 11: a mark says better than another ---------------------------------------------------------------
def test_two_values_mark_the_best_only_and_equal_values_none():
    from harness.reporting.tables import Column, Entry, Table, render

    col = Column("d", "Macro-F1", higher_is_better=True)

    def marks(values: dict[str, float]) -> dict[str, str]:
        table = Table("t", (col,), tuple(values), {(m, col): Entry(v, np.nan, 1, 1, "ok") for m, v in values.items()})
        rows = [line.split() for line in render(table).splitlines() if line.split() and line.split()[0] in values]
        return {r[0]: r[1].lstrip("0123456789.") for r in rows}

    assert marks({"a": 60.0, "b": 40.0}) == {"a": "¹", "b": ""}  # of two, the other is the worst, not the second
    assert marks({"a": 50.0, "b": 50.0}) == {"a": "", "b": ""}
    assert marks({"a": 60.0, "b": 40.0, "c": 50.0}) == {"a": "¹", "b": "", "c": "²"}


# -- item 12: a critical-difference diagram gives each model its own colour ---------------------------------
def test_models_ten_registry_places_apart_get_distinct_colours():
    from harness.reporting.figures import model_colours
    from models.registry import all_specs

    names = list(all_specs())
    models = [names[i] for i in (0, 1, 2, 10, 11, 12, 20, 21, 22)]  # colliding indices mod 10
    colours = model_colours(models)
    assert len(set(colours.values())) == 9 and list(colours) == models
    assert colours[names[0]] == "C0"  # a model whose own colour is free keeps it (the other figures')


# -- item 9: every comparison with the paper says what "ours" is ------------------------------------------
def test_the_paper_comparison_says_which_checkpoint_subjects_and_windows_ours_are(tmp_path, monkeypatch):
    import json

    from safetensors import safe_open

    from harness.reporting.report import write_report
    from models.soter.entries import faithful_entry

    SHIPPED = faithful_entry().folder
    from tests.test_report import fixed_records

    frame = fixed_records()  # SOTER and last value on two MIT-BIH records, four settings
    soter = frame["model"] == "soter"
    frame.loc[soter, "model_info"] = json.dumps({"checkpoint": SHIPPED.name, "checkpoint_sha256": "f298a554a98546d1",
                                                 "source": SHIPPED.relative_to(REPO).as_posix()})
    frame["protocol"] = "maxw=2;stride=None;seed=0;data=0123456789ab"
    frame["n_windows"] = 2
    results = tmp_path / "run"
    results.mkdir()
    frame.to_csv(results / "records.csv", index=False)
    monkeypatch.chdir(tmp_path)
    report = write_report(results, tmp_path / "out")
    text = (tmp_path / "out" / "comparison" / "main_results.md").read_text()
    with safe_open(str(SHIPPED / "model.safetensors"), framework="np") as weights:
        size = sum(int(np.prod(weights.get_slice(k).get_shape())) for k in weights.keys())
    assert "Ours, beside the paper's numbers" in text
    assert f"- soter: checkpoint {SHIPPED.name}, {size / 1e6:.2f}M parameters, weights sha256 f298a554a98546d1" in text
    assert ("- mitbih: 2 test subjects (100, 101), at most 2 windows per subject, 2 scored per subject and setting on "
            "average; seed 0; settings 48/24, 72/36, 96/48, 128/64") in text
    assert "- last-value: no pre-trained weights (computed from each window's context)" in text
    # item 12: the caption as text, the main table's condition in words, no absolute path in the header
    assert "rescaled by 10²" in text and "$" not in text and "\\ref" not in text
    assert "mean over the 4 settings (context/horizon)" in text and "mean over 4 windows" not in text
    page = report.html.read_text()
    assert "10^{2}" not in page and "Table~" not in page and "rescaled by 10²" in page
    assert "trained on a GPU" not in report.path.read_text()  # the study runners train on a CPU too
    header = page[page.index("<h1>Report</h1>"):page.index("<nav>")]
    assert "Records: run/records.csv" in header and "Paper tables: " in header
    assert str(tmp_path) not in header and str(REPO) not in header


def test_a_comparison_describes_a_foundation_model_without_a_checkpoint_from_its_registration():
    """Fracast's weights ship in its wheel (no checkpoint folder, digest or hub id in its rows): it is a
    pre-trained foundation model, not "no trained weights (a statistical baseline)"."""
    import json

    from harness.reporting.ours import weights_of
    from models.pretraining import model_entry

    info = {"fracast": "0.1.0", "identity": {"code": "725ecbe9a8c0", "model_id": "", "options": {}},
            "name": "fracast", "variant": "w8", "weights": "bundled in the wheel"}
    text = weights_of(pd.DataFrame({"model": ["fracast"], "model_info": [json.dumps(info)]}))
    assert text.startswith("pre-trained weights bundled in the wheel (foundation model, licence Apache-2.0")
    assert model_entry("fracast").data in text and "no trained weights" not in text
    ridge = weights_of(pd.DataFrame({"model": ["ridge"], "model_info": ["{}"]}))
    assert ridge.startswith("no pre-trained weights (trained in each cell on that fold's training subjects")


# -- item 11: the smaller ones ---------------------------------------------------------------------------------
def test_a_refused_model_load_is_tried_once_per_process_not_once_per_cell(folder, tmp_path):
    from protocols.specs import Setting
    from tests.plugin_models import RefusedLoad

    RefusedLoad.tries = 0
    run = _small_run(folder, tmp_path / "out", ("test-refused-load",), settings=(Setting(48, 24), Setting(72, 36)))
    rows = read_records(run.records_path)
    assert run.planned == 6 and len(rows) == 6 and set(rows["status"]) == {"error"}
    assert rows["error"].str.contains("this checkpoint is refused").all()  # every row says why
    assert RefusedLoad.tries == 1


def test_a_full_disk_during_an_export_leaves_nothing_that_blocks_the_rerun(folder, tmp_path):
    args = ["windows", "export", "forecasting", "--dataset", str(folder), "--settings", "48/24",
            "--max-windows-per-subject", "2", "--out", str(tmp_path / "w")]
    full = _cli(*args, limit=4096)
    assert full.returncode == 2 and full.stderr.count("\n") == 1, full.stderr
    assert "could not write the export" in full.stderr and "nothing of it was kept" in full.stderr
    assert "record" not in full.stderr  # an export writes no records
    assert not (tmp_path / "w").exists()
    again = _cli(*args)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "w" / "manifest.json").is_file()


@pytest.mark.parametrize("manifest", ["dataset.toml", "dataset.json"])
def test_a_manifest_with_a_byte_order_mark_reads_as_without(manifest, tmp_path):
    import json

    from protocols.data import dataset_fingerprint
    from protocols.datasets import load_dataset
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    path = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), path)
    before = dataset_fingerprint(load_dataset(str(path)))
    if manifest == "dataset.toml":  # the same fields as TOML (the JSON writer's values are strings, numbers, lists)
        fields = json.loads((path / "dataset.json").read_text())
        (path / "dataset.json").unlink()
        top = [f"{k} = {json.dumps(v).lower() if isinstance(v, bool) else json.dumps(v)}"
               for k, v in fields.items() if k != "recordings"]
        tables = ["[[recordings]]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in r.items())
                  for r in fields["recordings"]]
        (path / "dataset.toml").write_text("\n".join(top) + "\n\n" + "\n\n".join(tables) + "\n")
        assert dataset_fingerprint(load_dataset(str(path))) == before
    (path / manifest).write_bytes(b"\xef\xbb\xbf" + (path / manifest).read_bytes())  # as Notepad saves it
    assert dataset_fingerprint(load_dataset(str(path))) == before


def test_names_from_the_records_are_text_in_reports_and_figures(tmp_path):
    """A dataset named with HTML and with TeX: REPORT.md and a Markdown breakdown show the name, never render it;
    a figure draws it as a label (matplotlib's mathtext failed to parse it, and the report wrote nothing)."""
    import dataclasses

    from harness.reporting.breakdown import by_subject
    from harness.reporting.report import write_report
    from protocols.datasets.folder import write_folder_dataset
    from protocols.specs import Setting
    from tests.conftest import make_dataset
    from harness.run.runner import RunConfig, execute

    name = "<b>toy</b> $x\\frac{1$"
    write_folder_dataset(dataclasses.replace(make_dataset(n_subjects=3, n_samples=300), name=name), tmp_path / "ds")
    execute(RunConfig(task="noise", datasets=(str(tmp_path / "ds"),), models=("last-value", "drift"),
                      out=tmp_path / "run", progress=False, options={"settings": (Setting(48, 24),),
                                                                     "levels": (0.0, 0.5), "max_windows_per_subject": 2}),
            log=lambda m: None)
    report = write_report(tmp_path / "run", tmp_path / "out")
    assert (tmp_path / "out" / "figures" / "noise_robustness.png").is_file()
    text = report.path.read_text()
    assert "\\<b>toy\\</b>" in text and "<b>" not in text.replace("\\<", "")  # every tag opener escaped
    breakdown = by_subject(read_records(tmp_path / "run" / "records.csv"), "noise", tmp_path / "run").render("markdown")
    assert "<b>" not in breakdown and "\\<b\\>toy" in breakdown


def test_a_time_error_prints_plain_numbers(tmp_path):
    from protocols.data import DatasetError
    from protocols.datasets import load_dataset
    from protocols.datasets.folder import write_folder_dataset
    from tests.conftest import make_dataset

    path = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), path)
    first = sorted(path.glob("*.csv"))[0]
    lines = first.read_text().splitlines()
    lines[2], lines[3] = lines[3], lines[2]  # two rows swapped: time goes back
    first.write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"'time' is not strictly increasing at data row 3 \(0\.2 then 0\.1\)") as err:
        load_dataset(str(path))
    assert "np.float64" not in str(err.value)


def test_a_channel_never_observed_on_the_training_subjects_is_named_without_a_numpy_warning():
    import dataclasses
    import warnings

    from protocols.data import DatasetError
    from protocols.scaling import fit_minmax
    from tests.conftest import make_dataset

    ds = make_dataset(n_subjects=3, n_samples=300)
    recs = tuple(dataclasses.replace(r, values=np.vstack([r.values[:1], np.full_like(r.values[1:], np.nan)]))
                 for r in ds.recordings)
    ds = dataclasses.replace(ds, recordings=recs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "All-NaN slice encountered" would be an error here
        with pytest.raises(DatasetError, match=r"channel 'b' has no observed value on the training subjects S00, S01"):
            fit_minmax(ds, ("S00", "S01"))


def test_a_span_whose_peak_intervals_scatter_has_no_rate_and_no_numpy_warning(monkeypatch):
    import warnings

    from protocols import physiology

    monkeypatch.setattr(physiology, "detect_peaks", lambda x, fs, measure: np.array([0, 10, 100]))
    measure = physiology.MEASURES["hr-ecg"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "Mean of empty slice" would be an error here
        assert physiology.mean_rate(np.sin(np.arange(400) / 5.0), 100.0, measure) is None


def test_physiology_tables_name_the_unit_and_never_mark_a_row_with_no_rate_best(tmp_path):
    """Two models on one measure: one forecasts rates (the better), one never (100 % no rate, its MAE undefined);
    a condition whose every row failed keeps the measure's unit in its header."""
    import json

    from harness.records.store import COLUMNS, rows_to_frame
    from harness.reporting.tables import render
    from harness.tasks.physiology import TASK

    def row(model, fold, condition, n, status="ok", unit="bpm"):
        facts = {"unit": unit, "pairs": 2, "truth_failed": 0, "prediction_failed": 2 - n} if status == "ok" else {}
        base = {**dict.fromkeys(COLUMNS, ""), "key": f"{model}{fold}{condition}", "task": "physiology",
                "dataset": "d", "fold": fold, "setting": "30s/20s", "condition": condition, "model": model,
                "seed": "0", "protocol": "p", "status": status, "details": json.dumps(facts),
                "finished_at": "2026-11-25T00:00:00+00:00"}
        if status != "ok":
            return {**base, "error": "no span could be taken"}
        sums = {"sse": repr(4.0 * n), "sae": repr(2.0 * n), "n_points": str(n)}
        return {**base, **sums, **({"rmse": "2.0", "mae": "2.0"} if n else {})}

    rows = [row(m, f, "hr-ecg", n) for f in ("P1", "P2") for m, n in (("seasonal-naive", 2), ("last-value", 0))]
    rows += [row(m, f, "br-resp", 0, status="error") for f in ("P1", "P2") for m in ("seasonal-naive", "last-value")]
    frame = rows_to_frame(rows).assign(model_name=lambda f: f["model"])
    (_, table), = TASK.tables(frame)
    text = render(table)
    assert "hr-ecg MAE (bpm)" in text and "br-resp MAE (breaths/min)" in text and "MAE ()" not in text
    line = next(x for x in text.splitlines() if x.startswith("last-value"))
    assert "no rate" in line and "100.00" in line and "¹" not in line and "²" not in line  # the worst: unmarked


# -- item 12: tried as a new user would ------------------------------------------------------------------------
def _one_line(capsys, *args: str) -> str:
    from harness.cli import main

    capsys.readouterr()
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: "), captured.err
    return captured.err


def test_an_option_value_of_the_wrong_type_is_refused_before_any_cell(folder, tmp_path, capsys):
    out = tmp_path / "out"
    run = ["run", "forecasting", "--dataset", str(folder), "--models", "soter", "--settings", "48/24",
           "--max-windows-per-subject", "2", "--out", str(out), "--no-progress"]
    err = _one_line(capsys, *run, "--model-option", "soter.batch_size=lots")
    assert "soter.batch_size: 'lots' is not a whole number" in err and not out.exists()
    err = _one_line(capsys, *run, "--model-option", "soter.per_channel=3")
    assert "soter.per_channel: 3 is not True or False" in err


def test_weights_the_model_cannot_load_are_refused_before_planning(folder, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    out = tmp_path / "out"
    err = _one_line(capsys, "run", "forecasting", "--dataset", str(folder), "--models", "soter", "--weights",
                    f"soter={tmp_path / 'empty'}", "--settings", "48/24", "--out", str(out), "--no-progress")
    assert f"--weights soter={tmp_path / 'empty'}" in err and "model.safetensors" in err and not out.exists()


def test_a_report_of_results_that_do_not_exist_is_refused(tmp_path, capsys):
    err = _one_line(capsys, "report", "--results", str(tmp_path / "no" / "such"), "--out", str(tmp_path / "rep"))
    assert "does not exist" in err and not (tmp_path / "rep").exists()


# -- item 10: the sampling seed comes from the data, not from its name -----------------------------------------
def test_a_renamed_dataset_gives_identical_windows_and_numbers(tmp_path):
    import dataclasses

    from harness.run.runner import RunConfig, execute
    from protocols.datasets import load_dataset
    from protocols.datasets.folder import write_folder_dataset
    from protocols.specs import SamplingSpec, Setting
    from protocols.windows import select_windows
    from tests.conftest import make_dataset

    data = make_dataset(n_subjects=3, n_samples=300)
    folders = {name: tmp_path / name for name in ("toy", "renamed", "third name")}
    for name, path in folders.items():
        write_folder_dataset(dataclasses.replace(data, name=name), path)
    loaded = [load_dataset(str(p)) for p in folders.values()]
    sampling = SamplingSpec(max_windows_per_subject=2)
    for subject in data.subjects:
        drawn = {select_windows(ds, subject, Setting(48, 24), sampling).windows for ds in loaded}
        assert len(drawn) == 1  # the same two of the subject's eleven candidate windows, whatever the name
    numbers = []
    for path in folders.values():
        for task, options in (("forecasting", {"settings": (Setting(48, 24),)}), ("imputation", {"rates": (0.5,)}),
                              ("noise", {"settings": (Setting(48, 24),), "levels": (0.3,)})):
            execute(RunConfig(task=task, datasets=(str(path),), models=("last-value",), out=path.parent / f"o-{path.name}",
                              seeds=(0,), progress=False, options={**options, "max_windows_per_subject": 2}),
                    log=lambda m: None)
        rows = read_records(path.parent / f"o-{path.name}" / "records.csv")
        numbers.append(rows.sort_values(["task", "fold", "setting", "condition"])[["task", "fold", "rmse", "sse",
                                                                                   "n_points"]].reset_index(drop=True))
    assert len(numbers[0]) == 9
    for other in numbers[1:]:
        pd.testing.assert_frame_equal(other, numbers[0])  # masks and noise draws too
