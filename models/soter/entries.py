"""SOTER's shipped checkpoints as registry entries: a checkpoint folder with an ``entry.toml`` is an entry.

Why: each entry used to be a hand-written registration (a name, a folder, a sentence, an option), and every new
checkpoint meant code. The architecture is already in each folder's ``config.json``; what the registry needs
beyond it (the entry's name, what it is in one line, its parent, which default runs include it, the adapter's
options) is a small data file beside it. Adding a checkpoint is then a folder, and no code: the folders under
``models/soter/checkpoints`` and under each folder named in ``$SOTER_BENCH_CHECKPOINTS`` (``os.pathsep``-separated)
are discovered here, and one factory (``models.soter.adapter:load_soter``) serves them all.

Cheap: reads TOML, imports no torch. The adapter never imports this module (docs/records.md, the code digest).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.registry import Limitation, ModelSpec

CHECKPOINTS = Path(__file__).resolve().parent / "checkpoints"
ENTRY_FILE = "entry.toml"
EXTRA_ROOTS_ENV = "SOTER_BENCH_CHECKPOINTS"
TASKS = ("forecasting", "imputation", "noise", "classification")
FAITHFUL = "the paper's recipe"  # how every listing and table note names the faithful entry
_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
_FIELDS = {"name", "summary", "parent", "faithful", "default_tasks", "note", "note_tasks", "options", "limitations",
           "revision"}
_LIMITATION_FIELDS = {"note", "tasks", "protocol", "lifted_by"}  # models.registry.Limitation
# adapter options an entry may set (models.soter.adapter.load_soter); the rest are the user's or the registry's
_ENTRY_OPTIONS = {"rollout", "control_beyond", "per_channel", "batch_size", "output_bound"}
# a name is a registry key, part of `--model-option NAME.key=value`, of `ENTRIES.NAME.check` and of file names
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


class EntryError(ValueError):
    """An ``entry.toml`` that breaks the schema, or two folders claiming one name: the message names the file."""


@dataclass(frozen=True)
class ShippedEntry:
    """One checkpoint folder's entry: its default weights (``checkpoint_dir``) and readiness check (``check``)."""

    name: str
    folder: Path
    summary: str  # what it is, in one line
    parent: str = ""  # the checkpoint folder it was fine-tuned from ("" for none)
    faithful: bool = False  # the paper's architecture and objective
    default_tasks: tuple[str, ...] = ()  # the tasks whose default run includes it
    note: str = ""  # printed under the tables it appears in
    note_tasks: tuple[str, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    # its own documented limitations ([[limitations]] in entry.toml), beside every entry's control_limitations
    limitations: tuple[Limitation, ...] = ()
    revision: int = 1  # the behaviour's declared revision (ModelSpec.revision): bumped when its numbers move

    def checkpoint_dir(self, weights: str | Path | None = None) -> Path:
        return Path(weights).expanduser() if weights else self.folder

    def check(self, weights: str | Path | None = None, **_: object) -> str | None:
        """None when a checkpoint (config.json + safetensors weights) is there, else how to get one."""
        folder = self.checkpoint_dir(weights)
        if (folder / "config.json").is_file() and any((folder / f).is_file() for f in _WEIGHT_FILES):
            return None
        where = f"--weights {self.name}={weights}" if weights else str(_shown(self.folder))
        return (f"no trained SOTER checkpoint found ({where}: needs config.json and model.safetensors); "
                f"train one (docs/soter-training.md) or pass --weights {self.name}=DIR. "
                "Random weights are never used for SOTER rows.")

    def spec(self) -> ModelSpec:
        """The registry entry: decoded per query by the one SOTER factory, from this folder unless --weights."""
        what = (f"SOTER, {FAITHFUL} (architecture and objective)" if self.faithful
                else "SOTER DEPARTING FROM THE PAPER")
        default: bool | tuple[str, ...] = (True if set(self.default_tasks) == set(TASKS)
                                           else self.default_tasks or False)
        ref = f"models.soter.entries:ENTRIES.{self.name}"
        return ModelSpec(
            name=self.name, factory="models.soter.adapter:load_soter", family="soter", capabilities_on_load=True,
            description=f"{what}, checkpoint {self.folder.name}: {self.summary}",
            licence="MIT (this repository's weights)", check=f"{ref}.check", tasks=TASKS, default=default,
            options={"rollout": "per-query", "name": self.name, **self.options},
            default_weights=f"{ref}.checkpoint_dir", note=self.note, note_tasks=self.note_tasks,
            limitations=(*control_limitations(self.name), *self.limitations), revision=self.revision)


def control_limitations(name: str) -> tuple[Limitation, ...]:
    """Every SOTER entry's imputation under contiguous gaps (the imputation task's contiguous mask, and the
    irregular task's renewal outages), unless its control is held (or zeroed) past a channel's last observation:
    the authors' extrapolated spline grows like the cube of the distance into a gap (docs/stress-tests.md, "Why
    SOTER diverges inside gaps"). The adapter names ``control_beyond`` in a row's model_info only where it departs
    from ``extrapolate``, so a row without it extrapolated."""
    note = (f"{name}: under contiguous gaps its imputation extrapolates the spline control past a channel's last "
            "observation (the authors' code), which grows like the cube of the distance into the gap and makes "
            f"it diverge (docs/stress-tests.md, \"Why SOTER diverges inside gaps\"); --model-option "
            f"{name}.control_beyond=hold holds the control there")
    lifted = {"control_beyond": ("hold", "zero")}
    return (Limitation(note=note, tasks=("imputation",), protocol=("mask=contiguous",), lifted_by=lifted),
            Limitation(note=note, tasks=("irregular",), conditions=("impute renewal",), lifted_by=lifted))


def _shown(path: Path) -> Path:
    """A folder as a message shows it: relative to the project for its own checkpoints."""
    try:
        return path.relative_to(CHECKPOINTS.parents[2])
    except ValueError:
        return path


def _tasks(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(v in TASKS for v in value):
        raise EntryError(f"{where}: must be a list of tasks out of {list(TASKS)}")
    return tuple(value)


def read_entry(folder: Path, shipped: bool = True) -> ShippedEntry:
    """The entry of a checkpoint folder, from its ``entry.toml``; a schema error raises :class:`EntryError`.
    Only a shipped folder (``shipped``) may be the paper's recipe or join the default runs: an external folder
    cannot put its weights in every default run under the faithful label."""
    path = Path(folder) / ENTRY_FILE
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EntryError(f"{path}: cannot be read: {exc}") from exc
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise EntryError(f"{path}: unknown field(s) {unknown}; allowed: {sorted(_FIELDS)}")
    for key in ("name", "summary"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise EntryError(f"{path}: {key} must be a non-empty string")
    if not _NAME.fullmatch(raw["name"]):
        raise EntryError(f"{path}: name {raw['name']!r} may hold only letters, digits, '-' and '_' (a '.' or a path "
                         "separator breaks --model-option NAME.key=value, the registry's references and file names)")
    options = raw.get("options", {})
    if not isinstance(options, dict) or set(options) - _ENTRY_OPTIONS:
        raise EntryError(f"{path}: options must be a table of {sorted(_ENTRY_OPTIONS)}")
    revision = raw.get("revision", 1)
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 1:
        raise EntryError(f"{path}: revision must be a whole number >= 1")
    claimed = [k for k in ("faithful", "default_tasks") if raw.get(k)]
    if claimed and not shipped:
        raise EntryError(f"{path}: {' and '.join(claimed)} may be set only by the checkpoints shipped in "
                         f"{_shown(CHECKPOINTS)}, not by a folder under ${EXTRA_ROOTS_ENV} (remove them, then run it "
                         f"with --models {raw['name']})")
    return ShippedEntry(
        name=raw["name"], folder=Path(folder), summary=raw["summary"], parent=str(raw.get("parent", "")),
        faithful=bool(raw.get("faithful", False)),
        default_tasks=_tasks(raw.get("default_tasks", []), f"{path}: default_tasks"),
        note=str(raw.get("note", "")), note_tasks=_tasks(raw.get("note_tasks", []), f"{path}: note_tasks"),
        options=dict(options), limitations=_limitations(raw.get("limitations", []), path), revision=revision)


def _limitations(value: Any, path: Path) -> tuple[Limitation, ...]:
    """``[[limitations]]`` tables: note (required), tasks, protocol (prefixes of protocol parts), lifted_by
    (a table of option -> the values that lift it)."""
    where = f"{path}: limitations"
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise EntryError(f"{where}: must be [[limitations]] tables")
    out = []
    for raw in value:
        if set(raw) - _LIMITATION_FIELDS or not isinstance(raw.get("note"), str) or not raw["note"].strip():
            raise EntryError(f"{where}: each needs a note and may have {sorted(_LIMITATION_FIELDS - {'note'})}")
        lifted = raw.get("lifted_by", {})
        if not isinstance(lifted, dict) or not all(isinstance(v, list) for v in lifted.values()):
            raise EntryError(f"{where}: lifted_by must be a table of option = [values]")
        out.append(Limitation(raw["note"], _tasks(raw.get("tasks", []), f"{where}: tasks"),
                              tuple(str(p) for p in raw.get("protocol", [])),
                              {k: tuple(str(x) for x in v) for k, v in lifted.items()}))
    return tuple(out)


def roots() -> list[Path]:
    """Where checkpoint folders are looked for: the shipped ones, then ``$SOTER_BENCH_CHECKPOINTS``'s."""
    extra = [Path(p).expanduser() for p in os.environ.get(EXTRA_ROOTS_ENV, "").split(os.pathsep) if p.strip()]
    return [CHECKPOINTS, *extra]


def discover(where: list[Path] | None = None) -> dict[str, ShippedEntry]:
    """Every folder with an ``entry.toml`` directly under the roots, by entry name (the faithful one first);
    an external folder whose entry is refused is left out (:func:`refused` says why)."""
    return _scan(where)[0]


def refused(where: list[Path] | None = None) -> list[str]:
    """One line per external checkpoint folder left out of the registry: its entry file and the problem."""
    return _scan(where)[1]


def _scan(where: list[Path] | None) -> tuple[dict[str, ShippedEntry], list[str]]:
    found: dict[str, ShippedEntry] = {}
    problems: list[str] = []
    for root in roots() if where is None else where:
        if not root.is_dir():
            continue
        shipped = root.resolve() == CHECKPOINTS
        for folder in sorted(p for p in root.iterdir() if (p / ENTRY_FILE).is_file()):
            try:
                entry = read_entry(folder, shipped)
            except EntryError as exc:
                if shipped:
                    raise
                problems.append(str(exc))
                continue
            if entry.name in found:
                raise EntryError(f"{folder / ENTRY_FILE}: entry {entry.name!r} is also {found[entry.name].folder}")
            found[entry.name] = entry
    return dict(sorted(found.items(), key=lambda item: (not item[1].faithful, item[0]))), problems


class _Entries:
    """The discovered entries as attributes, so that a registry string ``models.soter.entries:ENTRIES.NAME.check``
    resolves to one entry's method (``models.registry`` resolves ``module:attr.attr``)."""

    def __getattr__(self, name: str) -> ShippedEntry:
        entries = discover()
        if name not in entries:
            raise AttributeError(f"no SOTER checkpoint folder declares the entry {name!r}")
        return entries[name]


ENTRIES = _Entries()


def faithful_entry() -> ShippedEntry:
    """The entry of the paper's recipe (exactly one shipped folder says ``faithful = true``)."""
    faithful = [e for e in discover([CHECKPOINTS]).values() if e.faithful]
    if len(faithful) != 1:
        raise EntryError(f"{CHECKPOINTS}: {len(faithful)} folders declare faithful = true, expected one")
    return faithful[0]
