"""Linear-probe classification: frozen embeddings of labelled segments, a probe trained on a share of the
training labels (the label budget), Macro-F1 and Macro-AUROC on the pooled LOSO predictions."""

from __future__ import annotations

from harness.tasks.base import Task, details
from harness.tasks.imputation import segment_options
from protocols.classification import (RANDOM_BASELINE, check_classifiable, evaluate_classification,
                                      labelled_segments)
from protocols.specs import RUN_SEEDS, ClassificationSpec


class Classification(Task):
    name = "classification"
    description = "linear-probe classification (Macro-F1, Macro-AUROC per label budget)"
    default_seeds = RUN_SEEDS
    model_free = (RANDOM_BASELINE,)
    figure = "label efficiency"

    def spec(self, config, seed):
        return ClassificationSpec(budgets=config.budgets, **segment_options(config))

    def points(self, spec):
        return [(str(spec.length), f"budget={b * 100:g}%", b) for b in spec.budgets]

    def folds(self, dataset):
        check_classifiable(dataset)
        return ["all"]  # the LOSO folds are pooled inside one cell

    def capable(self, model, cell):
        return None if model.capabilities.embed else f"{cell.model} has no embed capability"

    def evaluate(self, cell, dataset, model):
        from harness.cells import embeddings_of

        spec: ClassificationSpec = cell.spec
        embeddings = None
        if model is not None:
            segments = labelled_segments(dataset, spec, cell.seed)  # the seed draws the segments
            embeddings = embeddings_of(cell, dataset, model, segments, spec)
        out = evaluate_classification(dataset, spec, cell.level, cell.seed, embeddings)
        return {"status": "ok", "macro_f1": out.macro_f1, "macro_auroc": out.macro_auroc,
                "n_windows": out.n_windows, "details": details(notes=list(out.notes)), "model_info": ""}

    def tables(self, frame, models=None, datasets=None):
        from harness.tables import _stem, classification_table, conditions, label_efficiency_table

        budgets = conditions(frame, self.name)
        if not budgets:
            return [(self.name, classification_table(frame, models=models, datasets=datasets))]
        main = "budget=100%" if "budget=100%" in budgets else budgets[-1]
        out = [(self.name, classification_table(frame, main, models, datasets))]
        if len(budgets) > 1:
            for ds in datasets or list(dict.fromkeys(frame.loc[frame["task"] == self.name, "dataset"])):
                out.append((f"label_efficiency_{_stem(ds)}", label_efficiency_table(frame, ds, models)))
        return out

    def figures(self, frame, out_dir):
        from harness.figures import label_efficiency_panels, save_figure

        return save_figure(label_efficiency_panels(frame), out_dir / "label_efficiency")

    def figure_missing(self, frame):
        if frame.loc[frame["task"] == self.name, "condition"].nunique() < 2:
            return ("needs classification records at two or more label budgets "
                    "(`python -m harness run classification --budgets 1 10 100`)")
        return super().figure_missing(frame)


TASK = Classification()  # registered by harness.tasks

