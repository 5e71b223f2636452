"""A shipped checkpoint's CORPUS.json written from a rebuilt corpus (issue #35): only when the rebuilt
corpus draws exactly the tokens TRAINING.json recorded; otherwise one error line and exit 2."""

from __future__ import annotations

import json

from models.soter.training.config import TrainConfig
from models.soter.training.manifest import main, tokens_over


def _checkpoint(tmp_path, corpus, tokens=None):
    cfg = TrainConfig(model="soter-tiny", corpus="/gone/corpus", out=str(tmp_path / "run"), steps=3, batch_size=2,
                      max_length=40, min_length=16)
    training = {"steps": 3, "train_config": cfg.to_dict()}
    training["tokens_seen"] = tokens if tokens is not None else tokens_over(corpus, training)
    folder = tmp_path / "ckpt"
    folder.mkdir(exist_ok=True)
    (folder / "TRAINING.json").write_text(json.dumps(training))
    return folder


def test_the_manifest_is_written_only_for_the_corpus_the_checkpoint_trained_on(corpus, tmp_path, capsys):
    folder = _checkpoint(tmp_path, corpus)
    assert main(["--checkpoint", str(folder), "--corpus", str(corpus), "--command", "build-corpus ..."]) == 0
    manifest = json.loads((folder / "CORPUS.json").read_text())
    assert manifest["corpus"] == "/gone/corpus"  # named as TRAINING.json names it
    assert [d["name"] for d in manifest["datasets"]] == ["synthetic-stream-1000"]
    assert "equals TRAINING.json" in manifest["rebuilt"]["check"]
    wrong = _checkpoint(tmp_path, corpus, tokens=1)
    (wrong / "CORPUS.json").unlink()
    assert main(["--checkpoint", str(wrong), "--corpus", str(corpus), "--command", "x"]) == 2
    assert "not the corpus ckpt trained on" in capsys.readouterr().err
    assert not (wrong / "CORPUS.json").exists()
