"""Readers for the pre-training corpora in their native layouts.

Each reader yields :class:`SourceRecording` objects whose samples arrive as lazy chunks, so a
multi-terabyte corpus streams through :class:`models.soter.training.corpus.CorpusWriter` without
ever being held in memory.  A recording's ``dataset`` key groups recordings of one channel layout
and one rate: a training batch holds windows of one dataset (docs/soter-training.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from models.soter.training.corpus import CorpusError
from protocols.registry import Registry

# name -> "module:function", imported on use (EDF and the like pull optional packages); the one kind of
# registry (protocols.registry): another reader under a registered name is refused, naming both registrants
ENTRY_POINTS = "soter_bench.corpus_readers"  # plugins' modules that call register_reader() (protocols.registry)
READERS: Registry[str] = Registry("corpus reader", sort_known=True, entry_points=ENTRY_POINTS)


def register_reader(name: str, target: str) -> str:
    """Add the corpus reader ``target`` ("module:function", called as ``function(root, **options)`` and
    yielding :class:`SourceRecording`) under ``name``: ``build-corpus`` then offers ``--NAME DIR``."""
    if target.count(":") != 1 or not all(target.split(":")):
        raise ValueError(f"a corpus reader is 'module:function', got {target!r}")
    return READERS.add(name, target, f"module {sys._getframe(1).f_globals.get('__name__', '?')!r}")


for _name, _module in (("mimic3wdb", "mimic3wdb"), ("sleep-edf", "sleep_edf"), ("ptb-xl", "ptbxl"),
                       ("wesad", "wesad"), ("chapman-ecg", "chapman"), ("opensignals", "opensignals"),
                       ("biosppy", "biosppy_text")):
    register_reader(_name, f"{__name__}.{_module}:read")


@dataclass(frozen=True)
class SourceRecording:
    dataset: str  # corpus dataset key: one channel layout and one rate
    channels: tuple[str, ...]
    subject: str
    name: str
    chunks: Iterable[tuple[np.ndarray, np.ndarray]]  # consecutive (values [C, n] physical units, times [n] s)
    source: str = ""  # where it came from, for the corpus index and the model card


def all_readers() -> dict[str, str]:
    """name -> "module:function": the built-in readers, then the plugins' (entry points of ENTRY_POINTS)."""
    READERS.load_plugins()
    return READERS.mapping()


def read_source(kind: str, root: Path, **options: Any) -> Iterator[SourceRecording]:
    READERS.load_plugins()
    if kind not in READERS:
        raise CorpusError(f"unknown corpus source {kind!r}; known: {', '.join(sorted(READERS))}")
    root = Path(root).expanduser()
    if not root.exists():
        raise CorpusError(f"{kind}: {root} does not exist")
    module, func = READERS[kind].split(":")
    return getattr(importlib.import_module(module), func)(root, **options)


def regular_chunks(read: Any, n: int, fs: float, offset: float = 0.0,
                   chunk: int = 1 << 20) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Chunks of a regularly sampled signal; ``read(a, b)`` returns the values [C, b - a]."""
    for a in range(0, n, chunk):
        b = min(n, a + chunk)
        yield np.asarray(read(a, b), dtype=np.float64), offset + np.arange(a, b) / fs


def pick_channels(available: list[str], wanted: tuple[str, ...] | None) -> list[int]:
    """Indices of the wanted channels that are present, in the wanted order (all when None)."""
    if wanted is None:
        return list(range(len(available)))
    return [available.index(c) for c in wanted if c in available]
