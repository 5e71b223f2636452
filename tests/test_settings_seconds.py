"""Settings given in seconds (``--settings 1s/0.5s``): samples at each dataset's rate, keys and records in samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.run.runner import RunConfig, plan
from protocols.datasets import load_dataset
from protocols.specs import DurationSetting, Setting, SpecError, parse_setting, settings_at
from protocols.splits import get_fold
from protocols.windows import extract, select_windows

WFDB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "wfdb"  # ../shared beside the clone
MITBIH = "mitbih:blocks=6"


def _planned(tmp_path: Path, settings: tuple[str, ...], **kw) -> list:
    config = RunConfig(task="forecasting", models=("last-value",), out=tmp_path, progress=False,
                       options={"settings": tuple(parse_setting(s) for s in settings)}, **kw)
    return plan(config)[0]


def _window_lengths(cells, data_root=None) -> set[tuple[int, int]]:
    """(context, target) lengths in samples of the windows the planned cells' settings select."""
    cell = cells[0][0]
    dataset = load_dataset(cell.dataset, data_root=data_root)
    subject = get_fold(dataset, cell.fold).test_subject
    refs = select_windows(dataset, subject, cell.point, cell.spec.sampling).windows
    arrays = extract(dataset, refs, cell.point)
    assert len(refs) > 0
    return {(arrays.context.shape[-1], arrays.target.shape[-1])}


@pytest.mark.parametrize("text, rate, expected", [
    ("1s/0.5s", 64.0, (64, 32)), ("1s/0.5s", 360.0, (360, 180)), ("4s/2s", 64.0, (256, 128)),
    ("0.36s/0.18s", 360.0, (130, 65)),  # 129.6 and 64.8 samples: the nearest
    ("0.01s/0.01s", 64.0, (2, 1)),  # less than a sample: the shortest setting there is
])
def test_durations_become_the_nearest_samples(text, rate, expected):
    assert parse_setting(text).at(rate) == Setting(*expected)


@pytest.mark.parametrize("text", ["1s/48", "48/1s", "xs/1s", "0s/1s", "-1s/1s", "1s"])
def test_bad_durations_are_one_clear_error(text):
    with pytest.raises(SpecError, match="setting"):
        parse_setting(text)


def test_a_setting_two_words_give_is_one_setting_and_samples_need_a_rate():
    both = (Setting(64, 32), DurationSetting(1.0, 0.5))
    assert settings_at(both, 64.0) == (Setting(64, 32),)
    assert settings_at(both, 128.0) == (Setting(64, 32), Setting(128, 64))
    with pytest.raises(SpecError, match="no sampling rate"):
        settings_at(both, None)


def test_seconds_plan_the_cohorts_windows_in_samples_with_the_keys_of_samples(tmp_path):
    cells = _planned(tmp_path, ("1s/0.5s",))
    assert {f["setting"] for _, f in cells} == {"64/32"}  # the record's setting stays in samples
    assert _window_lengths(cells) == {(64, 32)}
    same = _planned(tmp_path, ("64/32",))
    assert [f["key"] for _, f in cells] == [f["key"] for _, f in same]  # the keys of the setting given in samples


@pytest.mark.skipif(not (WFDB / "100.dat").exists(), reason=f"MIT-BIH 100 not found under {WFDB}")
def test_seconds_plan_mitbih_windows_at_360_hz(tmp_path):
    cells = _planned(tmp_path, ("1s/0.5s",), datasets=(MITBIH,), data_root=WFDB)
    assert {f["setting"] for _, f in cells} == {"360/180"}
    assert _window_lengths(cells, WFDB) == {(360, 180)}


