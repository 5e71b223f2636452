"""Beat-level fidelity, signal-quality bands and the failure atlas, each on a synthetic signal with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from protocols.beats import BEAT_MEASURES, NO_BEAT_FOUND, NO_TARGET_BEAT, SCORED, beat_score
from protocols.signal_quality import quality_bands, window_quality

FS = 360


@pytest.fixture(scope="module")
def ecg() -> np.ndarray:
    import neurokit2 as nk

    return nk.ecg_simulate(duration=12, sampling_rate=FS, heart_rate=70, noise=0, random_state=0)


@pytest.mark.parametrize("delay", [9, 18])
def test_a_forecast_shifted_by_a_known_delay_has_that_peak_timing_error(ecg, delay):
    context, horizon, start = 720, 360, 300
    ctx, target = ecg[start:start + context], ecg[start + context:start + context + horizon]
    shifted = ecg[start + context - delay:start + context + horizon - delay]  # the target, later by `delay`
    score = beat_score(ctx, target, shifted, FS, BEAT_MEASURES["ECG"])
    assert score.status == SCORED and score.target_beats >= 1
    assert score.timing_ms == pytest.approx(delay * 1000 / FS, abs=1000 / FS)  # within one sample
    same = beat_score(ctx, target, target, FS, BEAT_MEASURES["ECG"])
    assert same.timing_ms == 0 and same.hr_error_bpm == 0 and same.sdnn_error_ms == 0


def test_a_flat_forecast_is_counted_as_no_beat_found(ecg):
    ctx, target = ecg[300:1020], ecg[1020:1380]
    score = beat_score(ctx, target, np.full(360, ctx[-1]), FS, BEAT_MEASURES["ECG"])
    assert score.status == NO_BEAT_FOUND and score.target_beats >= 1 and score.forecast_beats == 0
    assert np.isnan(score.timing_ms)


def test_a_horizon_too_short_for_a_beat_is_counted_not_scored(ecg):
    score = beat_score(ecg[:128], ecg[128:192], ecg[128:192], FS, BEAT_MEASURES["ECG"])
    assert score.status == NO_TARGET_BEAT


def test_a_window_with_added_noise_falls_in_the_lower_quality_band(ecg):
    rng = np.random.default_rng(0)
    starts = range(0, 3600, 300)
    windows = np.stack([ecg[s:s + 720][None, :] for s in starts])  # [B, 1, L], clean
    noisy = windows[3] + rng.normal(0, 0.5 * windows[3].std(), windows[3].shape)
    windows = np.concatenate([windows, noisy[None]])
    index = window_quality(windows, FS, ["ECG"])
    bands = quality_bands(index)
    assert bands[-1] == "low"
    assert index[-1] < index[:-1].min()  # below every clean window, its own clean twin (window 3) included
    assert set(bands[:-1]) == {"low", "mid", "high"}


def _window_errors(sse):
    sse = np.asarray(sse, dtype=np.float64)
    return {"sse": sse, "sae": np.sqrt(sse), "n": np.full(sse.size, 10.0), "recording": np.zeros(sse.size, dtype=np.int64),
            "start": np.arange(sse.size, dtype=np.int64) * 100}


def test_the_planted_bad_window_is_the_atlas_first(tmp_path):
    from harness.records.window_store import write_window_errors
    from harness.reporting.atlas import FLAG_RATIO, atlas, atlas_table
    from harness.reporting.window_rows import window_frame

    rng = np.random.default_rng(1)
    reference = rng.uniform(1, 2, 20)
    good = reference * rng.uniform(0.8, 1.2, 20)
    bad = good.copy()
    bad[13] = reference[13] * 25.0  # bad on exactly one window: RMSE 5x last value's
    hard = reference * 1.5
    hard[4] = reference[4] * 4.0  # a window hard for this model, less so than the planted one
    rows = []
    for model, sse in (("last-value", reference), ("good", good), ("bad", bad), ("hard", hard)):
        key = f"k-{model}"
        write_window_errors(tmp_path, key, _window_errors(sse))
        rows.append({"key": key, "task": "forecasting", "status": "ok", "model": model, "dataset": "d",
                     "setting": "96/48", "condition": "clean", "seed": 0, "fold": "s1"})
    frame = pd.DataFrame(rows)
    windows, _ = window_frame(frame, "forecasting", tmp_path)
    top, _ = atlas(windows)
    first = top[top["model"] == "bad"].iloc[0]
    assert first["rank"] == 1 and first["index"] == 13 and first["start"] == 1300
    assert first["ratio"] == pytest.approx(5.0)
    table, _ = atlas_table(frame, "forecasting", tmp_path)
    flags = {r[0]: r[-1] for r in table.rows if r[3] == "1"}
    assert flags["bad"] and not flags["good"] and flags["hard"] == ""  # hard: 2x, under FLAG_RATIO
    assert FLAG_RATIO == 3.0


def test_the_atlas_says_when_last_value_has_no_window_errors(tmp_path):
    from harness.records.window_store import write_window_errors
    from harness.reporting.atlas import atlas
    from harness.reporting.window_rows import window_frame

    write_window_errors(tmp_path, "k", _window_errors([1.0, 2.0]))
    frame = pd.DataFrame([{"key": "k", "task": "forecasting", "status": "ok", "model": "m", "dataset": "d",
                           "setting": "96/48", "condition": "clean", "seed": 0, "fold": "s1"}])
    top, notes = atlas(window_frame(frame, "forecasting", tmp_path)[0])
    assert top.empty and "last-value" in notes[0] and "--rerun" in notes[0]


def test_the_cli_writes_the_window_breakdowns_and_the_report_its_atlas(tmp_path, capsys):
    """On a toy run (last value and window mean, a user-folder dataset found under --data-root): each breakdown's
    table in three formats, the quality and atlas figures, and the report's atlas."""
    from harness.cli import main
    from harness.reporting.report import write_report
    from harness.run.runner import RunConfig, execute
    from protocols.datasets.folder import write_folder_dataset
    from protocols.specs import Setting
    from tests.test_breakdown import _dataset

    write_folder_dataset(_dataset(), tmp_path / "bd")
    out = tmp_path / "out"
    execute(RunConfig(task="forecasting", models=("last-value", "window-mean"), datasets=(str(tmp_path / "bd"),),
                      out=out, progress=False, options={"settings": (Setting(32, 8),), "max_windows_per_subject": 3}),
            log=lambda m: None)
    for by in ("beats", "quality", "atlas"):
        assert main(["table", "forecasting", "--out", str(out), "--by", by, "--data-root", str(tmp_path)]) == 0
        stem = "forecasting_atlas" if by == "atlas" else f"forecasting_by_{by}"
        for ext in ("txt", "md", "tex"):
            assert (out / "tables" / f"{stem}.{ext}").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "below what the ECG/PPG detectors need" in printed  # 10 Hz: counted, never guessed
    assert (out / "figures" / "forecasting_by_quality.png").exists() and (out / "figures" / "forecasting_atlas.png").exists()
    assert main(["table", "forecasting", "--out", str(out), "--data-root", str(tmp_path)]) == 2  # read by nothing
    assert capsys.readouterr().err.strip().startswith("error: --data-root is read by --by subject-field:FIELD|beats|quality|atlas only")
    report = write_report(out, tmp_path / "report", data_root=tmp_path)
    assert any(p.startswith("failure atlas (forecasting): tables/forecasting_atlas.md, figures/forecasting_atlas.png")
               for p in report.produced)
