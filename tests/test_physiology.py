"""Issue #31: physiological fidelity, heart rate (ECG, PPG) and breathing rate (respiration) with neurokit2,
on forecasts and whole imputed segments (protocols.physiology, harness.tasks.physiology)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

from protocols.data import Dataset, Recording
from protocols.physiology import (MEASURES, forecast_spans, imputed_segments, mean_rate, measure_unavailable,
                                  physiology_scores, score_rates)
from protocols.specs import PhysiologySpec, SamplingSpec, SpecError
from protocols.splits import get_fold

nk = pytest.importorskip("neurokit2")


@pytest.mark.parametrize("fs", [64, 125, 360])
@pytest.mark.parametrize("bpm", [55, 75, 110])
def test_heart_rate_of_a_simulated_ecg_is_recovered_within_one_bpm(fs, bpm):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ecg = nk.ecg_simulate(duration=20, sampling_rate=fs, heart_rate=bpm, heart_rate_std=0.01, method="ecgsyn",
                              noise=0.01, random_state=1)
    assert abs(mean_rate(ecg, fs, MEASURES["hr-ecg"]) - bpm) < 1.0


def _pulses(bpm: float, fs: float, seconds: float) -> np.ndarray:
    """A PPG-like pulse train of exactly ``bpm``: a systolic wave and a dicrotic shoulder per beat."""
    t = np.arange(int(seconds * fs)) / fs
    period = 60.0 / bpm
    phase = (t % period) / period
    return np.exp(-((phase - 0.2) / 0.07) ** 2) + 0.25 * np.exp(-((phase - 0.42) / 0.1) ** 2)


@pytest.mark.parametrize("fs", [32, 64, 125])
@pytest.mark.parametrize("bpm", [50, 72, 140])
def test_heart_rate_of_a_pulse_train_is_recovered_within_one_bpm(fs, bpm):
    assert abs(mean_rate(_pulses(bpm, fs, 20), fs, MEASURES["hr-ppg"]) - bpm) < 1.0


@pytest.mark.parametrize("breaths", [8, 15, 24])
def test_breathing_rate_of_a_simulated_respiration_is_recovered(breaths):
    rsp = nk.rsp_simulate(duration=30, sampling_rate=25, respiratory_rate=breaths, method="sinusoidal", noise=0,
                          random_state=0)
    assert abs(mean_rate(rsp, 25, MEASURES["br-resp"]) - breaths) < 0.5


def test_spans_without_beats_have_no_rate():
    flat = np.zeros(1000)
    assert mean_rate(flat, 100, MEASURES["hr-ecg"]) is None
    assert mean_rate(np.full(1000, np.nan), 100, MEASURES["hr-ppg"]) is None
    one_beat = _pulses(60, 100, 10)[:150]  # 1.5 s: fewer peaks than a rate needs
    assert mean_rate(one_beat, 100, MEASURES["hr-ppg"]) is None


def test_a_prediction_equal_to_the_truth_has_zero_error_and_failures_are_counted_not_scored():
    fs = 100.0
    truth = np.stack([np.stack([_pulses(bpm, fs, 10), np.zeros(1000)]) for bpm in (60, 80, 100)])  # [3, 2, L]
    same = score_rates(truth.copy(), truth, fs, MEASURES["hr-ppg"], [0])
    assert same.n == 3 and same.sse == 0.0 and same.sae == 0.0 and same.prediction_failed == 0
    flat = score_rates(np.zeros_like(truth), truth, fs, MEASURES["hr-ppg"], [0, 1])
    assert flat.truth_failed == 3  # channel 1 has no beat in the truth: skipped
    assert flat.prediction_failed == 3 and flat.n == 0  # a flat forecast has no rate: counted, never scored
    faster = score_rates(np.stack([np.stack([_pulses(bpm + 6, fs, 10), np.zeros(1000)]) for bpm in (60, 80, 100)]),
                         truth, fs, MEASURES["hr-ppg"], [0])
    assert faster.n == 3 and faster.sae / faster.n == pytest.approx(6.0, abs=1.0)


def physio_dataset(n_subjects: int = 3, seconds: float = 45.0, fs: int = 100) -> Dataset:
    recs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(n_subjects):
            bpm, breaths = 60 + 10 * i, 12 + 3 * i
            ecg = nk.ecg_simulate(duration=seconds, sampling_rate=fs, heart_rate=bpm, method="simple", random_state=i)
            ppg = _pulses(bpm, fs, seconds)
            rsp = nk.rsp_simulate(duration=seconds, sampling_rate=fs, respiratory_rate=breaths, method="sinusoidal",
                                  random_state=i)
            n = min(len(ecg), len(ppg), len(rsp))
            recs.append(Recording(f"P{i}", f"P{i}", np.stack([ecg[:n], ppg[:n], rsp[:n]]), np.arange(n) / fs))
    return Dataset("physio-toy", ("ecg", "ppg", "resp"), tuple(recs), sampling_rate=float(fs))


SPEC = PhysiologySpec(context_seconds=10, horizon_seconds=20, segment_seconds=20, warmup_seconds=2,
                      sampling=SamplingSpec(max_windows_per_subject=2))


def test_forecasts_and_imputations_equal_to_the_truth_score_zero_on_every_measure():
    from tests.test_tasks import Cheater

    ds = physio_dataset()
    fold = get_fold(ds, "P1")
    cheat = Cheater(ds, fold)
    cheat.subject = "P1"
    for recon in (forecast_spans(cheat, ds, fold, SPEC), imputed_segments(cheat, ds, fold, SPEC, 0.5, 0)):
        np.testing.assert_allclose(recon.prediction, recon.truth, atol=1e-12)
        scores = physiology_scores(recon, ds, SPEC.measures)
        assert set(scores) == {"hr-ecg", "hr-ppg", "br-resp"}
        for s in scores.values():
            assert s.n > 0 and s.sae == 0.0 and s.prediction_failed == 0


def test_an_imputed_segment_keeps_its_observed_points():
    from baselines.imputation import CarryForward

    ds = physio_dataset()
    fold = get_fold(ds, "P0")
    recon = imputed_segments(CarryForward(), ds, fold, SPEC, 0.5, 0)
    assert recon.missing_share == pytest.approx(0.5, abs=0.05)
    changed = recon.prediction != recon.truth
    assert changed.any() and not changed[:, :, :200].any()  # the 2 s warm-up is always observed


def test_the_default_run_scores_forecasts_and_imputed_segments_only_when_asked():
    """Imputed segments cost one model call per missing point (hours for SOTER's entries): opt-in, never default."""
    from harness.tasks.physiology import Physiology

    task = Physiology()
    default = task.points(PhysiologySpec())
    assert default and all(level is None for _, _, level in default)
    asked = task.points(PhysiologySpec(sources=("forecast", "imputation")))
    assert {level for _, _, level in asked} == {None, 0.25}


def test_measures_a_dataset_cannot_take_are_unavailable_with_the_reason():
    ds = physio_dataset(n_subjects=2, seconds=12)
    only_ecg = ds.select_channels(("ecg",))
    assert "no PPG channel" in measure_unavailable(only_ecg, MEASURES["hr-ppg"])
    slow = Dataset("slow", ("ecg",), (Recording("a", "a", np.zeros((1, 100)), np.arange(100) / 20.0),),
                   sampling_rate=20.0)
    assert "needs at least 50 Hz" in measure_unavailable(slow, MEASURES["hr-ecg"])
    with pytest.raises(SpecError, match="unknown physiology measure"):
        PhysiologySpec(measures=("spo2",))
    with pytest.raises(SpecError, match="warmup_seconds"):
        PhysiologySpec(segment_seconds=2, warmup_seconds=2)


def test_the_physiology_task_runs_end_to_end_with_tables_figure_and_rates(tmp_path):
    from harness.records.cell_files import read_cell_file
    from harness.cli import main
    from harness.run.runner import RunConfig, execute
    from harness.records.store import read_records
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "physio"
    write_folder_dataset(physio_dataset(), folder)
    out = tmp_path / "out"
    config = RunConfig(task="physiology", datasets=(str(folder),), models=("last-value", "seasonal-naive", "locf"),
                       out=out, progress=False,
                       options={"rates": (0.25,), "max_windows_per_subject": 2, "physio_context": 10.0,
                                "physio_horizon": 20.0, "physio_segment": 20.0,
                                "physio_sources": ("forecast", "imputation")})
    summary = execute(config, log=lambda m: None)
    frame = read_records(out / "records.csv")
    ok = frame[frame["status"] == "ok"]
    assert set(ok["condition"]) == {"hr-ecg", "hr-ppg", "br-resp", "hr-ecg missing=25%", "hr-ppg missing=25%",
                                    "br-resp missing=25%"}
    # forecast-only models take no part in whole-segment imputation, imputation-only ones in forecasts: unavailable
    assert summary.status_counts == {"ok": 27, "unavailable": 27}
    flat = ok[(ok["model"] == "last-value") & (ok["condition"] == "hr-ecg")]
    facts = [json.loads(d) for d in flat["details"]]
    assert all(f["prediction_failed"] == f["pairs"] - f["truth_failed"] > 0 for f in facts)  # flat: never a rate
    seasonal = ok[(ok["model"] == "seasonal-naive") & (ok["condition"] == "hr-ppg")]
    assert (seasonal["n_points"] > 0).all() and (seasonal["mae"] < 5).all()  # repeats the last beat: the rate holds
    rates = read_cell_file(out, "rates", seasonal["key"].iloc[0])
    assert rates is not None and np.isfinite(rates["prediction"]).any()
    assert main(["table", "physiology", "--out", str(out)]) == 0
    text = (out / "tables" / "physiology_forecast.txt").read_text()
    assert "hr-ppg MAE (bpm)" in text and "no rate" in text
    assert (out / "tables" / "physiology_imputation_25.md").exists()
    assert (out / "figures" / "physiology_rate_error.png").exists()
    assert main(["table", "physiology", "--out", str(out), "--by", "subject"]) == 0
    assert "P2" in (out / "tables" / "physiology_by_subject.txt").read_text()


def test_figure_bars_of_a_source_are_centred_on_its_tick_without_gaps_for_absent_models():
    import pandas as pd

    from harness.reporting.physiology_figure import bar_positions

    here = pd.DataFrame({"model": ["soter", "locf", "seasonal-naive", "last-value"],
                         "source": ["missing=25%", "missing=25%", "forecast", "forecast"]})
    models = ["last-value", "seasonal-naive", "locf", "soter"]
    pos = bar_positions(here, models, ["missing=25%", "forecast"])
    assert set(pos) == {("locf", "missing=25%"), ("soter", "missing=25%"), ("last-value", "forecast"),
                        ("seasonal-naive", "forecast")}
    for k, source in enumerate(["missing=25%", "forecast"]):
        xs = [x for (m, s), (x, w) in pos.items() if s == source]
        widths = {w for (m, s), (x, w) in pos.items() if s == source}
        assert widths == {0.4} and np.mean(xs) == pytest.approx(k)  # two bars share the group, centred on the tick


def test_a_model_without_any_rate_is_named_in_the_subject_breakdown_not_silently_left_out(tmp_path):
    import pandas as pd

    from harness.reporting.breakdown import by_subject

    base = dict(task="physiology", dataset="d", setting="30s/20s", seed=0, status="ok", sse=0.0, model_info="",
                rmse=np.nan, mae=np.nan, error="", details=json.dumps({"unit": "bpm", "pairs": 2, "truth_failed": 0}))
    rows = [{**base, "condition": "hr-ecg", "model": "seasonal-naive", "fold": f, "sae": 1.0, "n_points": 2,
             "key": f"s{f}"} for f in ("P1", "P2")]
    rows += [{**base, "condition": "hr-ecg", "model": "last-value", "fold": f, "sae": 0.0, "n_points": 0,
              "key": f"l{f}"} for f in ("P1", "P2")]  # a flat forecast: no predicted rate, nothing scored
    table = by_subject(pd.DataFrame(rows), "physiology", tmp_path)
    assert [r[2] for r in table.rows] == ["seasonal-naive"]
    assert any(n.startswith("last-value on d, hr-ecg: no pair with a rate") for n in table.notes)


def test_a_diverging_forecast_is_an_error_row_naming_the_windows_and_the_cause(tmp_path):
    """A forecast whose solve diverges never reaches a rate detector or a metric as a number of 1e17."""
    from harness.records.store import read_records
    from harness.run.runner import RunConfig, execute
    from protocols.datasets.folder import write_folder_dataset
    from protocols.specs import Setting

    folder = tmp_path / "physio"
    write_folder_dataset(physio_dataset(n_subjects=2, seconds=35), folder)
    for task, options in (("physiology", {"max_windows_per_subject": 1, "physio_context": 10.0,
                                          "physio_horizon": 20.0, "physio_segment": 20.0, "rates": (0.25,)}),
                          ("forecasting", {"settings": (Setting(48, 24),), "max_windows_per_subject": 2})):
        out = tmp_path / task
        execute(RunConfig(task=task, datasets=(str(folder),), models=("test-diverging",), out=out, progress=False,
                          options=options), log=lambda m: None)
        frame = read_records(out / "records.csv")
        errors = frame[frame["status"] == "error"]
        assert len(errors) and (frame["status"].isin(["error", "unavailable"])).all()
        for message in errors["error"]:
            assert "ModelDivergedError" in message and "diverged" in message
            assert "left |h| <= 1e+06" in message and "@" in message  # the cause and the windows (recording@start)


def test_a_diverged_forecast_is_solved_once_for_all_measures():
    """Every measure of a fold reads the same forecasts: a diverging model's solve runs once, each cell raises."""
    from harness.registry.tasks import get_task
    from harness.run.cells import Cell
    from protocols.interface import ModelDivergedError
    from tests.plugin_models import Diverging

    ds = physio_dataset(n_subjects=2, seconds=35)
    spec = dataclasses.replace(SPEC, sampling=SamplingSpec(max_windows_per_subject=1))
    task, model = get_task("physiology"), Diverging()
    before = Diverging.forecasts
    for measure in ("hr-ecg", "hr-ppg", "br-resp"):
        cell = Cell(task="physiology", dataset="physio-toy", fold="P1", setting="10s/20s", model="test-diverging",
                    seed=0, spec=spec, condition=measure)
        with pytest.raises(ModelDivergedError, match="P1@0"):
            task.evaluate(cell, ds, model)
    assert Diverging.forecasts == before + 1
