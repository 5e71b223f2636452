"""Issue #31: artefact kinds for the robustness study (protocols.artefacts), each with its documented spectrum
or shape and severity scale, applied to the context only."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import welch

from protocols import artefacts as art
from protocols.noise import evaluate_noise
from protocols.specs import ArtefactSpec, NoiseSpec, SamplingSpec, Setting, SpecError
from protocols.splits import get_fold
from tests.conftest import Recorder, make_dataset

FS = 250.0


def _draw(kind, shape=(8, 3, 5000), fs=FS, seed=0, **kw):
    return art.unit_artefact(kind, shape, fs, np.random.default_rng(seed), **kw)


def _power_share(x: np.ndarray, fs: float, low: float, high: float) -> float:
    f, p = welch(x, fs=fs, nperseg=min(x.shape[-1], 4096), axis=-1)
    p = p.reshape(-1, f.size).sum(axis=0)
    band = (f >= low) & (f <= high)
    return float(p[band].sum() / p.sum())


def test_wander_is_below_half_a_hertz_with_unit_rms():
    x = _draw("wander", (20, 2, 20000))
    assert np.sqrt(np.mean(x ** 2)) == pytest.approx(1.0, rel=0.1)
    assert _power_share(x, FS, 0.0, 0.6) > 0.97


@pytest.mark.parametrize("hz", [50.0, 60.0])
def test_mains_is_a_line_at_its_frequency_with_unit_rms(hz):
    x = _draw("mains", mains_hz=hz)
    assert np.sqrt(np.mean(x ** 2)) == pytest.approx(1.0, rel=0.01)
    f, p = welch(x[0, 0], fs=FS, nperseg=2500)
    assert f[np.argmax(p)] == pytest.approx(hz, abs=0.2)
    assert _power_share(x, FS, hz - 1, hz + 1) > 0.99


def test_mains_needs_a_rate_above_twice_its_frequency():
    assert art.mains_unavailable(100.0, 50.0) and art.mains_unavailable(120.0, 60.0)
    assert art.mains_unavailable(125.0, 60.0) is None
    with pytest.raises(art.ArtefactUnavailable, match="above 100 Hz"):
        _draw("mains", fs=64.0)


def test_motion_bursts_are_band_limited_shared_in_time_and_unit_rms_inside():
    x = _draw("motion", (30, 3, 2500))  # 10 s: two bursts per window
    on = x != 0
    assert (on == on[:, :1]).all()  # one movement shakes every sensor at once
    assert not np.allclose(x[:, 0], x[:, 1])  # with its own content per channel
    assert 0.0 < on.mean() < 0.25  # bursts are short: at most a quarter of the context
    inside = x[on]
    assert np.sqrt(np.mean(inside ** 2)) == pytest.approx(1.0, rel=0.25)
    assert _power_share(x, FS, 0.5, 14.0) > 0.9
    for run in [r for r in _runs(on[0, 0])]:
        assert 0.3 * FS - 2 <= run <= 1.0 * FS + 1


def _runs(mask):
    from protocols.masks import gap_runs

    return [n for _, n in gap_runs(mask)]


def test_pops_jump_and_decay_with_the_documented_time_constant():
    x = _draw("pops", (40, 1, 1000), fs=1000.0)  # 1 s: one pop per window
    row = next(r for r in x[:, 0] if np.flatnonzero(r)[0] <= 700)  # a whole pop (three time constants)
    onset = int(np.flatnonzero(row)[0])
    pop = np.abs(row[onset:onset + 300])
    tau = art.POP_DECAY_SECONDS * 1000
    assert pop[0] == pytest.approx(pop.max())
    assert pop[int(tau)] / pop[0] == pytest.approx(np.exp(-1), rel=0.02)
    assert np.sqrt(np.mean(pop ** 2)) == pytest.approx(1.0, rel=0.02)  # unit RMS over three time constants
    slow = _draw("pops", (1, 1, 20), fs=4.0)  # 5 s: one pop; below 10 Hz it is a one-sample spike
    assert np.count_nonzero(slow) == 1


@pytest.mark.parametrize("level", [0.05, 0.25, 0.5])
def test_clip_saturates_the_given_share_of_samples(level):
    x = np.random.default_rng(0).standard_normal((4, 2, 2000))
    y = art.clip(x, level)
    held = (y != x).mean()
    assert held == pytest.approx(level, abs=0.01)
    assert (y.max(axis=-1) <= x.max(axis=-1)).all() and (art.clip(x, 0.0) == x).all()


def test_additive_artefacts_scale_with_level_and_sigma_and_level_zero_is_clean():
    x = np.zeros((2, 3, 500))
    sigma = np.array([1.0, 2.0, 0.5])
    unit = _draw("wander", x.shape)
    assert (art.apply_artefact("wander", x, sigma, 0.0, unit) == x).all()
    y = art.apply_artefact("wander", x, sigma, 0.5, unit)
    np.testing.assert_allclose(y, 0.5 * sigma[None, :, None] * unit)


def test_bad_artefact_options_are_named():
    with pytest.raises(SpecError, match="unknown artefact 'hum'"):
        ArtefactSpec("hum")
    with pytest.raises(SpecError, match="mains_hz"):
        ArtefactSpec("mains", 55.0)
    with pytest.raises(SpecError, match=r"clip levels are shares"):
        NoiseSpec(levels=(0.0, 1.0), artefact=ArtefactSpec("clip"))


def test_the_paper_noise_keeps_its_conditions_and_fingerprint():
    spec = NoiseSpec()
    assert spec.artefact.condition(0.1) == "beta=0.1"
    assert spec.fingerprint() == "noise;maxw=16;stride=None;seed=0"
    assert NoiseSpec(artefact=ArtefactSpec("mains", 60.0)).fingerprint().endswith(";artefact=mains-60Hz-v1")
    assert ArtefactSpec("mains", 60.0).condition(0.25) == "mains-60Hz=0.25"


@pytest.mark.parametrize("kind", ["wander", "motion", "pops", "clip"])
def test_artefacts_touch_the_context_only_and_level_zero_is_the_clean_forecast(kind):
    ds = make_dataset(n_subjects=3, n_samples=400)  # 10 Hz
    fold = get_fold(ds, ds.subjects[0])
    spec = NoiseSpec(levels=(0.0, 0.25), settings=(Setting(48, 24),), sampling=SamplingSpec(max_windows_per_subject=3),
                     artefact=ArtefactSpec(kind))
    clean = evaluate_noise(Recorder(), ds, fold, Setting(48, 24), NoiseSpec(levels=(0.0,), settings=spec.settings,
                                                                          sampling=spec.sampling), 0.0, 0)
    zero = evaluate_noise(Recorder(), ds, fold, Setting(48, 24), spec, 0.0, 0)
    assert zero.errors == clean.errors
    rec = Recorder()
    hit = evaluate_noise(rec, ds, fold, Setting(48, 24), spec, 0.25, 0)
    assert hit.n_windows == clean.n_windows and hit.errors != clean.errors
    again = Recorder()
    evaluate_noise(again, ds, fold, Setting(48, 24), spec, 0.25, 0)
    np.testing.assert_array_equal(rec.seen[0], again.seen[0])  # seeded


def test_a_bad_artefact_level_on_the_command_line_is_one_line_and_exit_2(tmp_path, capsys):
    from harness.cli import main

    assert main(["run", "noise", "--artefact", "clip", "--levels", "0", "1", "--out", str(tmp_path),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: clip levels are shares of saturated samples")


def test_mains_above_nyquist_is_unavailable_with_the_reason_and_other_kinds_get_their_own_tables(tmp_path):
    from harness.run.runner import RunConfig, execute
    from harness.records.store import read_records
    from harness.tasks import get_task
    from protocols.datasets.folder import write_folder_dataset

    folder = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), folder)  # 10 Hz
    common = dict(datasets=(str(folder),), models=("last-value",), out=tmp_path / "out", progress=False)
    options = {"settings": (Setting(32, 8),), "max_windows_per_subject": 2, "levels": (0.0, 0.5)}
    execute(RunConfig(task="noise", options={**options, "artefact": "mains"}, **common), log=lambda m: None)
    execute(RunConfig(task="noise", options={**options, "artefact": "pops"}, **common), log=lambda m: None)
    execute(RunConfig(task="noise", options=options, **common), log=lambda m: None)
    frame = read_records(tmp_path / "out" / "records.csv")
    mains = frame[frame["condition"].str.startswith("mains")]
    assert set(mains["status"]) == {"unavailable"} and mains["error"].str.contains("above 100 Hz").all()
    stems = [stem for stem, _ in get_task("noise").tables(frame)]
    assert stems == ["noise_0", "noise_0.5", "noise_mains-50Hz_0", "noise_mains-50Hz_0.5", "noise_pops_0",
                     "noise_pops_0.5"]
    paths = get_task("noise").figures(frame, tmp_path / "figures")
    assert sorted(p.name for p in paths if p.suffix == ".png") == ["noise_robustness.png", "noise_robustness_pops.png"]


# -- issue #51: where the events fall (--artefact-placement) ------------------------------------------------
def _last_value_rmse(kind: str, level: float, placement: str | None = None) -> float:
    """Last value's RMSE pooled over every LOSO fold of a 250 Hz toy dataset, the context corrupted."""
    from baselines.naive import LastValue

    ds = make_dataset(n_subjects=3, n_samples=2000, rate=FS)
    setting = Setting(96, 48)
    levels = (0.0, 0.5) if kind == "clip" else (0.0, 1.0)
    spec = NoiseSpec(levels=levels, settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=8),
                     artefact=ArtefactSpec(kind, placement=placement) if placement else ArtefactSpec(kind))
    sse = n = 0.0
    for subject in ds.subjects:
        errors = evaluate_noise(LastValue(), ds, get_fold(ds, subject), setting, spec, level, 0).errors
        sse, n = sse + errors.sse, n + errors.n
    return float(np.sqrt(sse / n))


