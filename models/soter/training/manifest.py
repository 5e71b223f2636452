"""`python -m models.soter.training.manifest --checkpoint DIR --corpus DIR [--val-corpus DIR]`:
write a shipped checkpoint's ``CORPUS.json`` from a corpus rebuilt with the checkpoint's documented
``build-corpus`` command, after checking that the rebuilt corpus is the one it trained on.

Why: checkpoints shipped before ``ship`` wrote ``CORPUS.json`` record only their corpus folder, which
is not shipped.  The check: the seeded sampler, run over the rebuilt corpus with the checkpoint's
training config, must draw exactly the ``tokens_seen`` that ``TRAINING.json`` recorded (it depends
on every dataset's key, recording lengths and count); otherwise nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from models.soter.corpus_manifest import MANIFEST, manifest_from_corpus


def tokens_over(corpus: Path, training: dict) -> int:
    """The tokens the checkpoint's training config draws from ``corpus`` (as ``ship`` recomputes them)."""
    from models.soter.training.config import TrainConfig
    from models.soter.training.corpus import open_corpus
    from models.soter.training.sampler import WindowSampler

    cfg = TrainConfig.from_dict({**training["train_config"], "corpus": str(corpus)})
    sampler = WindowSampler.from_config(open_corpus(Path(corpus)), cfg)
    return sum(sampler.tokens(s, m) for s in range(int(training["steps"])) for m in range(cfg.grad_accum))


def rebuilt_manifest(checkpoint: Path, corpus: Path, val_corpus: Path | None, command: str) -> dict:
    """The manifest, naming the corpus as ``TRAINING.json`` does; raises when the corpus differs."""
    training = json.loads((checkpoint / "TRAINING.json").read_text())
    drawn = tokens_over(corpus, training)
    if drawn != int(training["tokens_seen"]):
        raise ValueError(f"{corpus}: the sampler draws {drawn:,} tokens, TRAINING.json recorded "
                         f"{int(training['tokens_seen']):,}: not the corpus {checkpoint.name} trained on")
    manifest = manifest_from_corpus(corpus, val_corpus)
    manifest["corpus"] = training["train_config"]["corpus"]
    if val_corpus:
        manifest["val_corpus"] = training["train_config"].get("val_corpus", str(val_corpus))
    manifest["rebuilt"] = {"command": command, "check": f"tokens_seen {drawn:,} recomputed over the rebuilt corpus "
                                                          "equals TRAINING.json"}
    return manifest


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.training.manifest", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--val-corpus", type=Path, default=None)
    p.add_argument("--command", required=True, help="the build-corpus command(s) that rebuilt the corpus")
    args = p.parse_args(argv)
    try:
        manifest = rebuilt_manifest(args.checkpoint, args.corpus, args.val_corpus, args.command)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    (args.checkpoint / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {args.checkpoint / MANIFEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
