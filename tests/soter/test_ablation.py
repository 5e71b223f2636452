"""The ablation runner: each variant is the paper's change and nothing else; train and evaluate run."""

from __future__ import annotations

import dataclasses

import pytest

from models.soter.config import ConfigError, preset
from models.soter.training.ablation import VARIANTS, evaluate, train, variant_configs
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
        train_ = {f.name for f in dataclasses.fields(t) if getattr(t, f.name) != getattr(full_train, f.name)} - {"out"}
        return m, model, train_

    m, model, tr = diff("no-cd")
    assert model == {"cd_layer"} and m.cd_layer is None and not tr
    m, model, tr = diff("learned-router")
    assert model == {"router"} and m.router == "learned" and not tr
    m, model, tr = diff("no-cde")
    assert model == {"control"} and not m.control and tr == {"missing_prob"}
    for name, index in (("cd-5th", 4), ("cd-4th", 3), ("cd-3rd", 2)):
        m, model, tr = diff(name)
        assert model == {"cd_layer"} and m.cd_layer == index and not tr
    assert [v.label for v in VARIANTS.values()][:4] == ["SOTER", "w/o CD Layer", "w/o PSD-MoE", "w/o Neural CDE"]


def test_bad_variants_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="only 3 layers"):
        variant_configs("cd-5th", TrainConfig(model="soter-tiny", out=str(tmp_path)))
    with pytest.raises(ValueError, match="unknown ablation variant 'no-moe'"):
        variant_configs("no-moe", TrainConfig(out=str(tmp_path)))


def test_train_then_evaluate_gathers_records_per_variant(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    corpus = tmp_path / "corpus"
    write_dataset(synthetic_stream(n_subjects=2, seconds_per_state=6, seed=1000), corpus)
    base = TrainConfig(model="soter-tiny", corpus=str(corpus), out=str(tmp_path / "abl"), steps=1, batch_size=2,
                       max_length=32, min_length=16, checkpoint_every=1, log_every=1, solver="rk4")
    done = train(base, ["full", "no-cd"], log=lambda line: None)
    assert set(done) == {"full", "no-cd"} and all((d / "config.json").is_file() for d in done.values())
    data = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=2, n_samples=200), data)
    table = evaluate(tmp_path / "abl", ["full", "no-cd", "cd-3rd"], datasets=(str(data),),
                     max_windows_per_subject=1, log=lambda line: None)
    assert set(table["variant"]) == {"full", "no-cd"}  # cd-3rd was not trained: skipped
    assert (table["status"] == "ok").all() and set(table["variant_label"]) == {"SOTER", "w/o CD Layer"}
    assert (tmp_path / "abl" / "ablation_records.csv").is_file()
