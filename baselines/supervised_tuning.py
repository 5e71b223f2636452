"""The supervised models' tuned training mode (issue #49): a validation split by subject, early stopping and a small
grid over look-back and learning rate, within a fixed budget per cell.

The default (``training="fixed"``) trains every cell on a fixed budget with no validation (docs/supervised.md);
``training="tuned"`` is a named mode, part of the record key, because nothing in the paper fixes how such models are
trained and the fixed mode's records must stay what they are. In the tuned mode a cell

1. splits the fold's training subjects into the subjects it fits on and validation subjects (:func:`split_by_subject`:
   a seeded draw of a fifth of them, at least one; the test subject is never in the training series at all). A fold
   with a single training subject (MIT-BIH 100 + 105) falls back to a time-ordered split inside that subject: the
   first 80 % of each recording is fitted, the last 20 % validates;
2. trains one candidate per (look-back, learning rate) of the grid (:func:`lookbacks`: fractions of the setting's
   context, since the protocol hands every model exactly that context, so a longer look-back cannot exist at
   forecast time), each on the fit part, with early stopping on the validation loss (patience), up to a fixed
   number of epochs;
3. keeps the candidate with the lowest validation loss as it was trained (no refit: the refit would cost a second
   training and would lose the early-stopped epoch count), and records its choice (:class:`FitSummary`) in the
   row's ``model_info`` through the model's ``describe()``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class TuningBudget:
    """The tuned mode's search and budget, per cell: every candidate trains at most ``max_epochs`` epochs of
    ``batches_per_epoch`` batches of ``batch_size`` windows and stops after ``patience`` epochs without a lower
    validation loss; the validation loss is measured on at most ``max_validation_windows`` windows."""

    lookback_fractions: tuple[float, ...] = (0.5, 1.0)  # x the setting's context
    learning_rates: tuple[float, ...] = (1e-3, 1e-2)  # gluonts' default and ten times it
    ridge_alphas: tuple[float, ...] = (0.1, 1.0, 10.0, 100.0)  # ridge's counterpart of a learning rate: its penalty
    max_epochs: int = 6
    batches_per_epoch: int = 25
    batch_size: int = 32
    patience: int = 2
    validation_share: float = 0.2  # of the training subjects (or of each recording's time, one subject only)
    max_validation_windows: int = 256
    chunk: int = 4096  # the fit series are cut into overlapping pieces of about this length (see fit_chunks)

    def __post_init__(self) -> None:
        if min(self.max_epochs, self.batches_per_epoch, self.batch_size, self.patience,
               self.max_validation_windows) < 1 or not 0 < self.validation_share < 1:
            raise ValueError(f"tuning budget out of range: {self}")
        if not self.lookback_fractions or not all(0 < f <= 1 for f in self.lookback_fractions):
            raise ValueError(f"look-back fractions must lie in (0, 1] (the protocol hands every model its context "
                             f"only), got {self.lookback_fractions}")


@dataclass(frozen=True)
class ValidationSplit:
    """The series a tuned cell fits on and those it validates on (1-D, one per channel of a recording)."""

    fit: list[np.ndarray]
    validation: list[np.ndarray]
    fit_subjects: tuple[str, ...]
    validation_subjects: tuple[str, ...]
    how: str  # "subjects" or "time (one training subject)"


def split_by_subject(values: Sequence[np.ndarray], subjects: Sequence[str], share: float,
                     seed: int) -> ValidationSplit:
    """Validation subjects drawn (seeded) from the training subjects, disjoint from those fitted on; with one
    training subject a time-ordered split inside each of its recordings (the last ``share`` of its time)."""
    names = sorted(set(subjects))
    if len(names) >= 2:
        n_val = min(len(names) - 1, max(1, int(round(share * len(names)))))
        chosen = np.random.default_rng(seed).choice(len(names), size=n_val, replace=False)
        held = {names[i] for i in chosen}
        fit = [row for v, s in zip(values, subjects) if s not in held for row in v]
        val = [row for v, s in zip(values, subjects) if s in held for row in v]
        return ValidationSplit(fit, val, tuple(n for n in names if n not in held), tuple(sorted(held)), "subjects")
    fit, val = [], []
    for v in values:
        cut = int(round(v.shape[1] * (1 - share)))
        fit.extend(row[:cut] for row in v)
        val.extend(row[cut:] for row in v)
    return ValidationSplit(fit, val, tuple(names), tuple(names), "time (one training subject: its last "
                                                                   f"{share:.0%} validates)")


def lookbacks(context: int, fractions: Sequence[float], minimum: int) -> tuple[int, ...]:
    """The look-back candidates: ``fractions`` of the context, rounded, at least ``minimum`` (the model's
    shortest context), at most the context; distinct, ascending."""
    return tuple(sorted({min(context, max(minimum, int(round(f * context)))) for f in fractions}))


def validation_windows(series: Sequence[np.ndarray], length: int, limit: int) -> np.ndarray:
    """[N, length] non-overlapping gap-free windows of the validation series (from each series' end backwards,
    so the most recent ones), at most ``limit`` of them evenly chosen: the windows every candidate is scored on
    (the same targets whatever its look-back; a shorter look-back reads the end of each window's context)."""
    rows = []
    for s in series:
        for end in range(s.shape[0], length - 1, -length):
            w = s[end - length:end]
            if np.all(np.isfinite(w)):
                rows.append(w)
    if not rows:
        raise ValueError(f"no gap-free validation window of {length} samples")
    windows = np.stack(rows)
    if windows.shape[0] > limit:
        windows = windows[np.unique(np.linspace(0, windows.shape[0] - 1, limit).round().astype(np.int64))]
    return windows


def fit_chunks(series: Sequence[np.ndarray], window: int, step: int) -> list[np.ndarray]:
    """Every series cut into pieces of ``step + window - 1`` samples, one starting every ``step``: every window of
    ``window`` samples lies whole in some piece, and a gluonts instance sampler, whose cost grows with the length of
    the series it draws from (a 520,000-sample MIT-BIH record: 8 ms per draw, most of a tuned cell), draws from
    short ones. Pieces shorter than ``window`` (a series' tail) are left out: they hold no window."""
    pieces = []
    for s in series:
        for start in range(0, max(1, s.shape[0] - window + 1), step):
            piece = s[start:start + step + window - 1]
            if piece.shape[0] >= window:
                pieces.append(piece)
    return pieces


@dataclass(frozen=True)
class FitSummary:
    """What a tuned cell chose and why, written into its row's ``model_info`` (key ``tuning``)."""

    lookback: int
    learning_rate: float  # ridge: its alpha
    epochs_run: int  # ridge: 0 (closed form)
    validation_loss: float
    candidates: tuple[dict, ...]  # every candidate's look-back, rate, epochs run and validation loss
    validation: str  # how the validation set was drawn
    fit_subjects: tuple[str, ...]
    validation_subjects: tuple[str, ...]
    budget: dict

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def grid_search(lookback_grid: Sequence[int], rates: Sequence[float],
                train: Callable[[int, float], tuple[object, float, int]]) -> tuple[object, tuple[int, float, int, float],
                                                                               tuple[dict, ...]]:
    """Train every (look-back, rate) candidate with ``train`` -> (model, validation loss, epochs run) and keep the
    one of lowest validation loss (the first of equals, in grid order: deterministic). A candidate whose loss is
    not finite never wins; all of them not finite is an error."""
    best, best_key, tried = None, None, []
    for lookback in lookback_grid:
        for rate in rates:
            model, loss, epochs = train(lookback, rate)
            tried.append({"lookback": int(lookback), "learning_rate": float(rate), "epochs_run": int(epochs),
                          "validation_loss": float(loss)})
            if np.isfinite(loss) and (best_key is None or loss < best_key[3]):
                best, best_key = model, (int(lookback), float(rate), int(epochs), float(loss))
    if best_key is None:
        raise ValueError(f"tuning: no candidate reached a finite validation loss ({tried})")
    return best, best_key, tuple(tried)
