"""Which model may have seen which evaluation dataset in pre-training (issue #35).

Why: a zero-shot number means little when the model was pre-trained on the test data.  The
registry is one data file, ``models/pretraining_overlap.toml`` (hand-written entries with their
sources), plus one generated entry per shipped SOTER checkpoint, read from the ``CORPUS.json`` beside
its weights (``models.soter.corpus_manifest``), so no SOTER entry is written by hand and a new
checkpoint folder gets its entry without editing anything.  The rules that turn an entry into a
status are in the data file's header and in :func:`overlap`; docs/pretraining-overlap.md explains them.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

REGISTRY_FILE = Path(__file__).with_name("pretraining_overlap.toml")
CHECKPOINTS = Path(__file__).resolve().parent / "soter" / "checkpoints"
STATUSES = ("yes", "partial", "no", "unknown")
GENERATED_SOTER = "soter-checkpoint"
ENTRY_FIELDS = {"models", "pretrained", "data", "corpus", "complete", "unknown_because", "cite", "checked",
                "datasets", "generated"}
DATASET_FIELDS = {"sources", "related", "cite"}
SOURCE_FIELDS = {"name", "cite", "checked", "holds", "complete", "unknown_because"}


class RegistryError(ValueError):
    """The registry file (or a checkpoint's manifest) breaks the schema: the message names where."""


@dataclass(frozen=True)
class Overlap:
    """One model on one dataset: the status, why, and where that was read."""

    status: str  # one of STATUSES
    reason: str
    cite: str
    checked: str

    @property
    def may_have_seen(self) -> bool:
        return self.status in ("yes", "partial")


@dataclass(frozen=True)
class DatasetSources:
    name: str
    sources: tuple[str, ...]
    related: Mapping[str, str] = field(default_factory=dict)  # source id -> why a corpus holding it is "partial"
    cite: str = ""


@dataclass(frozen=True)
class Source:
    """A source database, or an archive or corpus that re-packages others (``holds``: member id -> what
    of it), so that MIT-BIH inside an anomaly archive inside a pre-training corpus is found by the rules."""

    key: str
    name: str
    cite: str
    checked: str = ""
    holds: Mapping[str, str] = field(default_factory=dict)
    complete: bool = True  # a collection: every member that holds a registry source is listed in ``holds``
    unknown_because: str = ""  # a collection documented only in part: what was read, what was not


@dataclass(frozen=True)
class Entry:
    key: str
    models: tuple[str, ...]
    data: str  # what it was pre-trained on, in one line
    cite: str
    checked: str  # the date the source was read (YYYY-MM-DD)
    pretrained: bool = True
    corpus: tuple[str, ...] = ()  # source database ids of the documented corpus
    complete: bool = False  # the documented corpus is the whole corpus: what it lacks, the model did not see
    unknown_because: str = ""
    datasets: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # dataset -> (status, reason)
    generated: str = ""
    corpus_notes: Mapping[str, str] = field(default_factory=dict)  # source id -> what of it (generated entries)
    weights: str = ""  # generated entries: the weights digest of the checkpoint the corpus belongs to


@dataclass(frozen=True)
class Registry:
    entries: Mapping[str, Entry]  # by key
    datasets: Mapping[str, DatasetSources]
    checkpoints: Mapping[str, Entry]  # SOTER checkpoint folder name -> its generated entry
    sources: Mapping[str, Source] = field(default_factory=dict)  # every source id the data file declares

    def entry_for(self, model: str, checkpoint: str | None = None) -> Entry | None:
        """The entry of a registry model name; SOTER's shipped models by the checkpoint they ran
        (``checkpoint``: a folder name under models/soter/checkpoints, default the registered one)."""
        for entry in self.entries.values():
            if model in entry.models:
                if entry.generated == GENERATED_SOTER:
                    return self.checkpoints.get(checkpoint or default_checkpoint(model) or "")
                return entry
        # a model listed nowhere whose weights are a shipped checkpoint (a SOTER variant registered later)
        return self.checkpoints.get(checkpoint or default_checkpoint(model) or "")

    def known_sources(self) -> set[str]:
        """Every source id the registry can match: the datasets' and every corpus's."""
        found = {s for d in self.datasets.values() for s in (*d.sources, *d.related)} | set(self.sources)
        return found | {s for e in (*self.entries.values(), *self.checkpoints.values()) for s in e.corpus}

    def reach(self, corpus: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Every source id a corpus holds, directly or through the archives it holds, with the path
        (corpus member first) by which it was reached; the shortest path wins."""
        found: dict[str, tuple[str, ...]] = {}
        queue = [(s, (s,)) for s in corpus]
        while queue:
            source, path = queue.pop(0)
            if source in found:
                continue
            found[source] = path
            held = self.sources.get(source)
            queue += [(member, (*path, member)) for member in (held.holds if held else {})]
        return found


# -- reading ------------------------------------------------------------------------------------
def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RegistryError(f"{where}: must be a list of non-empty strings")
    return tuple(value)


def _entry(key: str, raw: Any) -> Entry:
    where = f"{REGISTRY_FILE.name}: entries.{key}"
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: must be a table")
    unknown = sorted(set(raw) - ENTRY_FIELDS)
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(ENTRY_FIELDS)}")
    for name in ("models", "data", "cite", "checked"):
        if name not in raw:
            raise RegistryError(f"{where}: missing required field {name!r}")
    if not all(isinstance(raw[n], str) and raw[n].strip() for n in ("data", "cite", "checked")):
        raise RegistryError(f"{where}: data, cite and checked must be non-empty strings")
    _check_date(raw["checked"], where)
    generated = raw.get("generated", "")
    if generated not in ("", GENERATED_SOTER):
        raise RegistryError(f"{where}: generated must be {GENERATED_SOTER!r}")
    datasets = {}
    for name, spec in (raw.get("datasets") or {}).items():
        if not isinstance(spec, dict) or spec.get("status") not in STATUSES or not str(spec.get("reason", "")).strip():
            raise RegistryError(f"{where}.datasets.{name}: needs status (one of {', '.join(STATUSES)}) and a reason")
        datasets[name] = (spec["status"], spec["reason"])
    pretrained = raw.get("pretrained", True)
    complete = raw.get("complete", False)
    if not isinstance(pretrained, bool) or not isinstance(complete, bool):
        raise RegistryError(f"{where}: pretrained and complete must be true or false")
    if pretrained and not generated and not complete and not str(raw.get("unknown_because", "")).strip():
        raise RegistryError(f"{where}: a corpus not documented in full needs unknown_because (what was checked)")
    return Entry(key, _strings(raw["models"], f"{where}.models"), raw["data"], raw["cite"], raw["checked"],
                 pretrained, _strings(raw.get("corpus", []), f"{where}.corpus") if raw.get("corpus") else (),
                 complete, raw.get("unknown_because", ""), datasets, generated)


def _check_date(text: str, where: str) -> None:
    from datetime import date

    try:
        date.fromisoformat(text)
    except ValueError:
        raise RegistryError(f"{where}: checked must be a date YYYY-MM-DD, not {text!r}") from None


def _dataset(name: str, raw: Any) -> DatasetSources:
    where = f"{REGISTRY_FILE.name}: datasets.{name}"
    if not isinstance(raw, dict) or set(raw) - DATASET_FIELDS or "sources" not in raw:
        raise RegistryError(f"{where}: a table with sources (and optional related, cite)")
    related = raw.get("related", {})
    if not isinstance(related, dict) or not all(isinstance(v, str) and v for v in related.values()):
        raise RegistryError(f"{where}.related: a table of source id = why")
    return DatasetSources(name, _strings(raw["sources"], f"{where}.sources"), dict(related), raw.get("cite", ""))


def _source(key: str, raw: Any) -> Source:
    where = f"{REGISTRY_FILE.name}: sources.{key}"
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: must be a table")
    unknown = sorted(set(raw) - SOURCE_FIELDS)
    if unknown:
        raise RegistryError(f"{where}: unknown field(s) {unknown}; allowed: {sorted(SOURCE_FIELDS)}")
    if not all(isinstance(raw.get(n), str) and raw[n].strip() for n in ("name", "cite")):
        raise RegistryError(f"{where}: needs a name and a cite (where a reader can open it)")
    holds = raw.get("holds", {})
    if not isinstance(holds, dict) or not all(isinstance(v, str) and v.strip() for v in holds.values()):
        raise RegistryError(f"{where}.holds: a table of member source id = what of it")
    complete = raw.get("complete", True)
    if not isinstance(complete, bool):
        raise RegistryError(f"{where}: complete must be true or false")
    if not complete and not str(raw.get("unknown_because", "")).strip():
        raise RegistryError(f"{where}: a collection documented only in part needs unknown_because (what was read)")
    if raw.get("checked"):
        _check_date(raw["checked"], where)
    return Source(key, raw["name"], raw["cite"], raw.get("checked", ""), dict(holds), complete,
                  raw.get("unknown_because", ""))


def _check_ids(entries: Mapping[str, Entry], datasets: Mapping[str, DatasetSources],
               sources: Mapping[str, Source]) -> None:
    """Every id the hand-written file uses is declared under [sources]: a misspelt id would otherwise
    match nothing and turn a ``yes`` into a silent ``no``."""
    uses = [(f"datasets.{d.name}", s) for d in datasets.values() for s in (*d.sources, *d.related)]
    uses += [(f"sources.{src.key}.holds", s) for src in sources.values() for s in src.holds]
    uses += [(f"entries.{e.key}.corpus", s) for e in entries.values() for s in e.corpus]
    for where, source in uses:
        if source not in sources:
            raise RegistryError(f"{REGISTRY_FILE.name}: {where}: source {source!r} is not declared under "
                                "[sources] (add it with its name and cite)")


def read_registry(path: Path = REGISTRY_FILE, checkpoints: Path = CHECKPOINTS) -> Registry:
    """The data file and the generated checkpoint entries; a schema error raises :class:`RegistryError`."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RegistryError(f"{path}: cannot be read: {exc}") from exc
    if raw.get("schema") != 1 or set(raw) - {"schema", "entries", "datasets", "sources"}:
        raise RegistryError(f"{path}: expected schema = 1 and the tables sources, datasets and entries only")
    entries = {k: _entry(k, v) for k, v in raw.get("entries", {}).items()}
    seen: dict[str, str] = {}
    for entry in entries.values():
        for model in entry.models:
            if model in seen:
                raise RegistryError(f"{path.name}: model {model!r} is in entries {seen[model]} and {entry.key}")
            seen[model] = entry.key
    datasets = {k: _dataset(k, v) for k, v in raw.get("datasets", {}).items()}
    sources = {k: _source(k, v) for k, v in raw.get("sources", {}).items()}
    _check_ids(entries, datasets, sources)
    return Registry(entries, datasets, checkpoint_entries(checkpoints), sources)


@lru_cache(maxsize=1)
def registry() -> Registry:
    return read_registry()


# -- generated entries: SOTER's shipped checkpoints ---------------------------------------------
def checkpoint_entries(folder: Path = CHECKPOINTS) -> dict[str, Entry]:
    """One entry per checkpoint folder (one holding TRAINING.json), generated from its CORPUS.json."""
    if not Path(folder).is_dir():
        return {}
    return {d.name: checkpoint_entry(d) for d in sorted(Path(folder).iterdir()) if (d / "TRAINING.json").is_file()}


def checkpoint_entry(folder: Path) -> Entry:
    """A checkpoint's entry from its manifest: the corpus it names must be the one TRAINING.json names.
    Without a manifest the entry says ``unknown`` (TRAINING.json names only a corpus folder not shipped)."""
    from models.soter.corpus_manifest import MANIFEST, SIMULATOR, UNIDENTIFIED, read_manifest, sources

    folder = Path(folder)
    training = json.loads((folder / "TRAINING.json").read_text())
    corpus_dir = training.get("train_config", {}).get("corpus", "")
    cite = f"models/soter/checkpoints/{folder.name}/{MANIFEST} (generated from the training corpus folder '{corpus_dir}')"
    manifest = read_manifest(folder)
    checked = str(manifest.get("written", "undated manifest")) if manifest else "no manifest"
    if manifest is None:
        return Entry(folder.name, (), f"{folder.name}: corpus folder {corpus_dir} (not shipped; no {MANIFEST})",
                     f"models/soter/checkpoints/{folder.name}/TRAINING.json", checked, True, (), False,
                     f"no {MANIFEST} beside the weights: TRAINING.json names only the corpus folder {corpus_dir}, "
                     "which is not shipped (python -m models.soter.training.manifest writes one from a rebuilt "
                     "corpus)", generated=GENERATED_SOTER)
    if manifest.get("corpus") != corpus_dir:
        raise RegistryError(f"{folder / MANIFEST}: describes corpus {manifest.get('corpus')!r}, but TRAINING.json "
                            f"trained on {corpus_dir!r}")
    from models.registry import weights_digest

    found = sources(manifest)
    notes: dict[str, list[str]] = {}
    for s in found:
        what = s.dataset if s.source in (SIMULATOR, UNIDENTIFIED) else ", ".join(s.recordings[:3]) + (
            f" and {len(s.recordings) - 3} more" if len(s.recordings) > 3 else "")
        notes.setdefault(s.source, []).append(what + (" (validation)" if s.role == "validation" else ""))
    unidentified = notes.get(UNIDENTIFIED, [])
    return Entry(folder.name, (), f"{folder.name}: " + _summary(found), cite, checked, True,
                 tuple(sorted(notes)), not unidentified,
                 f"corpus datasets of unknown source: {'; '.join(unidentified)}" if unidentified else "",
                 generated=GENERATED_SOTER, corpus_notes={k: "; ".join(v) for k, v in notes.items()},
                 weights=weights_digest(folder))


def _summary(found: Iterable) -> str:
    """One line: the corpus's sources, synthetic seeds and real records named."""
    from models.soter.corpus_manifest import SIMULATOR

    found = list(found)
    training = [s for s in found if s.role == "training"]
    synthetic = [s.dataset.split("[")[0].rsplit("-", 1)[-1] for s in training if s.source == SIMULATOR]
    parts = [f"{len(synthetic)} synthetic simulator datasets (seeds {', '.join(synthetic)})"] if synthetic else []
    real: dict[str, list[str]] = {}
    for s in training:
        if s.source != SIMULATOR:
            real.setdefault(s.source.split(":")[0], []).extend(s.recordings or (s.dataset,))
    parts += [f"{kind} {', '.join(dict.fromkeys(recs))}" if len(set(recs)) <= 6 else f"{kind} ({len(set(recs))} recordings)"
              for kind, recs in real.items()]
    validation = [s for s in found if s.role == "validation"]
    if validation:
        parts.append(f"held-out loss on {len(validation)} validation datasets")
    return "; ".join(parts) + " (CORPUS.json)"


def default_checkpoint(model: str) -> str | None:
    """The checkpoint folder a SOTER model runs when no --weights is given (its registered default)."""
    from models.registry import UnknownModelError, get_spec, resolve

    try:
        spec = get_spec(model)
    except UnknownModelError:
        return None
    if not spec.default_weights:
        return None
    try:
        folder = Path(resolve(spec.default_weights)())
    except Exception:  # noqa: BLE001 - a plugin's default-weights function: no checkpoint of ours then
        return None
    return folder.name if folder.resolve().parent == CHECKPOINTS else None


# -- statuses -----------------------------------------------------------------------------------
def dataset_base(name: str) -> str:
    """The registry name of a dataset as records write it: every dataset option is dropped
    (``heartrate:channels=RESP+PLETH+II:blocks=4`` is HeartRate, ``mitbih:blocks=6`` is MIT-BIH)."""
    from protocols.datasets import dataset_base_name

    return dataset_base_name(name)


def _path_text(path: tuple[str, ...], reg: Registry, notes: Mapping[str, str]) -> str:
    """``a > b > c (what of c)``: how a corpus member holds the source, the last hop's note beside it."""
    last = path[-1]
    if len(path) == 1:  # in the corpus itself: what of it, as a generated entry's manifest says
        return f"{last}: {notes[last]}" if last in notes else last
    held = reg.sources[path[-2]].holds.get(last, "") if path[-2] in reg.sources else ""
    return " > ".join(path) + (f" ({held})" if held else "")


def overlap(entry: Entry | None, dataset: str, declared: Iterable[str] = (), reg: Registry | None = None) -> Overlap:
    """The status of ``entry``'s model on ``dataset`` (a registered dataset, or a user dataset whose
    manifest ``declared`` source databases), by the rules in the data file's header: a source is found
    in the corpus directly or inside any archive the corpus holds (``[sources.X] holds``)."""
    reg = reg or registry()
    if entry is None:
        return Overlap("unknown", "no entry in the pre-training registry (a plugin model, or weights given "
                                  "with --weights)", REGISTRY_FILE.name, "")
    cite, checked = entry.cite, entry.checked
    if not entry.pretrained:
        return Overlap("no", f"not pre-trained ({entry.data})", cite, checked)
    name = dataset_base(dataset)
    if name in entry.datasets:
        status, reason = entry.datasets[name]
        return Overlap(status, reason, cite, checked)
    spec = reg.datasets.get(name)
    sources = spec.sources if spec is not None else tuple(declared)
    related = spec.related if spec is not None else {}
    reach = reg.reach(entry.corpus)
    hit = [s for s in sources if s in reach]
    if hit:
        what = "; ".join(_path_text(reach[s], reg, entry.corpus_notes) for s in hit)
        return Overlap("yes", f"its corpus includes {what}", cite, checked)
    near = [s for s in related if s in reach]
    if near:
        via = "; ".join(" > ".join(reach[s]) for s in near if len(reach[s]) > 1)
        return Overlap("partial", "; ".join(related[s] for s in near) + (f" (found as {via})" if via else ""),
                       cite, checked)
    if not sources:
        return Overlap("unknown", "a user dataset whose manifest declares no source_database", cite, checked)
    unmatched = [s for s in sources if s not in reg.known_sources()]
    if spec is None and unmatched:
        return Overlap("unknown", f"source database {', '.join(unmatched)} is not one the registry knows", cite,
                       checked)
    read_in_part = [reg.sources[s] for s in reach if s in reg.sources and not reg.sources[s].complete]
    if entry.complete and not read_in_part:
        return Overlap("no", "its documented corpus excludes it", cite, checked)
    why = [entry.unknown_because] if not entry.complete else []
    why += [f"{s.key} documented only in part: {s.unknown_because}" for s in read_in_part]
    return Overlap("unknown", "; ".join(w for w in why if w) or "its corpus is not documented in full", cite, checked)


def model_entry(model: str, checkpoint: str | None = None) -> Entry | None:
    """The registry entry of a registered model name: the one place that resolves a name, so that
    `harness list`, the comparison files and the overlap marks cannot disagree. An adapted entry
    (NAME@MODE) was pre-trained as its base was."""
    from models.adapted import split_name

    reg = registry()
    entry = reg.entry_for(model, checkpoint)
    base = split_name(model)[0]
    if entry is None and base != model:
        entry = reg.entry_for(base, checkpoint)
    return entry


def model_overlap(model: str, dataset: str, checkpoint: str | None = None, declared: Iterable[str] = (),
                  weights: str | None = None) -> Overlap:
    """``model`` on ``dataset``; for a SOTER checkpoint, ``weights`` (the digest a record names) must be
    the checkpoint's own: rows of older weights in that folder were not trained on the recorded corpus."""
    reg = registry()
    entry = model_entry(model, checkpoint)
    if entry is not None and entry.weights and weights and weights != entry.weights:
        return Overlap("unknown", f"computed with weights {weights}, not the {entry.key} weights ({entry.weights}) "
                                  "whose corpus is recorded", entry.cite, entry.checked)
    return overlap(entry, dataset, declared, reg)


def data_line(model: str) -> str:
    """The model's pre-training data in one line (``harness list models``)."""
    entry = model_entry(model)
    if entry is None:
        return "unknown (no entry in models/pretraining_overlap.toml)"
    seen = [d for d in registry().datasets if model_overlap(model, d).may_have_seen]
    flag = f"; may have seen: {', '.join(seen)}" if seen else ""
    return f"{entry.data}{flag} [{entry.cite}; checked {entry.checked}]"
