"""Issue #32 item 5: usage errors in the user's words: the flag as typed, the valid range, every typo
with its closest name, and the remedy."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from protocols.datasets.folder import write_folder_dataset
from protocols.words import did_you_mean
from tests.conftest import make_dataset


def _err(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    return err


def test_did_you_mean_offers_only_a_close_name():
    assert did_you_mean("sotre", ["soter", "drift"]) == " (did you mean 'soter'?)"
    assert did_you_mean("zzzz", ["soter", "drift"]) == ""


def test_every_misspelt_model_is_named_with_its_closest_name(capsys, tmp_path):
    err = _err(capsys, "run", "forecasting", "--models", "sotre", "last-vlaue", "--out", str(tmp_path / "o"))
    assert "'sotre' (did you mean 'soter'?)" in err
    assert "'last-vlaue' (did you mean 'last-value'?)" in err


def test_an_unknown_model_is_one_short_line_naming_where_every_model_is_listed(capsys, tmp_path):
    err = _err(capsys, "run", "forecasting", "--models", "no-such-model", "--out", str(tmp_path / "o"))
    assert err == "error: --models: unknown model 'no-such-model'; `python -m harness list models` lists every model"
    err = _err(capsys, "run", "forecasting", "--models", "stat-featurs", "--out", str(tmp_path / "o"))
    assert "did you mean 'stat-features'?" in err and len(err) < 160


def _usage_error(capsys, *argv: str) -> str:
    """argparse's errors: exit 2 with one line (not the usage above it)."""
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and err.startswith("error: "), err
    return err


def test_a_misspelt_task_is_one_line_with_its_closest_name(capsys):
    err = _usage_error(capsys, "run", "forecastin")
    assert "invalid choice 'forecastin' (did you mean 'forecasting'?)" in err and "choose from forecasting," in err
    assert "`python -m harness run --help` shows the usage" in err


def test_a_misspelt_choice_of_a_flag_and_a_command_are_one_line(capsys):
    assert "'headd' (did you mean 'head'?)" in _usage_error(capsys, "run", "forecasting", "--adapt", "headd")
    assert "'rnu' (did you mean 'run'?)" in _usage_error(capsys, "rnu", "forecasting")
    assert "'downlod' (did you mean 'download'?)" in _usage_error(capsys, "data", "downlod", "mitbih")


def test_a_task_export_does_not_take_names_those_it_does(capsys):
    err = _usage_error(capsys, "windows", "export", "classification")
    assert "invalid choice 'classification'; choose from forecasting, noise, imputation" in err
    assert "did you mean" not in err  # nothing close: no guess


def test_list_models_gives_one_line_per_model_and_long_every_detail(capsys):
    from models.registry import all_specs

    assert main(["list", "models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.split()[:1] and line.split()[0] in all_specs()]
    assert len(rows) == len(all_specs()) and all(len(line) <= 120 for line in lines)
    assert next(r for r in rows if r.split()[0] == "last-value").split()[1:3] == ["ready", "baseline"]
    assert "--long" in lines[-1]
    assert main(["list", "models", "--long"]) == 0
    out = capsys.readouterr().out
    assert out.count("pre-training data: ") == len(all_specs()) and "licence: " in out


def test_a_misspelt_dataset_option_names_the_valid_one(capsys, tmp_path):
    err = _err(capsys, "run", "forecasting", "--dataset", "synthetic-cohort:blcks=6", "--out", str(tmp_path / "o"))
    assert "unknown dataset option 'blcks=6'" in err and "did you mean 'blocks'?" in err
    assert "synthetic-cohort:blocks=6" in err and "unknown dataset '" not in err


def test_a_misspelt_dataset_name_gets_its_closest_name(capsys, tmp_path):
    err = _err(capsys, "run", "forecasting", "--dataset", "synthetic-cohrt", "--out", str(tmp_path / "o"))
    assert "did you mean 'synthetic-cohort'?" in err


def test_one_subject_gives_the_blocks_remedy_which_works_for_a_folder(capsys, tmp_path):
    path = tmp_path / "one"
    write_folder_dataset(make_dataset(n_subjects=1, n_samples=600), path)
    err = _err(capsys, "run", "forecasting", "--dataset", str(path), "--out", str(tmp_path / "o"))
    assert "NAME:blocks=K" in err and "DIR:blocks=K" in err
    assert main(["run", "forecasting", "--dataset", f"{path}:blocks=3", "--models", "last-value", "--settings",
                 "48/24", "--max-windows-per-subject", "1", "--out", str(tmp_path / "o"), "--no-progress"]) == 0


@pytest.mark.parametrize("task, flag, value, expected", [
    ("imputation", "--rates", "150", "--rates 150: missing rates are percentages, 0 < PCT <= 100"),
    ("classification", "--budgets", "0", "--budgets 0: label budgets are percentages, 0 < PCT <= 100"),
    ("forecasting", "--max-windows-per-subject", "0", "--max-windows-per-subject (max_windows_per_subject) must be a "
                                                     "whole number >= 1, got 0"),
])
def test_numbers_are_checked_as_typed_with_the_valid_range(capsys, tmp_path, task, flag, value, expected):
    err = _err(capsys, "run", task, flag, value, "--out", str(tmp_path / "o"))
    assert expected in err
    assert "1.5" not in err  # not the internal fraction


def test_a_semicolon_separated_csv_asks_about_the_delimiter(capsys, tmp_path):
    path = tmp_path / "semi"
    write_folder_dataset(make_dataset(n_subjects=2, n_samples=200), path)
    csv = sorted(path.rglob("*.csv"))[0]
    csv.write_text(csv.read_text().replace(",", ";"))
    err = _err(capsys, "run", "forecasting", "--dataset", str(path), "--out", str(tmp_path / "o"))
    assert "wrong delimiter?" in err and "semicolon" in err
