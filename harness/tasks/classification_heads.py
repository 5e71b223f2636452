"""Classification heads (issue #49): the paper's linear probe beside a small MLP and a fine-tuned SOTER encoder, on
the same segments, LOSO folds, label budgets and seeds (``protocols.classification_heads``); a table per budget with
a row per (model, head), ranked."""

from __future__ import annotations

from dataclasses import replace

from harness.registry.metrics import MACRO_AUROC, MACRO_F1
from harness.registry.options import (HEADS_OPTION, LABEL_BUDGETS_OPTION, MAX_WINDOWS_PER_SUBJECT, SEGMENT_LENGTH,
                                      given, segment_options)
from harness.tasks.base import Task, add_cell_files, details, details_notes
from protocols.classification import check_classifiable, evaluate_classification, labelled_segments, linear_probe
from protocols.classification_heads import condition, head_of, head_seed, mlp_head
from protocols.specs import RUN_SEEDS, HeadsSpec


class ClassificationHeads(Task):
    name = "classification-heads"
    description = "classification with a linear probe, an MLP head or a fine-tuned SOTER encoder (Macro-F1, Macro-AUROC)"
    default_seeds = RUN_SEEDS
    options = (LABEL_BUDGETS_OPTION, SEGMENT_LENGTH, MAX_WINDOWS_PER_SUBJECT, HEADS_OPTION)
    metrics = (MACRO_F1, MACRO_AUROC)

    def spec(self, options, seed):
        return HeadsSpec(**given(budgets=options.budgets, heads=options.heads), **segment_options(self.name, options))

    def points(self, spec):
        return [(spec.length, condition(h, b), b) for h in spec.heads for b in spec.budgets]

    def default_models(self):
        """Classification's: each model's linear row is its row of the paper's task."""
        from harness.registry.tasks import get_task

        return tuple(m for m in get_task("classification").default_models()
                     if m not in get_task("classification").model_free)

    def folds(self, dataset):
        check_classifiable(dataset)
        return ["all"]  # the LOSO folds are pooled inside one cell

    def capable(self, model, cell):
        if not model.capabilities.embed:
            return f"{cell.model} has no embed capability"
        if head_of(cell.condition) == "finetune":
            from models.soter.adapter import SoterAdapter

            if not isinstance(model, SoterAdapter):
                return (f"{cell.model} is not a SOTER entry: the finetune head trains SOTER's encoder "
                        "(models.soter.classifier_finetune)")
        return None

    def evaluate(self, cell, dataset, model):
        from harness.run.embeddings import embeddings_of

        spec: HeadsSpec = cell.spec
        head = head_of(cell.condition)
        segments = labelled_segments(dataset, spec, cell.seed)  # the seed draws the segments
        n = segments.labels.size

        def seed_of(fold):
            return head_seed(cell.seed, dataset.content_id, fold.test_subject, head, cell.level)

        if head == "finetune":
            fit_of = _finetune(model, dataset, segments, spec, seed_of)
        else:
            embeddings = embeddings_of(cell, dataset, model, segments, spec)
            fit_of = linear_probe(embeddings, n, spec) if head == "linear" else mlp_head(embeddings, n, spec, seed_of)
        out = evaluate_classification(dataset, spec, cell.level, cell.seed, None, head=fit_of)
        row = {"status": "ok", "macro_f1": out.macro_f1, "macro_auroc": out.macro_auroc,
               "n_windows": out.n_windows, "details": details(notes=list(out.notes)), "model_info": ""}
        add_cell_files(row, predictions=out.predictions)
        return row

    # -- tables --------------------------------------------------------------------------------
    def table_rows(self, frame):
        """The task's rows with the head in the model's label (``soter [head=mlp]``) and the budget as condition."""
        rows = frame[frame["task"] == self.name].copy()
        if rows.empty:
            return rows
        if "model_name" not in rows:
            rows["model_name"] = rows["model"]
        rows["model_name"] = rows["model_name"].fillna(rows["model"])
        rows["model"] = rows["model"] + " [head=" + rows["condition"].map(head_of) + "]"
        rows["condition"] = rows["condition"].str.split(":", n=1).str[-1]
        return rows

    def tables(self, frame, models=None, datasets=None):
        """A table per label budget: a row per (model, head), Macro-F1 and Macro-AUROC per dataset."""
        from harness.reporting.tables import conditions, file_stem, metric_table

        rows = self.table_rows(frame)
        if models:
            rows = rows[rows["model_name"].isin(models) | rows["model"].isin(models)]
        out = []
        for budget in conditions(rows, self.name):
            caption = (f"Classification heads ({budget.split('=')[-1]} of the training labels): Macro-F1 and "
                       "Macro-AUROC x100 on pooled LOSO predictions, mean ± std over seeds; linear is the paper's probe.")
            table = metric_table(rows, self.name, budget, self.metrics, None, datasets, caption)
            notes = details_notes(rows["details"])
            out.append((f"{self.name}_{file_stem(budget)}", replace(table, notes=table.notes + notes)))
        return out


def _finetune(model, dataset, segments, spec: HeadsSpec, seed_of):
    """The finetune head's fitter per fold: the fold's normalised raw segments (as the embeddings see them)."""
    from models.soter.classifier_finetune import finetune_predict
    from protocols.scaling import fit_fold_scaler
    from protocols.windows import extract_segments

    raw, times = extract_segments(dataset, segments.refs, spec.length)

    def fit_of(fold):
        values = fit_fold_scaler(dataset, fold).transform(raw)

        def fit(train, test, y, n_classes):
            return finetune_predict(model, values, times, train, test, y, n_classes, spec.finetune_steps,
                                    spec.finetune_lr, seed_of(fold))
        return fit
    return fit_of


TASK = ClassificationHeads()  # registered by harness.tasks
