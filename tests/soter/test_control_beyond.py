"""SOTER's spline control past a channel's last observation (issue #31, docs/stress-tests.md, "Why SOTER
diverges inside gaps"): the authors' extrapolation stays the default; ``hold`` and ``zero`` are named options."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.interpolate import CubicSpline

from models.registry import load_model
from models.soter.adapter import SoterAdapter
from models.soter.model import SoterModel
from models.soter.config import preset
from models.soter.spline import NaturalCubicSpline
from protocols import interface
from protocols.interface import SeriesBatch


def _rows():
    g = torch.Generator().manual_seed(3)
    t = torch.cumsum(torch.rand(3, 20, generator=g, dtype=torch.float64) + 0.1, 1)
    y = torch.randn(3, 20, generator=g, dtype=torch.float64)
    observed = torch.ones(3, 20, dtype=torch.bool)
    observed[0, 12:] = False  # a long gap at the end of row 0
    observed[1, 1:] = False  # a single observation
    return t, y, observed


def test_hold_and_zero_change_the_control_only_past_the_last_observation():
    t, y, observed = _rows()
    q = torch.stack([t[:, 0] + 0.05, t[:, -1] + 0.5], 1)  # row 0: inside its knots, then 8+ knots past them
    default, hold, zero = (NaturalCubicSpline(t, y, observed, beyond).evaluate(q) for beyond in ("extrapolate", "hold", "zero"))
    ref = CubicSpline(t[0, :12].numpy(), y[0, :12].numpy(), bc_type="natural")(q[0].numpy())
    np.testing.assert_allclose(default[0].numpy(), ref, rtol=1e-10)  # the default is scipy's (the authors') extrapolation
    torch.testing.assert_close(hold[0, 0], default[0, 0])
    torch.testing.assert_close(zero[0, 0], default[0, 0])
    torch.testing.assert_close(hold[0, 1], y[0, 11])  # held at the last observed value
    assert zero[0, 1] == 0 and zero[1, 1] == 0 and zero[2, 1] == 0
    torch.testing.assert_close(hold[1], y[1, 0].expand(2))  # one observation: constant, as before
    torch.testing.assert_close(hold[2], torch.stack([default[2, 0], y[2, -1]]))


def test_an_unknown_control_option_is_one_clear_error():
    t, y, observed = _rows()
    with pytest.raises(ValueError, match="beyond must be one of"):
        NaturalCubicSpline(t, y, observed, "linear")
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="control_beyond must be one of"):
        SoterAdapter(SoterModel(preset("soter-tiny")), control_beyond="linear")


def _gap_batch():
    """Two channels of 64 Hz sines; channel 0 is missing for the last 48 samples of the prefix."""
    t = np.arange(112) / 64.0
    values = np.stack([0.5 + 0.3 * np.sin(2 * np.pi * 1.2 * t), 0.5 + 0.2 * np.sin(2 * np.pi * 0.3 * t)])[None]
    mask = np.ones_like(values, dtype=bool)
    mask[0, 0, 64:] = False
    return SeriesBatch(values[:, :, :111], t[None, :111], mask=mask[:, :, :111]), t[None, 111]


def test_the_default_keeps_the_authors_extrapolation_and_its_records():
    batch, query = _gap_batch()
    default = load_model("soter", seed=0)
    assert default.control_beyond == "extrapolate" and "control_beyond" not in default.describe()
    explicit = load_model("soter", seed=0, control_beyond="extrapolate")
    np.testing.assert_array_equal(interface.impute(default, batch, query), interface.impute(explicit, batch, query))
    assert load_model("soter", seed=0, control_beyond="hold").describe()["control_beyond"] == "hold"


@pytest.mark.parametrize("name", ["soter", "soter-anchored"])
def test_holding_the_control_keeps_an_imputation_deep_in_a_gap_in_range(name):
    """47 samples into a gap the extrapolated control leaves the data's range and the shipped weights follow it;
    with the control held (or zero) the answer stays on the [0, 1] scale the protocol's MinMax scaling gives (the
    diagnosis of docs/stress-tests.md; the paper's weights still read the zero-filled gap as a level near 0)."""
    batch, query = _gap_batch()
    extrapolated = interface.impute(load_model(name, seed=0), batch, query)[0, 0]
    held = interface.impute(load_model(name, seed=0, control_beyond="hold"), batch, query)[0, 0]
    zero = interface.impute(load_model(name, seed=0, control_beyond="zero"), batch, query)[0, 0]
    if name == "soter":  # the divergence this option exists for (the departing checkpoint stays in range either way)
        assert abs(extrapolated - 0.5) > 1.0
    assert 0.0 <= held <= 1.0 and 0.0 <= zero <= 1.0
