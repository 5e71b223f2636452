"""Issue #32 item 6: significance grids order settings by length (48/24 before 128/64, not as text), say
what a blank mark means, and the text leaderboard leaves empty the cells its caption promises empty."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.reporting.stats_report import _text, significance_grid


def _sig(settings, datasets=("b-data", "a-data")) -> pd.DataFrame:
    return pd.DataFrame([dict(dataset=d, setting=s, condition="clean", model=m, reference="x", value=0.1,
                              ci_low=0.05, ci_high=0.2, not_worse=m == "x", better=False)
                         for d in datasets for s in settings for m in ("x", "y")])


def test_grid_columns_follow_the_datasets_then_the_settings_by_length():
    grid = significance_grid(_sig(["128/64", "48/24", "96/48", "72/36"]))
    assert list(grid.columns) == [f"{d} {s}" for d in ("b-data", "a-data") for s in ("48/24", "72/36", "96/48", "128/64")]


def test_a_model_significantly_worse_has_no_mark_and_the_reference_a_star():
    grid = significance_grid(_sig(["48/24"], datasets=("d",)))
    assert grid.loc["x", "d 48/24"].endswith("]*") and grid.loc["y", "d 48/24"].endswith("]")


def test_text_tables_leave_missing_numbers_empty():
    text = _text(pd.DataFrame({"skill": [0.1, 0.2], "crps": [0.5, np.nan]}, index=["quantile", "point"]))
    assert "NaN" not in text and "nan" not in text
    assert text.splitlines()[-1].split() == ["point", "0.200"]
