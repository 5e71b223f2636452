"""Issue #28: a task declares its own options (flags of ``run``); the CLI offers each once, a run passes
only its task's, and the task's spec gets them as a typed dataclass whose defaults are the paper's protocols."""

from __future__ import annotations

import dataclasses

import pytest

from harness.cli import main
from harness.registry.options import MAX_WINDOWS_PER_SUBJECT, SETTINGS, Option
from harness.registry.tasks import TASKS, all_options, all_tasks, get_task, register_task
from harness.run.runner import RunConfig
from harness.tasks import Task
from protocols.registry import DuplicateNameError
from protocols.specs import (WINDOWS_PER_SUBJECT, ClassificationSpec, ForecastingSpec, ImputationSpec, NoiseSpec,
                             SamplingSpec, Setting, SpecError)


@pytest.mark.parametrize("task, spec", [
    ("forecasting", ForecastingSpec(sampling=SamplingSpec(seed=0))), ("noise", NoiseSpec(sampling=SamplingSpec(seed=0))),
    ("imputation", ImputationSpec()), ("classification", ClassificationSpec())])
def test_no_option_given_is_the_papers_protocol(task, spec):
    assert RunConfig(task=task).specs(0) == spec


def _windows(spec) -> int:
    """The windows per subject of a spec (a SamplingSpec field, or the segment specs' own)."""
    return getattr(spec, "sampling", spec).max_windows_per_subject


def test_the_windows_table_names_every_built_in_task_that_reads_the_option():
    tasks = [get_task(name) for name in all_tasks()]
    readers = {t.name for t in tasks if type(t).__module__.startswith("harness.tasks.")
               and MAX_WINDOWS_PER_SUBJECT in t.options}
    assert readers == set(WINDOWS_PER_SUBJECT)


@pytest.mark.parametrize("task", sorted(WINDOWS_PER_SUBJECT))
def test_each_task_draws_its_default_windows_per_subject_from_the_one_table(task):
    assert _windows(RunConfig(task=task).specs(0)) == WINDOWS_PER_SUBJECT[task]
    assert _windows(RunConfig(task=task, options={"max_windows_per_subject": 3}).specs(0)) == 3


@pytest.mark.parametrize("task", sorted(WINDOWS_PER_SUBJECT))
def test_zero_windows_per_subject_is_refused_never_taken_for_the_default(task):
    # physiology read the option with `or`: 0 fell back to its default of 8 silently
    with pytest.raises(SpecError, match="max_windows_per_subject"):
        RunConfig(task=task, options={"max_windows_per_subject": 0})


def test_options_given_reach_the_spec_as_a_frozen_dataclass():
    config = RunConfig(task="noise", options={"settings": (Setting(48, 24),), "levels": (0.0, 0.1)})
    options = config.task_options
    assert dataclasses.is_dataclass(options) and options.max_windows_per_subject is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.levels = ()
    spec = config.specs(3)
    assert spec.settings == (Setting(48, 24),) and spec.levels == (0.0, 0.1) and spec.sampling.seed == 3


def test_an_option_the_task_does_not_read_is_an_error_not_ignored(tmp_path, capsys):
    with pytest.raises(SpecError, match=r"forecasting takes no option --levels \(its options: --settings, "
                                        r"--max-windows-per-subject\)"):
        RunConfig(task="forecasting", options={"levels": (0.1,)})
    assert main(["run", "forecasting", "--levels", "0.1", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "error: forecasting takes no option --levels" in capsys.readouterr().err
    assert not (tmp_path / "records.csv").exists()


def test_a_bad_value_is_one_line_naming_the_flag(tmp_path, capsys):
    assert main(["run", "forecasting", "--settings", "96x48", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["error: --settings: setting '96x48' is not of the form CONTEXT/HORIZON, e.g. 96/48"]
    assert main(["run", "imputation", "--rates", "half", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "error: --rates: could not convert string to float: 'half'" in capsys.readouterr().err


def test_run_help_offers_each_flag_once_naming_the_tasks_that_read_it(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("--settings C/H") == 2  # the usage line and the option's entry
    assert "--settings C/H [C/H ...] forecasting, noise, calibration, shift, irregular: context/horizon settings" in text
    assert "--windows" not in text  # the flag's name before issue #17, removed in #28: one name per flag
    assert "imputation, classification, classification-heads: segment length in samples" in text
    assert "--heads HEAD [HEAD ...] classification-heads: classification heads" in text
    builtin = [t for t in all_tasks().values() if type(t).__module__.startswith("harness.tasks.")]
    assert [o.flag for o, tasks in all_options().items() if len(tasks) == len(builtin)] == ["--max-windows-per-subject"]


class _Toy(Task):
    name = "toy-options"
    options = (SETTINGS,)  # shared with forecasting and noise: the same declaration


class _Clashing(Task):
    name = "toy-clashing"
    options = (Option("--settings", "something else", int),)


class _TakesOut(Task):
    name = "toy-takes-out"
    options = (Option("--out", "where else"),)


@pytest.fixture()
def cleanup():
    yield
    for name in ("toy-options", "toy-clashing", "toy-takes-out"):
        TASKS.remove(name)


def test_a_flag_has_one_meaning_across_tasks(cleanup):
    register_task(_Toy())
    assert all_options()[SETTINGS] == ("forecasting", "noise", "calibration", "shift", "irregular", "toy-options")
    with pytest.raises(DuplicateNameError, match="option --settings of task 'toy-clashing' differs from the option "
                                                 "--settings of task 'forecasting'"):
        register_task(_Clashing())
    assert "toy-clashing" not in TASKS


def test_a_task_option_taking_a_flag_of_run_is_one_line(cleanup, capsys):
    register_task(_TakesOut())
    assert main(["run", "forecasting"]) == 2  # run's flags are built for run, plan and table only
    assert capsys.readouterr().err.startswith("error: task 'toy-takes-out' declares the option --out, which `run` "
                                              "has already")


def test_the_stress_options_are_their_tasks_options(tmp_path, capsys):
    """The options of the stress tests (issue #31) are declared by the tasks that read them: a task that does not
    read one refuses it, and a bad value is one line naming the flag."""
    from harness.registry.tasks import get_task, task_options
    from protocols.specs import ArtefactSpec, MaskSpec

    assert main(["run", "forecasting", "--mask", "contiguous", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "forecasting takes no option --mask" in capsys.readouterr().err
    assert main(["run", "noise", "--artefact", "hum", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "error: --artefact: 'hum' is not one of gaussian" in capsys.readouterr().err
    imputation = get_task("imputation").spec(task_options("imputation", {"mask": "contiguous", "burst_seconds": 0.5}), 0)
    assert imputation.mask == MaskSpec("contiguous", burst_seconds=0.5)
    noise = get_task("noise").spec(task_options("noise", {"artefact": "clip"}), 0)
    assert noise.artefact == ArtefactSpec("clip") and noise.levels == ArtefactSpec("clip").default_levels
    assert get_task("imputation").spec(task_options("imputation", {}), 0).mask.is_paper  # the paper's by default
