"""harness.reporting.stats against values computed by hand on tiny constructed inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.reporting.stats import (
    BootstrapCI,
    _block_bootstrap,
    block_bootstrap_ci,
    holm,
    leaderboard,
    nemenyi_cd,
    paired_tests,
    plot_cd_diagram,
    rank_summary,
    skill_scores,
    win_tie_loss,
    win_tie_loss_counts,
)

# ----------------------------------------------------------------------------- Holm


def test_holm_by_hand_and_monotone():
    # raw 0.01, 0.04, 0.03 (m = 3); sorted 0.01, 0.03, 0.04 times 3, 2, 1 -> 0.03, 0.06, 0.04;
    # step-down running max -> 0.03, 0.06, 0.06; back in the input order:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # 0.001 * 3 = 0.003, 0.02 * 2 = 0.04, 0.5 * 1 = 0.5 (already monotone)
    assert holm([0.5, 0.001, 0.02]) == pytest.approx([0.5, 0.003, 0.04])
    # 0.6 * 2 = 1.2 -> capped at 1; 0.7 * 1 = 0.7 -> running max 1
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert holm([]).size == 0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.5])


# ----------------------------------------------------------------------------- paired tests

A = np.arange(1.0, 9.0)  # 8 windows: 1..8, mean 4.5


def _errors():
    return {
        "a": A,
        "b": A + np.arange(1.0, 9.0),  # diffs +1..+8: T- = 0
        "c": A.copy(),  # diffs all zero, mean 4.5 = a's mean
        "d": A + np.array([1.0, -2, 3, 4, 5, 6, 7, 8]),  # T- = 2, mean 4.5 + 32/8 = 8.5
    }


def test_paired_tests_by_hand():
    out = paired_tests(_errors())
    # reference: lowest mean; a and c tie at 4.5 -> the name breaks it: "a"
    assert {t.reference for t in out.values()} == {"a"}
    assert list(out) == ["a", "b", "c", "d"]
    assert out["a"].p_value == 1.0 and out["a"].p_holm == 1.0 and out["a"].not_worse
    # exact signed-rank null, n = 8, no ties: 2^8 = 256 equally likely sign patterns.
    # b: T- = 0 -> only the empty set -> P = 1/256, two-sided 2/256
    assert out["b"].p_value == pytest.approx(2 / 256)
    # d: T- <= 2 -> {}, {1}, {2} -> 3/256, two-sided 6/256
    assert out["d"].p_value == pytest.approx(6 / 256)
    assert out["d"].p_value == pytest.approx(stats.wilcoxon(_errors()["d"], A).pvalue)
    # c: every difference 0 -> p = 1 without calling scipy (which would divide 0 by 0)
    assert out["c"].p_value == 1.0 and "zero" in out["c"].note
    # Holm over (b, c, d) = (2/256, 1, 6/256): sorted 2/256*3 = 0.0234375, 6/256*2 = 0.046875, 1*1
    assert out["b"].p_holm == pytest.approx(0.0234375)
    assert out["d"].p_holm == pytest.approx(0.046875)
    assert out["c"].p_holm == pytest.approx(1.0)
    assert [out[m].p_holm for m in "bcd"] == pytest.approx(holm([out[m].p_value for m in "bcd"]).tolist())
    # worse and significant at 0.05 -> not "not worse"; c equals the reference
    assert not out["b"].not_worse and not out["d"].not_worse and out["c"].not_worse
    assert out["b"].n == 8 and out["b"].mean_error == pytest.approx(9.0) and out["d"].mean_error == pytest.approx(8.5)
    # at alpha 0.04, d's 0.046875 is no longer significant
    assert paired_tests(_errors(), alpha=0.04)["d"].not_worse


def test_paired_tests_explicit_reference_and_better_model():
    out = paired_tests(_errors(), reference="b")
    assert out["b"].note == "reference"
    # a is significantly different from b, but better: not worse
    assert out["a"].p_holm < 0.05 and out["a"].not_worse


def test_paired_tests_reference_tie_broken_by_name_and_too_few_windows():
    same_mean = paired_tests({"z": np.array([1.0, 2.0]), "y": np.array([2.0, 1.0])})
    assert same_mean["z"].reference == "y"
    one = paired_tests({"a": np.array([1.0]), "b": np.array([2.0])})
    assert one["b"].p_value == 1.0 and one["b"].p_holm == 1.0 and "fewer than 2" in one["b"].note


def test_paired_tests_bad_input():
    with pytest.raises(ValueError, match=r"'b' have 2 windows.*'a' has 3"):
        paired_tests({"a": np.array([1.0, 2, 3]), "b": np.array([1.0, 2])})
    with pytest.raises(ValueError, match=r"'b' contain non-finite"):
        paired_tests({"a": np.array([1.0, 2]), "b": np.array([1.0, np.nan])})
    with pytest.raises(ValueError, match=r"reference 'x'"):
        paired_tests({"a": np.array([1.0, 2])}, reference="x")
    with pytest.raises(ValueError, match="empty"):
        paired_tests({})


# ----------------------------------------------------------------------------- block bootstrap

# Two subjects, constant per-point errors: subject A has 3 windows of 2 points with error 1
# (sse 2, sae 2 each), subject B one window of 2 points with error 3 (sse 18, sae 6).
SSE = np.array([2.0, 2.0, 2.0, 18.0])
SAE = np.array([2.0, 2.0, 2.0, 6.0])
N = np.array([2.0, 2.0, 2.0, 2.0])
BLOCKS = np.array(["A", "A", "A", "B"])


def test_bootstrap_resamples_blocks():
    ci = block_bootstrap_ci(SSE, SAE, N, BLOCKS, n_boot=2000, seed=0)
    # full data: RMSE = sqrt((6 + 18) / 8) = sqrt(3), MAE = (6 + 6) / 8 = 1.5
    assert ci.rmse == pytest.approx(math.sqrt(3)) and ci.mae == pytest.approx(1.5)
    assert ci.n_blocks == 2 and ci.n_boot == 2000 and ci.note == ""
    # drawing 2 subjects with replacement gives only AA, AB (= BA) or BB:
    #   AA: sqrt(12 / 12) = 1, MAE 12 / 12 = 1;  AB: sqrt(3), 1.5;  BB: sqrt(36 / 4) = 3, 12 / 4 = 3
    # (resampling windows instead would mix e.g. 2 A windows with 2 B windows: sqrt(40 / 8))
    dist = _block_bootstrap(SSE, SAE, N, BLOCKS, 2000, 0.95, 0).bootstrap_distribution
    assert dist.shape == (2, 2000)
    assert sorted(set(np.round(dist[0], 12))) == pytest.approx([1.0, math.sqrt(3), 3.0])
    assert sorted(set(np.round(dist[1], 12))) == pytest.approx([1.0, 1.5, 3.0])
    # AA and BB each have probability 1/4 > 2.5%: the 95% interval runs from AA to BB
    assert (ci.rmse_low, ci.rmse_high) == pytest.approx((1.0, 3.0))
    assert (ci.mae_low, ci.mae_high) == pytest.approx((1.0, 3.0))


def test_bootstrap_single_block_is_degenerate():
    ci = block_bootstrap_ci(np.array([4.0, 9.0]), np.array([2.0, 3.0]), np.array([1.0, 1.0]), np.array([7, 7]))
    # RMSE = sqrt(13 / 2), MAE = 5 / 2; one subject: low = high = estimate
    assert ci.rmse == pytest.approx(math.sqrt(6.5)) and ci.mae == pytest.approx(2.5)
    assert ci.rmse_low == ci.rmse_high == ci.rmse and ci.mae_low == ci.mae_high == ci.mae
    assert ci.n_blocks == 1 and ci.n_boot == 0 and "one subject" in ci.note


def test_bootstrap_deterministic_under_seed():
    rng = np.random.default_rng(42)
    sse, sae = rng.uniform(1, 10, 12), rng.uniform(1, 5, 12)
    n, blocks = np.full(12, 3.0), np.repeat(np.arange(6), 2)
    first = block_bootstrap_ci(sse, sae, n, blocks, n_boot=500, seed=3)
    assert isinstance(first, BootstrapCI)
    assert block_bootstrap_ci(sse, sae, n, blocks, n_boot=500, seed=3) == first
    other = block_bootstrap_ci(sse, sae, n, blocks, n_boot=500, seed=4)
    assert (other.rmse_low, other.rmse_high) != (first.rmse_low, first.rmse_high)
    assert first.rmse_low < first.rmse < first.rmse_high


def test_bootstrap_bad_input():
    with pytest.raises(ValueError, match="same length"):
        block_bootstrap_ci(SSE, SAE, N, BLOCKS[:3])
    with pytest.raises(ValueError, match="sse must be finite"):
        block_bootstrap_ci(np.array([1.0, np.nan]), SAE[:2], N[:2], BLOCKS[:2])
    with pytest.raises(ValueError, match=r"blocks \['B'\] have no scored points"):
        block_bootstrap_ci(SSE, SAE, np.array([2.0, 2, 2, 0]), BLOCKS)


# ----------------------------------------------------------------------------- ranks

# cells x models; D has no result in c3
SCORES = pd.DataFrame(
    {
        "A": [1.0, 1.0, 2.0, 1.0],
        "B": [2.0, 1.0, 1.0, 3.0],
        "C": [3.0, 3.0, 3.0, 2.0],
        "D": [4.0, 2.0, np.nan, 4.0],
    },
    index=["c1", "c2", "c3", "c4"],
)


def test_q_alpha_matches_demsar_table():
    # Demsar (2006), Table 5(a): q_0.05 = 1.960 (k=2), 2.343 (k=3), 2.569 (k=4), 2.728 (k=5)
    for k, q in [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728)]:
        assert stats.studentized_range.ppf(0.95, k, np.inf) / math.sqrt(2) == pytest.approx(q, abs=1e-3)
    # k = 3, N = 10: CD = 2.343 * sqrt(3 * 4 / 60) = 2.343 * 0.4472 = 1.048
    assert nemenyi_cd(3, 10) == pytest.approx(2.343 * math.sqrt(12 / 60), abs=1e-3)
    with pytest.raises(ValueError, match="k >= 2"):
        nemenyi_cd(1, 10)


def test_rank_summary_by_hand():
    s = rank_summary(SCORES)
    # complete cells: c1, c2, c4 (c3 dropped: D missing)
    # ranks  c1: A1 B2 C3 D4;  c2: A1.5 B1.5 C4 D3 (A, B tie);  c4: A1 B3 C2 D4
    # sums   A 3.5, B 6.5, C 9, D 11 -> averages over N = 3
    assert s.avg_rank.to_dict() == pytest.approx({"A": 3.5 / 3, "B": 6.5 / 3, "C": 3.0, "D": 11 / 3})
    assert (s.n_cells_used, s.n_cells_total) == (3, 4)
    assert s.completed.to_dict() == {"A": 4, "B": 4, "C": 4, "D": 3}
    assert s.missing == {"D": ["c3"]} and "D missing" in s.note and "c3" in s.note
    # Friedman: 12 / (N k (k+1)) * sum R^2 - 3 N (k+1) = 0.2 * (12.25 + 42.25 + 81 + 121) - 45 = 6.3;
    # one tie of 2 in N k (k^2 - 1) = 180: correction 1 - (2^3 - 2) / 180 = 29/30 -> 6.3 * 30/29
    assert s.friedman_stat == pytest.approx(6.3 * 30 / 29)
    assert s.friedman_p == pytest.approx(stats.chi2.sf(6.3 * 30 / 29, 3))
    # Nemenyi A vs D: |3.5/3 - 11/3| = 2.5 over sqrt(k (k+1) / (6 N)) = sqrt(20/18)
    q = 2.5 / math.sqrt(20 / 18)
    assert s.nemenyi_p.loc["A", "D"] == pytest.approx(stats.studentized_range.sf(q * math.sqrt(2), 4, np.inf), abs=1e-6)
    assert np.allclose(s.nemenyi_p.to_numpy(), s.nemenyi_p.to_numpy().T)
    assert list(s.nemenyi_p.index) == list(s.nemenyi_p.columns) == ["A", "B", "C", "D"]
    # CD: q_0.05(k=4) = 2.569, times sqrt(20/18)
    assert s.cd == pytest.approx(2.569 * math.sqrt(20 / 18), abs=2e-3)
    assert s.cd == pytest.approx(nemenyi_cd(4, 3))


def test_rank_summary_higher_is_better_and_too_few():
    up = rank_summary(-SCORES, lower_is_better=False)
    assert up.avg_rank.to_dict() == pytest.approx(rank_summary(SCORES).avg_rank.to_dict())
    two = rank_summary(SCORES[["A", "B"]])
    assert math.isnan(two.friedman_stat) and math.isnan(two.friedman_p) and "Friedman needs" in two.note
    assert not two.nemenyi_p.isna().any().any() and two.cd == pytest.approx(nemenyi_cd(2, 4))
    one_cell = rank_summary(SCORES.iloc[:1])
    assert math.isnan(one_cell.cd) and one_cell.nemenyi_p.isna().all().all() and "Nemenyi needs" in one_cell.note
    tied = rank_summary(pd.DataFrame({"x": [1.0, 2], "y": [1.0, 2], "z": [1.0, 2]}))
    assert tied.avg_rank.to_dict() == {"x": 2.0, "y": 2.0, "z": 2.0}
    assert math.isnan(tied.friedman_p) and "tie in every" in tied.note


def test_plot_cd_diagram_writes_png_and_pdf(tmp_path):
    paths = plot_cd_diagram(rank_summary(SCORES), tmp_path / "figs" / "cd")
    assert paths == [tmp_path / "figs" / "cd.png", tmp_path / "figs" / "cd.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[0].stat().st_size > 1000
    assert paths[1].read_bytes()[:5] == b"%PDF-" and paths[1].stat().st_size > 1000
    # no Friedman p-value (two models, or every model tied): no diagram captioned "p = nan", and the reason said
    with pytest.raises(ValueError, match=r"needs a Friedman p-value, and there is none: Friedman needs >= 3 models"):
        plot_cd_diagram(rank_summary(SCORES[["A", "B"]]), tmp_path / "cd2")
    tied = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, 2.0], "z": [1.0, 2.0]})
    with pytest.raises(ValueError, match="all models tie in every complete cell"):
        plot_cd_diagram(rank_summary(tied), tmp_path / "cd3")
    assert not list(tmp_path.glob("cd[23].*"))
    with pytest.raises(ValueError, match="2 complete cells"):
        plot_cd_diagram(rank_summary(SCORES.iloc[:1]), tmp_path / "cd1")



_CD_SCRIPT = """
import sys
import numpy as np, pandas as pd
from harness.reporting.stats import plot_cd_diagram, rank_summary
rng = np.random.default_rng(0)
# six models in one block of near-ties: one crossbar through all of them (a set of six names)
scores = pd.DataFrame(rng.normal(size=(8, 6)) * 0.01 + np.arange(6) * 0.002,
                      columns=["last-value", "window-mean", "drift", "seasonal-naive", "auto-ets", "soter"])
