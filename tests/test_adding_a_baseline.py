"""docs/adding-a-baseline.md: its worked example is under 50 lines and passes the contract kit."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from baselines.testing import check_forecast_contract

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding-a-baseline.md"


def test_the_worked_example_passes_the_contract_kit_and_is_listed(tmp_path, monkeypatch, capsys):
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)[0]
    assert len(code.strip().splitlines()) < 50
    (tmp_path / "my_baselines.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SOTER_BENCH_PLUGINS", "tests.plugin_models,my_baselines")
    sys.modules.pop("my_baselines", None)
    from harness.cli import main
    from models.registry import get_spec

    spec = get_spec("ses")
    check_forecast_contract(spec)
    assert main(["list", "models"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[:1] == ["ses"])
    assert line.split()[1:3] == ["ready", "statistical"]


def test_the_supervised_example_passes_the_contract_kit_and_is_listed_as_supervised(tmp_path, monkeypatch, capsys):
    code = next(c for c in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S) if "SupervisedModel" in c)
    (tmp_path / "my_supervised.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SOTER_BENCH_PLUGINS", "tests.plugin_models,my_supervised")
    sys.modules.pop("my_supervised", None)
    from harness.cli import main
    from models.registry import get_spec

    spec = get_spec("last-lags")
    check_forecast_contract(spec)  # trains it on a toy fold, then probe_fit
    assert spec.supervised and not spec.is_default_for("forecasting")
    assert main(["list", "models", "--long"]) == 0
    out = capsys.readouterr().out.splitlines()
    at = next(i for i, x in enumerate(out) if x.split()[:1] == ["last-lags"])
    assert out[at].split()[1:3] == ["ready", "supervised"]
    assert "supervised (trained on the fold's training subjects)" in out[at + 2]


def test_the_contract_kit_is_installed_code_without_pytest():
    """A user's package imports the kit; it must not need this repository's tests or pytest."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['pytest'] = None; sys.modules['tests'] = None\n"
            "from baselines.testing import check_embed_contract, check_forecast_contract, toy_dataset\n"
            "print(len(toy_dataset().recordings))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "4", out.stderr


def test_an_accepted_too_short_context_fails_the_contract():
    from baselines.testing import _refused

    with pytest.raises(AssertionError, match="was accepted"):
        with _refused("a context of 3 samples"):
            pass
    with _refused("x"):
        raise ValueError("too short")  # a clear error is what the contract wants