def _run_in_seconds(out: Path, *dataset: str) -> str:
    """The forecasting table of a last-value run at 1s/0.5s (one window per subject) on ``dataset``."""
    from harness.cli import main
    from harness.records.store import read_records
    from harness.reporting.tables import render
    from harness.tasks.forecasting import TASK

    assert main(["run", "forecasting", "--settings", "1s/0.5s", "--models", "last-value", *dataset,
                 "--max-windows-per-subject", "1", "--out", str(out), "--no-progress"]) == 0
    frame = read_records(out / "records.csv")
    assert set(frame["context_seconds"].astype(float)) == {1.0} and set(frame["horizon_seconds"].astype(float)) == {0.5}
    return str(set(frame["setting"])) + render(TASK.table(frame))


def test_a_run_in_seconds_records_samples_and_its_table_shows_the_seconds(tmp_path):
    text = _run_in_seconds(tmp_path)
    assert text.startswith("{'64/32'}") and "synthetic-cohort at 64 Hz: 64/32 = 1 s/0.5 s" in text


@pytest.mark.skipif(not (WFDB / "100.dat").exists(), reason=f"MIT-BIH 100 not found under {WFDB}")
def test_a_run_in_seconds_on_mitbih_shows_the_seconds(tmp_path):
    text = _run_in_seconds(tmp_path, "--dataset", MITBIH, "--data-root", str(WFDB))
    assert text.startswith("{'360/180'}") and f"{MITBIH} at 360 Hz: 360/180 = 1 s/0.5 s" in text


def test_the_horizon_seconds_breakdown_orders_a_model_by_duration_across_datasets():
    import pandas as pd

    from harness.reporting.breakdown import by_horizon_seconds

    def row(dataset, setting, rate, rmse):
        context = int(setting.split("/")[0])
        return {"task": "forecasting", "dataset": dataset, "fold": "s1", "setting": setting, "condition": "clean",
                "model": "m", "seed": 0, "status": "ok", "rmse": rmse, "mae": rmse, "sse": rmse ** 2, "sae": rmse,
                "n_points": 1, "error": "", "details": "", "sampling_rate": rate, "context_samples": context,
                "protocol": "p", "model_info": "{}"}

    frame = pd.DataFrame([row("fast", "360/180", 360.0, 0.1), row("fast", "128/64", 360.0, 0.2),
                          row("slow", "48/24", 64.0, 0.3)])
    table = by_horizon_seconds(frame, "forecasting")
    assert [(r[2], r[3], r[4]) for r in table.rows] == [("fast", "128/64", "0.178 s"), ("slow", "48/24", "0.375 s"),
                                                        ("fast", "360/180", "0.5 s")]


def _ecg_dataset(bpm: float, rate: float = 128.0, seconds: int = 90):
    import neurokit2 as nk
    import numpy as np

    from protocols.data import Dataset, Recording

    ecg = nk.ecg_simulate(duration=seconds, sampling_rate=int(rate), heart_rate=bpm, noise=0.0, random_state=1)
    values = np.stack([ecg, np.sin(np.arange(ecg.size) / rate)])
    return Dataset("ecg-toy", ("ECG", "EDA"), (Recording("s1", "r1", values, np.arange(ecg.size) / rate),), rate)


def test_the_median_heart_rate_is_the_signals_and_is_cached_by_content(tmp_path, monkeypatch):
    from harness.reporting import setting_times

    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path))
    bpm, channel = setting_times.heart_rate(_ecg_dataset(90.0))
    assert channel == "ECG" and abs(bpm - 90.0) < 3.0
    estimate = setting_times.estimate_heart_rate
    monkeypatch.setattr(setting_times, "estimate_heart_rate", lambda ds: (_ for _ in ()).throw(AssertionError))
    assert setting_times.heart_rate(_ecg_dataset(90.0)) == (bpm, "ECG")  # the same content: read from the cache
    eda = _ecg_dataset(90.0)
    no_heart = type(eda)("eda-only", ("EDA",), (type(eda.recordings[0])("s1", "r1", eda.recordings[0].values[1:],
                                                                         eda.recordings[0].timestamps),), 128.0)
    assert estimate(no_heart) == (None, None)
