"""Tables from a small fixed record set, rendered exactly."""

from __future__ import annotations

import numpy as np

from harness.records.store import COLUMNS, rows_to_frame
from harness.reporting.tables import ADAPTED_GROUP, pooled, render
from harness.tasks.forecasting import TASK as FORECASTING

forecasting_table = FORECASTING.table


def _rows():
    rows = []
    # model A: two folds per window, pooled exactly; model B: worse; model C: one window errored
    spec = {
        "A": {"48/24": [(4.0, 2.0, 100), (0.0, 0.0, 100)], "72/36": [(9.0, 3.0, 100), (9.0, 3.0, 100)]},
        "B": {"48/24": [(16.0, 4.0, 100), (16.0, 4.0, 100)], "72/36": [(25.0, 5.0, 100), (25.0, 5.0, 100)]},
        "C": {"48/24": [(1.0, 1.0, 100), (1.0, 1.0, 100)], "72/36": None},
    }
    for model, windows in spec.items():
        for window, folds in windows.items():
            for i in range(2):
                base = dict.fromkeys(COLUMNS, "")
                base.update(task="forecasting", dataset="toy", fold=f"S{i}", setting=window, condition="clean",
                            model=model, seed="0", protocol="p", key=f"{model}{window}{i}")
                if folds is None:
                    base.update(status="error", error="RuntimeError: boom")
                else:
                    sse, sae, n = folds[i]
                    base.update(status="ok", sse=repr(sse), sae=repr(sae), n_points=str(n), n_windows="1",
                                rmse=repr(float(np.sqrt(sse / n))), mae=repr(sae / n))
                rows.append(base)
    return rows_to_frame(rows)


def test_pooling_over_folds_is_exact():
    pw = pooled(_rows(), "forecasting")
    a = pw[(pw.model == "A") & (pw.setting == "48/24")].iloc[0]
    assert a.rmse == np.sqrt(4.0 / 200) and a.mae == 2.0 / 200 and a.complete
    c = pw[(pw.model == "C") & (pw.setting == "72/36")].iloc[0]
    assert not c.complete and c.status == "error" and "boom" in c.reason


def test_text_markdown_latex_render_exactly():
    table = forecasting_table(_rows(), models=["A", "B", "C"])
    # A: rmse windows sqrt(4/200)=0.1414, sqrt(18/200)=0.3 -> x100 mean 22.07, std 15.86/sqrt(2)=11.21;
    # mae 1.0, 3.0 -> 2.00 +- 1.41
    # C: only 48/24 complete -> 10.00, one sample so no spread (partial, dagger, never ranked: A is best);
    # B: 40, 50 -> 45 +- 7.07: of the two ranked values the worse, so not "second" (issue #46)
    md = render(table, "markdown").splitlines()
    assert md[2] == "| Model | toy RMSE | toy MAE |"
    assert md[4] == "| A | **22.07** ± 11.21 | **2.00** ± 1.41 |"
    assert md[5] == "| B | 45.00 ± 7.07 | 4.50 ± 0.71 |"
    assert md[6] == "| C | 10.00† | 1.00† |"
    assert md[-2] == "† C on toy: 1/2 settings complete (RuntimeError: boom)"
    assert md[-1] == "Note: provenance: forecasting-v1; code digests not recorded (12 rows)"  # a plain note
    tex = render(table, "latex")
    assert r"A & $\mathbf{22.07}_{\pm 11.21}$ & $\mathbf{2.00}_{\pm 1.41}$ \\" in tex
    assert r"C & $10.00^{\dagger}$ & $1.00^{\dagger}$ \\" in tex
    assert "C on toy: 1/2 settings complete" in tex  # the note, in every format
    text = render(table, "text")
    assert "22.07±11.21" in text and "10.00+" in text and "±0.00" not in text
    # the terminal marks the best as Markdown does (issue #32), partial cells never
    assert "22.07±11.21¹" in text and "45.00±7.07 " in text and "10.00+¹" not in text and "Best ¹, second ²." in text


def test_all_unavailable_model_is_labelled():
    frame = _rows()
    frame.loc[frame.model == "B", "status"] = "unavailable"
    table = forecasting_table(frame, models=["A", "B"])
    assert "| B | unavailable | unavailable |" in render(table, "markdown")


def test_entries_showing_the_same_number_share_their_rank_whatever_the_row_order():
    """Before, a tie was broken by row order: of two models both showing 18.94, the first was bold and the
    second underlined, as though it were worse."""
    from harness.reporting.tables import Column, Entry, Table

    col = Column("bidmc", "RMSE")
    values = {"a": 0.18941, "b": 0.18938, "c": 0.2, "d": 0.3}  # a and b both show 18.94 (x100)
    for order in (("a", "b", "c", "d"), ("d", "c", "b", "a")):
        table = Table("t", (col,), order, {(m, col): Entry(v * 100, np.nan, 1, 1, "ok") for m, v in values.items()})
        rows = {line.split("|")[1].strip(): line.split("|")[2].strip()
                for line in render(table, "markdown").splitlines()[4:]}
        assert rows == {"a": "**18.94**", "b": "**18.94**", "c": "<u>20.00</u>", "d": "30.00"}


def test_the_forecasting_caption_names_the_adapted_group_only_when_adapted_rows_are_present():
    # a table of zero-shot rows keeps the paper's caption; adapted rows (fine-tuned per fold) are no zero-shot
    plain = forecasting_table(_rows())
    assert plain.caption.startswith("Zero-shot forecasting:") and "adapted" not in plain.caption
    frame = _rows()
    frame["model"] = frame["model"].replace({"A": "soter@head", "B": "soter"})
    mixed = forecasting_table(frame)
    assert [label for label, _ in mixed.groups()] == ["", ADAPTED_GROUP]
    assert mixed.caption.startswith("Forecasting (zero-shot and adapted rows):")
    assert not mixed.caption.startswith("Zero-shot")
