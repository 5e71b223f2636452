"""Plan cells, skip finished ones, run the rest through an executor, record every result."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from harness.records.cell_files import CELL_FILES, write_cell_files
from harness.run.cells import WINDOW_ERRORS, Cell, is_diverged, run_cell, setting_name
from harness.run.executor import EXECUTORS, LOST_WORKER, make_executor
from harness.run.progress import Progress, cost_probes_first
from harness.run.stopping import raise_if_stopped, stop_on_signals
from harness.records.store import KEY_FIELDS, RecordStore, RecordStoreError, row_key
from harness.records.window_store import write_window_errors
from harness.records.configurations import of_versions, with_identity
from models.registry import get_spec, identity_digest, is_hub_id
from harness.registry.tasks import get_task, task_options
from harness.registry.versions import task_version, with_version
from harness.run.adaptation import adapted_models, check_adaptation, is_adapted
from harness.run.threads import single_thread_unless_set
from harness.run.usage import check_models
from protocols.data import dataset_fingerprint, nominal_sampling_rate
from protocols.datasets import all_datasets, check_dataset, is_path_like, load_dataset, resolve_data_root
from protocols.specs import DurationSetting, SpecError, settings_at

from harness.run.names import DEFAULT_OUT, RECORDS_FILE  # where a run writes (re-exported)


@dataclass(frozen=True)
class RunConfig:
    """Everything a run depends on; CLI flags map one-to-one onto these fields, and the task's own flags
    onto ``options``.

    ``options`` holds the values of the task's options (``Task.options``: ``--settings``, ``--rates`` ...) by
    name, e.g. ``{"settings": (Setting(48, 24),), "max_windows_per_subject": 4}``; those not given take the
    option's default (None: the task's spec decides, from ``protocols.specs``). An option the task does not
    read is an error. The task gets them as ``task_options`` in ``Task.spec``.
    """

    task: str = "forecasting"  # a registered task (harness.tasks.TASKS)
    datasets: tuple[str, ...] = ()  # empty: the default datasets
    models: tuple[str, ...] = ()  # empty: every default model of the task
    options: Mapping[str, Any] = field(default_factory=dict)  # the task's options given, by name
    out: Path = DEFAULT_OUT
    jobs: int = 1  # local worker processes; with --executor ray: CPUs of the local Ray instance
    executor: str = "local"  # --executor local | ray | submitit
    ray_address: str | None = None  # --ray-address; None: $RAY_ADDRESS, else a local Ray instance
    seeds: tuple[int, ...] | None = None  # forecasting/noise: (0,); imputation/classification: (0, 1, 2)
    rerun: bool = False  # recompute rows that are already finished
    weights: tuple[tuple[str, str], ...] = ()  # (model, directory)
    trust_remote_code: tuple[str, ...] = ()  # models allowed to run the Python code of their checkpoint
    model_options: tuple[tuple[str, str, Any], ...] = ()  # (model, key, value): --model-option NAME.KEY=VALUE
    device: str = "auto"  # --device: auto (CUDA when available) | cpu | cuda | cuda:N
    progress: bool = True
    data_root: Path | None = None  # --data-root; else $SOTER_BENCH_DATA
    shard: tuple[int, int] | None = None  # --shard K/N: this run computes part K of N (harness.run.shards)
    probe_input: bool = False  # --probe-input: the input-sensitivity probe per (model, dataset) (harness.run.input_probe)
    adapt: tuple[str, ...] = ()  # --adapt zero-shot head full: adapted entries beside the models (harness.run.adaptation)
    adapt_budget: str | None = None  # --adapt-budget NAME (protocols.adaptation.BUDGETS); None: the entries' default

    def __post_init__(self) -> None:
        get_task(self.task)  # unknown task: an error listing the known ones
        if self.jobs < 1:
            raise ValueError("--jobs must be >= 1")
        if self.executor not in EXECUTORS:
            raise ValueError(f"unknown --executor {self.executor!r}; known: {', '.join(EXECUTORS)}")
        if self.ray_address is not None and self.executor != "ray":
            raise ValueError("--ray-address needs --executor ray")
        if self.seeds is not None and (not self.seeds or min(self.seeds) < 0):
            raise ValueError("--seeds must be non-negative integers")
        if self.shard is not None and not 0 <= self.shard[0] < self.shard[1]:
            raise ValueError(f"--shard expects K/N with 0 <= K < N, got {self.shard[0]}/{self.shard[1]}")
        self.specs(0)  # validate every task option now

    @property
    def task_object(self):  # harness.tasks.Task
        return get_task(self.task)

    @property
    def task_options(self) -> Any:
        """The task's options: a frozen dataclass of the values given and the options' defaults."""
        return task_options(self.task, dict(self.options))

    @property
    def run_seeds(self) -> tuple[int, ...]:
        return self.seeds if self.seeds is not None else tuple(self.task_object.default_seeds)

    def specs(self, seed: int, sampling_rate: float | None = None):
        """The task's spec for one seed (the seed draws the windows of forecasting and noise) on a dataset of
        ``sampling_rate`` Hz: settings given in seconds become samples at that rate (``protocols.specs.settings_at``).
        Without a rate (checks before any dataset is loaded) they are taken at 1 Hz, which checks the other options."""
        given = dict(self.options)
        if any(isinstance(s, DurationSetting) for s in given.get("settings") or ()):
            given["settings"] = settings_at(given["settings"], sampling_rate or 1.0)
        return self.task_object.spec(task_options(self.task, given), seed)

    @property
    def records_path(self) -> Path:
        return Path(self.out) / RECORDS_FILE


@dataclass
class RunSummary:
    records_path: Path
    planned: int = 0
    skipped_done: int = 0
    ran: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    dataset_labels: dict[str, str] = field(default_factory=dict)  # ref -> label
    protocols: dict[str, set[str]] = field(default_factory=dict)  # label -> protocol fingerprints
    keys: list[str] = field(default_factory=list)  # every planned row's key
    device: str = "cpu"  # what --device resolved to
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)  # model -> what its rows store (model_info)
    recomputed: int = 0  # finished rows computed again: their task's version or their model's revision changed


def default_models(task: str = "forecasting") -> tuple[str, ...]:
    return get_task(task).default_models()


def default_datasets() -> tuple[str, ...]:
    return tuple(name for name, spec in all_datasets().items() if spec.default)


def code_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("soter-bench")
    except PackageNotFoundError:
        v = "0+unknown"
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"{v}+g{sha}" if sha else v


def _model_options(config: RunConfig, model: str, device: str = "cpu") -> tuple[tuple[str, Any], ...]:
    opts: dict[str, Any] = {"seed": 0}  # model seed: fixed, so that seeds vary the protocol only
    for name, directory in config.weights:
        if name == model:
            opts["weights"] = directory
    if model in config.trust_remote_code:
        opts["trust_remote_code"] = True
    if device != "cpu" and model not in config.task_object.model_free and "device" in get_spec(model).option_names():
        opts["device"] = device  # models without a device option (statistical baselines) run on the CPU
    if config.adapt_budget is not None and is_adapted(model):
        opts["budget"] = config.adapt_budget  # part of the row key (the entries' default is too, as an option)
    opts.update({key: value for name, key, value in config.model_options if name == model})
    return tuple(sorted(opts.items()))


def run_models(config: RunConfig) -> tuple[str, ...]:
    """The run's models (``--models``, else the task's defaults) with their adapted entries (``--adapt``)."""
    return adapted_models(tuple(config.models or default_models(config.task)), config.adapt)


def resolve_device(text: str, cluster_gpus: int | None = None) -> str:
    """``--device``: auto -> cuda when torch sees a GPU, else cpu; cuda[:N] must exist here.

    On the CPU nothing is passed to the models, so CPU records keep their keys; on a GPU the device is
    part of each model's options, hence of its record key, and named in ``model_info``. On a Ray
    cluster (``cluster_gpus`` given) the cluster's GPUs count, not the driver's, and Ray assigns each
    task its GPU, so only ``cuda`` (the task's own GPU) makes sense."""
    if text == "cpu":
        return "cpu"
    if text != "auto" and text != "cuda" and not (text.startswith("cuda:") and text[5:].isdigit()):
        raise SpecError(f"--device must be auto, cpu, cuda or cuda:N, got {text!r}")
    if cluster_gpus is not None:
        if text.startswith("cuda:"):
            raise SpecError(f"--device {text}: with --executor ray, Ray gives each task its GPU; use --device cuda")
        if cluster_gpus == 0 and text == "cuda":
            raise SpecError("--device cuda: the Ray cluster has no GPU (use --device cpu or auto)")
        return "cuda" if cluster_gpus > 0 else "cpu"
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        if text == "auto":
            return "cpu"
        raise SpecError(f"--device {text}: torch is not installed")
    if text == "auto" and "torch" not in sys.modules and not gpu_device_files():
        return "cpu"  # torch would see no GPU: not imported to ask (most of the CPU of a run of light models)
    import torch

    available = torch.cuda.is_available()
    if text == "auto":
        return "cuda" if available else "cpu"
    if not available:
        raise SpecError(f"--device {text}: CUDA is not available on this machine (use --device cpu or auto)")
    index = int(text[5:]) if ":" in text else 0
    if index >= torch.cuda.device_count():
        raise SpecError(f"--device {text}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return text


GPU_DEVICE_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")  # NVIDIA, ROCm, WSL's GPU


def gpu_device_files() -> bool:
    """Whether this machine may have a GPU torch can use: outside Linux always (no cheap way to tell), on Linux
    when a GPU driver's device file exists (a container with a GPU has them too)."""
    return not sys.platform.startswith("linux") or any(os.path.exists(p) for p in GPU_DEVICE_FILES)


# options the harness passes itself, and the flag that sets each
HARNESS_OPTIONS = {"seed": "--seeds (they vary the protocol; the model's own seed is fixed at 0)",
                   "weights": "--weights NAME=DIR", "trust_remote_code": "--trust-remote-code NAME"}
_OPTION_TYPES = (bool, int, float, str, type(None))  # hashable: options are part of a cell and a cache key


def parse_model_option(item: str) -> tuple[str, str, Any]:
    """``NAME.KEY=VALUE`` -> (NAME, KEY, VALUE). NAME is split off at the last dot before ``=``: model
    names may hold dots (timesfm-2.5) but KEY is a Python identifier, which cannot. VALUE is a Python
    literal when it parses as one (8, 0.5, True, None, 'x'), else the string as given."""
    target, sep, text = item.partition("=")
    name, dot, key = target.rpartition(".")
    if not sep or not dot or not name or not key.isidentifier() or not text:
        raise SpecError(f"--model-option expects NAME.KEY=VALUE, got {item!r}")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return name, key, text
    if not isinstance(value, _OPTION_TYPES):
        raise SpecError(f"--model-option {item!r}: VALUE must be a number, True/False/None or a string, "
                        f"not a {type(value).__name__}")
    return name, key, value


def _check_model_options(config: RunConfig, model_names: tuple[str, ...]) -> None:
    """Every --model-option names a model of this run and an option its factory declares, before any work
    starts: a misspelt key is a usage error here, not a failed load in every cell.
    Only the models given options are inspected (their factory's source, else their imported module)."""
    seen: set[tuple[str, str]] = set()
    declared: dict[str, tuple[str, ...]] = {}
    for model, key, _ in config.model_options:
        what = f"--model-option {model}.{key}"
        if key in HARNESS_OPTIONS:
            raise SpecError(f"{what}: {key} is set by the harness; use {HARNESS_OPTIONS[key]}")
        get_spec(model)  # unknown model: its own clear error
        if model not in model_names:
            raise SpecError(f"{what}: {model} is not among this run's models ({', '.join(model_names)})")
        if (model, key) in seen:
            raise SpecError(f"{what} is given twice")
        seen.add((model, key))
        if model not in declared:
            try:
                names = get_spec(model).option_names()
            except ImportError as exc:
                raise SpecError(f"{what}: cannot read {model}'s options, its code does not import: {exc}") from exc
            declared[model] = tuple(n for n in names if n not in HARNESS_OPTIONS)
        if key not in declared[model]:
            valid = declared[model]
            raise SpecError(f"{what}: {model} has no option {key!r}; "
                            + (f"its options: {', '.join(valid)}" if valid else f"{model} takes no options"))
    for model, key, value in config.model_options:  # every key is declared: now the values with known choices
        choices = get_spec(model).option_choices().get(key)
        if choices is not None and value not in choices:
            raise SpecError(f"--model-option {model}.{key}: {value!r} is not one of "
                            f"{', '.join(repr(c) for c in choices)}")
        kinds = get_spec(model).option_types().get(key)
        if kinds is not None and not _fits(value, kinds):
            raise SpecError(f"--model-option {model}.{key}: {value!r} is not "
                            f"{' or '.join(_TYPE_WORDS.get(k, k.__name__) for k in kinds)}")


_TYPE_WORDS = {int: "a whole number", float: "a number", bool: "True or False", str: "a string", Path: "a path",
               type(None): "None"}


def _fits(value: Any, kinds: tuple[type, ...]) -> bool:
    """Whether a ``--model-option`` value (a literal, else the string given) has one of the annotated types: a
    whole number passes for a float, a string for a path; True is no number."""
    if isinstance(value, bool):
        return bool in kinds
    if isinstance(value, int):
        return int in kinds or float in kinds
    if isinstance(value, str):
        return str in kinds or Path in kinds
    return any(isinstance(value, k) for k in kinds if k is not Path)


def _check_declares(model: str, option: str, what: str) -> None:
    """``--weights`` and ``--trust-remote-code`` are passed as options: a model whose factory does not declare
    them takes none, and would refuse them on load (factories have no ``**kwargs`` catch-all)."""
    try:
        names = get_spec(model).option_names()
    except ImportError:
        return  # its code does not import here: loading it reports that
    if option not in names:
        raise SpecError(f"{what}: {model} has no option {option!r}"
                        + (f"; its options: {', '.join(names)}" if names else "; it takes no options"))


def _check_weights_path(model: str, value: str) -> None:
    """A ``--weights`` path that does not exist is a usage error now, not rows of `unavailable` later.
    Foundation models may also name a hub repository (ORG/REPO), which their library downloads."""
    if Path(value).expanduser().exists():
        return
    hub = get_spec(model).hub_weights
    if hub and is_hub_id(value):
        return
    raise SpecError(f"--weights {model}={value}: {Path(value).expanduser()} does not exist"
                    + (" (and it is not a hub id ORG/REPO)" if hub else ""))


def _check_weights_usable(model: str, value: str) -> None:
    """``--weights`` that the model cannot load (an empty folder, no weights file) is a usage error now, not a
    row of ``unavailable`` in every cell: a reason the model gives with these weights and not without them."""
    spec = get_spec(model)
    with_them = spec.unavailable_reason(weights=value)
    if with_them is not None and with_them != spec.unavailable_reason():
        flag = f"--weights {model}={value}"
        raise SpecError(with_them if flag in with_them else f"{flag}: {with_them}")


def check_arguments(config: RunConfig) -> None:
    """The checks that need no data and no model loaded, so that a usage error comes before torch and the adapters
    are imported (issue #51: 18-28 s under load, now about a second): model names, dataset names, options and
    folders, the data root, --weights (the model declares it, the path exists), --trust-remote-code, and every
    --model-option's model, name and value (factories' signatures are read from their source,
    ``models.factory_signature``). ``plan`` then checks what needs a model's code: weights it can load."""
    check_adaptation(config.adapt, config.adapt_budget)
    model_names = run_models(config)
    check_models(config.task, model_names, config.task_object.model_free)  # every typo at once; unfit models
    root = resolve_data_root(config.data_root)
    if config.data_root is not None and not root.is_dir():  # given, so resolved
        raise SpecError(f"--data-root {config.data_root}: no such folder")
    for ref in config.datasets or default_datasets():
        check_dataset(str(Path(ref).resolve()) if is_path_like(ref) else ref, data_root=root)
    for name, directory in config.weights:
        get_spec(name)
        _check_declares(name, "weights", f"--weights {name}={directory}")
        _check_weights_path(name, directory)
    for name in config.trust_remote_code:
        get_spec(name)
        _check_declares(name, "trust_remote_code", f"--trust-remote-code {name}")
    _check_model_options(config, model_names)
    if config.probe_input:
        from harness.run.input_probe import check_probe_task

        check_probe_task(config.task, config.specs(0))
        if config.shard is not None:
            raise SpecError("--probe-input runs in the process that plans the run: not with --shard (probe once, "
                            "without --shard, into the merged folder)")


def plan(config: RunConfig, cluster_gpus: int | None = None,
         loaded: dict[str, Any] | None = None) -> tuple[list[tuple[Cell, dict[str, object]]], RunSummary]:
    """Resolve names (errors before any work starts) and list every cell with its key fields.
    ``cluster_gpus``: the GPUs of the Ray cluster the cells will run on (None: this machine's). ``loaded``, when
    given, gets each dataset loaded, by the name its cells carry (cost estimates count its windows)."""
    task = config.task_object
    dataset_refs = config.datasets or default_datasets()
    model_names = run_models(config)
    check_arguments(config)
    for name, directory in config.weights:  # what needs the model's code: it imports its module
        _check_weights_usable(name, directory)
    summary = RunSummary(records_path=config.records_path)
    cells: list[tuple[Cell, dict[str, object]]] = []
    identities: dict[str, str] = {}  # model -> digest of its weights and options (part of the row key)
    root = resolve_data_root(config.data_root)
    device = resolve_device(config.device, cluster_gpus)
    summary.device = device
    for ref in dataset_refs:
        resolved = str(Path(ref).resolve()) if is_path_like(ref) else ref
        dataset = load_dataset(resolved, data_root=root)
        if loaded is not None:
            loaded[resolved] = dataset
        folds = task.folds(dataset)
        label = dataset.name
        summary.dataset_labels[resolved] = label
        _record_sources(config, label, dataset.metadata.get("source_database", ()))
        data_fp = dataset_fingerprint(dataset)
        for seed in config.run_seeds:
            spec = config.specs(seed, nominal_sampling_rate(dataset) if _in_seconds(config) else None)
            # the task's declared version leads the fingerprint: it decides whether a finished row is current
            protocol = with_version(config.task, task_version(task), f"{spec.fingerprint()};data={data_fp}")
            summary.protocols.setdefault(label, set()).add(protocol)
            for model in model_names:
                options = _model_options(config, model, device)
                if model not in identities:
                    summary.identities[model] = model_identity(config.task, model, options)
                    identities[model] = summary.identities[model]["model_id"]
                for point, condition, level in task.points(spec):
                    setting = setting_name(point)
                    for fold in folds:
                        cell = Cell(config.task, resolved, fold, setting, model, seed, spec, condition, level,
                                    data_root=str(root) if root else None,
                                    cache_dir=str(Path(config.out).resolve() / "cache"), model_options=options,
                                    model_id=identities[model], point=point,
                                    code=summary.identities[model]["code"] or "")
                        fields = {"task": config.task, "dataset": label, "fold": fold, "setting": setting,
                                  "condition": condition, "model": model, "seed": seed, "protocol": protocol}
                        fields["key"] = row_key(identities[model], **fields)
                        cells.append((cell, fields))
    summary.planned = len(cells)
    return cells, summary


def _in_seconds(config: RunConfig) -> bool:
    """Whether a setting is given in seconds (then the dataset's rate turns it into samples)."""
    return any(isinstance(s, DurationSetting) for s in config.options.get("settings") or ())


def model_identity(task: str, model: str, options: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """What a model's rows store beside their numbers (``model_info``, docs/records.md): the identity
    digest that is part of their key, the options and weights it digests, the model's declared revision (with the
    task's version, what a rerun compares to decide whether a finished row is still current:
    ``harness.registry.versions``) and the code digest (``harness.records.code_identity``: provenance only)."""
    from harness.records.code_identity import row_code

    if model in get_task(task).model_free:
        return {"model_id": "", "options": {}, "revision": 1, "code": row_code(model, task)}
    spec = get_spec(model)
    parts = spec.identity_parts(**dict(options))
    given = dict(options).get("weights")
    out: dict[str, Any] = {
        "model_id": identity_digest(parts), "revision": spec.revision, "code": row_code(model, task),
        # the options that are not the registered ones: what a table names a configuration by
        "options": {k: v for k, v in sorted(parts.items()) if k != "weights" and spec.options.get(k, _UNSET) != v},
    }
    if "weights" in parts:
        out["weights"] = parts["weights"]
        out["weights_default"] = given is None
    return out


_UNSET = object()


def cell_resources(cell: Cell) -> dict[str, float]:
    """What a cell asks a cluster for: a GPU when its model runs on one, else one CPU."""
    on_gpu = str(dict(cell.model_options).get("device", "cpu")).startswith("cuda")
    return {"num_cpus": 1, "num_gpus": 1} if on_gpu else {"num_cpus": 1}


def lost_cell_row(cell: Cell, error: BaseException) -> dict[str, object]:
    """The row of a cell whose worker died under it (killed, out of memory, its node lost)."""
    detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return {"status": "error", "error": f"{LOST_WORKER} ({type(error).__name__}): {detail}"[:2000],
            "seconds": None}


def execute(config: RunConfig, log=print) -> RunSummary:
    """Run ``config``'s cells. SIGINT and SIGTERM stop it (KeyboardInterrupt, ``Terminated``) with every finished
    row kept, even where a library swallowed the interrupt; the caller's handlers are back when it returns or
    raises (harness.run.stopping)."""
    with stop_on_signals():
        check_arguments(config)  # usage errors before the thread setup imports torch
        single_thread_unless_set()  # a busy CPU: one thread per process (harness.run.threads); workers set their own
        # a cluster is joined before planning: --device auto asks it, not this machine, for GPUs
        executor = make_executor(config.jobs, config.executor, config.ray_address, cell_resources,
                                 Path(config.out) / "submitit")
        try:
            return _execute(config, executor, log)
        finally:
            executor.close()


def _execute(config: RunConfig, executor, log) -> RunSummary:
    loaded: dict[str, Any] = {}
    cells, summary = plan(config, getattr(executor, "cluster_gpus", None), loaded)
    if config.shard is not None:
        cells = _shard(config, cells, summary, loaded, log)
    if config.device == "auto":
        log("[device] auto: " + ("models that take a device run on CUDA" if summary.device != "cpu" else
                                 "no CUDA device " + ("in the Ray cluster" if config.executor == "ray" else "here")
                                 + ", every model runs on the CPU"))
    if config.executor == "ray":
        log(f"[ray] cells run as Ray tasks on {executor.cluster_cpus} CPU(s) and {executor.cluster_gpus} GPU(s)")
    store = RecordStore(config.records_path)
    _say_identity_changes(config, store, cells, summary)
    if config.rerun:  # derived files too: a rerun never builds on what an earlier run cached
        from harness.run.embeddings import clear_embeddings

        clear_embeddings(Path(config.out).resolve() / "cache")
    version = code_version()
    pending: list[tuple[Cell, dict[str, object]]] = []
    unavailable: dict[str, str | None] = {}
    revisions = {model: identity.get("revision", 1) for model, identity in summary.identities.items()}
    current_version = task_version(config.task_object)

    def current(cell: Cell, key: str) -> bool:
        return row_is_current(store.get(key), config.task, current_version, revisions.get(cell.model, 1))

    for cell, fields in cells:
        key = str(fields["key"])
        summary.keys.append(key)
        if not config.rerun and current(cell, key):
            summary.skipped_done += 1
            continue
        if not config.rerun and store.is_done(key):
            summary.recomputed += 1  # of another version: computed again, the new row supersedes it
        if cell.model not in unavailable:
            unavailable[cell.model] = (None if cell.model in config.task_object.model_free else
                                       get_spec(cell.model).unavailable_reason(**dict(cell.model_options)))
        reason = unavailable[cell.model]
        if reason is not None:
            previous = store.get(key)
            if previous is None or previous["status"] != "unavailable" or previous["error"] != reason:
                store.write({**fields, "key": key, "status": "unavailable", "error": reason,
                             "model_info": with_identity("", summary.identities[cell.model]),
                             "code_version": version, "finished_at": _now()})
            continue
        pending.append((cell, fields))
    for model, reason in unavailable.items():
        if reason:
            log(f"[unavailable] {model}: {reason}")
    measured = store.seconds_by_model(config.task)  # earlier runs' cell costs: probe order and time left
    pending = _cost_probes_first(pending, measured)
    fields_of = {cell: fields for cell, fields in pending}
    bar = Progress(config.task, [c.model for c, _ in pending], measured,
                   enabled=config.progress)

    def not_done_elsewhere():
        """Cells in order, minus those another run into the same --out finished meanwhile."""
        for cell, fields in pending:
            if not config.rerun:
                store.refresh()
                if current(cell, str(fields["key"])):
                    summary.skipped_done += 1
                    bar.skipped(cell.model)
                    continue
            bar.running(cell.model, str(fields["dataset"]), cell.setting)
            yield cell

    try:
        for cell, result in executor.run(run_cell, not_done_elsewhere(), lost_cell_row):
            fields = fields_of[cell]
            _keep_arrays(config.out, str(fields["key"]), result.pop(WINDOW_ERRORS, None),  # before its row
                         result.pop(CELL_FILES, None))
            result["model_info"] = with_identity(result.get("model_info"), summary.identities[cell.model])
            _write_result(store, {**fields, **result, "code_version": version, "finished_at": _now()})
            summary.ran += 1
            seconds = result.get("seconds")
            bar.finished(cell.model, float(seconds) if isinstance(seconds, (int, float)) else None)
    finally:
        bar.close()
    if config.probe_input:
        from harness.run.input_probe import probe_run

        path = probe_run(config, summary, loaded, lambda model: _model_options(config, model, summary.device), log)
        log(f"[probe-input] verdicts: {path}")
    for key in summary.keys:
        row = store.get(key)
        status = row["status"] if row else "missing"
        summary.status_counts[status] = summary.status_counts.get(status, 0) + 1
    return summary


def _shard(config: RunConfig, cells: list[tuple[Cell, dict[str, object]]], summary: RunSummary,
           loaded: dict[str, Any], log) -> list[tuple[Cell, dict[str, object]]]:
    """``--shard K/N``: keep the shard's cells; the store's manifest names the shard and every key of the plan."""
    from harness.run.shards import shard_cells, write_manifest

    k, n = config.shard
    mine = shard_cells(cells, k, n, loaded)  # an N beyond the plan's cells: refused before the manifest
    folds: dict[str, list[str]] = {}
    for _, fields in cells:
        folds.setdefault(str(fields["dataset"]), []).append(str(fields["fold"]))
    write_manifest(config.out, config.task, [str(f["key"]) for _, f in cells], n, shard=k,
                   folds={dataset: list(dict.fromkeys(values)) for dataset, values in folds.items()})
    log(f"[shard] {k}/{n}: {len(mine)} of the plan's {len(cells)} cells, balanced by their estimated cost")
    summary.planned = len(mine)
    return mine


def row_is_current(row: Mapping[str, str] | None, task: str, version: int, revision: int) -> bool:
    """A finished row (ok, or a diverged solve's error: ``harness.run.cells.DIVERGED``) of the task's current version
    and the model's current revision: a run skips it. What code computed it (the digest in its identity) is
    provenance and decides nothing (``harness.registry.versions``)."""
    if row is None or not (row["status"] == "ok" or is_diverged(row)):
        return False
    return of_versions(task, row["protocol"], row["model_info"], version, revision)


def _say_identity_changes(config: RunConfig, store: RecordStore, cells: list[tuple[Cell, dict[str, object]]],
                          summary: RunSummary) -> None:
    """One line on stderr per identity the folder's rows hold that differs from this run's
    (``harness.run.provenance.identity_changes``)."""
    from harness.run.provenance import identity_changes

    for line in identity_changes(Path(config.out), store.rows(), [f for _, f in cells], summary.identities,
                                 config.task, task_version(config.task_object)):
        print(line, file=sys.stderr)


def _write_result(store: RecordStore, row: dict[str, object]) -> None:
    """Append a cell's row; a row the store refuses (an ok row without a metric of its task, a metric that is
    no number) is written as an ``error`` row saying why, so that one faulty cell never stops a sweep. A cell that
    finished after an interrupt its code swallowed (scikit-learn ends its training early) is no result: the
    interrupt is raised again instead, and the row is never written."""
    raise_if_stopped()
    try:
        store.write(row)
    except ValueError as exc:
        kept = {k: row[k] for k in (*KEY_FIELDS, "key", "seconds", "model_info", "code_version", "finished_at")
                if k in row}
        store.write({**kept, "status": "error", "error": f"the task's row was no valid record: {exc}"[:2000]})


def _keep_arrays(out: Path, key: str, windows, files) -> None:
    """Write a cell's per-window errors and its other arrays (``harness.records.cell_files``) before its row; a full
    disk or a read-only folder stops the run with one line (every finished row is kept, and the same command
    resumes). Nothing is written for a cell that finished after a swallowed interrupt (``_write_result``)."""
    raise_if_stopped()
    try:
        write_window_errors(out, key, windows)
        write_cell_files(out, key, files)
    except OSError as exc:
        raise RecordStoreError(f"{exc.filename or Path(out) / 'window_errors'}: could not write a cell's arrays "
                               f"({exc.strerror or exc}); every finished row is kept: free space and rerun "
                               "the same command to resume") from None


def _cost_probes_first(pending: list[tuple[Cell, dict[str, object]]],
                              measured: dict[str, list[float]]) -> list[tuple[Cell, dict[str, object]]]:
    """The run's order of its pending cells (:func:`harness.run.progress.cost_probes_first`)."""
    return cost_probes_first(pending, lambda item: item[0].model, measured)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _record_sources(config, label: str, sources: tuple[str, ...]) -> None:
    """A user dataset's declared source databases, kept beside the records for the overlap marks (#35)."""
    from harness.records.dataset_sources import record_declared_sources

    if sources:
        record_declared_sources(Path(config.records_path).parent, label, tuple(sources))
