"""docs/adding-a-baseline.md: its worked example is under 50 lines and passes the contract kit."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from tests.contract_kit import check_forecast_contract

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
