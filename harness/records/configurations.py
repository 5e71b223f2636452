"""One table row per configuration: which rows a model's number may pool, and what to call it.

A row's configuration is its model and the identity the runner stores in ``model_info``
(:data:`IDENTITY`: the digest of its weights and options, which is also part of the row key, the
options, the weights' digest and the digest of its code; docs/records.md). Rows of one model under two
configurations (``--model-option``, ``--weights``, the default checkpoint changed) are two models for
every table, figure and statistic: :func:`label_configurations` names each after what tells it apart
(``ses [alpha=0.9]``), and a model with one configuration keeps its name.

Rows written before the identity was stored are matched to a stored configuration by their key (the
key is a hash of the cell and the identity digest), else grouped by their ``model_info`` (the model's
own description: for SOTER, its checkpoint's digest).
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from harness.records.keys import KEY_FIELDS, row_key
from harness.registry.versions import protocol_version, task_version, unversioned, version_token

if TYPE_CHECKING:
    import pandas as pd

SCORED = "predictions file"  # the identity's ``source`` of rows scored from a file (``harness score``)
IDENTITY = "identity"  # model_info's entry that the runner writes (the rest is the model's describe())
# model_info entries that do not tell configurations of rows written before IDENTITY apart
_NOT_CONFIGURATION = ("source", "checkpoint")


def parse_info(text: object) -> dict[str, Any]:
    """A row's ``model_info`` as a dict ({} when empty or not JSON)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def row_identity(text: object) -> dict[str, Any] | None:
    """The identity the runner stored in a row's ``model_info`` (None: written before it was stored)."""
    value = parse_info(text).get(IDENTITY)
    return value if isinstance(value, dict) else None


def with_identity(text: object, identity: dict[str, Any]) -> str:
    """``model_info`` with the runner's identity entry added (the model's own entries unchanged)."""
    return json.dumps({**parse_info(text), IDENTITY: identity}, sort_keys=True, default=str)


def recorded_code(text: object) -> str | None:
    """The code digest stored with a row (None: written before it was stored): provenance, it decides nothing."""
    identity = row_identity(text)
    code = identity.get("code") if identity else None
    return code if isinstance(code, str) and code else None


def recorded_revision(text: object) -> int:
    """The model revision a row was computed with (``ModelSpec.revision``; rows written before it was recorded:
    1, the revision every model had then)."""
    identity = row_identity(text)
    value = identity.get("revision") if identity else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


def _legacy_description(info: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in info.items() if k not in _NOT_CONFIGURATION and k != IDENTITY}
    if out.get("device") == "cpu":  # written only by later versions, for the same configuration
        out.pop("device")
    return out


def _key_fields(row: dict[str, Any]) -> dict[str, Any]:
    fields = {f: row[f] for f in KEY_FIELDS}
    fields["seed"] = int(fields["seed"]) if str(fields["seed"]).lstrip("-").isdigit() else fields["seed"]
    return fields


