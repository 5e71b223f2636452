"""Baselines whose libraries cannot live beside this project run in their own virtual environment.

MOMENT (``momentfm`` pins transformers 4.33.3 and numpy 1.25.2), Moirai (``uni2ts`` pins
torch<2.5), TTM (``granite-tsfm`` 0.3.2 pins transformers 4.56.0) and TimesFM 1.0/2.0 (their PyTorch
classes exist only in ``timesfm`` 1.x) conflict with the main environment and with each other. Each gets a virtual
environment of its own, created on first use under ``$SOTER_BENCH_CACHE/envs`` from its pinned
requirements (``baselines/envs/NAME.txt``) under the main environment's torch release, and a
worker script (``baselines/workers/``) that loads the model there and serves it over a small
protocol (``baselines/workers/_protocol.py``): JSON control lines on a pipe, arrays as ``.npy``
files loaded with ``allow_pickle=False``, so nothing executable crosses the boundary.

To the harness such a model is an ordinary :class:`protocols.interface.Model`
(:class:`WorkerModel`): same capabilities, ``forecast``/``embed`` and ``describe()``. Docs:
docs/isolated-environments.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from baselines.checkout import CodeSource, find_checkout
from baselines.foundation import CARDS, Card, check as check_weights, resolve_weights
from models.registry import NEEDS_CODE, NEEDS_ENVIRONMENT, NEEDS_WEIGHTS, ModelUnavailableError, Unavailable
from protocols.cache import cache_dir
from protocols.interface import Capabilities, Model, SeriesBatch, quantile_indices

ENVS_DIR = Path(__file__).with_name("envs")
WORKERS_DIR = Path(__file__).with_name("workers")
# the worker scripts (run as processes, never imported) and the pinned requirements of their environments: named
# here so that every row they compute has them in its code digest (harness.records.code_identity reads this
# assignment from the source)
RUNS_FILES = ("workers/*.py", "envs/*.txt")
READY_MARKER = ".soter-bench-ready"  # written only after a complete install and a passing import check
STDERR_TAIL = 3000  # characters of a worker's stderr quoted in errors


class EnvironmentCreationError(ModelUnavailableError):
    """An isolated environment could not be created (pip failed, no network); says where the log is."""


class WorkerError(RuntimeError):
    """A worker failed or broke the protocol; names the model and quotes the worker's stderr."""


@dataclass(frozen=True)
class EnvSpec:
    """One isolated environment: pinned requirements and the import that proves it works."""

    name: str
    requirements: str  # file in baselines/envs, installed with ``-c <torch pin> -r``
    check: str  # Python code run by the environment's interpreter after installing
    no_deps: str | None = None  # file in baselines/envs installed afterwards with ``--no-deps``

    def files(self) -> tuple[Path, ...]:
        return tuple(ENVS_DIR / f for f in (self.requirements, self.no_deps) if f)

    def key(self) -> str:
        """Changes whenever what would be installed changes, so a new pin gives a new environment."""
        h = hashlib.sha256()
        for part in (*(p.read_bytes() for p in self.files()), torch_pin().encode(), self.check.encode(),
                     sys.version.split()[0].encode()):
            h.update(part + b"\0")
        return h.hexdigest()[:12]

    def root(self) -> Path:
        return cache_dir() / "envs" / f"{self.name}-{self.key()}"


ENVS: dict[str, EnvSpec] = {
    "moment": EnvSpec("moment", "moment.txt", check="import momentfm"),
    "moirai": EnvSpec("moirai", "moirai.txt", no_deps="moirai.no-deps.txt",
                      check="from uni2ts.model.moirai_moe import MoiraiMoEForecast; "
                            "from uni2ts.model.moirai2 import Moirai2Forecast"),
    # Lag-Llama's own code is not installed: it comes from the user's checkout (see lag_llama_code)
    "lag-llama": EnvSpec("lag-llama", "lag-llama.txt",
                         check="import gluonts.torch.model.predictor, lightning, pytorch_lightning; "
                               "from gluonts.torch.distributions.studentT import StudentTOutput; "
                               "from gluonts.torch.modules.loss import NegativeLogLikelihood"),
    "ttm": EnvSpec("ttm", "ttm.txt", check="from tsfm_public.models.tinytimemixer import TinyTimeMixerForPrediction"),
    # Time-MoE, MIRA, Timer, Sundial: their checkpoints' own code, written for transformers 4.40
    "transformers440": EnvSpec("transformers440", "transformers440.txt",
                               check="import transformers, torchdiffeq, accelerate, sktime.utils.dependencies; "
                                     "from transformers.modeling_attn_mask_utils import _prepare_4d_causal_attention_mask; "
                                     "assert transformers.__version__ == '4.40.1', transformers.__version__"),
    "timesfm1": EnvSpec("timesfm1", "timesfm1.txt",
                        check="from timesfm.timesfm_torch import TimesFmTorch; "
                              "from timesfm.pytorch_patched_decoder import PatchedTimeSeriesDecoder"),
}


