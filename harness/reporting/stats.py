"""Statistics for a benchmark report: paired tests, block bootstrap, ranks, skill, win/tie/loss.

A pure module: arrays and frames in, frozen dataclasses and pandas objects out; it reads no
records and imports nothing from the rest of the repository.  The tests themselves come from
``scipy.stats`` (Wilcoxon, Friedman, studentized range, bootstrap), ``scikit_posthocs``
(Nemenyi, critical-difference diagram) and ``statsmodels`` (Holm); this module only chooses
what to feed them and says, in a ``note``, when the data cannot support a test.
``scikit_posthocs``, ``statsmodels`` and ``matplotlib`` are imported inside the functions that
need them, so importing this module stays cheap.

Score frames (``rank_summary``, ``skill_scores``, ``win_tie_loss``, ``leaderboard``): one row per
cell (e.g. dataset x window), one column per model, values are errors (lower is better) and NaN
means "this model has no result in this cell".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Hashable, Sequence

import numpy as np
import pandas as pd
from scipy import stats

# ----------------------------------------------------------------------------- paired tests


@dataclass(frozen=True)
class PairedTest:
    """One model against the reference over the same windows.

    ``p_value`` is the raw two-sided Wilcoxon signed-rank p; ``p_holm`` is Holm-adjusted over all
    models compared with the reference.  ``not_worse`` is True when the model is not significantly
    different from the reference (``p_holm >= alpha``) or its mean error is no higher anyway.
    """

    model: str
    reference: str
    n: int  # windows
    mean_error: float
    p_value: float
    p_holm: float
    not_worse: bool
    note: str = ""  # why p is 1.0 without a test ("reference", "all differences zero", ...)


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (``statsmodels`` ``multipletests(method="holm")``).

    Holm controls the family-wise error rate without Bonferroni's loss of power; scipy has no
    Holm (its ``false_discovery_control`` is Benjamini-Hochberg, a different error rate).  The
    adjusted values are monotone in the raw ones and capped at 1.
    """
    p = np.asarray(p_values, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"p_values must be one-dimensional, got shape {p.shape}")
    if p.size == 0:
        return p.copy()
    if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"p_values must be finite and in [0, 1], got {p.tolist()}")
    from statsmodels.stats.multitest import multipletests

    return np.asarray(multipletests(p, method="holm")[1], dtype=float)