@pytest.mark.parametrize("kind", ["wander", "motion", "mains", "pops", "clip"])
def test_every_artefact_kind_moves_last_values_error_at_a_nonzero_severity(kind):
    """A stress test that cannot reach the context's last sample cannot touch last value (issue #51: motion's
    RMSE was the same at every severity); by default every kind reaches the forecast origin."""
    clean = _last_value_rmse(kind, 0.0)
    hit = _last_value_rmse(kind, 0.5 if kind == "clip" else 1.0)
    assert abs(hit - clean) > 0.01 * clean


def test_context_interior_is_issue_31s_motion_draw_and_never_reaches_the_origin():
    """The old placement stays reachable by name, byte for byte (its burst positions and sizes as issue #31's code
    drew them), and shows the defect it had: last value is immune to it."""
    x = _draw("motion", (4, 2, 1500), seed=7, placement="context-interior")
    support = [(int(np.flatnonzero(x[i, 0])[0]), int(np.flatnonzero(x[i, 0])[-1])) for i in range(4)]
    assert support == [(901, 1368), (337, 917), (499, 1070), (803, 1280)]
    np.testing.assert_allclose([np.abs(x[i]).sum() for i in range(4)],
                               [556.468555, 417.364781, 414.038743, 312.773324], atol=1e-5)
    assert _last_value_rmse("motion", 1.0, "context-interior") == _last_value_rmse("motion", 0.0, "context-interior")


