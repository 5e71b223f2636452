"""The start every SOTER speed benchmark shares (``soter_forecast.py``, ``soter_train_step.py``,
``soter_cpu_training.py``): the preset and batch shape to time, the torch threads and, where the benchmark runs on a
GPU too, the device. Imported as ``soter_bench`` (the scripts' folder is on sys.path when they run)."""

from __future__ import annotations

import argparse

import torch


def soter_parser(config: str, batch: int, channels: int, threads: int = 1, device: bool = True,
                 **lengths: int) -> argparse.ArgumentParser:
    """A parser with ``--config``, ``--batch``, ``--channels``, a ``--NAME`` per entry of ``lengths`` (samples, e.g.
    ``context=128``), ``--device`` (when ``device``: CUDA where there is one) and ``--threads``."""
    p = argparse.ArgumentParser()
    p.add_argument("--config", default=config)
    p.add_argument("--batch", type=int, default=batch)
    p.add_argument("--channels", type=int, default=channels)
    for name, default in lengths.items():
        p.add_argument(f"--{name}", type=int, default=default)
    if device:
        p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--threads", type=int, default=threads)
    return p


def started(p: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed arguments, torch's threads set to ``--threads`` (speed depends on it: set before any model)."""
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    return args
