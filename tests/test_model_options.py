"""--model-option NAME.KEY=VALUE: parsed, checked against the factory before any work, part of the key."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.cli import main
from harness.run.runner import RunConfig, execute, parse_model_option, plan
from harness.records.store import RecordStore, read_records
from models.registry import UnknownOptionError, get_spec
from protocols.interface import SeriesBatch, forecast
from protocols.specs import SpecError, Setting


def _config(folder: Path, out: Path, models: tuple[str, ...], options=(), windows: int = 2, **kw) -> RunConfig:
    return RunConfig(datasets=(str(folder),), models=models, out=out,
                     options={"settings": (Setting(48, 24),), "max_windows_per_subject": windows}, progress=False,
                     model_options=tuple(options), **kw)


@pytest.mark.parametrize("item, parsed", [
    ("soter.batch_size=8", ("soter", "batch_size", 8)),
    ("test-slow-last-value.delay=0.5", ("test-slow-last-value", "delay", 0.5)),
    ("soter.per_channel=True", ("soter", "per_channel", True)),
    ("soter.rollout=autoregressive", ("soter", "rollout", "autoregressive")),
    ("soter.rollout='per-query'", ("soter", "rollout", "per-query")),
    ("soter.device=cuda:0", ("soter", "device", "cuda:0")),  # not a literal: kept as given
    ("normwear.code=/a/b=c.d", ("normwear", "code", "/a/b=c.d")),  # the first '=' ends NAME.KEY
    ("timesfm-2.5.batch_size=16", ("timesfm-2.5", "batch_size", 16)),  # names may hold dots; keys cannot
    ("x.k=None", ("x", "k", None)),
])
def test_values_are_python_literals_else_strings(item, parsed):
    assert parse_model_option(item) == parsed


@pytest.mark.parametrize("item", ["soter", "soter=8", "soter.=8", ".batch_size=8", "soter.batch_size=",
                                  "timesfm-2.5=8", "soter.batch_size=[1, 2]"])
def test_malformed_options_are_usage_errors(item):
    with pytest.raises(SpecError, match="model-option"):
        parse_model_option(item)


def _run_cli(folder: Path, tmp_path: Path, models: list[str], *options: str) -> list[str]:
    argv = ["run", "forecasting", "--dataset", str(folder), "--models", *models, "--settings", "48/24",
            "--out", str(tmp_path / "o"), "--no-progress"]
    for option in options:
        argv += ["--model-option", option]
    return argv


@pytest.mark.parametrize("models, option, message", [
    (["test-slow-last-value"], "test-slow-last-value.dealy=1",
     "test-slow-last-value has no option 'dealy'; its options: delay"),
    (["window-mean"], "window-mean.period=3", "window-mean takes no options"),
    (["soter"], "soter.batchsize=8", "its options: batch_size, control_beyond, device, output_bound, per_channel, rollout"),
    (["soter"], "soter.name=x", "soter has no option 'name'"),  # set by the registration
    (["last-value"], "no-such-model.k=1", "unknown model 'no-such-model'"),
    (["last-value"], "drift.k=1", "drift is not among this run's models"),
    (["test-slow-last-value"], "test-slow-last-value.seed=3", "use --seeds"),
    (["soter"], "soter.weights=/w", "use --weights NAME=DIR"),
    (["timer-base"], "timer-base.trust_remote_code=True", "use --trust-remote-code NAME"),
    (["last-value"], "last-value", "expects NAME.KEY=VALUE"),
    # a value outside a Literal-annotated option's choices: before any work, not at load in every cell
    (["soter"], "soter.control_beyond=bogus", "soter.control_beyond: 'bogus' is not one of 'extrapolate', 'hold', "
                                              "'zero'"),
    (["soter"], "soter.solver_impl=scipy", "soter.solver_impl: 'scipy' is not one of 'native', 'torchdiffeq'"),
    (["soter-anchored"], "soter-anchored.rollout=sideways", "'sideways' is not one of 'autoregressive', 'direct', "
                                                           "'per-query'"),
])
def test_bad_options_stop_the_run_before_any_work(folder, tmp_path, capsys, models, option, message):
    assert main(_run_cli(folder, tmp_path, models, option)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert not (tmp_path / "o" / "records.csv").exists()


def test_an_option_given_twice_is_an_error(folder, tmp_path, capsys):
    argv = _run_cli(folder, tmp_path, ["test-slow-last-value"], "test-slow-last-value.delay=0",
                    "test-slow-last-value.delay=0.1")
    assert main(argv) == 2 and "given twice" in capsys.readouterr().err


def test_only_the_models_given_options_are_inspected(folder, tmp_path, monkeypatch):
    def refuse(self):
        raise AssertionError(f"{self.name}'s factory was inspected")

    monkeypatch.setattr(type(get_spec("last-value")), "option_names", refuse)
    plan(_config(folder, tmp_path / "o", ("last-value", "soter")))  # no --model-option: no inspection


def test_another_option_value_recomputes_and_the_same_value_reuses(folder, tmp_path):
    out = tmp_path / "o"
    model = ("test-slow-last-value",)
    first = execute(_config(folder, out, model, [("test-slow-last-value", "delay", 0.0)]))
    assert first.ran == first.planned == 3
    same = execute(_config(folder, out, model, [("test-slow-last-value", "delay", 0.0)]))
    assert same.ran == 0 and same.skipped_done == 3
    other = execute(_config(folder, out, model, [("test-slow-last-value", "delay", 0.001)]))
    assert other.ran == 3 and set(other.keys).isdisjoint(first.keys)
    assert len(RecordStore(first.records_path).frame()) == 6  # both option values' rows are kept
    frame = read_records(first.records_path)  # two configurations: two models for tables, named by the option
    assert set(frame.key) == set(other.keys) | set(first.keys) and set(frame.status) == {"ok"}
    assert frame.groupby("model")["key"].apply(set).to_dict() == {
        "test-slow-last-value [delay=0.0]": set(first.keys), "test-slow-last-value [delay=0.001]": set(other.keys)}


def test_the_registered_value_given_again_keeps_the_key(folder, tmp_path):
    """soter is registered with rollout=per-query: saying so again changes nothing."""
    keys = [[f["key"] for _, f in plan(_config(folder, tmp_path / "o", ("soter",), opts))[0]]
            for opts in ((), [("soter", "rollout", "per-query")], [("soter", "rollout", "autoregressive")])]
    assert keys[0] == keys[1] and set(keys[0]).isdisjoint(keys[2])


def test_soters_rollout_reaches_the_model(folder, tmp_path):
    config = _config(folder, tmp_path / "o", ("soter",), [("soter", "rollout", "autoregressive")], windows=1)
    cells, _ = plan(config)
    assert all(dict(cell.model_options)["rollout"] == "autoregressive" for cell, _ in cells)
    summary = execute(config)
    frame = read_records(summary.records_path)
    assert set(frame.status) == {"ok"}
    assert {json.loads(info)["rollout"] for info in frame.model_info} == {"autoregressive"}


def test_soter_declares_rollout_per_channel_and_batch_size():
    for name in ("soter", "soter-autoregressive"):
        assert {"rollout", "per_channel", "batch_size", "device"} <= set(get_spec(name).option_names())


def _batch(b: int = 7, c: int = 2, t: int = 32) -> tuple[SeriesBatch, np.ndarray]:
    rng = np.random.default_rng(0)
    times = np.tile(np.arange(t) * 0.1, (b, 1))
    batch = SeriesBatch(np.sin(times[:, None, :] * 3 + rng.standard_normal((b, c, 1))) + 0.05 * rng.standard_normal((b, c, t)),
                        times)
    return batch, times[:, -1:] + 0.1 * np.arange(1, 9)[None, :]


def test_batch_size_does_not_change_a_fixed_step_soters_forecasts():
    """batch_size only splits the rows into passes; a fixed-step solve is batch-invariant (tolerance None)."""
    from models.soter.adapter import SoterAdapter
    from models.soter.config import preset
    from models.soter.model import SoterModel

    torch.manual_seed(0)
    model = SoterModel(dataclasses.replace(preset("soter-tiny"), solver="rk4"))
    whole, split = SoterAdapter(model, batch_size=256), SoterAdapter(model, batch_size=2)
    assert whole.batch_tolerance is None
    batch, queries = _batch()
    np.testing.assert_allclose(forecast(split, batch, queries), forecast(whole, batch, queries), rtol=0, atol=1e-6)


def test_batch_size_reaches_the_shipped_soter_within_its_declared_tolerance():
    spec = get_spec("soter")
    whole, split = spec.load(seed=0), spec.load(seed=0, batch_size=3)
    assert split.batch_size == 3
    rtol, atol = split.batch_tolerance or (0.0, 1e-6)
    batch, queries = _batch()
    np.testing.assert_allclose(forecast(split, batch, queries), forecast(whole, batch, queries), rtol=rtol, atol=atol)


def test_a_batch_size_below_one_is_refused():
    with pytest.raises(ValueError, match="batch_size"):
        get_spec("soter").load(seed=0, batch_size=0)


@pytest.mark.parametrize("name, misspelt, options", [
    ("auto-ets", "season_lenght", "its options: seed"),  # a statistical baseline
    ("window-mean", "perod", "its options: seed"),
    ("soter-tiny-random", "batchsize", "its options: batch_size, config, device, per_channel, rollout, seed"),
])
def test_a_misspelt_option_is_an_error_on_load_not_ignored(name, misspelt, options):
    """Factories declare their options (no ``**_`` catch-all): a wrong key names the model and its options."""
    with pytest.raises(UnknownOptionError, match=f"model '{name}' has no option '{misspelt}'; {options}$"):
        get_spec(name).load(seed=0, **{misspelt: 8})
    assert get_spec(name).load(seed=0) is not None  # and the options the harness passes are accepted


def test_weights_for_a_model_without_weights_stop_the_run(folder, tmp_path):
    with pytest.raises(SpecError, match="--weights last-value=/w: last-value has no option 'weights'"):
        plan(_config(folder, tmp_path / "o", ("last-value",), weights=(("last-value", "/w"),)))
    with pytest.raises(SpecError, match="--trust-remote-code soter-tiny-random: soter-tiny-random has no option"):
        plan(_config(folder, tmp_path / "o", ("soter-tiny-random",), trust_remote_code=("soter-tiny-random",)))


def test_soter_option_choices_are_the_models_own():
    """The adapter's Literal annotations list exactly the values the model accepts (one source of truth each)."""
    from models.soter.config import SOLVER_IMPLS
    from models.soter.model import ROLLOUTS
    from models.soter.spline import BEYOND

    for name in ("soter", "soter-anchored", "soter-autoregressive"):
        choices = get_spec(name).option_choices()
        assert choices == {"rollout": ROLLOUTS, "control_beyond": BEYOND, "solver_impl": SOLVER_IMPLS}, name
    assert get_spec("soter-tiny-random").option_choices() == {"rollout": ROLLOUTS}


