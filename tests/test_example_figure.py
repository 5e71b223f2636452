"""Issue #32 item 6: the examples figure tells coinciding forecasts apart (the report's markers and
dashes, and a note naming them) and keeps its legend off the signal."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.commands.examples import coinciding_forecasts, plot_example


def _frame(channels=("ECG", "PPG")) -> pd.DataFrame:
    rows = []
    t_ctx, t_h = np.arange(32) / 16, 2 + np.arange(16) / 16
    for ch in channels:
        add = lambda s, v, t: rows.extend(dict(series=s, channel=ch, time=x, value=y) for x, y in zip(t, v))  # noqa: E731
        add("context", np.sin(t_ctx), t_ctx)
        add("truth", np.sin(t_h), t_h)
        add("last-value", np.full(16, np.sin(t_ctx[-1])), t_h)
        add("auto-theta", np.full(16, np.sin(t_ctx[-1])), t_h)  # a flat forecast: exactly last value's
        add("soter", np.sin(t_h) + 0.1, t_h)
    frame = pd.DataFrame(rows)
    frame.attrs.update(dataset="toy", subject="S1", setting="32/16")
    return frame


def test_coinciding_forecasts_are_named_per_channel():
    assert coinciding_forecasts(_frame()) == ["ECG: last-value = auto-theta", "PPG: last-value = auto-theta"]
    assert coinciding_forecasts(_frame()[lambda f: f["series"] != "auto-theta"]) == []


def test_the_legend_sits_beside_the_panels_and_models_get_distinct_markers(tmp_path, monkeypatch):
    import matplotlib.figure

    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda self, *a, **k: figures.append(self))
    plot_example(_frame(channels=("ECG",)), tmp_path / "example")
    fig = figures[0]
    (ax,) = fig.axes
    assert ax.get_legend() is None and len(fig.legends) == 1  # not inside the one panel, over the signal
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert lines["last-value"].get_marker() != lines["auto-theta"].get_marker()
    assert lines["last-value"].get_linestyle() != lines["auto-theta"].get_linestyle()
    assert any("last-value = auto-theta" in t.get_text() for t in fig.texts)


def test_a_model_has_one_colour_whatever_other_models_a_figure_shows():
    from harness.reporting.figures import model_colours

    few, many = model_colours(["soter", "last-value"]), model_colours(["auto-ets", "last-value", "drift", "soter"])
    assert few["soter"] == many["soter"] and few["last-value"] == many["last-value"]
    assert few["soter"] != few["last-value"]
