"""Issue #18 item 1: the record key includes what determines a result (weights, options), so a run
with other weights never shows cached numbers of the old ones."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import torch

from harness.run.runner import RunConfig, execute
from harness.records.store import row_key
from models.registry import get_spec, weights_digest
from models.soter.config import preset
from models.soter.io import save_pretrained, write_checksums
from models.soter.model import SoterModel
from protocols.specs import Setting


def _checkpoint(path: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    save_pretrained(SoterModel(preset("soter-tiny")), path)
    write_checksums(path)
    return path


def test_weights_digest_follows_the_weights_not_the_paperwork(tmp_path):
    a = _checkpoint(tmp_path / "a", 0)
    before = weights_digest(a)
    (a / "MODEL_CARD.md").write_text("notes")
    assert weights_digest(a) == before
    assert weights_digest(_checkpoint(tmp_path / "b", 1)) != before
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "config.json").write_text("{}")
    (plain / "weights.bin").write_bytes(b"x" * (3 << 20))
    d = weights_digest(plain)
    (plain / "README.md").write_text("about")
    assert weights_digest(plain) == d
    (plain / "weights.bin").write_bytes(b"y" + b"x" * ((3 << 20) - 1))
    assert weights_digest(plain) != d


def test_models_without_weights_keep_their_keys():
    assert get_spec("last-value").identity(seed=0) == ""
    fields = dict(task="forecasting", dataset="d", fold="1", setting="48/24", condition="clean", model="m",
                  seed=0, protocol="p")
    assert row_key("", **fields) == row_key(**fields)
    assert row_key("abc", **fields) != row_key(**fields)


def test_swapped_weights_recompute_instead_of_reusing(tmp_path):
    a, b = _checkpoint(tmp_path / "A", 0), _checkpoint(tmp_path / "B", 1)
    out = tmp_path / "run"
    common = dict(models=("soter",), options={"settings": (Setting(48, 24),), "max_windows_per_subject": 2}, out=out,
                  progress=False)
    first = execute(RunConfig(weights=(("soter", str(a)),), **common), log=lambda m: None)
    again = execute(RunConfig(weights=(("soter", str(a)),), **common), log=lambda m: None)
    other = execute(RunConfig(weights=(("soter", str(b)),), **common), log=lambda m: None)
    assert first.ran == first.planned and again.skipped_done == again.planned
    assert other.skipped_done == 0 and other.ran == other.planned  # B's rows are computed, not A's reused
    frame = pd.read_csv(out / "records.csv")
    sources = {json.loads(i)["checkpoint_sha256"] for i in frame["model_info"]}
    assert len(sources) == 2 and len(frame) == first.planned + other.planned
