"""Issue #44: model options in one place. A run's model options are one mapping validated and typed by SoterConfig
(no mirrored fields), heads' learning rates one mapping of groups, a recipe is a file that flags override, and
configs written before (TRAINING.json, trainer states) still read."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from models.soter.config import ConfigError, SoterConfig, preset
from models.soter.training.config import TrainConfig, read_recipe
from models.soter.training.train import _add_config_flags, config_from_args

ROOT = Path(__file__).resolve().parents[2]
RECIPES = ROOT / "models" / "soter" / "recipes"


def _args(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    _add_config_flags(p)
    return p.parse_args(list(argv))


def test_a_new_model_option_needs_no_training_field():
    """Every SoterConfig field is a model option of a run; none is mirrored in TrainConfig."""
    fields = {f for f in SoterConfig.__dataclass_fields__}
    assert not fields & set(TrainConfig.__dataclass_fields__) - {"max_length"}  # the context length is the run's
    cfg = TrainConfig(model="soter-tiny", model_options={"field_dt": "true", "cd_layer": "none", "rtol": "1e-4",
                                                         "decoder_hidden": "16,16"})
    assert cfg.model_options == {"field_dt": True, "cd_layer": None, "rtol": 1e-4, "decoder_hidden": (16, 16)}
    assert cfg.model_config() == preset("soter-tiny").replace(field_dt=True, cd_layer=None, rtol=1e-4,
                                                               decoder_hidden=(16, 16))


@pytest.mark.parametrize("options, message", [
    ({"input_scalling": "window"}, "unknown SOTER model option"),
    ({"field_dt": "maybe"}, "field_dt: 'maybe' is not a bool"),
    ({"short_trend_points": "1.5"}, "short_trend_points"),
])
def test_a_bad_model_option_is_one_clear_error(options, message):
    with pytest.raises(ConfigError, match=message):
        TrainConfig(model_options=options)


def test_a_bad_group_rate_is_refused():
    with pytest.raises(ValueError, match="group_lr"):
        TrainConfig(group_lr={"trend_head": -1.0})


def test_flags_override_the_recipe_key_by_key(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text('model = "soter-tiny"\nsteps = 7\nlr = 1e-3\n[model_options]\ninput_scaling = "window"\n'
                      'output_skip = "last-value"\n[group_lr]\ntrend_head = 0.01\n')
    cfg = config_from_args(_args("--recipe", str(recipe), "--steps", "9", "--model-option", "output_skip=damped-trend",
                                 "--group-lr", "reversion_head=0.02"))
    assert (cfg.model, cfg.steps, cfg.lr) == ("soter-tiny", 9, 1e-3)
    assert cfg.model_options == {"input_scaling": "window", "output_skip": "damped-trend"}
    assert cfg.group_lr == {"trend_head": 0.01, "reversion_head": 0.02}
    assert config_from_args(_args()) == TrainConfig()  # no recipe, no flag: the defaults


def test_a_recipe_with_an_unknown_field_names_the_file(tmp_path):
    recipe = tmp_path / "r.toml"
    recipe.write_text("stepz = 7\n")
    with pytest.raises(ValueError, match=r"r\.toml: unknown recipe field\(s\) \['stepz'\]"):
        read_recipe(recipe)


@pytest.mark.parametrize("recipe", sorted(RECIPES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_recipe_reads(recipe):
    cfg = TrainConfig.from_dict(read_recipe(recipe))
    cfg.model_config()  # the model it describes is a valid SOTER


def test_the_shipped_checkpoints_training_configs_still_read():
    """Written before the one-mapping config: their mirrored fields come back as model options and groups."""
    for folder in sorted((ROOT / "models" / "soter" / "checkpoints").iterdir()):
        saved = json.loads((folder / "TRAINING.json").read_text())["train_config"]
        cfg = TrainConfig.from_dict(saved)
        model = SoterConfig.load(folder / "config.json")
        assert cfg.model_config().replace(max_length=model.max_length) == model, folder.name


def test_a_legacy_config_maps_to_options_and_groups():
    legacy = {"model": "soter-tiny", "solver": "rk4", "input_scaling": "window", "value_embedding": True,
              "output_skip": "damped-trend", "field_dt": False, "huber_delta": 0.0, "trend_head_lr": 0.01,
              "reversion_head_lr": 0.0, "short_trend_head_lr": 0.0}
    cfg = TrainConfig.from_dict(legacy)
    assert cfg.model_options == {"solver": "rk4", "input_scaling": "window", "value_embedding": True,
                                 "output_skip": "damped-trend"}
    assert cfg.group_lr == {"trend_head": 0.01}


def test_max_stride_reads_windows_at_several_rates_and_one_is_the_paper_s(corpus):
    """Issue #45: ``max_stride`` S draws each step's stride in 1..S; S = 1 gives the unchanged batches."""
    import numpy as np

    from models.soter.training.corpus import open_corpus
    from models.soter.training.sampler import WindowSampler

    datasets = open_corpus(corpus)
    plain = WindowSampler(datasets, 32, 2, seed=7)
    one = WindowSampler(datasets, 32, 2, seed=7, max_stride=1)
    np.testing.assert_array_equal(plain.batch(3).values, one.batch(3).values)
    strided = WindowSampler(datasets, 32, 2, seed=7, max_stride=3)
    seen = set()
    for step in range(40):
        batch = strided.batch(step)
        base = float(np.median(np.diff(plain.batch(step).times[0])))
        steps = np.diff(batch.times, axis=1) / base
        assert np.allclose(steps, np.round(steps)) and len({int(round(s)) for s in steps.ravel()}) == 1
        seen.add(int(round(steps[0, 0])))
        assert batch.values.shape == plain.batch(step).values.shape  # the same context length, another rate
    assert seen == {1, 2, 3}
    np.testing.assert_array_equal(strided.batch(5).times, strided.batch(5).times)  # a pure function of the step
    with pytest.raises(ValueError, match="max_stride"):
        WindowSampler(datasets, 32, 2, seed=7, max_stride=0)