def label_configurations(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``model`` naming each row's configuration (the registry name when the model has
    one configuration in the frame), the registry name in ``model_name`` and a configuration id in
    ``configuration``; rows of one configuration in one cell are reduced to the one written last."""
    if frame.empty:
        return frame.assign(model_name=frame["model"], configuration="", dataset_name=frame["dataset"])
    rows = frame.to_dict("records")
    ids: dict[str, set[str]] = {}
    infos = [parse_info(r.get("model_info")) for r in rows]
    for r, info in zip(rows, infos):
        identity = info.get(IDENTITY)
        if isinstance(identity, dict):
            ids.setdefault(r["model"], set()).add(str(identity.get("model_id", "")))
    configs, descriptions = [], {}
    for r, info in zip(rows, infos):
        identity = info.get(IDENTITY)
        if isinstance(identity, dict):
            config = "id:" + str(identity.get("model_id", ""))
            description = {**identity.get("options", {}), **({"weights": identity["weights"]}
                                                               if identity.get("weights") else {})}
        else:
            fields = _key_fields(r)
            match = next((m for m in sorted(ids.get(r["model"], ())) if row_key(m, **fields) == r["key"]), None)
            if match is not None:
                config, description = "id:" + match, None
            else:
                description = _legacy_description(info)
                config = "info:" + json.dumps(description, sort_keys=True, default=str) if description else "info:"
        configs.append(config)
        if description is not None and (r["model"], config) not in descriptions:
            descriptions[(r["model"], config)] = description
    # rows of a configuration written before model_info held anything (error rows): the model's only other one
    per_model: dict[str, list[str]] = {}
    for r, config in zip(rows, configs):
        per_model.setdefault(r["model"], [])
        if config not in per_model[r["model"]]:
            per_model[r["model"]].append(config)
    for model, found in per_model.items():
        if "info:" in found and len(found) == 2:
            other = next(c for c in found if c != "info:")
            configs = [other if (r["model"] == model and c == "info:") else c for r, c in zip(rows, configs)]
            found.remove("info:")
    labels = {}
    for model, found in per_model.items():
        labels.update(_labels(model, found, {c: descriptions.get((model, c), {}) for c in found}))
    out = frame.assign(model_name=frame["model"], configuration=configs)
    out["model"] = [labels[(r["model"], c)] for r, c in zip(rows, configs)]
    return label_samplings(latest_per_configuration(out))


SAMPLING_FREE = ("seed=",)  # protocol parts that vary within one configuration (forecasting's run seed: a replicate)


def sampling_of(protocol: object) -> tuple[str, ...]:
    """What of a row's ``protocol`` decides its windows beyond the replicate: every part (``maxw=16``,
    ``stride=None``, ``len=96``, ``data=...``) but the run seed."""
    return tuple(p for p in str(protocol).split(";") if p and not p.startswith(SAMPLING_FREE))


def records_name(label: str) -> str:
    """The records' name of a dataset label: ``toy`` for ``toy [maxw=4]`` (:func:`label_samplings`)."""
    text = str(label)
    return text[: text.rindex(" [")] if text.endswith("]") and " [" in text else text


