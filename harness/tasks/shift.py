"""Subject shift: the forecasting setting with the test subject's level or amplitude moved outside the training
subjects' MinMax range by named amounts (``protocols.shift``); one table per condition, a figure per kind."""

from __future__ import annotations

from harness.registry.options import (MAX_WINDOWS_PER_SUBJECT, SETTINGS, SHIFT_KINDS_OPTION, SHIFT_SEVERITIES_OPTION,
                                      given)
from harness.tasks.base import ErrorTask
from harness.tasks.forecasting import setting_capable
from protocols.shift import NO_SHIFT, SHIFT_WINDOWS_PER_SUBJECT, ShiftSpec, evaluate_shift, parse_condition
from protocols.specs import SamplingSpec
from protocols.splits import get_fold

LABELS = {"level": "level shift (offset / the training subjects' range)",
          "scale": "scale shift s (amplitude x (1 + s) about the subject's mean)",
          "both": "level and scale shift s (amplitude x (1 + s), offset s ranges)"}


class SubjectShift(ErrorTask):
    name = "shift"
    description = "forecasting on a test subject shifted outside the training MinMax range (RMSE, MAE per severity)"
    default_seeds = (0,)
    scores_windows = True
    replicates = ("setting", "seed")
    replicate_words = "setting-seed pairs"
    title = "Forecasting under subject shift"
    over = "settings and seeds"
    figure = "subject shift"
    figure_stem = "subject_shift"
    figure_metrics = ("RMSE", "MAE")
    x_label = "shift severity"
    options = (SETTINGS, SHIFT_KINDS_OPTION, SHIFT_SEVERITIES_OPTION, MAX_WINDOWS_PER_SUBJECT)

    def spec(self, options, seed):
        given_windows = options.max_windows_per_subject
        windows = SHIFT_WINDOWS_PER_SUBJECT if given_windows is None else given_windows
        return ShiftSpec(**given(settings=options.settings, kinds=options.shift_kinds,
                                 severities=options.shift_severities),
                         sampling=SamplingSpec(max_windows_per_subject=windows, seed=seed))

    def points(self, spec):
        return [(s, shift.condition, shift.severity) for s in spec.settings for shift in spec.shifts]

    def default_models(self):
        """Forecasting's: the study compares each model with its own plain forecasting run."""
        from harness.registry.tasks import get_task

        return get_task("forecasting").default_models()

    def family(self, condition):
        """The kind of a condition (``level``, ``scale``, ``both``); the no-shift point is every kind's."""
        return "" if condition == NO_SHIFT else parse_condition(condition).kind

    def family_label(self, family):
        return LABELS.get(family, self.x_label)

    def families(self, frame):
        """Each kind's rows with the no-shift rows (its severity 0); the no-shift rows alone when no kind ran."""
        found = super().families(frame)
        plain = [rows for family, rows in found if family == ""]
        kinds = [(family, rows) for family, rows in found if family != ""]
        if not kinds:
            return found
        import pandas as pd

        return [(family, pd.concat([*plain, rows])) for family, rows in kinds]

    def capable(self, model, cell):
        return setting_capable(model, cell)

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        return self.error_row(cell, evaluate_shift(model, dataset, fold, cell.point, cell.spec,
                                                   parse_condition(cell.condition)))


TASK = SubjectShift()  # registered by harness.tasks
