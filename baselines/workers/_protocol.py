"""The worker side of the isolated-environment protocol (stdlib + numpy only).

A worker runs under another virtual environment's Python, so it must not import this project:
it is started as a script and imports this file from its own folder. Control messages are one
JSON object per line; arrays travel as ``.npy`` files in a directory both sides can read, loaded
with ``allow_pickle=False`` so nothing executable ever crosses the boundary.

Protocol (the parent writes to the worker's stdin, the worker answers on the original stdout):

1. ``{"op": "load", "weights": ..., "options": {...}}`` -> ``{"ok": true, "info": {...}}``;
2. ``{"op": OP, "dir": DIR, "inputs": {NAME: FILE}, "args": {...}}`` -> the worker reads
   ``DIR/FILE`` for each input, writes its outputs in DIR and answers
   ``{"ok": true, "outputs": {NAME: FILE}}``;
3. any failure -> ``{"ok": false, "error": "...", "traceback": "..."}`` (the worker keeps serving);
4. end of stdin -> the worker exits.

``forecast``: inputs ``values`` and ``mask`` [B, C, T]; args ``horizon``, ``seed`` and, when the
harness asks for quantiles, ``levels`` (a list of floats in (0, 1)); outputs ``forecast`` [B, C, H]
and, only when ``levels`` was given, ``quantiles`` [B, C, H, Q] in the order of ``levels``. Both come
from the same pass (the same sample paths): asking for quantiles never changes the point forecast.
A worker whose model gives quantiles says which levels in its load info, ``quantile_levels``: a list
(the model's own levels) or ``"any"`` (empirical quantiles of sample paths).

Anything a library prints goes to stderr: the protocol channel is a private copy of stdout.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

Handler = Callable[[dict[str, np.ndarray], dict[str, Any]], dict[str, np.ndarray]]


def asked_levels(args: dict[str, Any]) -> list[float] | None:
    """The quantile levels a ``forecast`` request asks for (None: point forecast only)."""
    levels = args.get("levels")
    if levels is None:
        return None
    levels = [float(q) for q in levels]
    if not all(0.0 < q < 1.0 for q in levels):
        raise ValueError(f"quantile levels must lie in (0, 1), got {levels}")
    return levels


def native_indices(native: list[float], levels: list[float], model: str) -> list[int]:
    """Positions of ``levels`` among a model's own quantile levels; other levels are an error."""
    own = [round(float(q), 6) for q in native]
    missing = [q for q in levels if round(q, 6) not in own]
    if missing:
        raise ValueError(f"{model} forecasts the quantiles {own}, not {missing}")
    return [own.index(round(q, 6)) for q in levels]


def sample_quantiles(samples: np.ndarray, levels: list[float], axis: int) -> np.ndarray:
    """Empirical quantiles (numpy's linear interpolation) of sample paths over ``axis``, levels last."""
    out = np.quantile(np.asarray(samples, dtype=np.float64), levels, axis=axis)  # levels first
    return np.moveaxis(out, 0, -1)


