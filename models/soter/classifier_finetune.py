"""A fine-tuned SOTER classifier (issue #49; docs/protocols.md, "Classification heads"): the encoder and a linear
head trained together on one fold's labelled training segments, beside the paper's frozen linear probe.

The adapter embeds under ``torch.inference_mode`` (no gradients); here the same embedding, the model's own
``embed_batch`` (final-norm hidden states, masked mean over time, mean over channels), is computed with
gradients on a copy of the adapter's loaded model, so every fold starts from the shipped weights and the
adapter's model is never changed.  The model stays in eval mode (no dropout): the run is a deterministic
function of the seed.  The adapter does not import this module.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from models.soter.adapter import SoterAdapter
from protocols.interface import SeriesBatch

BATCH_ROWS = 32  # segments per AdamW step (all of them when the budget holds fewer)


def finetune_predict(adapter: SoterAdapter, values: np.ndarray, times: np.ndarray, train: np.ndarray,
                     test: np.ndarray, y: np.ndarray, n_classes: int, steps: int, lr: float,
                     seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and class probabilities [N_test, n_classes] (0 for classes absent from ``y``) of the test rows,
    after ``steps`` AdamW steps of encoder + linear head on the rows ``train`` (labels ``y``) of ``values``
    [N, C, T] (the fold's normalisation) at ``times`` [N, T]."""
    torch.manual_seed(seed)
    generator = np.random.default_rng(seed)
    model = copy.deepcopy(adapter.model).eval()  # the shipped weights, every fold
    classes = np.unique(y)
    target = torch.as_tensor(np.searchsorted(classes, y), device=adapter.device)
    v_train, t_train, m_train = adapter._tensors(SeriesBatch(values[train], times[train]))
    head = torch.nn.LazyLinear(classes.size).to(adapter.device)
    with torch.no_grad():
        head(model.embed_batch(v_train[:1], t_train[:1], m_train[:1]))  # materialises the head's input size
    optimiser = torch.optim.AdamW([*model.parameters(), *head.parameters()], lr=lr)
    for _ in range(steps):
        rows = torch.as_tensor(np.sort(generator.choice(len(train), min(BATCH_ROWS, len(train)), replace=False)))
        logits = head(model.embed_batch(v_train[rows], t_train[rows], m_train[rows]).float())
        loss = torch.nn.functional.cross_entropy(logits, target[rows])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.inference_mode():
        v, t, m = adapter._tensors(SeriesBatch(values[test], times[test]))
        out = [torch.softmax(head(model.embed_batch(v[a:a + adapter.batch_size], t[a:a + adapter.batch_size],
                                                     m[a:a + adapter.batch_size]).float()), -1)
               for a in range(0, len(v), adapter.batch_size)]
        p = torch.cat(out).double().cpu().numpy()
    proba = np.zeros((len(test), n_classes))
    proba[:, classes] = p
    return classes[p.argmax(1)], proba