def label_samplings(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``dataset`` naming each sampling configuration of a dataset when a task's rows of it were
    drawn under several (two runs with other ``--max-windows-per-subject`` into one ``--out``, a dataset whose
    content changed): ``toy [maxw=4]`` and ``toy [maxw=8]``, so that no table cell, figure or statistic pools
    rows of two samplings; the records' name stays in ``dataset_name``. A dataset sampled one way keeps its name."""
    out = frame.assign(dataset_name=frame["dataset"])
    if frame.empty or "protocol" not in frame:
        return out
    samplings = _family_free(frame, [sampling_of(unversioned(t, p)) for t, p in zip(frame["task"], frame["protocol"])])
    found: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for task, dataset, sampling in zip(frame["task"], frame["dataset"], samplings):
        kinds = found.setdefault((task, dataset), [])
        if sampling not in kinds:
            kinds.append(sampling)
    names: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for (task, dataset), kinds in found.items():
        if len(kinds) < 2:
            continue
        parts = [dict(p.partition("=")[::2] for p in kind) for kind in kinds]
        differing = [k for k in dict.fromkeys(k for d in parts for k in d)
                     if len({d.get(k, "\0absent") for d in parts}) > 1]
        for kind, d in zip(kinds, parts):
            shown = ", ".join(f"{k}={_short(d[k], 12)}" if d[k] else k for k in differing if k in d)
            # the one sampling that lacks every differing part (the paper's noise beside artefacts) keeps the name
            names[(task, dataset, kind)] = f"{dataset} [{shown}]" if shown else dataset
    if names:
        out["dataset"] = [names.get((t, d, s), d) for t, d, s in zip(frame["task"], frame["dataset"], samplings)]
    return out


FAMILY_PARTS = ("artefact=", "mask=")  # protocol parts that the condition names too (motion=1, contiguous-... 25%)


def _family_free(frame: pd.DataFrame, samplings: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """``samplings`` without the parts a condition names (an artefact's or a mask's generator): rows of two
    conditions never share a table cell, so those parts tell datasets apart only where one condition holds rows
    of two generators (issue #51: ``motion=1`` of issue #31's draw, ``motion-v1``, beside today's ``motion-v2``)."""
    free = [tuple(p for p in s if not p.startswith(FAMILY_PARTS)) for s in samplings]
    seen: dict[tuple[str, str, str], set[tuple[str, ...]]] = {}
    for key, s in zip(zip(frame["task"], frame["dataset"], frame["condition"]), samplings):
        seen.setdefault(key, set()).add(s)
    clash = {(t, d) for (t, d, _), found in seen.items() if len(found) > 1}
    return [s if (t, d) in clash else f for t, d, s, f in zip(frame["task"], frame["dataset"], samplings, free)]


def _labels(model: str, configs: list[str], descriptions: dict[str, dict[str, Any]]) -> dict[tuple[str, str], str]:
    if len(configs) == 1:
        return {(model, configs[0]): model}
    keys = sorted({k for d in descriptions.values() for k in d})
    differing = [k for k in keys if len({json.dumps(d.get(k, "\0absent"), sort_keys=True, default=str)
                                         for d in descriptions.values()}) > 1]
    out: dict[tuple[str, str], str] = {}
    seen: dict[str, int] = {}
    for config in configs:
        d = descriptions[config]
        parts = [f"{k}={_short(d[k])}" for k in differing if k in d]
        label = f"{model} [{', '.join(parts)}]" if parts else model
        seen[label] = seen.get(label, 0) + 1
        out[(model, config)] = label if seen[label] == 1 else f"{label} #{seen[label]}"
    return out


def _short(value: Any, width: int = 16) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def latest_per_configuration(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and configuration (``KEY_FIELDS`` with ``model`` the configuration's name): the
    one written last (``finished_at``, then file order). Two keys of one configuration in one cell are
    rows written under an earlier key scheme."""
    order = frame.reset_index(drop=True).assign(_pos=lambda f: range(len(f)))
    order = order.sort_values(["finished_at", "_pos"], kind="stable")
    return order.drop_duplicates(list(KEY_FIELDS), keep="last").sort_values("_pos").drop(columns="_pos") \
        .reset_index(drop=True)


# -- versions and stale weights ------------------------------------------------------------------
@lru_cache(maxsize=256)
def current_revision(model: str) -> int | None:
    """The revision ``model`` computes with now (``ModelSpec.revision``); None: not registered (rows scored from a
    file, a plugin not loaded), whose rows cannot be compared and are kept."""
    from models.registry import UnknownModelError, get_spec

    try:
        return get_spec(model).revision
    except (UnknownModelError, KeyError, ValueError, ImportError, RuntimeError):
        return None


@lru_cache(maxsize=64)
def current_task_version(task: str) -> int:
    """The declared version of ``task`` (a plugin task not registered in this process: its table's default)."""
    from harness.registry.tasks import UnknownTaskError, get_task

    try:
        return task_version(get_task(task))
    except (UnknownTaskError, ImportError):
        return task_version(task)


def of_versions(task: str, protocol: str, info: object, version: int, revision: int | None) -> bool:
    """Whether a row (its task, ``protocol`` and ``model_info``) was computed under ``version`` of its task and
    ``revision`` of its model (None: a model not registered, whose revision cannot be compared)."""
    return protocol_version(task, protocol) == version and (revision is None or recorded_revision(info) == revision)


def out_of_date(frame: pd.DataFrame) -> pd.Series:
    """Which rows were computed under another version of their task or another revision of their model than
    the current ones (``harness.registry.versions``): a run recomputes them, readers leave them out."""
    import pandas as pd

    if frame.empty:
        return pd.Series([], dtype=bool, index=frame.index)
    infos = frame["model_info"] if "model_info" in frame else pd.Series([""] * len(frame), index=frame.index)
    flags = [not of_versions(str(task), str(protocol), info, current_task_version(str(task)),
                             current_revision(str(model)))
             for task, protocol, model, info in zip(frame["task"], frame["protocol"], frame["model"], infos)]
    return pd.Series(flags, index=frame.index, dtype=bool)


def old_version_counts(rows: pd.DataFrame) -> dict[str, int]:
    """Rows of older versions (those :func:`out_of_date` found) counted by what changed: ``forecasting-v1 (now
    v2)``, ``soter revision 1 (now 2)``."""
    counts: dict[str, int] = {}
    for task, protocol, model, info in zip(rows["task"], rows["protocol"], rows["model"], rows["model_info"]):
        version, now = protocol_version(str(task), str(protocol)), current_task_version(str(task))
        what = (f"{version_token(str(task), version)} (now v{now})" if version != now else
                f"{model} revision {recorded_revision(info)} (now {current_revision(str(model))})")
        counts[what] = counts.get(what, 0) + 1
    return counts


def older_versions_note(rows: pd.DataFrame) -> str:
    """What a folder holds beyond the current versions (the rows :func:`out_of_date` found), in one line."""
    if rows.empty:
        return ""
    listed = "; ".join(f"{n} rows of {what}" for what, n in old_version_counts(rows).items())
    return (f"not shown: {listed}, computed under versions that have changed since (rerun the same command to "
            f"recompute them; `python -m harness stale` lists such folders)")


@lru_cache(maxsize=64)
def current_default_weights(model: str) -> tuple[str, str] | None:
    """(the digest, the folder name) of the weights ``model`` loads when given none (None: it has none)."""
    from models.registry import get_spec

    folder = default_weights_folder(model)
    if folder is None:
        return None
    digest = get_spec(model).identity_parts().get("weights")
    return (str(digest), folder.name) if digest else None


def default_weights_folder(model: str):
    """The folder of the checkpoint ``model`` loads when given none (a ``Path``; None: it has none, or the model
    is not registered)."""
    from pathlib import Path

    from models.registry import UnknownModelError, get_spec, resolve

    try:
        spec = get_spec(model)
    except UnknownModelError:
        return None
    return None if spec.default_weights is None else Path(str(resolve(spec.default_weights)()))


def code_problem(rows: pd.DataFrame, task: str) -> str:
    """Why the rows behind one table entry are not all current ("" when they are): "stale" when they were computed
    under another task version or model revision (readers leave such rows out before; this names any that reach
    a table another way), or with weights other than the model's default checkpoint of now. The code digest each
    row records is provenance: rows of two code versions of one task version are one result
    (``harness.registry.versions``)."""
    infos = [parse_info(i) for i in rows["model_info"]] if "model_info" in rows else []
    identities = [i.get(IDENTITY) if isinstance(i.get(IDENTITY), dict) else None for i in infos]
    if {"task", "protocol", "model_info"} <= set(rows.columns) and len(rows):
        named = rows.assign(model=rows["model_name"]) if "model_name" in rows else rows
        if out_of_date(named).any():
            return "stale: computed under a task version or model revision that has changed since (rerun the same " \
                   "command to recompute)"
    names = set(rows["model_name"]) if "model_name" in rows else set(rows["model"])
    for name in names:
        default = current_default_weights(str(name))
        if default is None:
            continue
        # rows of the default checkpoint: stored in the identity, or (rows written before it) in SOTER's own
        # description of the checkpoint it loaded (its folder's name and digest)
        used = {i.get("weights") for i in identities if i and i.get("weights_default")}
        used |= {info.get("checkpoint_sha256") for info, i in zip(infos, identities) if i is None
                 and info.get("checkpoint") == default[1] and info.get("checkpoint_sha256")}
        if used and used != {default[0]}:
            return (f"stale: computed with weights {', '.join(sorted(map(str, used)))}; the default checkpoint "
                    f"({default[1]}) is now {default[0]} (rerun the same command to compute it)")
    return ""


def scored_notes(rows: pd.DataFrame, models) -> tuple[str, ...]:
    """A note per table row scored from a predictions file: made outside the harness, named by the file's digest."""
    notes = []
    for model in models:
        ids = [row_identity(i) for i in rows.loc[rows["model"] == model, "model_info"]] if "model_info" in rows else []
        digests = sorted({str(i.get("model_id")) for i in ids if i and i.get("source") == SCORED})
        if digests:
            notes.append(f"{model}: forecasts made outside the harness, scored from a predictions file "
                         f"(sha256 {', '.join(digests)}...) by harness score")
    return tuple(notes)