def carry_forward(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Unobserved points of [B, C, T] filled with the last observation before them (the first observation
    backwards; zeros for a row with none): the harness's ``fill_prefix``, for models that take no mask."""
    values = np.asarray(values, dtype=np.float64)
    mask = np.asarray(mask, dtype=bool)
    t = values.shape[-1]
    idx = np.where(mask, np.arange(t), -1)
    last = np.maximum.accumulate(idx, axis=-1)
    first = np.argmax(mask, axis=-1)[..., None]
    filled = np.take_along_axis(values, np.where(last < 0, first, last), axis=-1)
    return np.where(mask.any(axis=-1, keepdims=True), filled, 0.0)


# (rtol, atol) a worker declares (load info ``batch_tolerance``) when it forecasts several rows per call: each row
# draws exactly its own paths, but the batch's float32 arithmetic rounds differently from a lone row's (a tiny
# uni2ts Moirai-MoE: at most 8.9e-6 relative, 4.8e-7 absolute after two patches), declared with margin
BATCHED_ROWS_TOLERANCE = (1e-4, 1e-5)


class RowStreamError(RuntimeError):
    """A random draw of a batched call whose rows cannot be told apart: refused rather than drawn unlike a lone row."""


def row_streams(rows: int, seed: int, outer: "int | Callable[[str, int | None], int]" = 1):
    """A context in which every random draw of a batched forward is split by row, each row's part drawn from a
    generator of its own seeded with ``seed``: a row gets exactly the numbers it drew when forecast alone after
    ``torch.manual_seed(seed)``, whatever else shares the call, so a batch costs one forward and changes no row.

    The caller states how rows are laid out in every draw: each random tensor, flattened, is ``[outer, rows,
    inner]`` and row r's part is ``[:, r, :]`` (``outer`` 1: rows in blocks, as ``repeat_interleave`` lays out
    sample paths; ``outer`` S: sample-major, as ``repeat(S, 1)`` does); a callable gives it per draw from the
    operation's name and, for ``multinomial``, its draws per distribution (None for the others). A draw that does
    not divide so, or a random operation not handled here, raises :class:`RowStreamError`.
    """
    if rows == 1:  # a lone row draws from the global generator the caller seeded: nothing to split
        return contextlib.nullcontext()
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    generators = [torch.Generator().manual_seed(int(seed)) for _ in range(rows)]

    def _random(packet) -> bool:  # an operation with a generator in any overload draws (randn.default names none)
        if packet not in randomness:
            randomness[packet] = any(a.name == "generator" for o in packet.overloads()
                                     for a in getattr(packet, o)._schema.arguments)
        return randomness[packet]

    randomness: dict = {}

    def parts(numel: int, func, draws: int | None = None) -> tuple[int, int]:
        """(outer, inner) of a draw of ``numel`` values (distributions, for multinomial)."""
        n = outer(func.overloadpacket.__name__, draws) if callable(outer) else outer
        if numel % (n * rows):
            raise RowStreamError(f"{func}: {numel} values do not split into {n} x {rows} rows")
        return n, numel // (n * rows)

    def elementwise(func, params, out_dtype, extra, kwargs):
        """Draws with per-value parameters (``params``: a tensor of the draw's shape, or None: a plain fill)."""
        shape = params.shape if params is not None else extra.pop("shape")
        numel = int(torch.Size(shape).numel())
        lead, inner = parts(numel, func)
        out = torch.empty((lead, rows, inner), dtype=out_dtype)
        flat = None if params is None else params.reshape(lead, rows, inner)
        for r, gen in enumerate(generators):
            if flat is None:
                piece = torch.empty(lead * inner, dtype=out_dtype)
                out[:, r] = func(piece, *extra.get("args", ()), generator=gen, **kwargs).view(lead, inner)
            else:
                out[:, r] = func(flat[:, r].reshape(-1).contiguous(), generator=gen, **kwargs).view(lead, inner)
        return out.reshape(shape)

    class Streams(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if kwargs.get("generator") is not None or not _random(func.overloadpacket):
                return func(*args, **kwargs)
            kwargs.pop("generator", None)
            name = func.overloadpacket.__name__
            if name in ("randn", "rand") and len(args) == 1:  # factories: a fill of the asked shape
                fill = torch.ops.aten.normal_.default if name == "randn" else torch.ops.aten.uniform_.default
                dtype = kwargs.get("dtype") or torch.get_default_dtype()
                return elementwise(fill, None, dtype, {"shape": tuple(args[0])}, {})
            if name in ("randn_like", "rand_like") and len(args) == 1:
                fill = torch.ops.aten.normal_.default if name == "randn_like" else torch.ops.aten.uniform_.default
                return elementwise(fill, None, kwargs.get("dtype") or args[0].dtype, {"shape": tuple(args[0].shape)},
                                   {})
            if name in ("normal_", "uniform_", "exponential_") and args[0].is_contiguous():  # in place
                target = args[0]
                target.copy_(elementwise(func, None, target.dtype, {"shape": tuple(target.shape), "args": args[1:]},
                                         kwargs))
                return target
            if name in ("_standard_gamma", "poisson", "bernoulli") and len(args) == 1:
                return elementwise(func, args[0], args[0].dtype, {}, kwargs)
            if name == "normal" and len(args) == 2 and all(isinstance(a, torch.Tensor) for a in args):
                mean, std = torch.broadcast_tensors(*args)
                both = torch.stack([mean.contiguous(), std.contiguous()])
                lead, inner = parts(mean.numel(), func)
                out = torch.empty((lead, rows, inner), dtype=mean.dtype)
                flat = both.reshape(2, lead, rows, inner)
                for r, gen in enumerate(generators):
                    out[:, r] = func(flat[0, :, r].reshape(-1), flat[1, :, r].reshape(-1),
                                     generator=gen).view(lead, inner)
                return out.reshape(mean.shape)
            if name == "multinomial":  # one row of draws per distribution: the distributions are split by row
                probs, n = args[0], args[1]
                k = probs.shape[-1]
                lead, inner = parts(probs.numel() // k, func, int(n))
                flat = probs.reshape(lead, rows, inner, k)
                out = torch.empty((lead, rows, inner, n), dtype=torch.long)
                for r, gen in enumerate(generators):
                    out[:, r] = func(flat[:, r].reshape(-1, k), *args[1:], generator=gen, **kwargs).view(lead, inner, n)
                return out.reshape(*probs.shape[:-1], n)
            raise RowStreamError(f"{func}: a random operation that row streams do not split (one row at a time "
                                 "instead: option batch 1)")

    return Streams()


def serve(load: Callable[[str | None, dict[str, Any]], tuple[dict[str, Handler], dict[str, Any]]]) -> None:
    """Answer requests until stdin closes.

    ``load(weights, options)`` builds the model once and returns the operations it serves
    (name -> handler taking input arrays and arguments, returning output arrays) and the facts
    to record beside every result.
    """
    channel = os.fdopen(os.dup(1), "w", buffering=1)  # the protocol's own stdout
    os.dup2(2, 1)  # prints from libraries land on stderr, never in the protocol
    sys.stdout = sys.stderr
    handlers: dict[str, Handler] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            op = request.get("op")
            if op == "load":
                handlers, info = load(request.get("weights"), dict(request.get("options") or {}))
                reply: dict[str, Any] = {"ok": True, "info": info, "ops": sorted(handlers)}
            elif op in handlers:
                folder = Path(request["dir"])
                inputs = {name: np.load(folder / file, allow_pickle=False)
                          for name, file in request.get("inputs", {}).items()}
                outputs = handlers[op](inputs, dict(request.get("args") or {}))
                files = {}
                for name, array in outputs.items():
                    files[name] = f"out-{name}.npy"
                    np.save(folder / files[name], np.asarray(array), allow_pickle=False)
                reply = {"ok": True, "outputs": files}
            else:
                reply = {"ok": False, "error": f"unknown operation {op!r} (serves {sorted(handlers) or 'load only'})"}
        except Exception as exc:  # reported to the parent, which raises it with the model's name
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        channel.write(json.dumps(reply) + "\n")
        channel.flush()
