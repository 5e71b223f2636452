"""`python -m models.soter.training.train build-corpus|fit ...` (also under torchrun).

    python -m models.soter.training.train build-corpus --out corpus --synthetic-subjects 20 \\
        --wfdb ../shared/data/wfdb --folder my_dataset --mimic3wdb /data/mimic3wdb/matched \\
        --sleep-edf /data/sleep-edfx --ptb-xl /data/ptb-xl --wesad /data/WESAD \\
        --chapman-ecg /data/ecg-arrhythmia --opensignals biosignalsnotebooks/.../signal_samples
    torchrun --nproc_per_node 8 -m models.soter.training.train fit --corpus corpus --out runs/soter \\
        --model soter-small --steps 100000 --resume

Every TrainConfig field is a flag (``--batch-size``, ``--warmup-steps`` ...); defaults are the
paper's. ``--recipe FILE`` (models/soter/recipes/) sets them from a file; flags given override it.
Model options: ``--model-option KEY=VALUE`` (SoterConfig fields); a head's own rate: ``--group-lr NAME=LR``.
``--resume`` continues from the latest checkpoint in ``--out`` (exactly).
Data generated on the fly and augmentation (docs/soter-training.md): ``--generated-share 0.5 --generators
ecg=1,ppg=1,gp=1 --augment decimate=0.2,resample=0.2,scale=0.3,offset=0.3,flip=0.3``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from models.soter.training.config import TrainConfig
from models.soter.training.sources import all_readers
from models.soter.training.sources.synthetic import DEFAULT_RATES

if TYPE_CHECKING:
    from models.soter.training.corpus import CorpusWriter


def _add_config_flags(p: argparse.ArgumentParser) -> None:
    """Every TrainConfig field as a flag (default: unset, so a recipe's value or the field's default applies), the
    model options as ``--model-option KEY=VALUE`` and the groups' rates as ``--group-lr NAME=LR`` (repeatable), and
    ``--recipe FILE``."""
    p.add_argument("--recipe", type=Path, default=None,
                   help="a training recipe (TOML of these fields; models/soter/recipes/): flags given override it")
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = TrainConfig().__getattribute__(f.name)
        if f.name == "model_options":
            p.add_argument("--model-option", dest="model_options", action="append", default=None, metavar="KEY=VALUE",
                           help="a SoterConfig field for this run (repeatable), e.g. input_scaling=window")
        elif f.name == "group_lr":
            p.add_argument("--group-lr", dest="group_lr", action="append", default=None, metavar="MODULE=LR",
                           help="a submodule trained at its own learning rate (repeatable), e.g. trend_head=1e-2")
        elif isinstance(default, bool):
            p.add_argument(flag, type=lambda s: s.lower() in ("1", "true", "yes"), default=None,
                           help=f"(default: {default})")
        elif isinstance(default, tuple):
            p.add_argument(flag, type=float, nargs="+", default=None, help=f"(default: {default})")
        else:
            p.add_argument(flag, type=type(default), default=None, help=f"(default: {default})")


def _pairs(items: list[str] | None, flag: str) -> dict[str, str]:
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    """The run's config: the fields' defaults, then the recipe's values, then the flags given (model options and
    group rates merged key by key)."""
    from models.soter.training.config import read_recipe

    values = read_recipe(args.recipe) if getattr(args, "recipe", None) else {}
    for f in dataclasses.fields(TrainConfig):
        given = getattr(args, f.name)
        if given is None:
            continue
        if f.name == "model_options":
            values["model_options"] = {**values.get("model_options", {}), **_pairs(given, "--model-option")}
        elif f.name == "group_lr":
            values["group_lr"] = {**values.get("group_lr", {}),
                                  **{k: float(v) for k, v in _pairs(given, "--group-lr").items()}}
        else:
            values[f.name] = given
    return TrainConfig.from_dict(values)


def numba_threads_follow_omp() -> None:
    """numba's parallel routing kernel (``models/soter/routing_cpu.py``) has its own thread pool, which
    ``OMP_NUM_THREADS`` does not size, and its idle workers keep a core busy: a `fit` with ``OMP_NUM_THREADS=1``
    used 1.8 cores, and two of them side by side on a 2-core machine ran at 1.0 steps/s each against 5 for one alone
    (3.9 each with a one-thread pool; BENCHMARKS.md). ``numba.set_num_threads`` limits the threads a kernel uses,
    not the pool, so the pool is sized before numba is imported: to ``OMP_NUM_THREADS`` where the user set it and
    ``NUMBA_NUM_THREADS`` is not set (as the harness's runs do, ``harness/run/threads.py``)."""
    omp = os.environ.get("OMP_NUM_THREADS", "")
    if not omp.isdigit() or "NUMBA_NUM_THREADS" in os.environ:  # unset, or an OpenMP list numba cannot read
        return
    threads = max(1, int(omp))
    if "numba" in sys.modules:  # an in-process caller imported it: only the threads a kernel uses can change
        numba = sys.modules["numba"]
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.training.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build-corpus", help="preprocess sources into a memory-mapped corpus")
    build.add_argument("--out", type=Path, required=True)
    build.add_argument("--synthetic-subjects", type=int, default=20, help="0 for none")
    build.add_argument("--synthetic-seed", type=int, default=1000)
    build.add_argument("--synthetic-seconds", type=float, default=60.0)
    build.add_argument("--synthetic-rates", type=float, nargs="+", default=list(DEFAULT_RATES),
                       help="one synthetic dataset per rate; every second one irregularly sampled")
    build.add_argument("--wfdb", type=Path, nargs="*", default=[], help="folders of WFDB records")
    build.add_argument("--exclude", nargs="*", default=["100"],
                       help="WFDB record, MIMIC-III segment or BioSPPy clip names to leave out (a held-out set); "
                            "the selection set's recordings are always left out (selection_set.HELD_OUT)")
    build.add_argument("--include-selection-set", action="store_true",
                       help="do not leave out the selection set's recordings: only to rebuild a corpus from before "
                            "issue #45 (soter-cpu-64's); a model trained on it is never scored on the selection set")
    build.add_argument("--mimic3wdb-channels", nargs="+", default=None, metavar="NAME",
                       help="MIMIC-III signals to keep (default: II PLETH RESP ABP); 'all' keeps every waveform")
    build.add_argument("--wfdb-split-rates", action="store_true",
                       help="read a multi-frequency WFDB record as one dataset per rate (default: every signal "
                            "averaged to the frame rate, as wfdb reads it and as the shipped corpus was built)")
    build.add_argument("--folder", type=Path, nargs="*", default=[], help="datasets in the harness folder format")
    for kind in all_readers():
        build.add_argument(f"--{kind}", type=Path, nargs="*", default=[], metavar="DIR",
                           help=f"{kind} in its native layout (see models/soter/training/sources/)")
    fit = sub.add_parser("fit", help="train (one process, or one per GPU under torchrun)")
    _add_config_flags(fit)
    fit.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    args = p.parse_args(argv)
    if args.command == "build-corpus":
        return _build(args)
    try:
        cfg = config_from_args(args)
    except ValueError as exc:  # a bad recipe, option or value: one line, before any work
        p.error(str(exc))
    numba_threads_follow_omp()
    from models.soter.training.trainer import Trainer

    trainer = Trainer(cfg)
    if args.resume and trainer.resume():
        print(f"resumed at step {trainer.step}", file=sys.stderr)
    trainer.fit()
    trainer.close()  # not on an error: a barrier there would wait for ranks that are gone
    return 0


def _build(args: argparse.Namespace) -> int:
    from models.soter.training.selection_set import HELD_OUT

    if not args.include_selection_set:  # held out from training by construction (issue #45)
        args.exclude = [*args.exclude, *(name for name in HELD_OUT if name not in args.exclude)]
    from models.soter.training.corpus import CorpusError, CorpusWriter
    from models.soter.training.leakage import Guard, load_library

    guard = None
    if args.wfdb or args.folder or any(getattr(args, kind.replace("-", "_")) for kind in all_readers()):
        library = load_library(selection=not args.include_selection_set)  # only recordings read from files
        print(library.summary(), file=sys.stderr)
        guard = Guard(library)
    writer = CorpusWriter(args.out, guard)
    try:
        return _write(args, writer)
    except CorpusError as exc:  # a refused recording (or a broken source): one line, nothing half-written kept
        writer.discard()
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _write(args: argparse.Namespace, writer: CorpusWriter) -> int:
    from models.soter.training.corpus import check_not_evaluation, wfdb_datasets
    from models.soter.training.sources import read_source
    from models.soter.training.sources import synthetic
    from protocols.datasets.folder import load_folder_dataset

    recordings = 0

    def add_dataset(ds) -> None:
        nonlocal recordings
        check_not_evaluation(ds)
        for r in ds.recordings:
            writer.add(ds.name, ds.channels, r.subject, r.name, [(r.values, r.timestamps)], ds.description or "")
            recordings += 1

    if args.synthetic_subjects:
        for rec in synthetic.read(args.synthetic_subjects, args.synthetic_seconds, args.synthetic_seed,
                                  tuple(args.synthetic_rates)):
            writer.add(rec.dataset, rec.channels, rec.subject, rec.name, rec.chunks, rec.source, checked=False)
            recordings += 1
    for folder in args.wfdb:
        for ds in wfdb_datasets(folder, tuple(args.exclude), args.wfdb_split_rates):
            add_dataset(ds)
    for folder in args.folder:
        add_dataset(load_folder_dataset(folder))
    for kind in all_readers():
        for root in getattr(args, kind.replace("-", "_")):
            for rec in read_source(kind, root, **_reader_options(kind, args)):
                writer.add(rec.dataset, rec.channels, rec.subject, rec.name, rec.chunks, rec.source)
                recordings += 1
    for folder in writer.close():
        index = json.loads((folder / "index.json").read_text())
        print(f"{folder}: {len(index['lengths'])} recordings, {sum(index['lengths']):,} samples, "
              f"channels {index['channels']}")
    print(f"{recordings} recordings written to {args.out}")
    return 0


def _reader_options(kind: str, args: argparse.Namespace) -> dict:
    """The build flags a reader takes: held-out names for every reader that reads named recordings,
    the channel choice for MIMIC-III."""
    if kind == "mimic3wdb":
        options: dict = {"exclude": tuple(args.exclude)}
        if args.mimic3wdb_channels:
            wanted = args.mimic3wdb_channels
            options["channels"] = None if [c.lower() for c in wanted] == ["all"] else tuple(wanted)
        return options
    if kind == "biosppy":
        return {"exclude": tuple(args.exclude)}
    return {}


if __name__ == "__main__":
    sys.exit(main())
