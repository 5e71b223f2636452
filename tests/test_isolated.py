"""Isolated environments (baselines/isolated.py): the worker protocol, environment creation, the cards.

Fast: a trivial worker (tests/workers/echo_worker.py) runs under this very Python, so no virtual
environment is created; environment creation is checked with pip replaced by a fake. The real
MOMENT and Moirai environments are created in tests/test_isolated_envs_slow.py (SOTER_BENCH_SLOW=1).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from baselines import isolated
from baselines.testing import check_forecast_contract, queries as _queries, series as _series
from models.registry import NEEDS_WEIGHTS, READY, ModelSpec, ModelUnavailableError, get_spec
from protocols import interface
from protocols.interface import Capabilities

ECHO = Path(__file__).with_name("workers") / "echo_worker.py"


def echo_model(seed: int = 0, **options: object) -> isolated.WorkerModel:
    """Factory for the contract kit: the echo worker behind the real client."""
    return isolated.WorkerModel("echo", Capabilities(multivariate=False, embed=True), sys.executable, ECHO,
                                weights="/w", options=dict(options), seed=seed, info={"environment": "this one"})


ECHO_SPEC = ModelSpec("echo", "tests.test_isolated:echo_model", "echo worker")


# ---------------------------------------------------------------- the protocol

def test_a_worker_model_meets_the_contract():
    check_forecast_contract(ECHO_SPEC)


def test_forecast_embed_and_describe_cross_the_boundary():
    model = echo_model()
    batch = _series(3, 2, 16)
    out = interface.forecast(model, batch, _queries(batch, 5))
    np.testing.assert_array_equal(out, np.repeat(batch.values[:, :, -1:], 5, axis=2))
    assert interface.embed(model, batch).shape == (3, 1)  # per channel, then averaged
    info = model.describe()
    assert info == {"name": "echo", "environment": "this one", "echo": True, "weights": "/w"}
    model.close()


def test_a_crashing_worker_is_a_clear_error_naming_the_model_and_its_stderr():
    model = echo_model(crash=True)
    batch = _series(1, 1, 8)
    with pytest.raises(isolated.WorkerError, match=r"(?s)echo: worker exited \(code 3\) during 'forecast'.*"
                                                   r"about to die"):
        interface.forecast(model, batch, _queries(batch, 2))


def test_an_exception_in_the_worker_comes_back_with_its_traceback():
    model = echo_model(fail="forecast")
    batch = _series(1, 1, 8)
    with pytest.raises(isolated.WorkerError, match=r"(?s)echo: worker failed in 'forecast': "
                                                   r"RuntimeError: out of memory.*Traceback"):
        interface.forecast(model, batch, _queries(batch, 2))
    with pytest.raises(isolated.WorkerError, match="cannot read the checkpoint"):
        echo_model(fail="load")


def test_a_wrong_output_shape_is_refused():
    model = echo_model(bad_shape=True)
    batch = _series(2, 1, 8)
    with pytest.raises(isolated.WorkerError, match=r"echo: worker returned 'forecast' of shape \(2, 1, 4\).*"
                                                   r"expected shape \(2, 1, 3\)"):
        interface.forecast(model, batch, _queries(batch, 3))


# ---------------------------------------------------------------- quantiles across the boundary

QUANTILE = Path(__file__).with_name("workers") / "quantile_worker.py"


def quantile_model(seed: int = 0, **options: object) -> isolated.WorkerModel:
    """The fake sample-path worker behind the real client, declaring quantiles as the Moirai cards do."""
    return isolated.WorkerModel("fake-quantiles", Capabilities(multivariate=True, quantiles=True), sys.executable,
                                QUANTILE, options=dict(options), seed=seed)


QUANTILE_SPEC = ModelSpec("fake-quantiles", "tests.test_isolated:quantile_model", "fake quantile worker")


def test_a_quantile_worker_meets_the_contract():
    check_forecast_contract(QUANTILE_SPEC)


def test_quantiles_come_back_from_the_same_paths_as_the_point():
    model = quantile_model()
    batch = _series(3, 2, 16)
    q = _queries(batch, 5)
    point, quant = interface.forecast_quantiles(model, batch, q)
    assert point.shape == (3, 2, 5) and quant.shape == (3, 2, 5, len(interface.QUANTILE_LEVELS))
    # bit-identical to the point-only request: the same seeded draws, the same median
    np.testing.assert_array_equal(point, interface.forecast(model, batch, q))
    assert (np.diff(quant, axis=-1) >= 0).all()  # empirical quantiles of the paths: monotone in level
    assert not np.array_equal(quant[..., 0], quant[..., -1])  # and a real spread
    np.testing.assert_allclose(quant[..., 4], point, atol=1e-5)  # the 0.5 level is the median (float32 point)
    # any levels, in the order asked
    point2, two = interface.forecast_quantiles(model, batch, q, levels=(0.95, 0.05))
    np.testing.assert_array_equal(point2, point)
    assert two.shape == (3, 2, 5, 2) and (two[..., 0] > two[..., 1]).all()
    with pytest.raises(ValueError, match=r"quantile levels must lie in \(0, 1\)"):
        interface.forecast_quantiles(model, batch, q, levels=(0.5, 1.0))
    model.close()


def test_a_model_with_its_own_levels_refuses_others_with_a_value_error():
    model = quantile_model(native=[0.1, 0.5, 0.9])
    batch = _series(2, 1, 16)
    q = _queries(batch, 3)
    point, quant = interface.forecast_quantiles(model, batch, q, levels=(0.9, 0.1))
    np.testing.assert_array_equal(point, interface.forecast(model, batch, q))
    assert quant.shape == (2, 1, 3, 2) and (quant[..., 0] >= quant[..., 1]).all()
    with pytest.raises(ValueError, match=r"fake-quantiles forecasts the quantiles \[0.1, 0.5, 0.9\], not \[0.2"):
        interface.forecast_quantiles(model, batch, q)  # the deciles: 0.2 is not among its levels
    model.close()


@pytest.mark.parametrize("bad,message", [
    ("shape", r"worker returned 'quantiles' of shape \(2, 1, 3, 10\).*expected shape \(2, 1, 3, 9\)"),
    ("nan", r"worker returned NaN or infinite quantiles \(1 of 54\)"),
    ("missing", r"worker returned no 'quantiles' output for 'forecast'"),
    ("undeclared", r"its worker does not serve quantile forecasts"),
])
def test_a_worker_breaking_the_quantile_protocol_is_a_worker_error(bad, message):
    model = quantile_model(bad=bad)
    batch = _series(2, 1, 8)
    with pytest.raises(isolated.WorkerError, match="fake-quantiles: " + message):
        interface.forecast_quantiles(model, batch, _queries(batch, 3))
    assert interface.forecast(model, batch, _queries(batch, 3)).shape == (2, 1, 3)  # the point path still works
    model.close()


def test_a_point_only_worker_is_never_asked_for_quantiles():
    model = echo_model()
    batch = _series(1, 1, 8)
    with pytest.raises(NotImplementedError, match="does not declare quantile forecasts"):
        interface.forecast_quantiles(model, batch, _queries(batch, 2))


def test_worker_processes_end_with_their_model():
    model = echo_model()
    proc = model._worker._proc
    folder = model._worker._dir
    del model
    import gc

    gc.collect()
    assert proc.poll() is not None and not folder.exists()


# ---------------------------------------------------------------- creating an environment

@pytest.fixture
def fake_pip(monkeypatch, tmp_path):
    """Replace the commands that build an environment; records them; ``fail`` makes pip fail."""
    calls: list[list[str]] = []
    state = {"fail": False}

    class Done:
        def __init__(self, code: int) -> None:
            self.returncode = code

    def run(cmd, stdout=None, **_):
        calls.append(cmd)
        if cmd[1:3] == ["-m", "venv"]:
            python = isolated.env_python(Path(cmd[3]))
            python.parent.mkdir(parents=True)
            python.write_text("")
        if "pip" in cmd and state["fail"]:
            stdout.write("ERROR: No matching distribution found for momentfm==0.1.4\n")
            return Done(1)
        return Done(0)

    monkeypatch.setattr(isolated.subprocess, "run", run)
    spec = isolated.EnvSpec("moirai", "moirai.txt", check="import uni2ts", no_deps="moirai.no-deps.txt")
    return spec, calls, state


def test_environment_is_created_once_under_the_cache_with_the_torch_pin(fake_pip, tmp_path, monkeypatch):
    spec, calls, _ = fake_pip
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path / "cache"))
    python = isolated.ensure_env(spec, log=lambda _: None)
    root = spec.root()
    assert root.parent == tmp_path / "cache" / "envs" and python == isolated.env_python(root)
    assert (root / isolated.READY_MARKER).is_file()
    assert (root / "torch-constraint.txt").read_text().strip() == isolated.torch_pin()
    assert isolated.torch_pin().startswith("torch==2.")
    pip = [c for c in calls if "pip" in c]
    assert pip[0][-4:] == ["-c", str(root / "torch-constraint.txt"), "-r", str(isolated.ENVS_DIR / "moirai.txt")]
    assert "--no-deps" in pip[1] and pip[1][-1] == str(isolated.ENVS_DIR / "moirai.no-deps.txt")
    assert calls[-1][1:] == ["-c", "import uni2ts"]
    n = len(calls)
    assert isolated.ensure_env(spec, log=lambda _: None) == python and len(calls) == n  # cached: nothing run


def test_an_interrupted_install_is_redone_and_a_failed_one_says_where_the_log_is(fake_pip, tmp_path, monkeypatch):
    spec, calls, state = fake_pip
    monkeypatch.setenv("SOTER_BENCH_CACHE", str(tmp_path / "cache"))
    root = spec.root()
    (root / "lib").mkdir(parents=True)  # a previous install stopped half way: no marker
    (root / "lib" / "half.txt").write_text("")
    state["fail"] = True
    with pytest.raises(isolated.EnvironmentCreationError, match=r"(?s)creating the moirai environment failed.*"
                                                                r"install\.log.*No matching distribution"):
        isolated.ensure_env(spec, log=lambda _: None)
    assert not (root / isolated.READY_MARKER).exists() and not (root / "lib").exists()
    state["fail"] = False
    isolated.ensure_env(spec, log=lambda _: None)
    assert (root / isolated.READY_MARKER).is_file()


def test_a_changed_pin_gives_a_new_environment(monkeypatch, tmp_path):
    spec = isolated.ENVS["moment"]
    before = spec.key()
    monkeypatch.setattr(isolated, "torch_pin", lambda: "torch==9.9.9")
    assert spec.key() != before


# ---------------------------------------------------------------- the MOMENT and Moirai cards

ISOLATED = {"moment-small": "AutonLab/MOMENT-1-small", "moment-base": "AutonLab/MOMENT-1-base",
            "moment-large": "AutonLab/MOMENT-1-large", "moirai-moe-small": "Salesforce/moirai-moe-1.0-R-small",
            "moirai-moe-base": "Salesforce/moirai-moe-1.0-R-base", "moirai-2.0-small": "Salesforce/moirai-2.0-R-small",
            "ttm": "ibm-granite/granite-timeseries-ttm-r1", "timesfm-1.0": "google/timesfm-1.0-200m-pytorch",
            "timesfm-2.0": "google/timesfm-2.0-500m-pytorch"}


@pytest.mark.parametrize("name,hub", sorted(ISOLATED.items()))
def test_without_weights_the_rows_say_what_to_download(name, hub, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    spec = get_spec(name)
    status, reason = spec.status()
    assert status == NEEDS_WEIGHTS and f"hf download {hub} --local-dir DIR" in reason
    assert f"--weights {name}=DIR" in reason and not spec.default
    with pytest.raises(ModelUnavailableError, match="hf download"):
        spec.load()
    assert not (tmp_path / "cache" / "envs").exists()  # no environment made for a model that cannot run


def test_with_weights_the_status_is_ready_and_loading_makes_the_environment(monkeypatch, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "model.safetensors").write_bytes(b"")
    spec = get_spec("moment-small")
    assert spec.status(weights=str(tmp_path)) == (READY, None)  # cheap: no environment yet
    seen = refuse_environments(monkeypatch)
    with pytest.raises(ModelUnavailableError, match="no network"):
        spec.load(weights=str(tmp_path))
    assert seen == ["moment"]
    assert get_spec("moirai-moe-small").options["worker_options"] == {"family": "moirai-moe"}
    assert get_spec("moirai-2.0-small").options["worker_options"] == {"family": "moirai2"}


def test_only_the_cards_whose_worker_gives_quantiles_declare_them():
    quantiles = {name for name in [*ISOLATED, "lag-llama"] if get_spec(name).model_capabilities().quantiles}
    assert quantiles == {"moirai-moe-small", "moirai-moe-base", "moirai-2.0-small", "lag-llama", "timesfm-1.0",
                         "timesfm-2.0"}  # not MOMENT (masked reconstruction) nor TTM (an MSE point forecaster)


def test_the_cards_describe_the_isolated_run():
    caps = get_spec("moment-large").model_capabilities()
    assert caps.embed and not caps.multivariate and caps.max_context == 512
    assert "masked reconstruction" in get_spec("moment-large").description
    assert "--no-deps" in get_spec("moirai-moe-base").description
    assert get_spec("moirai-moe-small").model_capabilities().multivariate
    assert not get_spec("moirai-2.0-small").model_capabilities().multivariate  # uni2ts: one target only
    for name in ISOLATED:
        assert dataclasses.asdict(get_spec(name))["requires"] == ()  # the libraries live in their environment
    assert "granite-tsfm 0.3.2" in get_spec("ttm").description and get_spec("ttm").options["env"] == "ttm"
    for version in ("1.0", "2.0"):
        spec = get_spec(f"timesfm-{version}")
        assert "timesfm 1.3.0" in spec.description and "mean head" in spec.description
        assert spec.options["env"] == "timesfm1" and spec.options["worker_options"] == {"version": version}
        assert not spec.model_capabilities().multivariate


def refuse_environments(monkeypatch) -> list[str]:
    """Make environment creation fail as without network; returns the names it was asked for."""
    seen: list[str] = []

    def refuse(env, log=None):
        seen.append(env.name)
        raise isolated.EnvironmentCreationError("no network (pretend)")

    monkeypatch.setattr(isolated, "ensure_env", refuse)
    return seen


def env_pins(name: str) -> list[str]:
    """The requirement lines of an environment's files, comments and blanks dropped."""
    lines = [line.split("#")[0].strip() for p in isolated.ENVS[name].files() for line in p.read_text().splitlines()]
    return [line for line in lines if line]


def test_the_new_environments_pin_no_torch_and_no_jax():
    for name in ("ttm", "timesfm1"):
        pins = env_pins(name)
        assert pins and all("==" in line for line in pins), pins
        assert not any(line.startswith(("torch", "jax")) or "pax" in line or "xreg" in line for line in pins), pins


def test_timesfm_weights_directory_needs_the_torch_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    spec = get_spec("timesfm-2.0")
    assert spec.status(weights=str(tmp_path))[0] == NEEDS_WEIGHTS
    (tmp_path / "torch_model.ckpt").write_bytes(b"")
    assert spec.status(weights=str(tmp_path)) == (READY, None)
