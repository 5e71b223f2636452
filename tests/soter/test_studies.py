"""The study runners (ablation, sensitivity): each variant is the paper's change and nothing else;
train and evaluate run end to end."""

from __future__ import annotations

import dataclasses

import pytest

from models.soter.config import ConfigError, preset
from harness.studies.runners import ABLATION, SENSITIVITY, evaluate, evaluate_sensitivity, train, variant_configs
from models.soter.training.config import TrainConfig
from models.soter.training.corpus import synthetic_stream, write_dataset
from protocols.datasets.folder import write_folder_dataset
from tests.conftest import make_dataset


def test_each_variant_changes_only_what_the_paper_names(tmp_path):
    base = TrainConfig(model="soter-small", out=str(tmp_path))
    full_train, full_model = variant_configs("full", base)
    assert full_model == preset("soter-small") and full_train.out == str(tmp_path / "full")

    def diff(name):
        t, m = variant_configs(name, base)
        model = {f.name for f in dataclasses.fields(m) if getattr(m, f.name) != getattr(full_model, f.name)}
        train_ = {f.name for f in dataclasses.fields(t) if getattr(t, f.name) != getattr(full_train, f.name)}
        assert t.model_config() == m  # the run trains the variant's model (its options are the run's model options)
        return m, model, train_ - {"out", "model_options"}

    m, model, tr = diff("no-cd")
    assert model == {"cd_layer"} and m.cd_layer is None and not tr
    m, model, tr = diff("learned-router")
    assert model == {"router"} and m.router == "learned" and not tr
    m, model, tr = diff("no-cde")
    assert model == {"control"} and not m.control and tr == {"missing_prob"}
    for name, index in (("cd-5th", 4), ("cd-4th", 3), ("cd-3rd", 2)):
        m, model, tr = diff(name)
        assert model == {"cd_layer"} and m.cd_layer == index and not tr
    assert [v.label for v in ABLATION.values()][:4] == ["SOTER", "w/o CD Layer", "w/o PSD-MoE", "w/o Neural CDE"]


def test_bad_variants_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="only 3 layers"):
        variant_configs("cd-5th", TrainConfig(model="soter-tiny", out=str(tmp_path)))
    with pytest.raises(ValueError, match="unknown variant 'no-moe'"):
        variant_configs("no-moe", TrainConfig(out=str(tmp_path)))


def test_train_then_evaluate_gathers_records_per_variant(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    corpus = tmp_path / "corpus"
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), corpus)
    base = TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(tmp_path / "abl"), steps=1, batch_size=2,
                       max_length=32, min_length=16, checkpoint_every=1, log_every=1,
                       model_options={"solver": "rk4"})
    done = train(base, ["full", "no-cd"], log=lambda line: None)
    assert set(done) == {"full", "no-cd"} and all((d / "config.json").is_file() for d in done.values())
    data = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=2, n_samples=200), data)
    table = evaluate(tmp_path / "abl", ["full", "no-cd", "cd-3rd"], datasets=(str(data),),
                     max_windows_per_subject=1, log=lambda line: None)
    assert set(table["variant"]) == {"full", "no-cd"}  # cd-3rd was not trained: skipped
    assert (table["status"] == "ok").all() and set(table["variant_label"]) == {"SOTER", "w/o CD Layer"}
    assert (tmp_path / "abl" / "ablation_records.csv").is_file()


def test_sensitivity_grid_is_the_papers(tmp_path):
    base = TrainConfig(model="soter-small", out=str(tmp_path))
    grid = {variant_configs(n, base)[1] for n in SENSITIVITY}
    assert len(SENSITIVITY) == 10  # 2 DFTs x (dopri5 x 4 tolerances + rk4, which ignores tolerances)
    assert {(c.dft_impl, c.solver) for c in grid} == {(d, s) for d in ("fast", "loop") for s in ("dopri5", "rk4")}
    assert {c.rtol for c in grid if c.solver == "dopri5"} == {1e-6, 1e-5, 1e-4, 1e-3}
    assert all(c.rtol == c.atol for c in grid)


def test_sensitivity_train_and_evaluate(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), corpus)
    base = TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(tmp_path / "sens"), steps=1, batch_size=2,
                       max_length=32, min_length=16, checkpoint_every=1, log_every=1)
    train(base, ["parallel-rk4", "loop-dopri5-1e-03"], log=lambda line: None)
    data = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=2, n_samples=200), data)
    table = evaluate_sensitivity(tmp_path / "sens", ["parallel-rk4", "loop-dopri5-1e-03"], str(data), samples=4,
                                 context=32, horizon=8, rollout="direct", log=lambda line: None)
    assert list(table["solver"]) == ["rk4", "dopri5"] and list(table["dft_impl"]) == ["fast", "loop"]
    assert table["tolerance"].isna().tolist() == [True, False]
    assert (table["windows"] == 4).all() and (table["step_seconds"] > 0).all()
