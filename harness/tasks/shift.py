"""Subject shift: the forecasting setting with the test subject's level or amplitude moved outside the training
subjects' MinMax range by named amounts (``protocols.shift``); one table per condition, a figure per kind."""

from __future__ import annotations

from harness.registry.options import SHIFT_KINDS_OPTION, SHIFT_SEVERITIES_OPTION, given
from harness.tasks.forecasting_base import WINDOW_OPTIONS, ForecastingVariant
from protocols.shift import evaluate_shift, parse_condition
from protocols.specs import NO_SHIFT, ShiftSpec
from protocols.splits import get_fold

LABELS = {"level": "level shift (offset / the training subjects' range)",
          "scale": "scale shift s (amplitude x (1 + s) about the subject's mean)",
          "both": "level and scale shift s (amplitude x (1 + s), offset s ranges)"}


class SubjectShift(ForecastingVariant):
    name = "shift"
    description = "forecasting on a test subject shifted outside the training MinMax range (RMSE, MAE per severity)"
    title = "Forecasting under subject shift"
    figure = "subject shift"
    figure_stem = "subject_shift"
    x_label = "shift severity"
    options = (*WINDOW_OPTIONS, SHIFT_KINDS_OPTION, SHIFT_SEVERITIES_OPTION)
    spec_type = ShiftSpec

    def spec_fields(self, options):
        return given(kinds=options.shift_kinds, severities=options.shift_severities)

    def conditions(self, spec):
        return [(shift.condition, shift.severity) for shift in spec.shifts]

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

    def evaluate(self, cell, dataset, model):
        fold = get_fold(dataset, cell.fold)
        return self.error_row(cell, evaluate_shift(model, dataset, fold, cell.point, cell.spec,
                                                   parse_condition(cell.condition)))


TASK = SubjectShift()  # registered by harness.tasks
