"""Forecasting example figures: the plotted arrays are the protocol's window and the models' forecasts."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness.cli import main
from harness.commands.examples import forecast_example
from protocols.datasets.folder import write_folder_dataset
from protocols.specs import Setting
from tests.conftest import make_dataset


def test_example_rows_are_the_window_and_the_forecasts():
    ds = make_dataset(n_subjects=3, n_samples=300)
    frame = forecast_example(ds, ["last-value", "drift"], Setting(32, 8), seed=0)
    assert set(frame["series"]) == {"context", "truth", "last-value", "drift"}
    for channel in ds.channels:
        part = frame[frame["channel"] == channel]
        context = part[part["series"] == "context"]["value"].to_numpy()
        last = part[part["series"] == "last-value"]["value"].to_numpy()
        assert len(context) == 32 and len(last) == 8 and np.allclose(last, context[-1])
        assert (part[part["series"] == "truth"]["time"].to_numpy() == part[part["series"] == "drift"]["time"].to_numpy()).all()
    assert frame.attrs["subject"] == "S00" and frame.attrs["setting"] == "32/8"


def test_cli_writes_figure_and_data_and_single_channel_selection(tmp_path, capsys):
    data = tmp_path / "toy"
    write_folder_dataset(make_dataset(n_subjects=3, n_samples=300), data)
    out = tmp_path / "fig"
    assert main(["examples", "--dataset", str(data), "--models", "last-value", "soter-authors", "--setting", "32/8",
                 "--channels", "b", "--out", str(out)]) == 0
    stem = out / "forecast-example-toy-32x8-b"
    assert all(stem.with_suffix(ext).is_file() for ext in (".png", ".pdf", ".csv"))
    frame = pd.read_csv(stem.with_suffix(".csv"))
    assert set(frame["channel"]) == {"b"} and set(frame["series"]) == {"context", "truth", "last-value"}
    assert "skipped soter-authors" in capsys.readouterr().err  # no checkpoint: said, not plotted
    assert main(["examples", "--dataset", str(data), "--channels", "zz", "--out", str(out)]) == 2
