"""soter-anchored imputes with the spline control held past a channel's last observation: the default the
held-out rule chose for its line (docs/soter-anchored-rules.md, "Imputation control past the last observation"). An
option of its entry.toml, so it is part of the records' identity and named in their description; the faithful
``soter`` keeps the authors' extrapolation."""

from __future__ import annotations

import numpy as np

from models.registry import get_spec, load_model


def test_only_the_departing_entry_defaults_to_holding_the_control():
    assert get_spec("soter-anchored").options["control_beyond"] == "hold"
    assert "control_beyond" not in get_spec("soter").options
    assert "control_beyond" not in get_spec("soter-autoregressive").options
    anchored = load_model("soter-anchored", seed=0)
    assert anchored.control_beyond == "hold" and anchored.describe()["control_beyond"] == "hold"


def test_the_default_changes_imputation_and_not_forecasts():
    from protocols import interface
    from protocols.interface import SeriesBatch

    held = load_model("soter-anchored", seed=0)
    extrapolated = load_model("soter-anchored", seed=0, control_beyond="extrapolate")
    t = np.arange(96) / 64.0
    values = np.stack([np.sin(2 * np.pi * 1.1 * t), np.cos(2 * np.pi * 0.3 * t)])[None].astype(np.float32)
    mask = np.ones_like(values, dtype=bool)
    mask[:, :, 70:] = False  # a long gap before the query: the two controls differ there
    batch = SeriesBatch(values=values, timestamps=t[None], mask=mask)
    query = np.array([t[-1] + 1 / 64.0])
    assert not np.allclose(interface.impute(held, batch, query), interface.impute(extrapolated, batch, query))
    full = SeriesBatch(values=values, timestamps=t[None], mask=np.ones_like(mask))
    future = t[-1] + np.arange(1, 9)[None] / 64.0
    np.testing.assert_array_equal(interface.forecast(held, full, future), interface.forecast(extrapolated, full, future))