def test_pops_uniform_is_issue_31s_draw():
    x = _draw("pops", (4, 2, 1500), seed=7)
    assert [int(np.flatnonzero(x[i, j])[0]) for i in range(4) for j in range(2)] == [937, 337, 7, 178, 382, 830, 933, 240]
    assert np.abs(x).sum() == pytest.approx(932.2329, abs=1e-4)


def test_a_burst_cut_at_the_origin_keeps_its_amplitude_there():
    """origin: every window's last burst ends on the last sample at its peak (not ~0 as a Hann window would be);
    uniform: a burst reaches the last sample in some windows (with probability about its length / the context's)
    and is then held at its peak after its rise."""
    shape = (200, 2, 96)
    origin = _draw("motion", shape, placement="origin")
    envelope_end = np.abs(origin[:, :, -8:]).max(axis=-1)
    assert (envelope_end > 0.3).all()  # band noise under a held envelope: never near 0 over its last 8 samples
    uniform = _draw("motion", shape)
    reached = (uniform[:, 0, -1] != 0).mean()
    assert 0.1 < reached < 0.4  # bursts of 24 samples (a quarter of the context): about 24 / 96 of the windows
    held = art._burst_envelope(24, held=True)
    assert held[-1] == held.max() and art._burst_envelope(24, held=False)[-1] < 0.05
    pops = _draw("pops", shape, placement="origin")
    assert (np.abs(pops[:, :, -1]) == np.abs(pops).max()).all()  # each channel's last pop jumps on the last sample


