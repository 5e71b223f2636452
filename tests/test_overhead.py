"""Random weights never reach a result, the published-size builder, and the System Overhead appendix.

* A run with random weights (a checkpoint folder with the builder's marker, as ``--random-weights`` passes
  it) writes rows that say so, and none of them reaches a task table, ``harness table``, the leaderboard,
  the paper comparison or the accuracy-versus-cost figure; the run and the report say which rows were
  left out.
* ``--random-weights`` refuses a model not in ``--models`` or with ``--weights`` too (exit 2).
* The builder (``baselines/workers/build_random.py``) saves a model in the layout its adapter reads, with a
  marker whose parameter count is the loaded model's.
* The paper's System Overhead numbers are transcribed faithfully; the report renders ours beside them.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cli import main
from models.random_weights import RANDOM_WEIGHTS_FILE, RANDOM_WEIGHTS_NOTE, is_random_info, random_weights_marker

ROOT = Path(__file__).resolve().parents[1]
TEX = ROOT.parent / "shared" / "paper" / "soter-paper.tex"
RUN = ["run", "forecasting", "--settings", "48/24", "--max-windows-per-subject", "1", "--no-progress"]


def _random_soter(folder: Path) -> Path:
    """A tiny SOTER checkpoint with random weights, marked as the builder marks one."""
    import torch

    from models.soter.config import preset
    from models.soter.io import save_pretrained
    from models.soter.model import SoterModel

    torch.manual_seed(0)
    save_pretrained(SoterModel(preset("soter-tiny")), folder)
    (folder / RANDOM_WEIGHTS_FILE).write_text(json.dumps({"random_weights": RANDOM_WEIGHTS_NOTE, "model": "soter"}))
    return folder


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """The shipped SOTER and last value, then ``--random-weights soter`` (its builder replaced by a tiny marked
    checkpoint: the published one is a measurement, not a test) into the same folder; returns the folder, the
    models the builder was asked for and what the second run printed."""
    import contextlib
    import io

    from baselines import published

    tmp = tmp_path_factory.mktemp("random-run")
    built = _random_soter(tmp / "random-soter")
    out = tmp / "run"
    assert main([*RUN, "--models", "soter", "last-value", "--out", str(out)]) == 0
    asked, printed = [], io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        patch.setattr(published, "random_checkpoint", lambda model, **_: asked.append(model) or built)
        assert main([*RUN, "--models", "soter", "--random-weights", "soter", "--out", str(out)]) == 0
    return out, asked, printed.getvalue()


def test_random_weight_rows_say_so_and_stay_out_of_every_table(random_run, capsys):
    from harness.records.store import random_weight_rows, read_records

    folder, asked, printed = random_run
    assert asked == ["soter"]  # --random-weights asked the builder for SOTER's published size
    everything = pd.read_csv(folder / "records.csv")
    flagged = everything[everything.model_info.fillna("").map(is_random_info)]
    assert len(flagged) == 10 and set(flagged.model) == {"soter"} and (flagged.status == "ok").all()
    assert all(json.loads(i)["random_weights"] == RANDOM_WEIGHTS_NOTE for i in flagged.model_info)
    assert f"soter: {RANDOM_WEIGHTS_NOTE}, in no table: 10 rows (ok 10)" in printed
    # the later random run does not replace the trained SOTER's rows in the tables, nor make them a second
    # configuration ("soter [weights=...]"): they stay, under SOTER's own name
    tables = read_records(folder / "records.csv")
    soter = tables[tables.model == "soter"]
    assert len(soter) == len(flagged) and not soter.model_info.map(is_random_info).any()
    assert set(tables.model) == {"soter", "last-value"}
    assert set(random_weight_rows(folder / "records.csv")["key"]) == set(flagged["key"])

    def pooled(rows):
        return f"{100 * np.sqrt(rows.sse.sum() / rows.n_points.sum()):.2f}"

    # the random run's own tables (every current row of the folder, since #27): the trained SOTER only
    for table in (folder / "tables").glob("*.md"):
        text = table.read_text()
        assert pooled(soter) in text and "soter [" not in text
        if pooled(flagged) != pooled(soter):
            assert pooled(flagged) not in text
    # `harness table` renders the trained rows only: SOTER's pooled RMSE x100 is the trained one's
    assert main(["table", "forecasting", "--out", str(folder), "--format", "markdown"]) == 0
    shown = capsys.readouterr().out
    assert pooled(soter) in shown
    if pooled(flagged) != pooled(soter):
        assert pooled(flagged) not in shown


def test_the_report_leaves_random_rows_out_of_comparisons_and_the_leaderboard(random_run, tmp_path):
    from harness.reporting.report import write_report

    folder = random_run[0]
    write_report(folder, tmp_path / "report")
    text = (tmp_path / "report" / "REPORT.md").read_text()
    assert "random-weight rows" in text and "soter (10)" in text  # named, with why
    rows = pd.read_csv(folder / "records.csv")
    rows = rows[(rows.model == "soter") & (rows.task == "forecasting")]
    random_rows = rows[rows.model_info.map(is_random_info)]
    trained = rows[~rows.model_info.map(is_random_info)]

    def pooled(r):
        return f"{100 * np.sqrt(r.sse.sum() / r.n_points.sum()):.2f}"

    written = "\n".join(f.read_text() for f in (tmp_path / "report").rglob("*") if f.suffix in (".md", ".csv", ".txt"))
    assert pooled(trained) in written  # SOTER is reported, with its trained checkpoint's numbers
    if pooled(random_rows) != pooled(trained):
        assert pooled(random_rows) not in written  # tables, comparisons, leaderboard, significance: none


def test_random_weights_flag_is_checked_before_anything_runs(tmp_path, capsys):
    assert main([*RUN, "--models", "last-value", "--random-weights", "soter", "--out", str(tmp_path)]) == 2
    assert "--random-weights soter: name it in --models too" in capsys.readouterr().err
    assert main([*RUN, "--models", "soter", "--random-weights", "soter", "--weights", f"soter={tmp_path}",
                 "--out", str(tmp_path)]) == 2
    assert "it also has --weights" in capsys.readouterr().err
    assert not (tmp_path / "records.csv").exists()


def test_unknown_published_models_say_why():
    from baselines.published import NOT_BUILDABLE, published
    from models.registry import ModelUnavailableError

    with pytest.raises(ModelUnavailableError, match="no published configuration found"):
        published("mira-large")
    with pytest.raises(ModelUnavailableError, match="has no published-size configuration"):
        published("last-value")
    assert set(NOT_BUILDABLE) == {"mira-large", "aurora"}


def test_the_builder_marker_is_the_one_the_harness_reads():
    sys.path.insert(0, str(ROOT / "baselines" / "workers"))
    try:
        import build_random
    finally:
        sys.path.remove(str(ROOT / "baselines" / "workers"))
    assert build_random.MARKER == RANDOM_WEIGHTS_FILE and build_random.NOTE == RANDOM_WEIGHTS_NOTE


def test_a_built_model_loads_through_its_adapter_and_counts_its_parameters(tmp_path):
    pytest.importorskip("tirex")
    from baselines.published import build_folder
    from models.registry import get_spec
    from protocols.interface import SeriesBatch, forecast

    config = {"model_config": {"input_patch_size": 32, "output_patch_size": 32, "quantiles": [0.1, 0.5, 0.9],
                               "input_ff_dim": 16, "block_kwargs": {"num_blocks": 1, "embedding_dim": 16,
                                                                    "num_heads": 2}},
              "train_ctx_len": 128}
    marker = build_folder("tirex", tmp_path / "tirex", config, model="tirex")
    assert random_weights_marker(tmp_path / "tirex") == marker and marker["random_weights"] == RANDOM_WEIGHTS_NOTE
    model = get_spec("tirex").load(weights=str(tmp_path / "tirex"))
    assert marker["parameters"] == sum(p.numel() for p in model._model.parameters()) == marker["active_parameters"]
    t = np.arange(64.0)
    out = forecast(model, SeriesBatch(np.sin(t / 5)[None, None], t[None]), 64 + np.arange(8.0)[None])
    assert out.shape == (1, 1, 8) and np.isfinite(out).all()


def test_mixture_of_experts_active_parameters_count_top_k_of_the_routed_experts():
    import torch

    sys.path.insert(0, str(ROOT / "baselines" / "workers"))
    try:
        from build_random import count
    finally:
        sys.path.remove(str(ROOT / "baselines" / "workers"))

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.experts = torch.nn.ModuleList(torch.nn.Linear(4, 4, bias=False) for _ in range(8))  # 8 x 16
            self.shared = torch.nn.Linear(4, 4, bias=False)  # 16, always active

    assert count(Layer(), top_k=2) == (144, 16 + 2 * 16)
    assert count(Layer(), top_k=None) == (144, 144)


# ---------------------------------------------------------------- the paper's numbers and the report section

def test_the_paper_numbers_are_transcribed_from_its_appendix():
    paper = pd.read_csv(ROOT / "results" / "paper" / "system_overhead.csv", dtype=str)
    assert set(paper.model) == {"timemoe-large", "timemoe-base", "mira-large", "aurora", "soter"}
    for row in paper.itertuples():  # each number is in its own quoted sentence
        assert f"${row.seconds_per_sample}$~s" in row.quote and f"${row.parameters[:-1]}$M" in row.quote
    if not TEX.is_file():
        pytest.skip(f"the paper's LaTeX is not at {TEX}")
    tex = TEX.read_text()
    appendix = tex[tex.index(r"\label{app:system_overhead}"):tex.index(r"\section{Complete Per-Window")]
    flat = re.sub(r"\s+", " ", appendix)
    for quote in paper.quote:
        assert re.sub(r"\s+", " ", quote) in flat, quote


def _overhead_csv(path: Path) -> Path:
    rows = [
        dict(model="timemoe-large", weights="random", status="ok", reason="", parameters=453_000_000,
             active_parameters=200_000_000, seconds_per_sample=2.5, batch=32, seconds_per_sample_batched=0.4,
             peak_rss_gib=2.1),
        dict(model="mira-large", weights="random", status="not measured", reason="no published configuration"),
        dict(model="soter", weights="trained", status="ok", reason="", parameters=70_000, active_parameters=50_000,
             seconds_per_sample=0.05, batch=32, seconds_per_sample_batched=0.01, peak_rss_gib=0.5),
        dict(model="last-value", weights="trained", status="ok", reason="", seconds_per_sample=0.0002, batch=32,
             seconds_per_sample_batched=0.0001, peak_rss_gib=0.3),
        dict(model="chronos-2-base", weights="random", status="ok", reason="", parameters=119_477_664,
             active_parameters=119_477_664, seconds_per_sample=0.3, batch=32, seconds_per_sample_batched=0.05,
             peak_rss_gib=1.0),
    ]
    common = dict(device="cpu", threads=2, setting="128/64", channels=1, repeats=3, load_before="1.00 1.00 1.00",
                  load_after="1.10 1.00 1.00", machine="test CPU, 2 cores", torch="2.13.0",
                  measured_at="2026-11-25T00:00:00+00:00")
    pd.DataFrame([{**common, **r} for r in rows]).to_csv(path / "system_overhead.csv", index=False)
    return path / "system_overhead.csv"


def test_the_report_puts_the_overhead_beside_the_papers_and_plots_trained_models_only(random_run, tmp_path):
    from harness.reporting.overhead import accuracy_points, read_overhead
    from harness.reporting.paper_cells import paper_model_names
    from harness.reporting.report import write_report
    from harness.records.store import read_records

    random_run = random_run[0]
    _overhead_csv(random_run)  # found under --results
    report = write_report(random_run, tmp_path / "report")
    table = (tmp_path / "report" / "tables" / "system_overhead.md").read_text()
    line = next(x for x in table.splitlines() if x.startswith("| TimeMoE-Large "))
    assert "453.00M (200.00M active)" in line and "453.2M" in line and "3.72 s" in line and "2.5 s" in line
    assert "random, published size (speed and shape only)" in line
    assert "| MIRA-Large |" in table and "not measured: no published configuration" in table
    assert "RTX 4090" in table and "test CPU, 2 cores" in table
    assert any("System Overhead" in p for p in report.produced)
    points = accuracy_points(read_overhead(random_run / "system_overhead.csv"),
                             read_records(random_run / "records.csv"), paper_model_names())
    assert set(points.model) == {"SOTER", "last-value"}  # measured, trained, with forecasting rows; never random
    assert (tmp_path / "report" / "figures" / "accuracy_vs_cost.png").is_file()


def test_the_default_report_shows_the_measurements_the_benchmark_writes_by_default(tmp_path, capsys):
    """Nothing copied, nothing patched: the benchmark's default --out is the file a report without measurements
    under --results shows (the committed measurements of results/benchmarks/)."""
    from harness.reporting.overhead import DEFAULT_FILE

    assert _benchmark_module().parse([]).out == DEFAULT_FILE == ROOT / "results" / "benchmarks" / "system_overhead.csv"
    assert DEFAULT_FILE.is_file()  # measured here and committed
    run = tmp_path / "run"
    assert main([*RUN, "--models", "last-value", "--out", str(run)]) == 0  # a fresh run: no measurement in it
    assert not list(run.rglob("system_overhead.csv"))
    capsys.readouterr()
    assert main(["report", "--results", str(run), "--out", str(tmp_path / "report")]) == 0
    assert "table: System Overhead (tables/system_overhead.md" in capsys.readouterr().out
    table = (tmp_path / "report" / "tables" / "system_overhead.md").read_text()
    assert table.startswith("# System Overhead") and f"Measurements: {DEFAULT_FILE}" in table


def test_without_measurements_the_report_says_how_to_make_them(tmp_path):
    from harness.reporting import overhead

    made, missing = overhead.write_overhead(tmp_path, tmp_path / "out", pd.DataFrame(), {},
                                            default=tmp_path / "nowhere" / "system_overhead.csv")
    assert not made and any("benchmarks/system_overhead.py" in why for _, why in missing)


# ---------------------------------------------------------------- the benchmark itself

def test_the_benchmark_measures_a_model_in_a_child_and_keeps_finished_rows(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import system_overhead
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    out = tmp_path / "overhead.csv"
    common = ["--repeats", "1", "--batch", "2", "--threads", "1", "--out", str(out)]
    assert system_overhead.main(["--models", "last-value", *common]) == 0
    row = pd.read_csv(out).iloc[0]
    assert row.status == "ok" and row.seconds_per_sample > 0 and row.peak_rss_gib > 0 and row.weights == "trained"
    assert len(row.load_before.split()) == 3
    # a second run skips the finished row; a model that cannot run here gets a row saying why
    assert system_overhead.main(["--models", "last-value", "mira-large", *common]) == 0
    rows = pd.read_csv(out)
    assert list(rows.model) == ["last-value", "mira-large"]
    assert rows.status.iloc[1] == "not measured" and "no published configuration" in rows.reason.iloc[1]
    # over the time limit: stopped, and said so
    assert system_overhead.main(["--models", "seasonal-naive", "--max-seconds", "0.01", *common]) == 0
    last = pd.read_csv(out).iloc[-1]
    assert last.status == "not measured" and "over 0.01 s" in last.reason
    assert system_overhead.main(["--setting", "128", *common]) == 2


def _benchmark_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import system_overhead
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return system_overhead


def test_the_child_reports_its_single_sample_latency_before_the_batch():
    """The child prints a complete row after the single-sample repeats, then the row with the batch."""
    rows = list(_benchmark_module().measure_one("last-value", "trained", 32, 8, 1, 2, 1, "cpu"))
    assert len(rows) == 2 and rows[0]["status"] == rows[1]["status"] == "ok"
    assert rows[0]["seconds_per_sample"] > 0 and "seconds_per_sample_batched" not in rows[0]
    assert rows[1]["seconds_per_sample_batched"] > 0 and rows[1]["reason"] == ""


def test_a_model_stopped_during_its_batch_keeps_its_single_sample_latency():
    """A model over the time limit after its single-sample latency keeps it (the paper's figure); one
    stopped before gets no number. Without this, a slow model's batch of 32 cost it its whole row."""
    outcome = _benchmark_module().outcome
    first = json.dumps({"status": "ok", "reason": "", "seconds_per_sample": 47.3, "batch": 32, "parameters": 5})
    row = outcome(f"building...\n{first}\n", "", -9, "not measured: over 600 s", 32)
    assert row["status"] == "ok" and row["seconds_per_sample"] == 47.3 and row["parameters"] == 5
    assert row["reason"] == "batch of 32: not measured: over 600 s" and "seconds_per_sample_batched" not in row
    row = outcome("building...\n", "", -9, "not measured: over 600 s", 32)
    assert row == {"status": "not measured", "reason": "not measured: over 600 s"}
    done = json.dumps({"status": "ok", "reason": "", "seconds_per_sample": 1.0, "seconds_per_sample_batched": 0.1})
    assert outcome(f"{first}\n{done}\n", "", 0, None, 32)["seconds_per_sample_batched"] == 0.1
    assert outcome("", "Traceback\nMemoryError", 1, None, 32) == {"status": "error", "reason": "exit 1: MemoryError"}


def test_the_report_shows_a_latency_whose_batch_was_cut_short(tmp_path):
    from harness.reporting.overhead import overhead_table, read_overhead, read_paper

    path = _overhead_csv(tmp_path)
    frame = pd.read_csv(path)
    frame.loc[frame.model == "timemoe-large", ["seconds_per_sample_batched", "reason"]] = \
        [np.nan, "batch of 32: not measured: over 600 s"]
    frame.to_csv(path, index=False)
    table = overhead_table(read_overhead(path), read_paper(), {"timemoe-large": "TimeMoE-Large"})
    row = table[table.Model == "TimeMoE-Large"].iloc[0]
    assert row["s/sample, batch 1 (ours)"] == "2.5 s" and row["s/sample, batch 32 (ours)"] == ""
    assert row["Status"] == "ok (batch of 32: not measured: over 600 s)"


def test_the_accuracy_vs_cost_plot_leaves_out_rows_of_an_older_revision(random_run):
    """As the tables and statistics do: a model whose forecasting rows were computed under another revision than
    its current one has no accuracy to plot; it is named with why. Two code digests alone are provenance."""
    from harness.records.configurations import IDENTITY, parse_info
    from harness.reporting.overhead import accuracy_points, read_overhead
    from harness.reporting.paper_cells import paper_model_names
    from harness.records.store import read_records

    folder = random_run[0]
    frame = read_records(folder / "records.csv")
    soter = frame.index[frame.model == "soter"]

    def with_identity(info: str, **values: object) -> str:
        parsed = parse_info(info)
        return json.dumps({**parsed, IDENTITY: {**parsed.get(IDENTITY, {}), **values}})

    frame.loc[soter, "model_info"] = [with_identity(frame.at[i, "model_info"], code=f"code{n % 2}")
                                      for n, i in enumerate(soter)]
    ours = read_overhead(_overhead_csv(folder.parent))
    left_out: list[tuple[str, str]] = []
    assert "SOTER" in set(accuracy_points(ours, frame, paper_model_names(), left_out).model) and not left_out
    frame.loc[soter[:1], "model_info"] = [with_identity(frame.at[soter[0], "model_info"], revision=9)]
    points = accuracy_points(ours, frame, paper_model_names(), left_out)
    assert set(points.model) == {"last-value"}
    assert [what for what, _ in left_out] == ["accuracy against cost: SOTER"] and "stale" in left_out[0][1]


def test_rows_without_a_batch_add_no_column_and_say_their_status_once(tmp_path):
    """A not-measured row first in the file (no batch size) made an empty 'batch -' column, and the limit's
    message repeated the status ('not measured: not measured: over 600 s')."""
    from harness.reporting.overhead import overhead_table, read_overhead, read_paper

    path = _overhead_csv(tmp_path)
    frame = pd.read_csv(path)
    frame = pd.concat([frame[frame.model == "mira-large"], frame[frame.model != "mira-large"]])
    frame.loc[frame.model == "mira-large", "reason"] = "not measured: over 600 s (load, warm-up, 3 samples)"
    frame.to_csv(path, index=False)
    table = overhead_table(read_overhead(path), read_paper(), {"mira-large": "MIRA-Large"})
    columns = list(table.columns)
    assert [c for c in columns if c.startswith("s/sample, batch")] == ["s/sample, batch 1 (ours)",
                                                                      "s/sample, batch 32 (ours)"]
    assert columns.index("s/sample, batch 32 (ours)") == columns.index("s/sample, batch 1 (ours)") + 1
    status = table[table.Model == "MIRA-Large"].iloc[0]["Status"]
    assert status == "not measured: over 600 s (load, warm-up, 3 samples)"


def _builder():
    sys.path.insert(0, str(ROOT / "baselines" / "workers"))
    try:
        import build_random
    finally:
        sys.path.remove(str(ROOT / "baselines" / "workers"))
    return build_random


def test_a_build_with_uninitialised_parameters_is_refused(tmp_path, monkeypatch):
    """TimesFM 2.0's published-size build once saved an infinite torch.empty parameter and forecast NaN (its
    System Overhead row was an error): the builder now refuses any non-finite parameter, naming it."""
    import torch

    build_random = _builder()

    def broken(spec, out):
        module = torch.nn.Linear(2, 2)
        with torch.no_grad():
            module.bias[0] = float("inf")
        return module

    monkeypatch.setitem(build_random.FAMILIES, "broken", broken)
    with pytest.raises(ValueError, match=r"broken: 1 parameter\(s\) not finite after building, e.g. bias"):
        build_random.build({"family": "broken", "out": str(tmp_path / "b"), "config": {}})
    assert not (tmp_path / "b" / build_random.MARKER).exists()


def test_timesfm_attention_scaling_gets_its_neutral_value():
    """timesfm leaves each attention's per-dimension scaling as torch.empty; the builder sets 0, where
    softplus(0) / ln 2 = 1 makes the query scale the plain 1/sqrt(head_dim)."""
    import torch

    build_random = _builder()

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scaling = torch.nn.Parameter(torch.full((4,), float("nan")))
            self.o_proj = torch.nn.Linear(4, 4)

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.self_attn = Attention()

    model = torch.nn.Sequential(Layer(), Layer())
    before = model[0].self_attn.o_proj.weight.clone()
    build_random.neutral_attention_scaling(model)
    assert all(torch.equal(m.self_attn.scaling, torch.zeros(4)) for m in model)
    assert torch.equal(model[0].self_attn.o_proj.weight, before)
    assert float(torch.nn.functional.softplus(torch.tensor(0.0)) * 1.442695041) == pytest.approx(1.0)
