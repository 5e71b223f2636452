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


def _run_python(code: str, threads_set: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if k != "SOTER_BENCH_PLUGINS"}  # the built-in models only
    env.update(OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", HF_HUB_OFFLINE="1")
    if not threads_set:  # a user's shell: the run sets one thread itself, which imports torch
        for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env.pop(name, None)
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


def test_help_loads_neither_registry_nor_numpy():
    """`--help` lists the commands: the task and model registries (and NumPy, which they import) load only for
    the commands whose flags name tasks (run, plan, table)."""
    code = """
        import contextlib, io, json, sys
        from harness.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                main(["--help"])
            except SystemExit:
                pass
        print(json.dumps(sorted(m for m in sys.modules if m in ("numpy", "harness.registry.tasks", "models.registry"))))
    """
    assert json.loads(_run_python(code)) == []


USAGE_ERRORS = {  # issue #51: each comes back before torch and the adapters are imported
    "misspelt task": (["run", "forecastin"], "(did you mean 'forecasting'?)"),
    "unknown model": (["run", "forecasting", "--models", "soter", "nope"], "unknown model 'nope'"),
    "missing folder": (["run", "forecasting", "--dataset", "/nonexistent/dataset-folder"], "does not exist"),
    "folder without manifest": (["run", "forecasting", "--dataset", "{tmp}"], "no manifest"),
    "unknown dataset": (["run", "forecasting", "--dataset", "mitbh"], "unknown dataset 'mitbh'"),
    "no data root": (["run", "forecasting", "--dataset", "mitbih:blocks=6"], "pass --data-root"),
    "bad block count": (["run", "forecasting", "--dataset", "mitbih:blocks=six", "--data-root", "{tmp}"],
                        "must be an integer"),
    "missing data root": (["run", "forecasting", "--dataset", "mitbih", "--data-root", "/nonexistent/root"],
                          "no such folder"),
    "misspelt option": (["run", "forecasting", "--models", "soter", "--model-option", "soter.rolout=direct"],
                        "soter has no option 'rolout'"),
    "bad option value": (["run", "forecasting", "--models", "soter", "--model-option", "soter.rollout=sideways"],
                         "is not one of"),
    "option of another model": (["run", "forecasting", "--models", "last-value", "--model-option",
                                 "soter.rollout=direct"], "not among this run's models"),
    "missing weights": (["run", "forecasting", "--models", "soter", "--weights", "soter=/nonexistent/w"],
                        "does not exist"),
    "bad setting": (["run", "forecasting", "--settings", "48/x"], "48/x"),
}


@pytest.mark.parametrize("case", sorted(USAGE_ERRORS))
def test_a_usage_error_of_run_comes_before_torch_is_imported(case, tmp_path):
    argv, message = USAGE_ERRORS[case]
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    code = f"""
        import contextlib, io, json, sys
        from harness.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                rc = main({argv!r})
            except SystemExit as exc:  # argparse's own errors
                rc = exc.code
        print(json.dumps([rc, err.getvalue(), sorted(m for m in sys.modules if m.split(".")[0] == "torch")[:3]]))
    """
    rc, err, torch_modules = json.loads(_run_python(code, threads_set=False))
    assert rc == 2 and message in err, (rc, err)
    assert len(err.strip().splitlines()) <= 2, err  # one clear line (argparse adds its usage line)
    assert torch_modules == [], f"{case}: torch imported before the error"


def test_models_declaring_capabilities_on_load_have_none_before_loading():
    """`list` does not import these factories; importing them shows nothing it would have printed."""
    from models.registry import _resolve, all_specs
    from protocols.interface import Capabilities

    lazy = [s for s in all_specs().values() if s.capabilities_on_load]
    assert "soter" in {s.name for s in lazy}
    for spec in lazy:
        assert not isinstance(getattr(_resolve(spec.factory), "capabilities", None), Capabilities), spec.name
