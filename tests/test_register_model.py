"""``@register_model``: a model class registers under its own ``name`` with a factory string derived
from where it is defined; the built-in registrations it replaced are unchanged, field for field."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from models import registry
from models.registry import (DuplicateModelError, ModelSpec, SpecFields, _resolve, all_specs, import_path,
                             register, register_model)
from protocols.interface import Capabilities, Model, SeriesBatch


class Echo(Model):
    """Last value (test only)."""

    name = "test-echo"
    capabilities = Capabilities(multivariate=True)

    def __init__(self, seed: int = 0) -> None:
        pass

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return np.repeat(batch.values[:, :, -1:], query_times.shape[1], axis=2)


class OtherEcho(Echo):
    name = "test-echo"  # the same name as Echo: a different model


class Unnamed(Echo):
    pass  # inherits Echo's name: registering it would take Echo's


class EmptyName(Echo):
    name = ""


class Outer:
    class Inner(Echo):
        name = "test-inner"


def make_echo(seed: int = 0) -> Echo:
    return Echo(seed=seed)


@pytest.fixture
def fresh_registry(monkeypatch):
    """The built-in registry, copied: what a test registers is gone afterwards."""
    all_specs()
    monkeypatch.setattr(registry, "_MODELS", registry._MODELS.copy())


def test_a_class_registers_under_its_name_with_the_derived_factory(fresh_registry):
    assert register_model(description="echo", default=False, tasks=("forecasting",))(Echo) is Echo
    spec = registry.get_spec("test-echo")
    assert spec == ModelSpec("test-echo", "tests.test_register_model:Echo", "echo", default=False,
                             tasks=("forecasting",))
    model = spec.load()
    assert type(model) is Echo and model.name == spec.name
    register_model(description="echo", default=False, tasks=("forecasting",))(Echo)  # the same spec again: fine


def test_a_factory_function_takes_name(fresh_registry):
    register_model(name="test-echo-fn", description="echo")(make_echo)
    assert registry.get_spec("test-echo-fn").factory == "tests.test_register_model:make_echo"
    assert isinstance(registry.load_model("test-echo-fn"), Echo)
    with pytest.raises(TypeError, match="make_echo needs name="):
        register_model(description="echo")(make_echo)


def test_a_class_without_a_name_of_its_own_is_refused(fresh_registry):
    with pytest.raises(TypeError, match="class Unnamed defines no name of its own"):
        register_model(description="x")(Unnamed)
    with pytest.raises(TypeError, match="class EmptyName defines no name"):
        register_model(description="x")(EmptyName)
    with pytest.raises(TypeError, match="named 'test-echo' by its `name` attribute, not 'other'"):
        register_model(name="other", description="x")(Echo)


def test_a_local_class_is_refused_a_worker_could_not_import_it(fresh_registry):
    class Local(Echo):
        name = "test-local"

    with pytest.raises(TypeError, match=r"Local is defined inside a function.*top level of a module"):
        register_model(description="x")(Local)
    assert "test-local" not in registry._MODELS


def test_a_nested_class_resolves(fresh_registry):
    register_model(description="x")(Outer.Inner)
    spec = registry.get_spec("test-inner")
    assert spec.factory == "tests.test_register_model:Outer.Inner" and _resolve(spec.factory) is Outer.Inner


def test_two_classes_under_one_name_is_the_duplicate_error(fresh_registry):
    register_model(description="echo")(Echo)
    with pytest.raises(DuplicateModelError, match="'test-echo' is registered twice: by module "
                                                  "'tests.test_register_model'"):
        register_model(description="echo")(OtherEcho)
    with pytest.raises(DuplicateModelError, match="'last-value' is registered twice.*before by module "
                                                  "'baselines.naive'"):
        register_model(name="last-value", description="x")(make_echo)


def test_register_with_a_spelt_out_spec_still_works(fresh_registry):
    """The old path (plugins; SOTER, whose factory module imports torch)."""
    register(ModelSpec("test-echo-old", "tests.test_register_model:Echo", "echo"))
    assert type(registry.load_model("test-echo-old")) is Echo


def test_spec_fields_are_the_model_spec_fields():
    fields = {f.name for f in dataclasses.fields(ModelSpec)} - {"name", "factory"}
    assert set(SpecFields.__annotations__) == fields


def test_import_path():
    assert import_path(Echo) == "tests.test_register_model:Echo"
    assert import_path("a.b:c") == "a.b:c"
    with pytest.raises(TypeError, match="no class or function"):
        import_path(3)


# the registrations of the cheap baselines as baselines/__init__.py spelt them before @register_model
_NAIVE, _SF, _IMP = "baselines.naive", "baselines.statsforecast_models", "baselines.imputation"
BEFORE = [
    ModelSpec("last-value", f"{_NAIVE}:LastValue", "Repeats the last observed value (per channel)"),
    ModelSpec("window-mean", f"{_NAIVE}:WindowMean", "Mean of the context (per channel)"),
    ModelSpec("drift", f"{_NAIVE}:Drift", "Line through the first and last context points, extended in time"),
    ModelSpec("seasonal-naive", f"{_NAIVE}:SeasonalNaive",
              "Repeats the last season; period from the context's autocorrelation peak"),
    ModelSpec("auto-ets", f"{_SF}:AutoETS", "statsforecast AutoETS per channel", family="statistical",
              requires=("statsforecast",)),
    ModelSpec("auto-theta", f"{_SF}:AutoTheta", "statsforecast AutoTheta per channel", family="statistical",
              requires=("statsforecast",)),
    ModelSpec("auto-arima", f"{_SF}:AutoARIMA",
              "statsforecast AutoARIMA per channel (not in the default set: ~0.6 s per series here, "
              "see BENCHMARKS.md; add it with --models auto-arima --jobs N)",
              family="statistical", requires=("statsforecast",), default=False),
    ModelSpec("fracast", "baselines.fracast_model:Fracast",
              "Fracast-0, a pretrained time-series foundation model (85k parameters) with weights in its "
              "wheel: real zero-shot forecasts offline (not in the default set: ~0.13 s per series on 2 CPU "
              "cores, see BENCHMARKS.md; --models fracast)", family="foundation",
              licence="Apache-2.0 (weights)", requires=("fracast",), extra="fracast", default=False),
    ModelSpec("locf", f"{_IMP}:CarryForward", "Last observation carried forward", tasks=("imputation",)),
    ModelSpec("linear-extrapolation", f"{_IMP}:LinearExtrapolation",
              "Line through the last two observed points", tasks=("imputation",)),
    ModelSpec("spline-extrapolation", f"{_IMP}:SplineExtrapolation",
              "Natural cubic spline of the observed prefix, extrapolated", tasks=("imputation",)),
    ModelSpec("stat-features", "baselines.features:StatisticalFeatures",
              "Per-channel mean, std and spectral band-power shares (embedding only)",
              family="statistical", tasks=("classification",)),
]


def test_the_decorated_baselines_register_what_they_did_before():
    specs = all_specs()
    assert [specs[s.name] for s in BEFORE] == BEFORE
    assert list(specs)[:len(BEFORE)] == [s.name for s in BEFORE]  # and in the same order (`harness list`)


def test_every_builtin_factory_is_the_object_it_names():
    """Derived factory strings resolve back to their object, and a class's name is its registry name."""
    for spec in all_specs().values():
        if not spec.factory.startswith("baselines."):
            continue  # SOTER's is spelt out with register() (its module imports torch); the tests' plugins
        target = _resolve(spec.factory)
        assert import_path(target) == spec.factory, spec.name
        if isinstance(target, type) and "card" not in spec.options:
            assert target.name == spec.name
