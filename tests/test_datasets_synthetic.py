"""The embedded cohort: deterministic, physiologically ordered, beat-coupled, cached safely."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.datasets import load_dataset
from protocols.datasets import synthetic

SMALL = {"n_subjects": 3, "seconds_per_state": 10}
RATE = 64


@pytest.fixture(scope="module")
def cohort():
    return synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL))


def _by_name(ds):
    return {r.name: r for r in ds.recordings}


def test_layout_labels_timestamps_and_description(cohort):
    assert cohort.channels == ("ECG", "PPG", "RSP", "EDA") and cohort.sampling_rate == 64.0
    assert cohort.subjects == ("S01", "S02", "S03")
    assert cohort.label_names == ("rest", "mental_stress", "exercise")
    assert [r.name for r in cohort.recordings[:3]] == ["S01_rest", "S01_mental_stress", "S01_exercise"]
    for r in cohort.recordings:
        assert r.values.shape == (4, 640) and r.values.dtype == np.float64 and np.isfinite(r.values).all()
        np.testing.assert_array_equal(r.timestamps, np.arange(640) / 64)
        assert (r.labels == cohort.label_names.index(r.name.split("_", 1)[1])).all()
        assert np.ptp(r.values, axis=1).min() > 0  # no flat channel, rest EDA included
    assert "64 Hz" in cohort.description and "rest, mental_stress, exercise" in cohort.description
    assert cohort.metadata["units"]["EDA"] == "µS"


def test_same_config_same_arrays_other_seed_other_arrays(cohort):
    again = synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL))
    for a, b in zip(cohort.recordings, again.recordings):
        np.testing.assert_array_equal(a.values, b.values)
    other = synthetic.generate(synthetic.SyntheticCohortConfig(**SMALL, seed=1))
    for a, b in zip(cohort.recordings, other.recordings):
        assert not np.allclose(a.values, b.values)


def test_subjects_differ_in_physiology():
    subjects = [synthetic.subject_physiology(0, f"S{i:02d}") for i in range(1, 9)]
    assert len({p.heart_rate for p in subjects}) == 8 and len({p.noise for p in subjects}) == 8
    assert len({p.ecg_waves for p in subjects}) == 8


def _heart_rate_ecg(x: np.ndarray) -> float:
    import neurokit2 as nk

    _, info = nk.ecg_peaks(x, sampling_rate=RATE)
    return 60 * RATE / float(np.median(np.diff(info["ECG_R_Peaks"])))


def _heart_rate_ppg(x: np.ndarray) -> float:
    import neurokit2 as nk

    _, info = nk.ppg_peaks(x, sampling_rate=RATE)
    return 60 * RATE / float(np.median(np.diff(info["PPG_Peaks"])))


def _breaths_per_minute(x: np.ndarray) -> float:
    """Dominant frequency of the respiration channel in 0.1-1 Hz (zero-padded spectrum)."""
    spectrum = np.abs(np.fft.rfft(x - x.mean(), n=16 * x.size))
    freqs = np.fft.rfftfreq(16 * x.size, 1 / RATE)
    band = (freqs >= 0.1) & (freqs <= 1.0)
    return 60 * float(freqs[band][np.argmax(spectrum[band])])


def test_states_move_heart_rate_breathing_and_eda_as_designed(cohort):
    by, plan = _by_name(cohort), cohort.metadata["recordings"]
    for s in cohort.subjects:
        names = [f"{s}_{k}" for k in ("rest", "mental_stress", "exercise")]
        planned_hr = [plan[n]["heart_rate_bpm"] for n in names]
        planned_br = [plan[n]["breathing_rate_per_min"] for n in names]
        assert planned_hr[0] < planned_hr[1] < planned_hr[2] and planned_br[0] < planned_br[1] < planned_br[2]
        # measured from the signals themselves: ECG R peaks, PPG pulses, the respiration spectrum, EDA level
        ecg_hr = [_heart_rate_ecg(by[n].values[0]) for n in names]
        assert ecg_hr[0] < ecg_hr[1] < ecg_hr[2], ecg_hr
        np.testing.assert_allclose(ecg_hr, planned_hr, rtol=0.08)
        np.testing.assert_allclose(_heart_rate_ppg(by[names[0]].values[1]), planned_hr[0], rtol=0.08)
        br = [_breaths_per_minute(by[n].values[2]) for n in names]
        assert br[0] < br[2], br
        eda = [by[n].values[3].mean() for n in names]
        assert eda[0] < eda[1] < eda[2], eda


def test_ecg_and_ppg_are_coupled_beat_by_beat(cohort):
    """Each pulse follows an R peak after a nearly constant delay (one beat phase drives both)."""
    import neurokit2 as nk

    for r in cohort.recordings:
        if not r.name.endswith("_rest"):
            continue
        _, e = nk.ecg_peaks(r.values[0], sampling_rate=RATE)
        _, p = nk.ppg_peaks(r.values[1], sampling_rate=RATE)
        rp, pp = np.asarray(e["ECG_R_Peaks"]), np.asarray(p["PPG_Peaks"])
        pp = pp[pp > rp[0]]
        delays = (pp - rp[np.searchsorted(rp, pp) - 1]) / RATE
        assert delays.size >= 5 and 0.1 < np.median(delays) < 0.6
        assert delays.std() < 0.04, delays  # independent simulators would spread over a whole beat
        # respiratory sinus arrhythmia: the R-R intervals vary (not a metronome)
        assert np.diff(rp).std() > 0


# -- cache ------------------------------------------------------------------------------------------
@pytest.fixture()
def counted(monkeypatch, tmp_path, cohort):
    """Cache in tmp_path; generate() replaced by a counter returning the (already generated) cohort."""
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path))
    calls: list[synthetic.SyntheticCohortConfig] = []
    monkeypatch.setattr(synthetic, "generate", lambda cfg: calls.append(cfg) or cohort)
    return calls


def test_cache_is_written_then_used(counted, tmp_path, cohort):
    first = synthetic.load_synthetic_cohort(**SMALL)
    files = list(tmp_path.iterdir())
    assert [f.name for f in files] == [f"synthetic-cohort-{synthetic.SyntheticCohortConfig(**SMALL).cache_key()}.npz"]
    with np.load(files[0], allow_pickle=False) as z:  # no pickled objects inside
        assert z["values"].shape == (9, 4, 640)
    second = synthetic.load_synthetic_cohort(**SMALL)
    assert len(counted) == 1  # the second call read the file
    for a, b, c in zip(cohort.recordings, first.recordings, second.recordings):
        np.testing.assert_array_equal(a.values, c.values)
        np.testing.assert_array_equal(a.labels, c.labels)
        np.testing.assert_array_equal(a.timestamps, c.timestamps)
        assert (a.subject, a.name) == (c.subject, c.name)
    assert second.metadata["recordings"] == cohort.metadata["recordings"]


def test_cache_key_covers_every_option_and_the_generator_version(monkeypatch):
    base = synthetic.SyntheticCohortConfig()
    keys = {base.cache_key()}
    for change in ({"n_subjects": 9}, {"sampling_rate": 32}, {"seconds_per_state": 30}, {"seed": 1},
                   {"states": ("rest", "exercise")}):
        keys.add(synthetic.SyntheticCohortConfig(**change).cache_key())
    assert len(keys) == 6
    assert synthetic.SyntheticCohortConfig(sampling_rate=64).cache_key() == base.cache_key()
    monkeypatch.setattr(synthetic, "GENERATOR_VERSION", synthetic.GENERATOR_VERSION + 1)
    assert base.cache_key() not in keys


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "other_config"])
def test_a_damaged_or_foreign_cache_file_is_regenerated_with_a_warning(counted, tmp_path, damage):
    synthetic.load_synthetic_cohort(**SMALL)
    path = synthetic.cache_path(synthetic.SyntheticCohortConfig(**SMALL))
    good = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(good[: len(good) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a zip file" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid file written for another config, under this key
        other = dict(SMALL, seed=5)
        synthetic.load_synthetic_cohort(**other)
        path.write_bytes(synthetic.cache_path(synthetic.SyntheticCohortConfig(**other)).read_bytes())
    calls_before = len(counted)
    with pytest.warns(UserWarning, match="unreadable.*regenerating"):
        synthetic.load_synthetic_cohort(**SMALL)
    assert len(counted) == calls_before + 1
    assert path.read_bytes() == good  # rewritten whole
    synthetic.load_synthetic_cohort(**SMALL)
    assert len(counted) == calls_before + 1


def test_a_crash_while_writing_leaves_no_file(counted, tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(synthetic.np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        synthetic.load_synthetic_cohort(**SMALL)
    assert list(tmp_path.iterdir()) == []  # neither a half cache file nor a temp file


def test_registry_loads_the_cohort_with_options(counted):
    ds = load_dataset("synthetic-cohort", **SMALL)
    assert ds.name == "synthetic-cohort" and counted == [synthetic.SyntheticCohortConfig(**SMALL)]


# -- configuration ------------------------------------------------------------------------------------
def test_default_cohort_is_big_enough_for_loso():
    cfg = synthetic.SyntheticCohortConfig()
    assert cfg.n_subjects >= 8 and cfg.states == ("rest", "mental_stress", "exercise")
    assert cfg.sampling_rate == 64.0 and cfg.seconds_per_state == 60.0


@pytest.mark.parametrize("options, message", [
    ({"colour": "red"}, r"unknown synthetic-cohort option\(s\) \['colour'\]"),
    ({"n_subjects": 1}, "n_subjects"), ({"n_subjects": 2.5}, "n_subjects"), ({"n_subjects": True}, "n_subjects"),
    ({"sampling_rate": 2}, "sampling_rate"), ({"sampling_rate": 64.5}, "sampling_rate"),
    ({"sampling_rate": float("nan")}, "sampling_rate"),
    ({"seconds_per_state": 1}, "seconds_per_state"), ({"seconds_per_state": "60"}, "seconds_per_state"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"states": ("rest", "sleep")}, "states"), ({"states": ("rest", "rest")}, "states"), ({"states": ()}, "states"),
])
def test_invalid_options_are_errors_naming_them(options, message):
    with pytest.raises(ValueError, match=message):
        synthetic.load_synthetic_cohort(**options)


def test_states_may_be_given_as_a_list_or_comma_separated():
    a = synthetic.config_from_options({"states": ["rest", "exercise"]})
    b = synthetic.config_from_options({"states": "rest,exercise"})
    assert a == b and a.states == ("rest", "exercise")
