"""Dataset registry: a name (built in) or a path (a user folder in the documented format)."""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.data import Dataset, DatasetError
from protocols.registry import Registry
from protocols.words import closest, did_you_mean


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    loader: str  # "module:callable" returning a Dataset; takes keyword options
    description: str
    default: bool = False  # part of the default run
    needs_root: bool = False  # a downloaded dataset: the loader takes root=DIR (--data-root)


ENTRY_POINTS = "soter_bench.datasets"  # plugins' modules that call register() (protocols.registry)
# name -> spec (protocols.registry: the same spec again is fine, another spec under a registered name is an error)
_DATASETS: Registry[DatasetSpec] = Registry("dataset", sort_known=True, entry_points=ENTRY_POINTS)


def register(spec: DatasetSpec) -> DatasetSpec:
    return _DATASETS.add(spec.name, spec, f"module {sys._getframe(1).f_globals.get('__name__', '?')!r}")


register(DatasetSpec(
    name="synthetic-cohort",
    loader="protocols.datasets.synthetic:load_synthetic_cohort",
    description="Embedded neurokit2 cohort: ECG, PPG, RSP, EDA; rest / stress / exercise (generated, cached)",
    default=True,
))


def _ensure_registered() -> None:
    # the paper's evaluation datasets register themselves (cheap: no data is read)
    importlib.import_module("protocols.datasets.paper")
    _DATASETS.load_plugins()  # then the plugins' (entry points of ENTRY_POINTS), once per process


def all_datasets() -> dict[str, DatasetSpec]:
    _ensure_registered()
    return _DATASETS.mapping()


def is_path_like(name: str) -> bool:
    return "/" in name or name.startswith(".") or Path(name).exists()


DATA_ROOT_ENV = "SOTER_BENCH_DATA"


def resolve_data_root(root: str | Path | None) -> Path | None:
    """--data-root, else $SOTER_BENCH_DATA; None when neither is set."""
    if root is None:
        root = os.environ.get(DATA_ROOT_ENV) or None
    return Path(root).expanduser().resolve() if root is not None else None


BLOCKS_SUFFIX = ":blocks="
CHANNELS_SUFFIX = ":channels="
_OPTIONS = re.compile(r"(?::[A-Za-z_][\w.-]*=[^:]*)+$")  # trailing ``:key=value`` options, any key


def dataset_base_name(name: str) -> str:
    """``name`` without its dataset options (``heartrate:channels=RESP+PLETH:blocks=4`` -> ``heartrate``,
    ``DIR:blocks=6`` -> ``DIR``): what the dataset is, whatever part of it a run evaluated."""
    return _OPTIONS.sub("", name)


def load_dataset(name: str, data_root: str | Path | None = None, check_only: bool = False,
                 **options: Any) -> Dataset | None:
    """Load a registered dataset by name, or a user folder by path.

    Downloaded datasets live under ``data_root`` (``--data-root``), one folder per dataset.
    ``NAME:blocks=K`` cuts every recording into K contiguous blocks that act as subjects
    (``protocols.splits.split_into_blocks``): leave-one-block-out for a dataset of one subject.
    ``NAME:channels=A+B`` passes ``channels=("A", "B")`` to a registered loader (e.g. bidmc's RESP, PLETH
    and II from ``heartrate``); the dataset keeps that name, so records and tables say which channels.
    ``check_only``: refuse what can be refused without reading data, and return None (``check_dataset``).
    """
    _ensure_registered()
    base, sep, k = name.rpartition(BLOCKS_SUFFIX)
    if sep:
        from protocols.splits import split_into_blocks

        if not k.isdigit():
            raise DatasetError(f"{name!r}: the number of blocks after {BLOCKS_SUFFIX!r} must be an integer")
        inner = load_dataset(base, data_root, check_only, **options)
        return None if check_only else split_into_blocks(inner, int(k))
    base, sep, names = name.rpartition(CHANNELS_SUFFIX)
    if sep:
        return _with_channels(name, base, tuple(n for n in names.split("+") if n), data_root, options, check_only)
    if name in _DATASETS:
        spec = _DATASETS[name]
        module, _, attr = spec.loader.partition(":")
        if spec.needs_root:
            root = resolve_data_root(data_root)
            if root is None:
                raise DatasetError(
                    f"dataset {name!r} is read from disk: pass --data-root DIR (or set ${DATA_ROOT_ENV}); "
                    f"`python -m harness data download {name} --root DIR` fetches the open ones"
                )
            if check_only and not root.is_dir():
                raise DatasetError(f"dataset {name!r}: the data root {root} is not a folder")
            options["root"] = root
        if check_only:
            return None
        return getattr(importlib.import_module(module), attr)(**options)
    if is_path_like(name):
        from protocols.datasets.folder import check_folder_dataset, load_folder_dataset

        if check_only:
            check_folder_dataset(Path(name))
            return None
        return load_folder_dataset(Path(name), **options)
    base, colon, option = name.rpartition(":")
    if colon and (base in _DATASETS or is_path_like(base)):
        key = option.partition("=")[0]
        hint = " (did you mean 'blocks'?)" if closest(key, ["blocks"]) else ""
        raise DatasetError(f"{name!r}: unknown dataset option {option!r}{hint}; the one option is "
                           f"{BLOCKS_SUFFIX[1:]}K (K contiguous blocks of each recording act as subjects), "
                           f"e.g. {base}{BLOCKS_SUFFIX}6")
    raise DatasetError(
        f"unknown dataset {name!r}{did_you_mean(name, _DATASETS.mapping())}; known datasets: {', '.join(sorted(_DATASETS))} "
        "(or give the path of a dataset folder, see docs/datasets.md)"
    )


def check_dataset(name: str, data_root: str | Path | None = None) -> None:
    """What ``load_dataset`` would refuse before reading any data (issue #51: a usage error before the heavy
    imports): an unknown name or option, a non-integer block count, channels on a folder, a downloaded dataset
    without a data root or with one that is no folder, a dataset folder that does not exist or has no manifest.
    The same path through ``load_dataset``, stopped where the loader would start."""
    load_dataset(name, data_root, check_only=True)


def _with_channels(name: str, base: str, channels: tuple[str, ...], data_root, options: dict[str, Any],
                   check_only: bool = False) -> Dataset | None:
    """``base`` loaded with ``channels=...``, named ``name`` (the channels are part of what was evaluated)."""
    import dataclasses
    import inspect

    if not channels:
        raise DatasetError(f"{name!r}: name the channels after {CHANNELS_SUFFIX!r}, joined by '+'")
    if base not in _DATASETS:
        raise DatasetError(f"{name!r}: {CHANNELS_SUFFIX!r} applies to registered datasets; known: "
                           f"{', '.join(sorted(_DATASETS))} (a folder dataset lists its channels in its manifest)")
    module, _, attr = _DATASETS[base].loader.partition(":")
    if "channels" not in inspect.signature(getattr(importlib.import_module(module), attr)).parameters:
        raise DatasetError(f"{name!r}: dataset {base!r} takes no channels option")
    if check_only:
        return load_dataset(base, data_root, check_only=True)
    dataset = load_dataset(base, data_root, **{**options, "channels": channels})
    return dataclasses.replace(dataset, name=name)