def torch_pin() -> str:
    """``torch==X.Y.Z`` for the main environment's torch (local label dropped): one torch build for all
    environments, and pip never swaps in another (a CUDA download of several GB)."""
    try:
        release = version("torch").split("+")[0]
    except PackageNotFoundError:  # no torch here: the project's own pin
        release = "2.13.0"
    return f"torch=={release}"


def env_python(root: Path) -> Path:
    return root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def env_ready(spec: EnvSpec) -> bool:
    return (spec.root() / READY_MARKER).is_file()


def ensure_env(spec: EnvSpec, log=None) -> Path:
    """The Python of ``spec``'s environment, created first if needed (minutes, once).

    A lock file serialises concurrent creators (``--jobs N``); the marker is written only after the
    install and the import check succeed, so an interrupted or failed install is redone from scratch.
    """
    root = spec.root()
    if (root / READY_MARKER).is_file():
        return env_python(root)
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(root.parent / f"{root.name}.lock"):
        if (root / READY_MARKER).is_file():  # another process finished it while we waited
            return env_python(root)
        if root.exists():
            shutil.rmtree(root)  # half-made: start again
        log(f"[{spec.name}] creating its virtual environment in {root} (a few minutes, once)")
        started = time.perf_counter()
        install_log = root.parent / f"{root.name}.install.log"
        with open(install_log, "w") as out:
            def run(*cmd: object) -> None:
                out.write(f"$ {' '.join(map(str, cmd))}\n")
                out.flush()
                if subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                                  env=_clean_env()).returncode != 0:
                    out.flush()
                    raise EnvironmentCreationError(
                        f"creating the {spec.name} environment failed at `{' '.join(map(str, cmd))}`; "
                        f"log: {install_log}\n{_tail(install_log.read_text(errors='replace'))}")

            run(sys.executable, "-m", "venv", root)
            python = env_python(root)
            constraint = root / "torch-constraint.txt"
            constraint.write_text(torch_pin() + "\n")
            run(python, "-m", "pip", "install", "-q", "-c", constraint, "-r", ENVS_DIR / spec.requirements)
            if spec.no_deps:
                run(python, "-m", "pip", "install", "-q", "--no-deps", "-c", constraint, "-r", ENVS_DIR / spec.no_deps)
            run(python, "-c", spec.check)
        (root / READY_MARKER).write_text(json.dumps({
            "env": spec.name, "key": spec.key(), "torch": torch_pin(), "seconds": round(time.perf_counter() - started, 1),
            "requirements": [str(p) for p in spec.files()]}))
        log(f"[{spec.name}] environment ready in {time.perf_counter() - started:.0f} s")
    return env_python(root)


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _clean_env() -> dict[str, str]:
    """The worker's and pip's environment: nothing from this project's interpreter leaks in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _tail(text: str, n: int = STDERR_TAIL) -> str:
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


# ---------------------------------------------------------------------------- the worker client

class Worker:
    """A worker process speaking the protocol of ``baselines/workers/_protocol.py``.

    Arrays go through a private temporary directory; stderr goes to a file there (a pipe could
    fill up and block the worker) and its tail is quoted in every error.
    """

    def __init__(self, name: str, python: str | os.PathLike, script: str | os.PathLike) -> None:
        self.name = name
        self._dir = Path(tempfile.mkdtemp(prefix=f"soter-bench-{name}-"))
        self._stderr_path = self._dir / "stderr.log"
        stderr = open(self._stderr_path, "wb")
        self._proc = subprocess.Popen([str(python), "-u", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=stderr, cwd=self._dir, env=_clean_env(), text=True)
        stderr.close()
        self._finalizer = weakref.finalize(self, _shutdown, self._proc, self._dir)
        self._calls = 0

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one control line and read the answer; a dead worker or a failure raises :class:`WorkerError`."""
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, OSError, ValueError):
            line = ""
        if not line:
            code = self._proc.wait(timeout=30)
            raise WorkerError(f"{self.name}: worker exited (code {code}) during {message.get('op')!r}; "
                              f"stderr:\n{self.stderr_tail()}")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as exc:
            raise WorkerError(f"{self.name}: worker broke the protocol ({exc}): {line[:200]!r}") from exc
        if not reply.get("ok"):
            detail = _tail(reply.get("traceback") or "", 2000)
            raise WorkerError(f"{self.name}: worker failed in {message.get('op')!r}: {reply.get('error')}\n{detail}")
        return reply

    def call(self, op: str, inputs: dict[str, np.ndarray], args: dict[str, Any],
             expect: dict[str, tuple[int | None, ...]]) -> dict[str, np.ndarray]:
        """Run ``op`` on ``inputs``; returns the outputs named in ``expect``, checked against their shapes."""
        self._calls += 1
        folder = self._dir / f"call-{self._calls}"
        folder.mkdir()
        try:
            files = {}
            for key, array in inputs.items():
                files[key] = f"in-{key}.npy"
                np.save(folder / files[key], np.ascontiguousarray(array), allow_pickle=False)
            reply = self.request({"op": op, "dir": str(folder), "inputs": files, "args": args})
            outputs = {}
            for key, shape in expect.items():
                file = reply.get("outputs", {}).get(key)
                if not file or "/" in file or not (folder / file).is_file():
                    raise WorkerError(f"{self.name}: worker returned no {key!r} output for {op!r}")
                try:
                    array = np.load(folder / file, allow_pickle=False)
                except ValueError as exc:  # e.g. an object array: refused, never unpickled
                    raise WorkerError(f"{self.name}: worker's {key!r} output is not a plain array: {exc}") from exc
                if array.dtype.kind not in "fiu" or len(shape) != array.ndim or any(
                        s is not None and s != a for s, a in zip(shape, array.shape)):
                    want = tuple("*" if s is None else s for s in shape)
                    raise WorkerError(f"{self.name}: worker returned {key!r} of shape {array.shape} and dtype "
                                      f"{array.dtype}, expected shape {want} (numbers)")
                outputs[key] = array
            return outputs
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def stderr_tail(self) -> str:
        try:
            return _tail(self._stderr_path.read_text(errors="replace")) or "(empty)"
        except OSError:
            return "(unreadable)"

    def close(self) -> None:
        self._finalizer()


