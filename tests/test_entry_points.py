"""Third-party models register through the entry-point group ``soter_bench.models``: a tiny plugin
package, built and installed with pip into a folder of its own (the test's environment is left as it
was), shows up in `harness list` and runs in `harness run`, in a subprocess that sees it only
through PYTHONPATH. A plugin that cannot be imported, or that takes a built-in model's name, is a
clear error (exit 2, no traceback) naming the entry point and its distribution; those plugins are
unpacked as pip would leave them rather than built, to keep the tests fast."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "{dist}"
version = "0.1"

[project.entry-points."soter_bench.models"]
{entry_points}

[tool.setuptools]
packages = ["{package}"]
"""

# the module form: importing it registers the model (with the decorator; the callable form spells a ModelSpec out)
PLUGIN_MODULE = '''
import numpy as np

from models.registry import register_model
from protocols.interface import Capabilities, Model, SeriesBatch


@register_model(description="Mean of the context, from an installed plugin", default=False, tasks=("forecasting",))
class ContextMean(Model):
    name = "plugin-mean"
    capabilities = Capabilities(multivariate=False)

    def __init__(self, **_: object) -> None:
        pass

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        total = np.where(batch.mask, batch.values, 0.0).sum(axis=2, keepdims=True)
        mean = total / np.maximum(batch.mask.sum(axis=2, keepdims=True), 1)
        return np.repeat(mean, query_times.shape[1], axis=2)
'''

# the callable form: returns the specs, the registry registers them
PLUGIN_CALLABLE = '''
from models.registry import ModelSpec


def specs():
    return [ModelSpec(name="plugin-mean-too", factory="soter_plugin_mean.models:ContextMean",
                      description="The same model, given by a callable entry point", default=False,
                      tasks=("forecasting",))]
'''


def _install(tmp_path: Path, dist: str, package: str, entry_points: str, modules: dict[str, str]) -> Path:
    """Builds a package in tmp_path and installs it with pip into its own folder; returns that folder."""
    src = tmp_path / f"{dist}-src"
    (src / package).mkdir(parents=True)
    (src / "pyproject.toml").write_text(PYPROJECT.format(dist=dist, package=package, entry_points=entry_points))
    (src / package / "__init__.py").write_text("")
    for name, code in modules.items():
        (src / package / f"{name}.py").write_text(textwrap.dedent(code))
    site = tmp_path / f"{dist}-site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index",
                           "--no-cache-dir", "--disable-pip-version-check", "--quiet", "--target", str(site), str(src)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert any(site.glob("*.dist-info/entry_points.txt")), sorted(p.name for p in site.iterdir())
    return site


def _unpack(tmp_path: Path, dist: str, package: str, entry_points: str, modules: dict[str, str]) -> Path:
    """What pip leaves in --target for such a package (package, METADATA, entry_points.txt), written
    directly: the error tests need no build, and the tests stay fast."""
    site = tmp_path / f"{dist}-site"
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[soter_bench.models]\n{entry_points}\n")
    (site / package).mkdir()
    (site / package / "__init__.py").write_text("")
    for name, code in modules.items():
        (site / package / f"{name}.py").write_text(textwrap.dedent(code))
    return site


def _harness(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SOTER_BENCH_PLUGINS"}  # entry points only
    env.update(PYTHONPATH=str(site), OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=REPO, env=env,
                          capture_output=True, text=True)


def _model_line(out: str, name: str) -> list[str]:
    lines = [x.split() for x in out.splitlines() if x.split()[:1] == [name]]
    assert lines, f"{name} is not listed:\n{out}"
    return lines[0]


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    return _install(tmp_path_factory.mktemp("plugin"), "soter-plugin-mean", "soter_plugin_mean",
                    'plugin-mean = "soter_plugin_mean.models"\n'
                    'plugin-mean-too = "soter_plugin_mean.more:specs"',
                    {"models": PLUGIN_MODULE, "more": PLUGIN_CALLABLE})


def test_an_installed_plugin_is_listed(plugin_site):
    proc = _harness(plugin_site, "list", "models")
    assert proc.returncode == 0, proc.stderr
    assert _model_line(proc.stdout, "plugin-mean")[1] == "ready"  # the module form
    assert _model_line(proc.stdout, "plugin-mean-too")[1] == "ready"  # the callable form
    assert _model_line(proc.stdout, "last-value")[1] == "ready"  # beside the built-in models
    assert "test-broken" not in proc.stdout  # the subprocess did not get the tests' SOTER_BENCH_PLUGINS


def test_an_installed_plugin_runs(plugin_site, tmp_path):
    out = tmp_path / "run"
    proc = _harness(plugin_site, "run", "forecasting", "--models", "plugin-mean", "last-value",
                    "--max-windows-per-subject", "2", "--settings", "48/24", "--out", str(out), "--no-progress")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out / "records.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    mine = [r for r in rows if r["model"] == "plugin-mean"]
    assert mine and all(r["status"] == "ok" for r in mine), [(r["status"], r["error"]) for r in mine]
    assert {r["model"] for r in rows} == {"plugin-mean", "last-value"}
    assert "plugin-mean" in proc.stdout  # its row in the printed table


def test_a_plugin_that_fails_to_import_is_a_clear_error(tmp_path):
    site = _unpack(tmp_path, "soter-broken-plugin", "soter_broken_plugin", "broken = soter_broken_plugin.models",
                   {"models": "import soter_no_such_dependency\n"})
    proc = _harness(site, "list", "models")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("error: plugin 'soter-broken-plugin' (entry point soter_bench.models: broken = soter_broken_plugin.models) "
            "failed to import: No module named 'soter_no_such_dependency'") in proc.stderr


def test_a_plugin_taking_a_registered_name_is_a_clear_error(tmp_path):
    site = _unpack(tmp_path, "soter-clashing-plugin", "soter_clashing_plugin",
                   "clash = soter_clashing_plugin.models:specs",
                   {"models": """
                        from models.registry import ModelSpec

                        def specs():
                            return ModelSpec(name="last-value", factory="soter_clashing_plugin.models:X",
                                             description="not the built-in last value")
                    """})
    proc = _harness(site, "list", "models")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("error: model name 'last-value' is registered twice: by plugin 'soter-clashing-plugin' "
            "(entry point soter_bench.models: clash = soter_clashing_plugin.models:specs)") in proc.stderr
    assert "before by module 'baselines" in proc.stderr


def test_a_checkout_that_is_not_installed_says_to_install_it(monkeypatch):
    """Without this distribution's entry points there are no built-in models: a clear error, not an
    empty registry (``models.registry`` never imports the built-ins by name)."""
    import importlib.metadata

    from models.plugins import BuiltinModelsError, builtin_entry_points

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(BuiltinModelsError, match=r"pip install -e \."):
        builtin_entry_points()
    assert issubclass(BuiltinModelsError, RuntimeError)  # the CLI prints the one line and exits 2
