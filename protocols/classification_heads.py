"""Classification heads beside the paper's linear probe (issue #49; docs/protocols.md, "Classification heads").

The paper's protocol (``protocols.classification``) trains one head, a StandardScaler + LogisticRegression
probe on frozen embeddings.  This study keeps everything else of that protocol (the label-pure segments the
seed draws, LOSO folds, the stratified label-budget subset of the training subjects' segments, the pooled
Macro-F1 / Macro-AUROC) and swaps the head:

* ``linear``: the paper's probe (``protocols.classification.linear_probe``), the paper's numbers bit for bit;
* ``mlp``: StandardScaler + a one-hidden-layer MLP (adam, no early stopping: a 1 % budget leaves too few
  rows to hold some out), seeded by the run seed, fold and budget;
* ``finetune``: the encoder itself is trained with a linear head on the budget's raw segments (a fitter
  the caller supplies, e.g. ``models.soter.classifier_finetune``, since protocols import no models).

Every head runs in the paper's loop (``evaluate_classification(..., head=...)``), so it sees only the training
subjects' rows of the budget subset; the test subject's labels enter the scores only.
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from protocols.classification import Head, embedding_head
from protocols.specs import DEFAULT_HEADS, HEADS, HeadsSpec  # noqa: F401 (their old import path)
from protocols.splits import Fold
from protocols.windows import stable_seed


def condition(head: str, budget: float) -> str:
    """A cell's condition: ``mlp:budget=5%`` (the budget last, so that tables order it numerically)."""
    return f"{head}:budget={budget * 100:g}%"


def head_of(condition_text: str) -> str:
    return condition_text.split(":", 1)[0]


def head_seed(seed: int, data: str, fold: str, head: str, budget: float) -> int:
    """The initialisation and batch order of a trained head: drawn by the run seed, data, fold, head and budget."""
    return stable_seed(seed, data, fold, "head", head, budget) % (2 ** 31)


def mlp_head(embeddings: Callable[[Fold], np.ndarray], n: int, spec: HeadsSpec,
             random_state: Callable[[Fold], int]) -> Head:
    """StandardScaler + MLPClassifier (one hidden layer, adam, no early stopping) on the fold's embeddings."""
    def fit(fold, x_train, y, x_test, n_classes):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        head = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(spec.mlp_hidden,),
                                                             max_iter=spec.mlp_max_iter, early_stopping=False,
                                                             random_state=random_state(fold)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # a fixed epoch budget, named in the spec
            head.fit(x_train, y)
        proba = np.zeros((x_test.shape[0], n_classes))
        proba[:, head.classes_] = head.predict_proba(x_test)
        return head.predict(x_test), proba
    return embedding_head(embeddings, n, fit)