def _shutdown(proc: subprocess.Popen, folder: Path) -> None:
    """End the worker (closing stdin ends its loop; kill it if it lingers) and remove its files."""
    with contextlib.suppress(Exception):
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    with contextlib.suppress(Exception):
        proc.stdout.close()
    shutil.rmtree(folder, ignore_errors=True)


class WorkerModel(Model):
    """A :class:`Model` whose forecasts and embeddings come from a worker in another environment.

    The worker loads the model once (``load`` request) and then answers ``forecast`` (values and
    mask [B, C, T] in, [B, C, H] out; with ``levels`` asked, also ``quantiles`` [B, C, H, Q] from the
    same pass) and ``embed`` ([B, C, T] in, [B, D] out). Query times are taken as successive steps of
    the context grid, as for the in-process foundation adapters, except for a worker whose load info says
    ``uses_times`` (MIRA's continuous-time positions): it also gets ``timestamps`` [B, T] and
    ``query_times`` [B, H]. Quantiles are asked of a worker only
    when the card declares ``quantiles`` and the worker's load info names its ``quantile_levels``
    (a list, or ``"any"`` for sample-path models).
    """

    def __init__(self, name: str, capabilities: Capabilities, python: str | os.PathLike, script: str | os.PathLike,
                 weights: str | None = None, options: dict[str, Any] | None = None, seed: int = 0,
                 info: dict[str, Any] | None = None) -> None:
        self.name, self.capabilities, self._seed = name, capabilities, seed
        self._worker = Worker(name, python, script)
        reply = self._worker.request({"op": "load", "weights": weights, "options": {"seed": seed, **(options or {})}})
        self._info = {"name": name, **(info or {}), **reply.get("info", {})}

    @property
    def batch_tolerance(self) -> tuple[float, float] | None:
        """(rtol, atol) within which a row may differ with its batch companions: what the worker declares in its load
        info (a worker that forecasts many rows per call draws each row's paths as alone, but the batch's float32
        arithmetic rounds differently), else None: exact."""
        declared = self._info.get("batch_tolerance")
        return None if declared is None else (float(declared[0]), float(declared[1]))

    def _forecast(self, batch: SeriesBatch, query_times: np.ndarray) -> np.ndarray:
        return self._request_forecast(batch, query_times, None)[0]

    def _forecast_quantiles(self, batch: SeriesBatch, query_times: np.ndarray,
                            levels: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The point and the asked quantiles from one worker pass (the same sample paths); the point is
        exactly what :meth:`_forecast` returns. Levels the model cannot give are a ``ValueError``."""
        levels = tuple(float(q) for q in levels)
        offered = self._info.get("quantile_levels")
        if not self.capabilities.quantiles or offered is None:
            raise WorkerError(f"{self.name}: its worker does not serve quantile forecasts")
        if offered == "any":
            wrong = [q for q in levels if not 0.0 < q < 1.0]
            if wrong:
                raise ValueError(f"{self.name}: quantile levels must lie in (0, 1), not {wrong}")
        else:
            quantile_indices(offered, levels, self.name)  # the worker picks them: only refuse what it lacks
        return self._request_forecast(batch, query_times, levels)

    def _request_forecast(self, batch: SeriesBatch, query_times: np.ndarray,
                          levels: tuple[float, ...] | None) -> tuple[np.ndarray, np.ndarray | None]:
        """One ``forecast`` request; ``levels`` None asks for the point only. Returned arrays are checked:
        shapes (in :meth:`Worker.call`) and, for the quantiles, finite values."""
        b, c, _ = batch.shape
        h = query_times.shape[1]
        inputs = {"values": batch.values, "mask": batch.mask}
        if self._info.get("uses_times"):
            inputs.update(timestamps=batch.timestamps, query_times=query_times)
        args: dict[str, Any] = {"horizon": h, "seed": self._seed}
        expect: dict[str, tuple[int | None, ...]] = {"forecast": (b, c, h)}
        if levels is not None:
            args["levels"] = list(levels)
            expect["quantiles"] = (b, c, h, len(levels))
        out = self._worker.call("forecast", inputs, args, expect=expect)
        point = out["forecast"].astype(np.float64)
        if levels is None:
            return point, None
        quantiles = out["quantiles"].astype(np.float64)
        if not np.isfinite(quantiles).all():
            raise WorkerError(f"{self.name}: worker returned NaN or infinite quantiles "
                              f"({int((~np.isfinite(quantiles)).sum())} of {quantiles.size})")
        return point, quantiles

    def _embed(self, batch: SeriesBatch) -> np.ndarray:
        out = self._worker.call("embed", {"values": batch.values, "mask": batch.mask}, {"seed": self._seed},
                                expect={"embedding": (batch.shape[0], None)})
        return out["embedding"].astype(np.float64)

    def describe(self) -> dict[str, object]:
        return dict(self._info)

    def close(self) -> None:
        self._worker.close()


# ---------------------------------------------------------------------------- registry entry points

def IsolatedForecaster(card: str, env: str, worker: str, weights: str | None = None, seed: int = 0,
                       device: str = "cpu", worker_options: dict[str, Any] | None = None) -> WorkerModel:
    """Factory of the isolated cards: weights first (never random), then the environment, then the worker."""
    c: Card = CARDS[card]
    source = resolve_weights(c, weights)
    spec = ENVS[env]
    python = ensure_env(spec)
    info = {"environment": f"{spec.name} ({', '.join(str(p.relative_to(ENVS_DIR.parent.parent)) for p in spec.files())})",
            "env_dir": str(spec.root()), "weights": source, "worker": worker}
    return WorkerModel(c.name, c.capabilities, python, WORKERS_DIR / worker, weights=source, seed=seed,
                       options={"device": device, **(worker_options or {})}, info=info)


def check(card: str, env: str, weights: str | None = None, **options: object) -> str | None:
    """Registry check (cheap): weights first; then that a virtual environment can be made here.

    A missing environment is not a reason: it is created on the first load (needs the package index).
    """
    reason = check_weights(card, weights=weights, **options)
    if reason is not None:
        return reason
    if importlib.util.find_spec("venv") is None or importlib.util.find_spec("ensurepip") is None:
        return Unavailable(f"{card} runs in its own virtual environment ({ENVS[env].name}), and this Python cannot "
                           f"create one: install the venv module (e.g. `apt install python3-venv`)", NEEDS_ENVIRONMENT)
    return None


# ---------------------------------------------------------------------------- Lag-Llama: code from a checkout

LAG_LLAMA_CKPT = "lag-llama.ckpt"
LAG_LLAMA_SOURCE = CodeSource(model="lag-llama", repo="https://github.com/time-series-foundation-models/lag-llama",
                              env_var="SOTER_BENCH_LAG_LLAMA_CODE",
                              markers=("lag_llama/gluon/estimator.py", "gluon_utils/scalers/robust_scaler.py"), licence="Apache-2.0")
LAG_LLAMA_CODE_ENV = LAG_LLAMA_SOURCE.env_var
LAG_LLAMA_REPO = LAG_LLAMA_SOURCE.repo
_LAG_LLAMA_GET_WEIGHTS = (f"`hf download time-series-foundation-models/Lag-Llama {LAG_LLAMA_CKPT} --local-dir DIR` "
                          f"on a machine with internet, then --weights lag-llama=DIR")


def lag_llama_code(weights: str | None, code: str | os.PathLike | None = None) -> Path:
    """The folder of the user's Lag-Llama checkout (:func:`baselines.checkout.find_checkout`)."""
    return find_checkout(LAG_LLAMA_SOURCE, weights, code)


def _lag_llama_weights(card: str, weights: str | None) -> str:
    try:
        source = resolve_weights(CARDS[card], weights)
    except ModelUnavailableError as exc:
        raise ModelUnavailableError(f"{exc}; only {LAG_LLAMA_CKPT} is needed: {_LAG_LLAMA_GET_WEIGHTS}. It also needs "
                                    f"its code (not on PyPI): {LAG_LLAMA_SOURCE.get_hint()}") from None
    if not (Path(source) / LAG_LLAMA_CKPT).is_file():  # a hub id: the worker has no downloader
        raise ModelUnavailableError(f"lag-llama needs {LAG_LLAMA_CKPT} in a local directory: {_LAG_LLAMA_GET_WEIGHTS}")
    return source


def check_lag_llama(card: str, env: str, weights: str | None = None, code: str | None = None,
                    **options: object) -> str | None:
    """Registry check (cheap): the checkpoint (``needs weights``), then the code checkout (``needs code``),
    then that a virtual environment can be made here."""
    try:
        source = _lag_llama_weights(card, weights)
    except ModelUnavailableError as exc:
        return Unavailable(str(exc), NEEDS_WEIGHTS)
    try:
        lag_llama_code(source, code)
    except ModelUnavailableError as exc:
        return Unavailable(str(exc), NEEDS_CODE)
    return check(card, env, weights=source, **options)


def LagLlamaForecaster(card: str, env: str, worker: str, weights: str | None = None, code: str | None = None,
                       seed: int = 0, device: str = "cpu", worker_options: dict[str, Any] | None = None) -> WorkerModel:
    """Lag-Llama: weights, then the code checkout, then the environment, then the worker (which puts the
    checkout on its ``sys.path`` and loads the checkpoint with ``weights_only=True``)."""
    source = _lag_llama_weights(card, weights)
    folder = lag_llama_code(source, code)
    return IsolatedForecaster(card, env, worker, weights=source, seed=seed, device=device,
                              worker_options={**(worker_options or {}), "code": str(folder)})