def _error_arrays(errors: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    if not errors:
        raise ValueError("errors is empty: need at least one model")
    out: dict[str, np.ndarray] = {}
    first: str | None = None
    for model, values in errors.items():
        a = np.asarray(values, dtype=float)
        if a.ndim != 1:
            raise ValueError(f"errors of model {model!r} must be one-dimensional, got shape {a.shape}")
        if a.size == 0:
            raise ValueError(f"errors of model {model!r} are empty: need at least one window")
        if first is None:
            first = model
        elif a.size != out[first].size:
            raise ValueError(
                f"errors of model {model!r} have {a.size} windows, but model {first!r} has "
                f"{out[first].size}: every model must be scored on the same windows"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"errors of model {model!r} contain non-finite values (NaN or inf)")
        out[model] = a
    return out


def paired_tests(
    errors: dict[str, np.ndarray], reference: str | None = None, alpha: float = 0.05
) -> dict[str, PairedTest]:
    """Is each model worse than the reference?  Wilcoxon signed-rank per model, Holm over models.

    ``errors`` maps model -> per-window errors, the same windows in the same order for every
    model (paired: the test uses the per-window differences, which removes the windows' shared
    difficulty).  With ``reference=None`` the reference is the model with the lowest mean error;
    ties are broken by name (the alphabetically first wins), so the choice is deterministic.

    The family for Holm is every model other than the reference, including those that could not
    be tested (their raw p is 1.0): the family is what the report compares, not what was testable.
    A model whose differences from the reference are all zero gets p = 1.0 (scipy would divide
    0 by 0); fewer than 2 windows give p = 1.0 with a note.  Both are flagged in ``note``.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    arrays = _error_arrays(errors)
    means = {m: float(a.mean()) for m, a in arrays.items()}
    if reference is None:
        reference = min(means, key=lambda m: (means[m], m))
    elif reference not in arrays:
        raise ValueError(f"reference {reference!r} is not one of the models {sorted(arrays)}")
    ref = arrays[reference]
    n = int(ref.size)

    others = [m for m in arrays if m != reference]
    raw: list[float] = []
    notes: list[str] = []
    for m in others:
        diff = arrays[m] - ref
        if n < 2:
            raw.append(1.0)
            notes.append(f"fewer than 2 windows ({n}): not tested")
        elif np.all(diff == 0):
            raw.append(1.0)
            notes.append("all differences from the reference are zero: not tested")
        else:
            res = stats.wilcoxon(arrays[m], ref, zero_method="wilcox", alternative="two-sided")
            raw.append(float(res.pvalue))
            notes.append("")
    adjusted = holm(raw)

    out: dict[str, PairedTest] = {}
    for m in arrays:  # the caller's order
        if m == reference:
            out[m] = PairedTest(m, reference, n, means[m], 1.0, 1.0, True, "reference")
            continue
        i = others.index(m)
        p_holm = float(adjusted[i])
        not_worse = bool(p_holm >= alpha or means[m] <= means[reference])
        out[m] = PairedTest(m, reference, n, means[m], raw[i], p_holm, not_worse, notes[i])
    return out


# ----------------------------------------------------------------------------- block bootstrap


@dataclass(frozen=True)
class BootstrapCI:
    """Pooled RMSE and MAE with percentile intervals from resampling blocks (subjects)."""

    rmse: float  # on the full data: sqrt(sum sse / sum n)
    mae: float  # on the full data: sum sae / sum n
    rmse_low: float
    rmse_high: float
    mae_low: float
    mae_high: float
    n_blocks: int
    n_boot: int  # resamples drawn (0 when there is a single block)
    level: float
    note: str = ""


def _block_sums(
    sse: np.ndarray, sae: np.ndarray, n: np.ndarray, blocks: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-block totals of sse, sae and n (and the block labels), after checking the inputs."""
    arrays = {}
    for name, values in (("sse", sse), ("sae", sae), ("n", n)):
        a = np.asarray(values, dtype=float)
        if a.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError(f"{name} must be finite and non-negative")
        arrays[name] = a
    b = np.asarray(blocks)
    if b.ndim != 1:
        raise ValueError(f"blocks must be one-dimensional, got shape {b.shape}")
    lengths = {name: a.size for name, a in arrays.items()} | {"blocks": b.size}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"sse, sae, n and blocks must have the same length, got {lengths}")
    if b.size == 0:
        raise ValueError("no windows: sse, sae, n and blocks are empty")
    labels, inverse = np.unique(b, return_inverse=True)
    sums = [np.bincount(inverse, weights=arrays[k], minlength=labels.size) for k in ("sse", "sae", "n")]
    empty = labels[sums[2] == 0]
    if empty.size:
        raise ValueError(f"blocks {empty.tolist()} have no scored points (n sums to 0)")
    return sums[0], sums[1], sums[2], labels


def _pooled(sse, sae, n, axis=-1) -> np.ndarray:
    """(RMSE, MAE) of pooled sums along ``axis``; vectorised for ``scipy.stats.bootstrap``."""
    total = np.sum(n, axis=axis)
    return np.stack([np.sqrt(np.sum(sse, axis=axis) / total), np.sum(sae, axis=axis) / total])


def _block_bootstrap(
    sse: np.ndarray, sae: np.ndarray, n: np.ndarray, blocks: np.ndarray, n_boot: int, level: float, seed: int
):
    """``scipy.stats.bootstrap`` over blocks: the observations are the blocks' totals, resampled
    with replacement (``paired=True`` keeps a block's sse, sae and n together), so every window
    of a drawn subject comes along.  None when there is a single block."""
    bsse, bsae, bn, labels = _block_sums(sse, sae, n, blocks)
    if labels.size < 2:
        return None
    return stats.bootstrap(
        (bsse, bsae, bn),
        _pooled,
        paired=True,
        vectorized=True,
        n_resamples=n_boot,
        confidence_level=level,
        method="percentile",
        rng=np.random.default_rng(seed),
    )


