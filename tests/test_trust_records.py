"""Issue #27, the records side: a row is reused only when its data, weights, options and code are the
current ones; records files are read by column name, never changed by readers; a read-only folder, a
full disk or an oversized config end in one line, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from safetensors.torch import load_file, save_file

from harness.cli import main
from harness.run.runner import RunConfig, execute
from harness.records.store import COLUMNS, RecordStore, RecordStoreError, read_records, row_key
from models.soter.entries import faithful_entry

SHIPPED = faithful_entry().folder
from protocols.specs import Setting

REPO = Path(__file__).resolve().parents[1]
METRICS = ["key", "status", "rmse", "mae", "sse", "sae", "n_points", "n_windows"]


def _run(folder: Path, out: Path, models=("last-value",), **kw) -> object:
    options = {"settings": (Setting(48, 24),), "max_windows_per_subject": 2}
    return execute(RunConfig(datasets=(str(folder),), models=tuple(models), out=out, options=options, progress=False,
                             **kw), log=lambda m: None)


def _metrics(path: Path) -> pd.DataFrame:
    return read_records(path)[METRICS].sort_values("key").reset_index(drop=True)


def _cli(*args: str, env: dict | None = None, limit: int | None = None) -> subprocess.CompletedProcess:
    """``python -m harness ARGS`` in a fresh process (a file-size limit makes the disk "full")."""
    def shrink() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, preexec_fn=shrink)


# -- item 1: weights changed in place ---------------------------------------------------------------------
def _middle_tensors(file: Path, n: int = 3) -> list[str]:
    """Tensors whose bytes lie wholly inside the file, more than 1 MiB from either end."""
    header_len = int.from_bytes(file.read_bytes()[:8], "little")
    header = json.loads(file.read_bytes()[8:8 + header_len])
    size, base = file.stat().st_size, 8 + header_len
    inside = [k for k, v in header.items() if k != "__metadata__"
              and base + v["data_offsets"][0] > 1 << 20 and base + v["data_offsets"][1] < size - (1 << 20)]
    assert len(inside) >= n
    return inside[len(inside) // 2 - 1: len(inside) // 2 - 1 + n]


def _scale_in_place(checkpoint: Path, factor: float = 3.0) -> None:
    file = checkpoint / "model.safetensors"
    state = load_file(str(file))
    for name in _middle_tensors(file):
        state[name] = state[name] * factor
    save_file(state, str(file), metadata={"format": "pt"})


def test_weights_changed_in_place_are_recomputed_not_reused(folder, tmp_path):
    """The shipped checkpoint (2.2 MB: more than the first and last MiB) with three middle tensors scaled."""
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, checkpoint)
    (checkpoint / "SHA256SUMS").unlink()
    out = tmp_path / "out"
    first = _run(folder, out, ("soter",), weights=(("soter", str(checkpoint)),))
    assert first.ran == first.planned
    size = (checkpoint / "model.safetensors").stat().st_size
    _scale_in_place(checkpoint)
    assert (checkpoint / "model.safetensors").stat().st_size == size
    again = _run(folder, out, ("soter",), weights=(("soter", str(checkpoint)),))
    assert again.skipped_done == 0 and again.ran == again.planned
    fresh = _run(folder, tmp_path / "fresh", ("soter",), weights=(("soter", str(checkpoint)),))
    mine = read_records(out / "records.csv")
    old = mine[mine["key"].isin(first.keys)].sort_values("fold")["rmse"].to_numpy()
    mine = mine[mine["key"].isin(again.keys)][METRICS].sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine, _metrics(fresh.records_path))
    assert not np.allclose(old, read_records(out / "records.csv").set_index("key").loc[again.keys]
                           .sort_values("fold")["rmse"].to_numpy())  # the scaled weights' own numbers


def test_a_checksum_file_that_does_not_verify_is_not_trusted(folder, tmp_path):
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, checkpoint)  # with its SHA256SUMS, now stale
    out = tmp_path / "out"
    first = _run(folder, out, ("soter",), weights=(("soter", str(checkpoint)),))
    assert first.status_counts == {"ok": first.planned}
    _scale_in_place(checkpoint)
    again = _run(folder, out, ("soter",), weights=(("soter", str(checkpoint)),))
    assert again.skipped_done == 0  # not "already done" on the old weights' rows
    rows = read_records(out / "records.csv")
    rows = rows[rows["key"].isin(again.keys)]
    assert set(rows["status"]) == {"error"} and rows["error"].str.contains("SHA-256 does not match").all()


# -- code changes: declared revisions decide, the code digest is provenance ----------------------------------
PLUGIN = '''
import numpy as np
from models.registry import register_model
from protocols.interface import Capabilities, Model

OFFSET = {offset}


@register_model(description="test only: last value plus an offset", default=False, revision={revision})
class OffsetLastValue(Model):
    name = "test-offset-last-value"
    capabilities = Capabilities(multivariate=True)

    def __init__(self, seed: int = 0) -> None:
        pass

    def _forecast(self, batch, query_times):
        return np.repeat(batch.values[:, :, -1:], query_times.shape[1], axis=2) + OFFSET
'''


def _plugin(tmp_path: Path, offset: float, revision: int = 1) -> dict[str, str]:
    (tmp_path / "trust_plugin.py").write_text(textwrap.dedent(PLUGIN.format(offset=offset, revision=revision)))
    return {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "SOTER_BENCH_PLUGINS": "trust_plugin"}


def _run_cli(folder: Path, out: Path, env: dict, *settings: str) -> subprocess.CompletedProcess:
    return _cli("run", "forecasting", "--dataset", str(folder), "--models", "test-offset-last-value", "--settings",
                *(settings or ("48/24",)), "--max-windows-per-subject", "2", "--out", str(out), "--no-progress", env=env)


@pytest.mark.slow  # subprocess runs: .ci/run's second phase (pytest -m slow)
def test_a_revision_bump_recomputes_and_a_code_edit_alone_does_not(folder, tmp_path):
    out = tmp_path / "out"
    done = _run_cli(folder, out, _plugin(tmp_path, 0.0))
    assert done.returncode == 0, done.stderr
    before = _metrics(out / "records.csv")
    env = _plugin(tmp_path, 0.0)
    (tmp_path / "trust_plugin.py").write_text((tmp_path / "trust_plugin.py").read_text() + "\n# an edit\n")
    edited = _run_cli(folder, out, env)  # another code digest, the same behaviour, no bump: nothing recomputed
    assert "3 cells: 3 already done, 0 run now" in edited.stdout
    changed = _run_cli(folder, out, _plugin(tmp_path, 0.5, revision=2))  # moved numbers, declared
    assert changed.returncode == 0, changed.stderr
    assert "3 cells: 0 already done, 3 run now (3 of them recomputed" in changed.stdout
    after = _metrics(out / "records.csv")
    assert (after["key"] == before["key"]).all() and (after["rmse"] > before["rmse"]).all()  # same keys, new rows
    fresh = _run_cli(folder, tmp_path / "fresh", _plugin(tmp_path, 0.5, revision=2))
    pd.testing.assert_frame_equal(after, _metrics(tmp_path / "fresh" / "records.csv"))
    same = _run_cli(folder, out, _plugin(tmp_path, 0.5, revision=2))
    assert "3 cells: 3 already done, 0 run now" in same.stdout


def test_rows_of_an_older_revision_are_left_out_of_tables_with_a_note(folder, tmp_path):
    out = tmp_path / "out"
    assert _run_cli(folder, out, _plugin(tmp_path, 0.0), "48/24").returncode == 0
    assert _run_cli(folder, out, _plugin(tmp_path, 0.5, revision=2), "72/36").returncode == 0  # 48/24 not rerun
    table = _cli("table", "forecasting", "--out", str(out), "--format", "markdown",
                 env=_plugin(tmp_path, 0.5, revision=2))
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if line.startswith("| test-offset-last-value"))
    assert "†" not in row  # only the current revision's rows, complete for the one setting they hold
    assert "not shown: 3 rows of test-offset-last-value revision 1 (now 2)" in table.stdout


def test_rows_of_two_code_digests_of_one_revision_are_one_result(folder, tmp_path):
    """The code digest is provenance: a refactor between two runs of one configuration marks nothing."""
    out = tmp_path / "out"
    assert _run_cli(folder, out, _plugin(tmp_path, 0.0), "48/24").returncode == 0
    (tmp_path / "trust_plugin.py").write_text((tmp_path / "trust_plugin.py").read_text() + "\n# a comment\n")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "SOTER_BENCH_PLUGINS": "trust_plugin"}
    assert _run_cli(folder, out, env, "72/36").returncode == 0
    codes = {json.loads(i)["identity"]["code"] for i in pd.read_csv(out / "records.csv")["model_info"]}
    assert len(codes) == 2  # two digests recorded ...
    table = _cli("table", "forecasting", "--out", str(out), "--format", "markdown", env=env)
    row = next(line for line in table.stdout.splitlines() if line.startswith("| test-offset-last-value"))
    assert "†" not in row and "mixed" not in table.stdout and "stale" not in table.stdout  # ... one result


# -- item 3: an ok row with a metric that is not finite ----------------------------------------------------
def test_an_ok_row_with_a_metric_that_is_not_finite_is_refused_on_read(tmp_path):
    path = tmp_path / "records.csv"
    store = RecordStore(path)
    for fold, rmse in (("S01", 0.5), ("S02", 0.25)):
        fields = dict(task="forecasting", dataset="d", fold=fold, setting="48/24", condition="clean", model="m",
                      seed=0, protocol="p")
        store.write({**fields, "key": row_key(**fields), "status": "ok", "rmse": rmse, "mae": 0.1, "sse": 1.0,
                     "sae": 1.0, "n_points": 4})
    for bad in ("nan", "inf", "-inf"):
        path.write_text(path.read_text().replace(",0.25,", f",{bad},"))
        with pytest.raises(RecordStoreError, match=r"line 3: an ok row with rmse .* not finite"):
            read_records(path)
        path.write_text(path.read_text().replace(f",{bad},", ",0.25,"))
    path.write_text(path.read_text().replace(",0.25,", ",nan,"))
    assert main(["repair", "--out", str(tmp_path)]) == 0
    assert list(read_records(path)["fold"]) == ["S01"]


# -- item 6: readers never write ----------------------------------------------------------------------------
def test_table_and_report_never_change_the_records_file(folder, tmp_path, capsys):
    out = tmp_path / "out"
    _run(folder, out, ("last-value", "window-mean"))
    real = tmp_path / "archive.csv"
    data = (out / "records.csv").read_bytes().rstrip(b"\n")  # a complete last row without its final newline
    real.write_bytes(data)
    (out / "records.csv").unlink()
    (out / "records.csv").symlink_to(real)
    assert main(["table", "forecasting", "--out", str(out), "--format", "markdown"]) == 0
    assert main(["report", "--results", str(out), "--out", str(tmp_path / "report")]) == 0
    assert real.read_bytes() == data
    assert len(read_records(out / "records.csv")) == 6  # the unterminated last row is read, not dropped
    assert "0/1 settings" not in capsys.readouterr().out


def test_a_run_keeps_an_unterminated_whole_row_and_moves_a_cut_one_aside(folder, tmp_path):
    out = tmp_path / "out"
    first = _run(folder, out)
    path = out / "records.csv"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert _run(folder, out).skipped_done == first.planned  # the whole last row counts as done
    data = path.read_bytes()
    path.write_bytes(data[:-9])  # a write cut short
    again = _run(folder, out)
    assert again.ran == 1 and path.read_bytes().count(b"\n") == data.count(b"\n")
    aside = list(out.glob("records.rejected-*.csv"))
    assert len(aside) == 1 and aside[0].read_bytes() == data[data.rstrip(b"\n").rfind(b"\n") + 1:-9] + b"\n"


# -- item 7: read-only results, --out naming a file --------------------------------------------------------------
@pytest.fixture()
def read_only(tmp_path):
    """Make a folder read-only: a read-only bind mount as root (who ignores permissions), else chmod."""
    mounted: list[Path] = []

    def make(folder: Path) -> Path:
        if os.geteuid() != 0:
            for path in [folder, *folder.rglob("*")]:
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
            return folder
        target = folder.with_name(folder.name + "-ro")
        target.mkdir()
        for cmd in (["mount", "--bind", str(folder), str(target)], ["mount", "-o", "remount,ro,bind", str(target)]):
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                if mounted or cmd[1] != "--bind":
                    subprocess.run(["umount", str(target)], capture_output=True)
                pytest.skip(f"cannot make a read-only folder here: {done.stderr.strip()}")
            if cmd[1] == "--bind":
                mounted.append(target)
        return target

    yield make
    for target in mounted:
        subprocess.run(["umount", str(target)], check=True)


def _one_line_error(capsys, code: int) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_read_only_results_give_one_line_and_a_report_elsewhere(folder, tmp_path, read_only, capsys):
    out = tmp_path / "out"
    _run(folder, out, ("last-value", "window-mean"))
    ro = read_only(out)
    before = (ro / "records.csv").read_bytes()
    line = _one_line_error(capsys, main(["run", "forecasting", "--dataset", str(folder), "--models", "last-value",
                                         "--settings", "72/36", "--out", str(ro), "--no-progress"]))
    assert "read-only" in line
    assert "read-only" in _one_line_error(capsys, main(["table", "forecasting", "--out", str(ro)]))
    assert "cannot repair" in _one_line_error(capsys, main(["repair", "--out", str(ro)]))
    assert main(["report", "--results", str(ro), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "tables" / "forecasting.md").is_file()
    assert (ro / "records.csv").read_bytes() == before


@pytest.mark.parametrize("command", [["run", "forecasting", "--models", "last-value"], ["table", "forecasting"],
                                     ["repair"], ["report"]])
def test_out_naming_a_file_is_one_line(tmp_path, capsys, command):
    file = tmp_path / "a-file"
    file.write_text("x")
    line = _one_line_error(capsys, main([*command, "--out", str(file)]))
    assert "is a file, not a folder" in line and file.read_text() == "x"


# -- item 8: a full disk -----------------------------------------------------------------------------------------
@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_a_full_disk_while_writing_per_window_errors_stops_cleanly_and_resumes(folder, tmp_path):
    out = tmp_path / "out"
    args = ["run", "forecasting", "--dataset", str(folder), "--models", "last-value", "window-mean", "--settings",
            "48/24", "--max-windows-per-subject", "2", "--out", str(out), "--no-progress"]
    full = _cli(*args, limit=1200)  # the records' header fits; a cell's per-window file does not
    assert full.returncode != 0 and "Traceback" not in full.stderr
    errors = [line for line in full.stderr.splitlines() if line.startswith("error:")]
    # the per-window errors and a task's other arrays (issue #31) are written together, before the row
    assert len(errors) == 1 and "could not write a cell's arrays" in errors[0] and "File too large" in errors[0]
    RecordStore(out / "records.csv", readonly=True)  # intact
    assert not list((out / "window_errors").glob("*.tmp"))
    assert _cli(*args).returncode == 0
    whole = _cli(*[a if a != str(out) else str(tmp_path / "whole") for a in args])
    assert whole.returncode == 0
    pd.testing.assert_frame_equal(_metrics(out / "records.csv"), _metrics(tmp_path / "whole" / "records.csv"))


def test_a_full_disk_while_writing_a_report_is_one_line(folder, tmp_path):
    out = tmp_path / "out"
    _run(folder, out, ("last-value", "window-mean"))
    before = (out / "records.csv").read_bytes()
    done = _cli("report", "--results", str(out), "--out", str(tmp_path / "report"), limit=600)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "File too large" in errors[0]
    assert (out / "records.csv").read_bytes() == before


# -- item 9: an oversized config.json ------------------------------------------------------------------------------
def test_an_oversized_config_is_refused_before_the_model_is_built(tmp_path):
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, checkpoint)
    (checkpoint / "SHA256SUMS").unlink()
    config = json.loads((checkpoint / "config.json").read_text())
    config.update(hidden_size=8192, intermediate_size=32768)  # ~16 G parameters: 64 GB of float32
    (checkpoint / "config.json").write_text(json.dumps(config))
    code = ("import resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))\n"
            "from models.soter.io import CheckpointError, from_pretrained\n"
            "try:\n    from_pretrained(sys.argv[1])\n"
            "except CheckpointError as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(checkpoint)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("refused: ") and "weights do not match" in done.stdout
    assert "the config needs at least 16," in done.stdout and "the weights hold 555,457" in done.stdout


@pytest.mark.parametrize("change", [dict(num_layers=4000), dict(hidden_size=8192, intermediate_size=32768),
                                    dict(num_experts=200, dft_length=512)])
def test_an_oversized_config_is_refused_from_its_numbers_without_building_a_model(tmp_path, monkeypatch, change):
    """A config of thousands of layers took minutes to build (even on the meta device) before its refusal."""
    from models.soter import io

    checkpoint = tmp_path / "ckpt"
    shutil.copytree(SHIPPED, checkpoint)
    (checkpoint / "SHA256SUMS").unlink()
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(json.dumps({**config, **change}))

    def never(*_, **__):
        raise AssertionError("the model was built before the config's size was checked")

    monkeypatch.setattr(io, "SoterModel", never)
    with pytest.raises(io.CheckpointError, match=r"the config needs at least [\d,]+ parameters, the weights hold "):
        io.from_pretrained(checkpoint)


def test_the_minimum_parameters_of_a_config_never_exceed_the_built_models():
    """The size check may refuse only configs the weights cannot fill: its count is a lower bound."""
    import dataclasses

    import torch

    from models.soter.config import preset
    from models.soter.model import SoterModel

    tiny = preset("soter-tiny")
    configs = [preset(n) for n in ("soter-tiny", "soter-cpu-64", "soter-cpu-96")]
    configs += [dataclasses.replace(tiny, **kw) for kw in (
        dict(router="learned"), dict(control=False), dict(field_dt=True), dict(value_embedding=True),
        dict(decoder_hidden=()), dict(output_skip="damped-trend", mean_reversion=True, short_trend_points=4),
        dict(output_skip="naive-residual", mix_steps=64))]
    for cfg in configs:
        with torch.device("meta"):
            built = sum(v.numel() for v in SoterModel(cfg).state_dict().values())
        assert 0.99 * built <= cfg.minimum_parameters() <= built, cfg


# -- item 11: no home folder in shared records ---------------------------------------------------------------------
def test_model_info_names_no_absolute_path(folder, tmp_path):
    checkpoint = tmp_path / "home" / "alice" / "ckpt"
    shutil.copytree(SHIPPED, checkpoint)
    (checkpoint / "SHA256SUMS").unlink()  # other bytes than the shipped folder's: another configuration
    out = tmp_path / "out"
    _run(folder, out, ("soter",))
    _run(folder, out, ("soter",), weights=(("soter", str(checkpoint)),))
    text = (out / "records.csv").read_text()
    assert str(tmp_path) not in text and str(REPO) not in text
    infos = [json.loads(i) for i in read_records(out / "records.csv")["model_info"]]
    assert {i["source"] for i in infos} == {"models/soter/checkpoints/soter-cpu-64", "ckpt"}


# -- item 12: columns by name, one file mode ----------------------------------------------------------------------
def test_records_with_reordered_columns_are_read_and_kept_by_name(folder, tmp_path, capsys):
    out = tmp_path / "out"
    first = _run(folder, out, ("last-value", "window-mean"))
    path = out / "records.csv"
    original = _metrics(path)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    order = list(reversed(COLUMNS))
    frame[order].to_csv(path, index=False)
    reordered = path.read_bytes()
    pd.testing.assert_frame_equal(_metrics(path), original)  # read by name
    assert main(["repair", "--out", str(out)]) == 0
    assert f"{first.planned} rows, all valid; nothing to repair" in capsys.readouterr().out
    again = _run(folder, out, ("last-value", "window-mean", "drift"))
    assert again.skipped_done == first.planned and again.ran == 3
    assert path.read_bytes().startswith(reordered)  # appended in the file's own column order
    assert len(read_records(path)) == first.planned + 3


def test_records_and_per_window_files_get_one_mode(folder, tmp_path):
    previous = os.umask(0o022)
    try:
        out = tmp_path / "out"
        _run(folder, out)
    finally:
        os.umask(previous)
    modes = {stat.S_IMODE(p.stat().st_mode) for p in [out / "records.csv", *(out / "window_errors").glob("*.npz")]}
    assert modes == {0o644}
