"""Loading the authors' SOTER checkpoints (Hugging Face ``SII-fkchen/SOTER``) into this model.

Their checkpoint is a transformers folder: ``config.json`` (their ``SoterConfig``) and weights as
safetensors (single or sharded) or a PyTorch ``pytorch_model.bin`` (read with
``torch.load(weights_only=True)``: no code from the file runs).  :func:`convert_config` maps their
configuration onto ours (their release has 12 layers with the channel-dependent layer at index 5;
anything ours cannot express is an error naming the field), :func:`name_pairs` maps every
parameter name.  Their readout ``lm_heads.0.out_layer`` has no bias: ours gets a zero bias, which
is the same function.  Facts about their code are in docs/soter-parity.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from models.soter.config import AUTHORS_HUB_ID, ConfigError, SoterConfig
from models.soter.io import CheckpointError

HUB_ID = AUTHORS_HUB_ID  # defined in config.py, which the registry can import without torch



def name_pairs(cfg: SoterConfig) -> list[tuple[str, str]]:
    """(their parameter name, ours) for every parameter of a model of this config."""
    pairs = [("model.embed_layer.emb_layer.weight", "embed.value.weight"),
             ("model.embed_layer.gate_layer.weight", "embed.gate.weight")]
    for i in range(cfg.num_layers):
        p, q = f"model.layers.{i}.", f"blocks.{i}."
        pairs += [(p + "input_layernorm.weight", q + "attn_norm.weight"),
                  (p + "post_attention_layernorm.weight", q + "moe_norm.weight"),
                  (p + "self_attn.o_proj.weight", q + "attn.o.weight")]
        pairs += [(p + f"self_attn.{x}_proj.{wb}", q + f"attn.{x}.{wb}") for x in "qkv" for wb in ("weight", "bias")]
        pairs += [(p + f"ffn_layer.general_experts.{e}.{w}_proj.weight", q + f"moe.experts.{e}.{w}.weight")
                  for e in range(cfg.num_experts) for w in ("gate", "up", "down")]
        pairs += [(p + f"ffn_layer.shared_expert.{w}_proj.weight", q + f"moe.shared.{w}.weight")
                  for w in ("gate", "up", "down")]
    pairs.append(("model.norm.weight", "norm.weight"))
    # their vector field is Sequential(Linear, SiLU, Linear, SiLU, Linear): Linears at 0, 2, 4
    pairs += [(f"ode_extrapolation_block.ode_func.net.{2 * n}.{wb}", f"decoder.field.layers.{n}.{wb}")
              for n in range(len(cfg.decoder_hidden) + 1) for wb in ("weight", "bias")]
    pairs.append(("lm_heads.0.out_layer.weight", "decoder.readout.weight"))
    return pairs


def convert_config(data: dict[str, Any], time_normalisation: str = "authors") -> SoterConfig:
    """Their config.json -> ours; a setting ours cannot express is a ConfigError naming it.

    ``time_normalisation="authors"`` (default) repeats their float32 CT-RoPE positions, so that
    their weights see the positions they were trained with; ``"official"`` is our default rule.
    """
    def get(key: str, default: Any) -> Any:
        return data.get(key, default)

    layers = int(get("num_hidden_layers", 6))
    heads = int(get("num_attention_heads", 4))
    checks = {
        "num_key_value_heads": (get("num_key_value_heads", None) in (None, heads), "grouped-query attention"),
        "input_size": (get("input_size", 1) == 1, "input_size other than 1"),
        "hidden_act": (get("hidden_act", "silu") == "silu", "an activation other than silu"),
        "ode_func_activation": (get("ode_func_activation", "silu") == "silu", "a decoder activation other than silu"),
        "ode_func_use_time": (get("ode_func_use_time", True) is True, "a vector field without s"),
        "use_dense": (not get("use_dense", False), "dense feed-forward layers"),
        "num_shared_experts": (get("num_shared_experts", 1) == 1, "other than one shared expert"),
        "use_terminal_ode": (get("use_terminal_ode", True), "no ODE decoder"),
        "time_scale": (float(get("time_scale", 1.0)) == 1.0, "time_scale other than 1"),
        "time_aware_rotary": (get("time_aware_rotary", True), "standard (non-CT) RoPE"),
    }
    bad = [f"{k} ({why})" for k, (ok, why) in checks.items() if not ok]
    cd = list(get("cd_layers", [5]))
    if len(cd) > 1:
        bad.append(f"cd_layers {cd} (more than one channel-dependent layer)")
    ci = list(get("ci_layers", [i for i in range(layers) if i not in cd]))
    if sorted(ci + cd) != list(range(layers)):
        bad.append(f"ci_layers {ci} + cd_layers {cd} do not cover the {layers} layers once")
    if bad:
        raise ConfigError("the authors' config sets what this model cannot express: " + "; ".join(bad))
    # their "for_loop" and "prefix_parallel" routers compute the same logits; ours is the fast prefix
    # DFT (tested against the reference loop), whichever they name
    return SoterConfig(
        hidden_size=int(get("hidden_size", 256)), num_heads=heads, intermediate_size=int(get("intermediate_size", 512)),
        num_layers=layers, cd_layer=cd[0] if cd else None, num_experts=int(get("num_experts", 6)),
        top_k=int(get("num_experts_per_tok", 2)), rms_norm_eps=float(get("rms_norm_eps", 1e-6)),
        rope_theta=float(get("rope_theta", 10000)),
        decoder_hidden=tuple(int(d) for d in get("ode_func_hidden_dims", [128, 128])),
        control=int(get("cde_control_dim", 0)) > 0, solver=str(get("ode_solver_method", "dopri5")),
        rtol=float(get("ode_solver_rtol", 1e-6)), atol=float(get("ode_solver_atol", 1e-6)),
        initializer_range=float(get("initializer_range", 0.02)), time_normalisation=time_normalisation,
    )


def convert_state(theirs: dict[str, torch.Tensor], cfg: SoterConfig) -> dict[str, torch.Tensor]:
    """Their state dict -> ours; names left over on either side are a CheckpointError listing them."""
    mapping = dict(name_pairs(cfg))
    unknown = sorted(set(theirs) - set(mapping))
    missing = sorted(set(mapping) - set(theirs))
    if unknown or missing:
        raise CheckpointError("the authors' weights do not match their config: "
                              + "; ".join(f"{label} {names[:3]}{'...' if len(names) > 3 else ''}"
                                          for label, names in (("unexpected", unknown), ("missing", missing)) if names))
    ours = {mapping[k]: v for k, v in theirs.items()}
    w = ours["decoder.readout.weight"]
    ours["decoder.readout.bias"] = torch.zeros(w.shape[0], dtype=w.dtype)  # their head has no bias
    return ours


def to_authors(ours: dict[str, torch.Tensor], cfg: SoterConfig) -> dict[str, torch.Tensor]:
    """Ours -> their names (exporting, tests); only a zero readout bias has a counterpart there."""
    if torch.any(ours["decoder.readout.bias"] != 0):
        raise CheckpointError("the authors' readout has no bias; this model's bias is not zero")
    return {theirs: ours[mine] for theirs, mine in name_pairs(cfg)}


def load_authors_state(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    try:
        if (folder / "model.safetensors").is_file():
            return load_file(str(folder / "model.safetensors"))
        if index.is_file():
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
            state: dict[str, torch.Tensor] = {}
            for shard in shards:
                state.update(load_file(str(folder / shard)))
            return state
        if (folder / "pytorch_model.bin").is_file():
            return torch.load(folder / "pytorch_model.bin", map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise CheckpointError(f"{folder}: a weight file named by the index is missing ({exc})") from exc
    except Exception as exc:  # truncated safetensors, a pickle with code in it ...
        raise CheckpointError(f"{folder}: unreadable weights ({type(exc).__name__}: {exc})") from exc
    raise CheckpointError(f"{folder}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


def from_authors(folder: str | Path):
    """A SoterModel with the authors' weights and their configuration."""
    from models.soter.model import SoterModel

    folder = Path(folder)
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{config_file}: missing (the authors' checkpoint folder holds config.json)")
    try:
        cfg = convert_config(json.loads(config_file.read_text()))
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"{config_file}: not JSON ({exc})") from exc
    except ConfigError as exc:
        raise CheckpointError(f"{config_file}: {exc}") from exc
    raw = load_authors_state(folder)
    held, needed = sum(int(t.numel()) for t in raw.values()), cfg.minimum_parameters()
    if needed > held:  # before the model is built: an oversized config costs no build
        raise CheckpointError(f"{folder}: weights do not match {config_file}: the config needs at least "
                              f"{needed:,} parameters, the weights hold {held:,}")
    model = SoterModel(cfg)
    state = convert_state(raw, cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    wrong = sorted(k for k in set(expected) & set(state) if expected[k].shape != state[k].shape)
    if missing or wrong:
        raise CheckpointError(f"{folder}: weights do not match {config_file}: missing {missing[:3]} wrong shape {wrong[:3]}")
    model.load_state_dict(state)
    return model.eval()
