"""The pre-training overlap registry (issue #47): dataset options never lose the mark."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness.reporting.pretraining_marks import mark_table
from harness.reporting.tables import Column, Entry, Table, render
from models import pretraining
from models.pretraining import checkpoint_entry, dataset_base, overlap, registry
from models.soter.corpus_manifest import MANIFEST

BIDMC_CHANNELS = "heartrate:channels=RESP+PLETH+II"


# -- dataset options ----------------------------------------------------------------------------
@pytest.mark.parametrize("name, base", [
    (BIDMC_CHANNELS, "heartrate"), ("heartrate:blocks=4", "heartrate"),
    (f"{BIDMC_CHANNELS}:blocks=4", "heartrate"), ("mitbih:channels=lead1", "mitbih"),
    ("wdd:rate=32", "wdd"),  # any option, not only the two the loaders know today
    ("heldout/mimic-3234460_0016:blocks=6", "heldout/mimic-3234460_0016"), ("mitbih", "mitbih")])
def test_dataset_options_are_dropped_whatever_the_option(name, base):
    assert dataset_base(name) == base


@pytest.mark.parametrize("option", [":channels=RESP+PLETH+II", ":blocks=4", ":channels=PLETH:blocks=4", ":rate=64"])
def test_the_paper_checkpoint_stays_partial_on_bidmc_with_any_option(option):
    authors = registry().entry_for("soter-authors")
    o = overlap(authors, "heartrate" + option)
    assert o.status == "partial" and "MIMIC-II" in o.reason


def _mimic_checkpoint(tmp_path: Path) -> pretraining.Entry:
    """A checkpoint folder whose CORPUS.json names MIMIC-III Waveform segments (as the corpus readers write)."""
    folder = tmp_path / "ckpt-mimic"
    folder.mkdir()
    (folder / "TRAINING.json").write_text(json.dumps({"steps": 1, "train_config": {"corpus": "/c"}}))
    (folder / MANIFEST).write_text(json.dumps({"corpus": "/c", "written": "2026-11-27", "datasets": [
        {"name": "mimic3wdb[II,PLETH@125Hz]", "recordings": ["3000063_0001"]}]}))
    return checkpoint_entry(folder)


def test_a_bidmc_table_with_channels_marks_soter_checkpoints_trained_on_mimic3_partial(tmp_path, monkeypatch):
    """The BIDMC tables name their dataset with ``:channels=``: the cells of a SOTER checkpoint trained on
    MIMIC-III Waveform (and of the paper's checkpoint) are `partial`, not `?`."""
    entry = _mimic_checkpoint(tmp_path)
    reg = registry()
    monkeypatch.setattr(pretraining, "registry", lambda: pretraining.Registry(
        reg.entries, reg.datasets, {**reg.checkpoints, "ckpt-mimic": entry}))
    frame = pd.DataFrame([
        {"task": "forecasting", "dataset": BIDMC_CHANNELS, "model": "soter", "model_name": "soter",
         "model_info": json.dumps({"checkpoint": "ckpt-mimic"})},
        {"task": "forecasting", "dataset": BIDMC_CHANNELS, "model": "soter-authors", "model_name": "soter-authors",
         "model_info": ""}])
    cols = (Column(BIDMC_CHANNELS, "RMSE"),)
    table = Table("c", cols, ("soter", "soter-authors"),
                  {(m, cols[0]): Entry(1.0, 0.1, 3, 3, "ok") for m in ("soter", "soter-authors")})
    marked = mark_table(table, frame, "forecasting")
    assert {m: e.overlap for (m, _), e in marked.entries.items()} == {"soter": "partial", "soter-authors": "partial"}
    md = render(marked, "markdown")
    assert f"‡ soter on {BIDMC_CHANNELS}: pre-training overlap partial: BIDMC's 53 recordings" in md
    assert "?" not in md.split("\n")[4]
