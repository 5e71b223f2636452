"""Linear-probe classification: frozen embeddings of labelled segments, a probe trained on a share of the
training labels (the label budget), Macro-F1 and Macro-AUROC on the pooled LOSO predictions."""

from __future__ import annotations

import numpy as np

from harness.registry.metrics import MACRO_AUROC, MACRO_F1
from harness.registry.options import (LABEL_BUDGETS_OPTION, MAX_WINDOWS_PER_SUBJECT, SEGMENT_LENGTH, given,
                                      segment_options)
from harness.tasks.base import Task, add_cell_files, cells_frame, details, details_notes, paper_cell
from protocols.classification import (RANDOM_BASELINE, check_classifiable, evaluate_classification,
                                      labelled_segments)
from protocols.specs import RUN_SEEDS, ClassificationSpec


class Classification(Task):
    name = "classification"
    description = "linear-probe classification (Macro-F1, Macro-AUROC per label budget)"
    default_seeds = RUN_SEEDS
    model_free = (RANDOM_BASELINE,)
    figure = "label efficiency"
    options = (LABEL_BUDGETS_OPTION, SEGMENT_LENGTH, MAX_WINDOWS_PER_SUBJECT)
    metrics = (MACRO_F1, MACRO_AUROC)

    def spec(self, options, seed):
        return ClassificationSpec(**given(budgets=options.budgets), **segment_options(self.name, options))

    def points(self, spec):
        return [(spec.length, f"budget={b * 100:g}%", b) for b in spec.budgets]

    def folds(self, dataset):
        check_classifiable(dataset)
        return ["all"]  # the LOSO folds are pooled inside one cell

    def capable(self, model, cell):
        return None if model.capabilities.embed else f"{cell.model} has no embed capability"

    def evaluate(self, cell, dataset, model):
        from harness.run.embeddings import embeddings_of

        spec: ClassificationSpec = cell.spec
        embeddings = None
        if model is not None:
            segments = labelled_segments(dataset, spec, cell.seed)  # the seed draws the segments
            embeddings = embeddings_of(cell, dataset, model, segments, spec)
        out = evaluate_classification(dataset, spec, cell.level, cell.seed, embeddings)
        row = {"status": "ok", "macro_f1": out.macro_f1, "macro_auroc": out.macro_auroc,
               "n_windows": out.n_windows, "details": details(notes=list(out.notes)), "model_info": ""}
        add_cell_files(row, predictions=out.predictions)  # per-subject scores (harness.reporting.breakdown)
        return row

    # -- tables --------------------------------------------------------------------------------
    def tables(self, frame, models=None, datasets=None):
        """The table at the full label budget (or the largest recorded) and, with two or more budgets, a
        label-efficiency table per dataset."""
        from harness.reporting.tables import file_stem, conditions

        budgets = conditions(frame, self.name)
        if not budgets:
            return [(self.name, self.classification_table(frame, models=models, datasets=datasets))]
        main = "budget=100%" if "budget=100%" in budgets else budgets[-1]
        out = [(self.name, self.classification_table(frame, main, models, datasets))]
        if len(budgets) > 1:
            for ds in datasets or list(dict.fromkeys(frame.loc[frame["task"] == self.name, "dataset"])):
                out.append((f"label_efficiency_{file_stem(ds)}", self.label_efficiency_table(frame, ds, models)))
        return out

    def classification_table(self, frame, budget: str = "budget=100%", models=None, datasets=None):
        """Macro-F1 and Macro-AUROC per dataset at one label budget, and the Macro-AUROC averaged over the
        datasets (a model needs a number on every one)."""
        from harness.reporting.tables import (Column, Entry, Table, grouped, measured_models, metric_columns,
                                              model_notes, provenance_notes, registry_names)

        rows = frame[frame["task"] == self.name]
        if rows.empty:
            return Table("", (), (), {}, (f"no {self.name} records",))
        datasets = datasets or list(dict.fromkeys(rows["dataset"]))
        models = models or list(dict.fromkeys(rows["model"]))
        columns, entries, problems = metric_columns(rows, self.name, models, [(ds, ds, budget) for ds in datasets],
                                                    self.metrics)
        avg = Column("Average", MACRO_AUROC.label, higher_is_better=True)
        columns.append(avg)
        for model in models:
            per_ds = [entries.get((model, Column(ds, MACRO_AUROC.label, True))) for ds in datasets]
            if any(e is None for e in per_ds):
                continue
            bad = [e.status for e in per_ds if e.status != "ok" or not np.isfinite(e.mean)]
            if bad:
                entries[(model, avg)] = Entry(np.nan, np.nan, 0, len(datasets), bad[0] if bad[0] != "ok" else "error")
            else:
                marked = next((e for e in per_ds if e.marked), None)
                entries[(model, avg)] = Entry(float(np.mean([e.mean for e in per_ds])), float("nan"), len(per_ds),
                                              len(datasets), "ok",
                                              "" if marked is None else (marked.problem or "partial"))
        notes = tuple(dict.fromkeys(problems)) + details_notes(rows["details"])
        caption = (f"Linear-probe classification ({budget.split('=')[-1]} of the training labels): Macro-F1 and "
                   "Macro-AUROC x100 on pooled LOSO predictions, mean ± std over seeds.")
        return grouped(Table(caption, tuple(columns), tuple(models), entries, notes,
                             model_notes(registry_names(rows, measured_models(entries)), self.name)
                             + provenance_notes(rows)), rows)

    def label_efficiency_table(self, frame, dataset: str, models=None):
        """Macro-F1 and Macro-AUROC on one dataset at each label budget (a column group per budget)."""
        from harness.reporting.tables import (Table, conditions, grouped, measured_models, metric_columns,
                                              model_notes, registry_names)

        rows = frame[(frame["task"] == self.name) & (frame["dataset"] == dataset)]
        budgets = conditions(rows, self.name)
        models = models or list(dict.fromkeys(rows["model"]))
        columns, entries, problems = metric_columns(rows, self.name, models,
                                                    [(b.split("=")[-1], dataset, b) for b in budgets], self.metrics)
        caption = f"Label efficiency on {dataset}: frozen linear probes with a share of the training labels, x100."
        return grouped(Table(caption, tuple(columns), tuple(models), entries, tuple(dict.fromkeys(problems)),
                             model_notes(registry_names(rows, measured_models(entries)), self.name)), rows)

    # -- figures -------------------------------------------------------------------------------
    def figures(self, frame, out_dir):
        from harness.reporting.figures import save_figure

        return save_figure(self.label_efficiency_panels(frame), out_dir / "label_efficiency")

    def label_efficiency_panels(self, frame):
        """With two or more label budgets: Macro-F1 and Macro-AUROC (x100) against the budget, a column
        per dataset, each point the cell of ``tables/label_efficiency_<dataset>``."""
        from harness.reporting.figures import UNIT, Panel, table_curves, drop_empty_columns
        from harness.reporting.tables import Column, condition_value, conditions

        rows = frame[frame["task"] == self.name]
        budgets = conditions(rows, self.name)
        if len(budgets) < 2:
            return []
        tables = {ds: self.label_efficiency_table(frame, ds) for ds in dict.fromkeys(rows["dataset"])}
        grid = [[Panel(ds, "training labels used", f"{label} ({UNIT})",
                       table_curves([(condition_value(b), table, Column(b.split("=")[-1], label, True))
                                for b in budgets]),
                       "{:g}%", log_x=True)
                 for ds, table in tables.items()] for label in (m.label for m in self.metrics)]
        return drop_empty_columns(grid)

    def figure_missing(self, frame):
        if frame.loc[frame["task"] == self.name, "condition"].nunique() < 2:
            return ("needs classification records at two or more label budgets "
                    "(`python -m harness run classification --budgets 1 10 100`)")
        return super().figure_missing(frame)

    # -- the paper's tables --------------------------------------------------------------------
    def paper_cells(self, frame, paper_dataset):
        """The classification table at the full budget (tab:classification, its average column named by
        the datasets it averages) and every dataset's label-efficiency table (tab:label_efficiency)."""
        from harness.reporting import paper

        rows = []
        cls = frame[frame["task"] == self.name]
        if not cls.empty:
            table = self.classification_table(frame)
            average = paper.average_of(paper_dataset(d) for d in dict.fromkeys(cls["dataset"]))
            for (model, col), e in table.entries.items():
                dataset = average if col.group == "Average" else col.group
                rows.append(paper_cell("tab:classification", model, dataset, col.label, "budget=100%", e.mean, e.std,
                                       "partial" if e.marked else e.status))
            for ds in dict.fromkeys(cls["dataset"]):
                for (model, col), e in self.label_efficiency_table(frame, ds).entries.items():
                    rows.append(paper_cell("tab:label_efficiency", model, ds, col.label, f"budget={col.group}", e.mean,
                                           e.std, "partial" if e.marked else e.status))
        return cells_frame(rows)


TASK = Classification()  # registered by harness.tasks

