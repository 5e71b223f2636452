"""Start-up: `--help` and `list` do not import the heavy libraries (no timings here: see
benchmarks/cli_startup.py); `list` reads capabilities without importing a factory's module when
its source shows a plain function."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "matplotlib", "statsforecast", "sklearn", "scipy", "pandas")


def _run_python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SOTER_BENCH_PLUGINS"}  # the built-in models only
    env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


def _heavy_imported_by(argv: list[str]) -> list[str]:
    code = f"""
        import contextlib, io, json, sys
        from harness.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main({argv!r})
            except SystemExit as exc:  # --help
                rc = exc.code
        assert rc == 0, rc
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})))
    """
    return json.loads(_run_python(code))


@pytest.mark.parametrize("argv", [["--help"], ["list"], ["run", "--help"]])
def test_help_and_list_import_no_heavy_library(argv):
    assert _heavy_imported_by(argv) == []


def test_models_declaring_capabilities_on_load_have_none_before_loading():
    """`list` does not import these factories; importing them shows nothing it would have printed."""
    from models.registry import _resolve, all_specs
    from protocols.interface import Capabilities

    lazy = [s for s in all_specs().values() if s.capabilities_on_load]
    assert "soter" in {s.name for s in lazy}
    for spec in lazy:
        assert not isinstance(getattr(_resolve(spec.factory), "capabilities", None), Capabilities), spec.name