def test_options_read_from_the_source_equal_the_imported_factorys(monkeypatch):
    """Issue #51: option names, choices and types are read from the factory's source (no torch before a usage
    error); for every registered model they equal what the imported factory declares."""
    import models.registry as registry

    specs = registry.all_specs()
    read = {name: (s.option_names(), s.option_choices(), s.option_types()) for name, s in specs.items()}
    assert sum(registry.static_parameters(s.factory) is not None for s in specs.values()) >= 20  # SOTER's among them
    assert registry.static_parameters(specs["soter"].factory) is not None
    monkeypatch.setattr(registry, "static_parameters", lambda factory: None)
    imported = {name: (s.option_names(), s.option_choices(), s.option_types()) for name, s in specs.items()}
    assert read == imported, [(n, i, read[n][i], imported[n][i]) for n in read for i in range(3) if read[n][i] != imported[n][i]]


def test_the_source_reader_evaluates_the_annotations_factories_use(tmp_path, monkeypatch):
    import typing

    from models.factory_signature import Opaque, static_parameters

    (tmp_path / "toy_factory.py").write_text(
        "from __future__ import annotations\nfrom pathlib import Path\nfrom typing import Literal, Optional\n"
        "Mode = Literal['a', 'b']\n"
        "def make(mode: Mode = 'a', n: int = 1, x: float | None = None, p: 'str | Path' = '', q: Optional[int] = None,\n"
        "         *, m: SomeClass = None, plain=3) -> None: ...\n"
        "class Thing:\n    def __init__(self, k: Literal[1, 2] = 1): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    got = static_parameters("toy_factory:make")
    assert typing.get_args(got["mode"]) == ("a", "b") and got["n"] is int and got["m"] is Opaque
    assert typing.get_args(got["x"]) == (float, type(None)) and typing.get_args(got["p"]) == (str, Path)
    assert typing.get_args(got["q"]) == (int, type(None)) and got["plain"] is None
    assert list(static_parameters("toy_factory:Thing")) == ["k"]
    assert static_parameters("toy_factory:missing") is None