def block_bootstrap_ci(
    sse: np.ndarray,
    sae: np.ndarray,
    n: np.ndarray,
    blocks: np.ndarray,
    n_boot: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> BootstrapCI:
    """Percentile bootstrap intervals for pooled RMSE and MAE, resampling blocks (subjects).

    Windows of one subject are correlated, so resampling windows would understate the
    uncertainty; resampling subjects treats the subject as the unit of replication.  Each
    resample pools exactly (RMSE = sqrt(sum sse / sum n), MAE = sum sae / sum n), the same way
    the point estimate is computed.  Deterministic under ``seed`` (a numpy Generator).  With a
    single block there is nothing to resample: the interval is the point estimate and ``note``
    says so.
    """
    if int(n_boot) < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    bsse, bsae, bn, labels = _block_sums(sse, sae, n, blocks)
    rmse, mae = (float(v) for v in _pooled(bsse, bsae, bn))
    if labels.size < 2:
        return BootstrapCI(
            rmse, mae, rmse, rmse, mae, mae, int(labels.size), 0, level,
            note="a single block (subject): bootstrapping over one subject gives no interval",
        )
    res = _block_bootstrap(sse, sae, n, blocks, int(n_boot), level, seed)
    low, high = res.confidence_interval.low, res.confidence_interval.high
    return BootstrapCI(
        rmse, mae, float(low[0]), float(high[0]), float(low[1]), float(high[1]),
        int(labels.size), int(n_boot), level,
    )


# ----------------------------------------------------------------------------- ranks


@dataclass(frozen=True, eq=False)  # eq=False: pandas fields do not compare to a single bool
class RankSummary:
    """Average ranks over the complete cells, Friedman, Nemenyi post-hoc and the critical difference.

    Rank 1 is best.  Only cells where every model has a value ("complete" cells) are ranked, so
    each average is over the same cells; ``completed`` and ``missing`` say what was left out.
    """

    avg_rank: pd.Series  # model -> average rank over the complete cells
    friedman_stat: float
    friedman_p: float
    nemenyi_p: pd.DataFrame  # model x model p-values (NaN when not computable)
    cd: float  # Nemenyi critical difference at ``alpha``
    n_cells_used: int  # complete cells
    n_cells_total: int
    completed: pd.Series  # model -> number of cells with a value
    note: str = ""
    alpha: float = 0.05
    missing: dict[str, list[Hashable]] = field(default_factory=dict)  # model -> cells without a value


def _check_scores(scores: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(scores, pd.DataFrame):
        raise ValueError(f"scores must be a pandas DataFrame, got {type(scores).__name__}")
    if scores.shape[1] == 0:
        raise ValueError("scores has no columns (models)")
    if not scores.columns.is_unique:
        dup = scores.columns[scores.columns.duplicated()].tolist()
        raise ValueError(f"scores has duplicated model columns {dup}")
    try:
        values = scores.astype(float)
    except (TypeError, ValueError) as e:
        raise ValueError(f"scores must be numeric: {e}") from None
    if np.isinf(values.to_numpy()).any():
        bad = [str(c) for c in values.columns if np.isinf(values[c].to_numpy()).any()]
        raise ValueError(f"scores of models {bad} contain inf (use NaN for a missing result)")
    return values


def nemenyi_cd(k: int, n_cells: int, alpha: float = 0.05) -> float:
    """Nemenyi critical difference ``q_alpha * sqrt(k (k + 1) / (6 N))`` (Demsar 2006).

    ``q_alpha`` is the studentized range quantile with infinite degrees of freedom divided by
    sqrt(2) (scipy.stats.studentized_range), e.g. 2.343 for k = 3 at alpha = 0.05.  Two average
    ranks further apart than the CD differ significantly.
    """
    if k < 2 or n_cells < 1:
        raise ValueError(f"the critical difference needs k >= 2 models and N >= 1 cells, got k={k}, N={n_cells}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6.0 * n_cells)))


def rank_summary(scores: pd.DataFrame, lower_is_better: bool = True, alpha: float = 0.05) -> RankSummary:
    """Average ranks (ties share the average rank), Friedman test and Nemenyi post-hoc.

    Incomplete cells are dropped rather than models, so every model in the report keeps its
    rank; how many cells were used, and which models were missing where, are reported.
    Friedman needs >= 3 models and >= 2 complete cells; Nemenyi and the CD need >= 2 of each.
    Otherwise those values are NaN and ``note`` says why.
    """
    values = _check_scores(scores)
    models = list(values.columns)
    k = len(models)
    complete = values.dropna(how="any")
    n_used, n_total = int(len(complete)), int(len(values))
    completed = values.notna().sum().astype(int)
    missing = {str(m): list(values.index[values[m].isna()]) for m in models if values[m].isna().any()}
    notes: list[str] = []
    if n_used < n_total:
        where = "; ".join(f"{m} missing in {len(c)} cell(s) {c}" for m, c in missing.items())
        notes.append(f"{n_total - n_used} of {n_total} cells dropped as incomplete ({where})")

    oriented = complete.to_numpy() if lower_is_better else -complete.to_numpy()
    if n_used >= 1:
        ranks = stats.rankdata(oriented, axis=1)  # method="average": ties share the mean rank
        avg_rank = pd.Series(ranks.mean(axis=0), index=values.columns, name="avg_rank")
    else:
        avg_rank = pd.Series(np.nan, index=values.columns, name="avg_rank")
        notes.append("no complete cells: no ranks")

    f_stat = f_p = np.nan
    if k < 3 or n_used < 2:
        notes.append(f"Friedman needs >= 3 models and >= 2 complete cells (have {k} and {n_used})")
    elif np.all(oriented == oriented[:, :1]):
        notes.append("all models tie in every complete cell: Friedman is undefined")
    else:
        res = stats.friedmanchisquare(*oriented.T)
        f_stat, f_p = float(res.statistic), float(res.pvalue)

    nemenyi = pd.DataFrame(np.nan, index=values.columns, columns=values.columns)
    cd = np.nan
    if k < 2 or n_used < 2:
        notes.append(f"Nemenyi needs >= 2 models and >= 2 complete cells (have {k} and {n_used})")
    else:
        import scikit_posthocs as sp

        frame = pd.DataFrame(oriented, columns=values.columns)
        nemenyi = sp.posthoc_nemenyi_friedman(frame).loc[values.columns, values.columns]
        cd = nemenyi_cd(k, n_used, alpha)

    return RankSummary(
        avg_rank=avg_rank,
        friedman_stat=f_stat,
        friedman_p=f_p,
        nemenyi_p=nemenyi,
        cd=cd,
        n_cells_used=n_used,
        n_cells_total=n_total,
        completed=completed,
        note="; ".join(notes),
        alpha=alpha,
        missing=missing,
    )


def plot_cd_diagram(summary: RankSummary, path_stem: Path, alpha: float = 0.05, blocks: str = "cells") -> list[Path]:
    """Critical-difference diagram (scikit_posthocs) saved as ``path_stem`` .png and .pdf.

    Models joined by a bar are not significantly different (Nemenyi, ``alpha``); the title gives
    the number of complete cells and the CD at ``alpha``.  Raises ValueError when the summary has no Nemenyi
    matrix (fewer than 2 models or complete cells) or no Friedman p-value (fewer than 3 models, or every model
    tied in every cell): the Nemenyi post-hoc reads only after Friedman's test, and a diagram captioned
    "Friedman p = nan" tells nothing.
    """
    k, n_used = len(summary.avg_rank), summary.n_cells_used
    if k < 2 or n_used < 2 or summary.nemenyi_p.isna().to_numpy().any():
        raise ValueError(
            f"a critical-difference diagram needs >= 2 models and >= 2 complete {blocks} with a Nemenyi "
            f"matrix; this summary has {k} models and {n_used} complete {blocks}"
        )
    if not np.isfinite(summary.friedman_p):
        why = "; ".join(n for n in summary.note.split("; ") if "Friedman" in n) or "no Friedman p-value"
        raise ValueError(f"a critical-difference diagram needs a Friedman p-value, and there is none: "
                         f"{why.replace('cells', blocks)}")
    import scikit_posthocs as sp

    from harness.reporting.figures import pyplot, reproducible_metadata

    plt = pyplot()  # headless, names drawn as text

    cd = nemenyi_cd(k, n_used, alpha)
    path_stem = Path(path_stem)
    path_stem.parent.mkdir(parents=True, exist_ok=True)
    out = [path_stem.with_suffix(".png"), path_stem.with_suffix(".pdf")]
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.35 * k))
    try:
        # the CD goes in the title: scikit-posthocs' own CD bar sits on the rank axis's tick labels
        from harness.reporting.figures import model_colours  # one colour per model in every figure

        sp.critical_difference_diagram(summary.avg_rank, summary.nemenyi_p, alpha=alpha, ax=ax,
                                       color_palette=model_colours(summary.avg_rank.index))
        _sort_crossbars(ax)
        ax.set_title(f"Average rank over {n_used} complete {blocks}; Nemenyi CD = {cd:.2f} (alpha = {alpha:g})", pad=12)
        for p in out:
            fig.savefig(p, dpi=150, bbox_inches="tight", metadata=reproducible_metadata(p))
    finally:
        plt.close(fig)
    return out


def _sort_crossbars(ax) -> None:
    """Put each horizontal crossbar's points in rank order.

    scikit-posthocs draws a crossbar through the members of a Python ``set`` of model names, so the
    order of its points, and with it the bytes of the saved figure, changed with the interpreter's
    string-hash seed (``PYTHONHASHSEED``): two runs on the same records gave different files. The bar
    looks the same in any order; sorted, the figure is reproducible."""
    for line in ax.get_lines():
        x, y = (np.asarray(v, dtype=float) for v in line.get_data())
        if len(x) > 1 and np.all(y == y[0]):
            order = np.argsort(x, kind="stable")
            line.set_data(x[order], y[order])


# ----------------------------------------------------------------------------- skill, W/T/L, board


def skill_scores(scores: pd.DataFrame, baseline: str = "seasonal-naive") -> pd.Series:
    """Skill = 1 - geometric mean over cells of (model error / baseline error), as fev defines it.

    The geometric mean of ratios is scale-free, so no dataset dominates by its units, and
    symmetric (ratios 0.5 and 2 cancel).  Each model uses its own cells: those where both it and
    the baseline have a value.  Cells where the baseline error is 0 are skipped (the ratio is
    undefined; no clipping).  A model error of 0 against a positive baseline gives ratio 0, and
    any zero ratio makes the geometric mean 0 (skill 1).  The baseline's skill is 0; a model
    sharing no usable cell with the baseline gets NaN.  Errors must be non-negative.
    """
    values = _check_scores(scores)
    if baseline not in values.columns:
        raise ValueError(f"baseline {baseline!r} is not a column of scores (models: {list(values.columns)})")
    if (values.to_numpy() < 0).any():
        bad = [str(c) for c in values.columns if (values[c] < 0).any()]
        raise ValueError(f"scores of models {bad} are negative; skill needs non-negative errors")
    base = values[baseline]
    out = {}
    for m in values.columns:
        if m == baseline:
            out[m] = 0.0
            continue
        use = values[m].notna() & base.notna() & (base > 0)
        if not use.any():
            out[m] = np.nan
            continue
        ratios = (values.loc[use, m] / base[use]).to_numpy()
        with np.errstate(divide="ignore"):  # log(0) = -inf -> geometric mean 0
            out[m] = float(1.0 - stats.gmean(ratios))
    return pd.Series(out, name="skill", dtype=float)


@dataclass(frozen=True, eq=False)
class WinTieLoss:
    """Row model A against column model B: cells A wins, ties and loses (lower error wins)."""

    wins: pd.DataFrame
    ties: pd.DataFrame
    losses: pd.DataFrame

    def render(self) -> pd.DataFrame:
        """The "W/T/L" strings, with "-" on the diagonal."""
        out = self.wins.astype(str) + "/" + self.ties.astype(str) + "/" + self.losses.astype(str)
        for m in out.index:
            out.loc[m, m] = "-"
        return out


def win_tie_loss_counts(scores: pd.DataFrame, rtol: float = 1e-9) -> WinTieLoss:
    """Win/tie/loss counts for every ordered pair, over the cells where both have a value.

    A tie is ``|a - b| <= rtol * max(|a|, |b|)`` (symmetric, relative), so errors that differ only
    by floating-point noise are not counted as wins.  The diagonal is 0.
    """
    values = _check_scores(scores)
    if rtol < 0:
        raise ValueError(f"rtol must be non-negative, got {rtol}")
    cols = values.columns
    wins, ties, losses = (pd.DataFrame(0, index=cols, columns=cols) for _ in range(3))
    for a in cols:
        for b in cols:
            if a == b:
                continue
            both = values[a].notna() & values[b].notna()
            x, y = values.loc[both, a].to_numpy(), values.loc[both, b].to_numpy()
            tie = np.abs(x - y) <= rtol * np.maximum(np.abs(x), np.abs(y))
            wins.loc[a, b] = int(np.sum(~tie & (x < y)))
            ties.loc[a, b] = int(np.sum(tie))
            losses.loc[a, b] = int(np.sum(~tie & (x > y)))
    return WinTieLoss(wins, ties, losses)


def win_tie_loss(scores: pd.DataFrame, rtol: float = 1e-9) -> pd.DataFrame:
    """Pairwise "W/T/L" strings (row model against column model; "-" on the diagonal).

    The counts themselves are ``win_tie_loss_counts(scores, rtol)``.
    """
    return win_tie_loss_counts(scores, rtol).render()


def leaderboard(scores: pd.DataFrame, baseline: str = "seasonal-naive") -> pd.DataFrame:
    """One row per model (index ``model``), best skill first.

    Columns: ``skill`` (``skill_scores``), ``avg_rank`` (over the complete cells only,
    ``rank_summary``), ``wins``/``ties``/``losses`` (totals against every other model, each over
    the cells both have) and ``cells_completed`` ("7/8").  A model with missing cells is listed
    all the same; its count shows it.  Ties in skill (and NaN skills, placed last) are ordered by
    average rank, then by name.
    """
    skill = skill_scores(scores, baseline)
    ranks = rank_summary(scores)
    counts = win_tie_loss_counts(scores)
    total = ranks.n_cells_total
    board = pd.DataFrame(
        {
            "model": [str(m) for m in skill.index],
            "skill": skill.to_numpy(),
            "avg_rank": ranks.avg_rank.loc[skill.index].to_numpy(),
            "wins": counts.wins.sum(axis=1).loc[skill.index].to_numpy(),
            "ties": counts.ties.sum(axis=1).loc[skill.index].to_numpy(),
            "losses": counts.losses.sum(axis=1).loc[skill.index].to_numpy(),
            "cells_completed": [f"{int(ranks.completed[m])}/{total}" for m in skill.index],
        }
    )
    board = board.sort_values(
        ["skill", "avg_rank", "model"], ascending=[False, True, True], na_position="last", kind="mergesort"
    )
    return board.set_index("model")


__all__ = [
    "BootstrapCI",
    "PairedTest",
    "RankSummary",
    "WinTieLoss",
    "block_bootstrap_ci",
    "holm",
    "leaderboard",
    "nemenyi_cd",
    "paired_tests",
    "plot_cd_diagram",
    "rank_summary",
    "skill_scores",
    "win_tie_loss",
    "win_tie_loss_counts",
]
