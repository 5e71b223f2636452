"""save_pretrained / from_pretrained: config.json + safetensors weights (sharded when large).

Layout (as Hugging Face uses it): ``config.json``; ``model.safetensors``, or shards
``model-00001-of-0000N.safetensors`` with ``model.safetensors.index.json`` mapping every
tensor to its shard.  A missing file, a truncated shard, or weights that do not fit the config
are errors naming the file.  A ``SHA256SUMS`` file beside them (the shipped checkpoint has one)
is verified on every load.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from models.soter.config import ConfigError, SoterConfig
from models.soter.model import SoterModel
from protocols.digests import file_digest

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"


class CheckpointError(RuntimeError):
    pass


def save_pretrained(model: SoterModel, path: str | Path, max_shard_bytes: int = 15 * 2**20,
                    state: dict[str, torch.Tensor] | None = None) -> Path:
    """``state`` overrides the model's own state dict (a sharded model's gathered full state)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    model.config.save(path / "config.json")
    state = {k: v.detach().contiguous().cpu() for k, v in (state if state is not None else model.state_dict()).items()}
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, tensor in state.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    for stale in list(path.glob("model*.safetensors")) + [path / INDEX]:
        stale.unlink(missing_ok=True)
    if len(shards) == 1:
        save_file(shards[0], str(path / SINGLE), metadata={"format": "pt"})
        return path
    weight_map = {}
    for i, shard in enumerate(shards, start=1):
        fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, str(path / fname), metadata={"format": "pt"})
        weight_map.update({name: fname for name in shard})
    (path / INDEX).write_text(json.dumps({"metadata": {"total_size": sum(
        t.numel() * t.element_size() for t in state.values())}, "weight_map": weight_map}, indent=2))
    return path


CHECKSUMS = "SHA256SUMS"


def write_checksums(path: str | Path) -> Path:
    """``SHA256SUMS`` (``sha256sum`` format) over config.json, the weights and the shard index."""
    path = Path(path)
    files = sorted(f for f in path.iterdir() if f.name == "config.json" or f.name == INDEX
                   or (f.name.startswith("model") and f.suffix == ".safetensors"))
    out = path / CHECKSUMS
    out.write_text("".join(f"{file_digest(f)}  {f.name}\n" for f in files))
    return out


def verify_checksums(path: str | Path) -> None:
    """Every file listed in ``SHA256SUMS`` is present and unchanged; errors name the file."""
    path = Path(path)
    listed = (path / CHECKSUMS).read_text().splitlines()
    if not listed:
        raise CheckpointError(f"{path / CHECKSUMS}: empty checksum list")
    for line in listed:
        digest, _, name = line.partition("  ")
        if not name or "/" in name or name.startswith(".") or len(digest) != 64:
            raise CheckpointError(f"{path / CHECKSUMS}: malformed line {line!r}")
        if not (path / name).is_file():
            raise CheckpointError(f"{path / name}: listed in {CHECKSUMS} but missing")
        if file_digest(path / name) != digest:
            raise CheckpointError(f"{path / name}: SHA-256 does not match {CHECKSUMS} (corrupt or modified file)")


def _read(file: Path) -> dict[str, torch.Tensor]:
    if not file.is_file():
        raise CheckpointError(f"{file}: missing weight file")
    try:
        return load_file(str(file))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{file}: unreadable or truncated safetensors file ({exc})") from exc


def load_state(path: Path) -> dict[str, torch.Tensor]:
    if (path / INDEX).is_file():
        try:
            index = json.loads((path / INDEX).read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError) as exc:
            raise CheckpointError(f"{path / INDEX}: malformed shard index ({exc})") from exc
        state: dict[str, torch.Tensor] = {}
        for fname in sorted(set(index.values())):
            state.update(_read(path / fname))
        missing = sorted(set(index) - set(state))
        if missing:
            raise CheckpointError(f"{path / INDEX}: tensors listed but absent from the shards: {missing[:5]}")
        return state
    return _read(path / SINGLE)


def stored_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape from the safetensors headers (no tensor is read)."""
    files = [path / SINGLE]
    if (path / INDEX).is_file():
        try:
            files = [path / f for f in sorted(set(json.loads((path / INDEX).read_text())["weight_map"].values()))]
        except (json.JSONDecodeError, KeyError, AttributeError) as exc:
            raise CheckpointError(f"{path / INDEX}: malformed shard index ({exc})") from exc
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        if not file.is_file():
            raise CheckpointError(f"{file}: missing weight file")
        try:
            with safe_open(str(file), framework="pt") as fh:
                shapes.update({k: tuple(fh.get_slice(k).get_shape()) for k in fh.keys()})
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: unreadable or truncated safetensors file ({exc})") from exc
    return shapes


def _check_shapes(path: Path, expected: dict[str, tuple[int, ...]], stored: dict[str, tuple[int, ...]]) -> None:
    missing = sorted(set(expected) - set(stored))
    unexpected = sorted(set(stored) - set(expected))
    wrong = sorted(k for k in set(expected) & set(stored) if tuple(expected[k]) != tuple(stored[k]))
    if missing or unexpected or wrong:
        raise CheckpointError(
            f"{path}: weights do not match {path / 'config.json'}: "
            + "; ".join(f"{label} {names[:3]}{'...' if len(names) > 3 else ''}" for label, names in
                        (("missing", missing), ("unexpected", unexpected), ("wrong shape", wrong)) if names))


def from_pretrained(path: str | Path, map_location: str = "cpu") -> SoterModel:
    path = Path(path)
    if not (path / "config.json").is_file():
        raise CheckpointError(f"{path / 'config.json'}: missing SOTER config")
    if (path / CHECKSUMS).is_file():
        verify_checksums(path)
    try:
        cfg = SoterConfig.load(path / "config.json")
    except ConfigError as exc:
        raise CheckpointError(str(exc)) from exc
    # the config against the weights' headers before their tensors are read: first its size from the numbers alone
    # (building an oversized model takes minutes even without memory), then every shape of the model built (past
    # the size check it is about the weights' size; on the meta device its initialisation costs a second of imports)
    stored = stored_shapes(path)
    held, needed = sum(math.prod(shape) for shape in stored.values()), cfg.minimum_parameters()
    if needed > held:
        raise CheckpointError(f"{path}: weights do not match {path / 'config.json'}: the config needs at least "
                              f"{needed:,} parameters, the weights hold {held:,}")
    model = SoterModel(cfg)
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    _check_shapes(path, shapes, stored)
    state = load_state(path)
    _check_shapes(path, shapes, {k: tuple(v.shape) for k, v in state.items()})
    model.load_state_dict(state)
    return model.to(map_location).eval()