plot_cd_diagram(rank_summary(scores), __import__("pathlib").Path(sys.argv[1]))
"""


@pytest.mark.slow  # issue #44: run in .ci/run's second phase (pytest -m slow)
def test_cd_diagram_is_byte_identical_across_hash_seeds(tmp_path):
    """scikit-posthocs draws crossbars through a set of names; the PNG must not depend on PYTHONHASHSEED."""
    import os
    import subprocess
    import sys

    pngs = []
    for seed in ("1", "2", "3"):
        stem = tmp_path / f"cd{seed}"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", _CD_SCRIPT, str(stem)], check=True, env=env)
        pngs.append(stem.with_suffix(".png").read_bytes())
        assert b"/CreationDate" not in stem.with_suffix(".pdf").read_bytes()  # no clock in the PDF either
    assert pngs[0] == pngs[1] == pngs[2]

# ----------------------------------------------------------------------------- skill, W/T/L, board


def test_skill_scores_by_hand():
    scores = pd.DataFrame(
        {
            "seasonal-naive": [2.0, 4.0, 0.0],
            "half": [1.0, 2.0, 5.0],  # ratios 0.5, 0.5 -> gmean 0.5 -> skill 0.5
            "mixed": [1.0, 8.0, 5.0],  # ratios 0.5, 2 -> gmean 1 -> skill 0
            "geo": [0.5, 4.0, 5.0],  # ratios 0.25, 1 -> gmean 0.5 -> skill 0.5 (arithmetic: 0.375)
            "partial": [1.0, np.nan, 5.0],  # its own cell c1 only: 0.5 -> skill 0.5
        }
    )  # the third cell has a zero baseline: skipped for every model
    skill = skill_scores(scores)
    assert skill.to_dict() == pytest.approx(
        {"seasonal-naive": 0.0, "half": 0.5, "mixed": 0.0, "geo": 0.5, "partial": 0.5}
    )
    with pytest.raises(ValueError, match="baseline 'naive' is not a column"):
        skill_scores(scores, baseline="naive")
    with pytest.raises(ValueError, match="negative"):
        skill_scores(scores.assign(half=[-1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"\['half'\] contain inf"):
        skill_scores(scores.assign(half=[np.inf, 1.0, 1.0]))


def test_win_tie_loss_by_hand():
    scores = pd.DataFrame(
        {
            "A": [1.0, 1.0, 3.0, 1.0],
            "B": [2.0, 1.0, 2.0, 1.0 + 1e-12],  # c4: equal to A within rtol -> tie
            "C": [np.nan, 1.0, 2.5, 0.5],
        }
    )
    # A vs B over c1..c4: W (1<2), T, L (3>2), T -> 1/2/1
    # A vs C over c2..c4: T, L (3>2.5), L (1>0.5) -> 0/1/2
    # B vs C over c2..c4: T, W (2<2.5), L (1>0.5) -> 1/1/1
    wtl = win_tie_loss(scores)
    assert wtl.to_dict() == {
        "A": {"A": "-", "B": "1/2/1", "C": "2/1/0"},
        "B": {"A": "1/2/1", "B": "-", "C": "1/1/1"},
        "C": {"A": "0/1/2", "B": "1/1/1", "C": "-"},
    }  # to_dict: column -> {row: value}; row A column C = "0/1/2"
    counts = win_tie_loss_counts(scores)
    assert counts.wins.loc["C", "A"] == 2 and counts.losses.loc["A", "C"] == 2
    assert (counts.wins.to_numpy() == counts.losses.to_numpy().T).all()
    # with no tolerance, c4 is a win for A
    assert win_tie_loss(scores, rtol=0.0).loc["A", "B"] == "2/1/1"


def test_leaderboard_by_hand():
    scores = pd.DataFrame(
        {
            "seasonal-naive": [2.0, 4.0, 8.0],
            "good": [1.0, 2.0, 2.0],  # ratios 0.5, 0.5, 0.25 -> skill 1 - 0.0625^(1/3) = 0.6031
            "mid": [2.0, 2.0, 8.0],  # ratios 1, 0.5, 1 -> skill 1 - 0.5^(1/3) = 0.2063
            "partial": [1.0, np.nan, 4.0],  # ratios 0.5, 0.5 -> skill 0.5
        },
        index=["c1", "c2", "c3"],
    )
    board = leaderboard(scores)
    assert list(board.index) == ["good", "partial", "mid", "seasonal-naive"]
    assert list(board.columns) == ["skill", "avg_rank", "wins", "ties", "losses", "cells_completed"]
    assert board["skill"].to_dict() == pytest.approx(
        {"good": 1 - 0.0625 ** (1 / 3), "partial": 0.5, "mid": 1 - 0.5 ** (1 / 3), "seasonal-naive": 0.0}
    )
    # complete cells c1, c3.  c1: good, partial tie (1.5), naive, mid tie (3.5);
    # c3: good 1, partial 2, naive, mid tie (3.5) -> good 1.25, partial 1.75, mid 3.5, naive 3.5
    assert board["avg_rank"].to_dict() == pytest.approx(
        {"good": 1.25, "partial": 1.75, "mid": 3.5, "seasonal-naive": 3.5}
    )
    # good: vs naive 3/0/0, vs mid 2/1/0, vs partial 1/1/0    -> 6/2/0
    # partial: vs naive 2/0/0, vs good 0/1/1, vs mid 2/0/0    -> 4/1/1
    # mid: vs naive 1/2/0, vs good 0/1/2, vs partial 0/0/2    -> 1/3/4
    # naive: vs good 0/0/3, vs mid 0/2/1, vs partial 0/0/2    -> 0/2/6
    assert board[["wins", "ties", "losses"]].to_dict("index") == {
        "good": {"wins": 6, "ties": 2, "losses": 0},
        "partial": {"wins": 4, "ties": 1, "losses": 1},
        "mid": {"wins": 1, "ties": 3, "losses": 4},
        "seasonal-naive": {"wins": 0, "ties": 2, "losses": 6},
    }
    assert board["cells_completed"].to_dict() == {
        "good": "3/3", "partial": "2/3", "mid": "3/3", "seasonal-naive": "3/3"
    }
    with pytest.raises(ValueError, match="baseline 'snaive'"):
        leaderboard(scores, baseline="snaive")
