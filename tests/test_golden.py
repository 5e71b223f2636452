"""Golden numbers guard every declared version: a change that moves a task's or a model's numbers without bumping
its version (``TASK_VERSIONS``, ``ModelSpec.revision``) fails here, as does a version without a golden file and a
golden file edited after it was committed (tests/golden, docs/versions.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from harness.registry.versions import TASK_VERSIONS
from tests.golden import numbers
from tests.golden.cases import MODEL_CASES, TASK_CASES


@pytest.fixture(scope="module")
def computed():
    """The numbers of now, computed once per golden for every test of this module that needs them."""
    found: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in found:
            found[name] = numbers.compute(name)
        return found[name]

    return get


@pytest.mark.parametrize("name", numbers.names())
def test_the_numbers_of_every_version_are_its_golden_numbers(computed, name):
    problem = numbers.check(name, computed(name))
    assert not problem, problem


def test_every_built_in_task_and_a_model_of_each_kind_have_a_golden():
    assert set(TASK_CASES) == set(TASK_VERSIONS)
    from models.registry import get_spec

    families = {get_spec(model).family for model in MODEL_CASES}
    assert {"soter", "foundation", "statistical"} <= families


def test_golden_files_are_never_edited():
    why, problems = numbers.edited_since_added()
    if why:
        pytest.skip(f"the history of the golden files cannot be read: {why}")
    assert not problems, "\n".join(problems)


def test_the_history_check_finds_an_edited_and_a_removed_file(tmp_path):
    if subprocess.run(["git", "--version"], capture_output=True).returncode != 0:
        pytest.skip("git is not installed")
    folder = tmp_path / "tests" / "golden"
    folder.mkdir(parents=True)
    for name in ("a-v1.json", "b-v1.json", "c-v1.json"):
        (folder / name).write_text('{"rmse": 1.0}\n')

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "golden")
    assert numbers.edited_since_added(tmp_path) == (None, [])
    (folder / "a-v1.json").write_text('{"rmse": 1.5}\n')
    (folder / "b-v1.json").unlink()
    why, problems = numbers.edited_since_added(tmp_path)
    assert why is None and len(problems) == 2
    assert problems[0].startswith("tests/golden/a-v1.json was edited since ") and "bump the version" in problems[0]
    assert problems[1].startswith("tests/golden/b-v1.json was removed since ")
    git("commit", "-q", "-am", "edit the golden file")  # committed, still not the content it was added with
    assert len(numbers.edited_since_added(tmp_path)[1]) == 1
    assert numbers.edited_since_added(tmp_path / "tests")[0] is None  # a folder inside the work tree reads too


def test_a_version_without_a_golden_file_fails_saying_how_to_write_it(computed, tmp_path, monkeypatch):
    monkeypatch.setitem(TASK_VERSIONS, "noise", 2)
    problem = numbers.check("noise", computed("noise"))
    assert problem.startswith("no golden file for noise-v2 (") and "python -m tests.golden write noise" in problem


def test_a_metric_change_moves_forecasting_without_a_bump(monkeypatch):
    """An edit of protocols/metrics.py that scales one error sum by a millionth: every row of an exact model moves."""
    import protocols.forecasting  # noqa: F401 (imports error_sums by name: patched there too)
    from protocols import metrics

    original = metrics.error_sums

    def scaled(*args, **kwargs):
        sums = original(*args, **kwargs)
        return metrics.ErrorSums(sums.sse * (1 + 1e-6), sums.sae, sums.n)

    exact = ("last-value", "seasonal-naive")
    assert numbers.check("forecasting", numbers.compute("forecasting", models=exact), models=exact) == ""
    _patch_everywhere(monkeypatch, original, scaled)
    problem = numbers.check("forecasting", numbers.compute("forecasting", models=exact), models=exact)
    assert problem.startswith("numbers of forecasting-v1 moved: bump TASK_VERSIONS['forecasting'] (or the model's "
                              "revision) and regenerate the golden file, or undo the change")
    assert "last-value" in problem and "rmse" in problem


def test_an_embedding_change_moves_classification_without_a_bump(monkeypatch):
    """The embeddings are part of the classification task's version, not only the code its module imports."""
    import harness.run.embeddings as embeddings

    original = embeddings.embed_segments

    def noisy(*args, **kwargs):
        values = np.asarray(original(*args, **kwargs))
        return values + np.random.default_rng(0).standard_normal(values.shape) * values.std()

    only = ("stat-features",)
    assert numbers.check("classification", numbers.compute("classification", models=only), models=only) == ""
    monkeypatch.setattr(embeddings, "embed_segments", noisy)
    problem = numbers.check("classification", numbers.compute("classification", models=only), models=only)
    assert problem.startswith("numbers of classification-v1 moved: bump TASK_VERSIONS['classification']")
    assert "stat-features" in problem and "macro_" in problem


def test_a_model_whose_forecasts_move_beyond_its_tolerance_fails_and_within_it_holds(computed):
    name = "model-soter"
    now = computed(name)
    flat = now[numbers.FLAT]["48/24"]
    for factor, moves in ((1 + 1e-6, False), (1 + 1e-3, True)):  # the soter family's tolerance: 1e-4 relative
        shifted = {**now, "forecasts": {**now["forecasts"], "48/24": numbers.fingerprint(
            flat.reshape(now["forecasts"]["48/24"]["shape"]) * factor)}, numbers.FLAT: {**now[numbers.FLAT],
                                                                                          "48/24": flat * factor}}
        problem = numbers.check(name, shifted)
        assert bool(problem) == moves, problem
    assert numbers.check(name, now) == ""
    assert "bump the revision of 'soter' (ModelSpec.revision)" in numbers.moved_message(name, ["x"])


def test_an_exact_model_moves_at_the_last_bit(computed):
    now = computed("noise")
    rows = [dict(r) for r in now["rows"]]
    row = next(r for r in rows if r["model"] == "last-value")
    row["mae"] = float(np.nextafter(row["mae"], np.inf))
    problem = numbers.check("noise", {**now, "rows": rows})
    assert "numbers of noise-v1 moved" in problem and "mae" in problem


def test_the_writer_writes_a_version_once_and_refuses_other_numbers(computed, tmp_path):
    now = computed("noise")
    ok, line = numbers.write("noise", now, tmp_path)
    path = tmp_path / "noise-v1.json"
    assert ok and line == f"wrote {numbers.shown(path)}" and path.read_text() == numbers.dumps(now)
    assert numbers.dumps(json.loads(path.read_text())) == path.read_text()  # what is read back writes the same bytes
    assert numbers.write("noise", now, tmp_path) == (True, f"{numbers.shown(path)}: up to date (left as it is)")
    rows = [dict(r) for r in now["rows"]]
    rows[0]["rmse"] *= 2
    before = path.read_bytes()
    ok, line = numbers.write("noise", {**now, "rows": rows}, tmp_path)
    assert not ok and "bump the version first" in line and path.read_bytes() == before


def test_the_writer_names_a_bad_name_in_one_line(capsys):
    from tests.golden.__main__ import main

    assert main(["write", "forecastin"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: no golden called 'forecastin'; known: {', '.join(numbers.names())}"]


def test_the_writer_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "tests.golden", "--help"], capture_output=True, text=True,
                            cwd=numbers.ROOT)
    assert result.returncode == 0 and "write" in result.stdout


def _patch_everywhere(monkeypatch, original, replacement) -> None:
    """As an edit of the function's source would: every module that imported it by name sees the replacement."""
    for module in list(sys.modules.values()):
        if getattr(module, original.__name__, None) is original:
            monkeypatch.setattr(module, original.__name__, replacement)
