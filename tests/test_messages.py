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


def test_the_model_list_offered_holds_only_models_that_can_do_the_task(capsys, tmp_path):
    err = _err(capsys, "run", "forecasting", "--models", "no-such-model", "--out", str(tmp_path / "o"))
    offered = err.split("models for forecasting:")[1]
    assert "last-value" in offered and "soter" in offered
    assert "stat-features" not in offered and "locf" not in offered  # classification / imputation only


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