def test_the_placement_is_in_the_condition_and_fingerprint_so_old_rows_never_pass_for_new():
    assert ArtefactSpec("motion").condition(0.25) == "motion=0.25"
    assert NoiseSpec(artefact=ArtefactSpec("motion")).fingerprint().endswith(";artefact=motion-v2")  # issue #31's: -v1
    legacy = ArtefactSpec("motion", placement="context-interior")
    assert legacy.condition(0.25) == "motion-context-interior=0.25"
    assert NoiseSpec(artefact=legacy).fingerprint().endswith(";artefact=motion-context-interior-v1")
    assert NoiseSpec(artefact=ArtefactSpec("pops")).fingerprint().endswith(";artefact=pops-v1")  # its draw is unchanged
    assert ArtefactSpec("pops", placement="origin").condition(1) == "pops-origin=1"
    with pytest.raises(SpecError, match="places the events of motion and pops; wander covers the whole context"):
        ArtefactSpec("wander", placement="origin")


def test_the_paper_gaussian_noise_is_byte_identical():
    """The paper's default (Gaussian noise, beta) is untouched by the placements: the context a model sees is the
    one issue #31's code gave it (digest computed with the code before issue #51)."""
    import hashlib

    ds = make_dataset(n_subjects=3, n_samples=400)
    fold = get_fold(ds, ds.subjects[0])
    spec = NoiseSpec(settings=(Setting(48, 24),), sampling=SamplingSpec(max_windows_per_subject=3))
    rec = Recorder()
    evaluate_noise(rec, ds, fold, Setting(48, 24), spec, 0.3, 0)
    seen = np.concatenate(rec.seen)
    assert hashlib.sha256(np.round(seen, 9).tobytes()).hexdigest()[:16] == GAUSSIAN_DIGEST
    assert spec.fingerprint() == "noise;maxw=3;stride=None;seed=0"


GAUSSIAN_DIGEST = "e7434719765397c8"


def test_a_placement_for_a_kind_without_events_is_one_line_and_exit_2(tmp_path, capsys):
    from harness.cli import main

    assert main(["run", "noise", "--artefact", "wander", "--artefact-placement", "origin", "--out", str(tmp_path),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "wander covers the whole context" in err[0]


def test_rows_of_issue_31s_motion_beside_todays_are_two_datasets_and_the_paper_noise_keeps_its_name():
    """The generator in the fingerprint keeps rows of one condition drawn two ways apart (an --out that holds rows
    of issue #31's motion, ``motion-v1``, beside today's, ``motion-v2``); conditions of other families (the
    paper's beta, another artefact) never share a cell, so their generator does not rename the dataset."""
    import pandas as pd

    from harness.records.configurations import label_samplings

    base = "noise;maxw=8;stride=None;seed=0"
    rows = [("beta=0", base), ("motion=1", f"{base};artefact=motion-v2"), ("pops=1", f"{base};artefact=pops-v1")]
    frame = pd.DataFrame([dict(task="noise", dataset="d", condition=c, protocol=f"{p};data=x") for c, p in rows])
    assert set(label_samplings(frame)["dataset"]) == {"d"}
    old = pd.concat([frame, frame.iloc[[1]].assign(protocol=f"{base};artefact=motion-v1;data=x")])
    labels = label_samplings(old)
    assert labels["dataset"].tolist() == ["d", "d [artefact=motion-v2]", "d [artefact=pops-v1]", "d [artefact=motion-v1]"]
