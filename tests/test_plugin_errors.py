"""Issue #32 item 4: a $SOTER_BENCH_PLUGINS module that cannot be imported is one line and exit 2
(as the entry-point route is), with a hint about PYTHONPATH when the module itself is not found."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_a_missing_plugin_module_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("SOTER_BENCH_PLUGINS", "tests.plugin_models,no_such_plugin_module_32")
    assert main(["run", "forecasting", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "no_such_plugin_module_32" in err and "PYTHONPATH" in err
    assert not (tmp_path / "o").exists()


def test_a_plugin_whose_own_import_fails_names_the_missing_package_without_the_path_hint(monkeypatch, capsys, tmp_path):
    (tmp_path / "plugin_needs_pkg_32.py").write_text("import no_such_package_32\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SOTER_BENCH_PLUGINS", "plugin_needs_pkg_32")
    assert main(["list", "models"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "no_such_package_32" in err and "PYTHONPATH" not in err  # the module was found; its dependency not


def test_the_command_line_gives_one_line_and_exit_2():
    env = {**os.environ, "SOTER_BENCH_PLUGINS": "no_such_plugin_module_32", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "harness", "list", "models"], capture_output=True, text=True,
                          env=env, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("error: ")
    assert "PYTHONPATH" in proc.stderr
