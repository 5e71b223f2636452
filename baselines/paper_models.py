"""The paper's other foundation-model baselines: what each needs, and the adapters that can run.

* Transformers remote-code models (Timer, Sundial, TimeMoE, MIRA, Aurora) load a local snapshot
  of the official checkpoint with ``trust_remote_code=True`` only when the user passes
  ``--trust-remote-code NAME`` (and ``--weights NAME=DIR``): :func:`RemoteCodeForecaster`, a worker
  (``baselines/workers/remote_code_worker.py``). Timer, Sundial, TimeMoE and MIRA run it in their own
  environment with transformers 4.40.1 (their code's pin; transformers 5 cannot import it), Aurora
  (transformers >= 4.50) under this environment's Python.
* MOMENT, Moirai (Moirai-MoE, Moirai 2.0), TTM and TimesFM 1.0/2.0, whose libraries conflict with
  this project, run in their own cached virtual environment through a worker
  (:mod:`baselines.isolated`, docs/isolated-environments.md); without weights their status is
  ``needs weights``.
* Lag-Llama runs in its own environment too, with the code of the user's checkout (its status says
  ``needs weights`` or ``needs code`` until both are there).
* NormWear and TF-C ship research code, not packages: they run in this environment from the user's
  checkout of their repository (:mod:`baselines.checkout`); their status says ``needs weights``
  or ``needs code`` until both are there. No adapter falls back to random weights.

Parameter counts are the paper's ("Paras": parameters activated per inference step).
"""

from __future__ import annotations

import sys

from baselines.foundation import CARDS, Card, check as check_weights, register_card, resolve_weights
from baselines.isolated import (ENVS, ENVS_DIR, WORKERS_DIR, IsolatedForecaster, LagLlamaForecaster, WorkerModel,
                                check as isolated_check, check_lag_llama, ensure_env)
from baselines.normwear_model import NormWear, check as normwear_check
from baselines.tfc_model import TFC, check as tfc_check
from models.registry import ModelUnavailableError
from protocols.interface import Capabilities

_HF_FILES = (("config.json",), ("*.safetensors", "*.bin"))
_REMOTE_FILES = (("config.json",), ("*.safetensors", "*.bin"), ("modeling_*.py",))
_TRANSFORMERS_440 = ("its checkpoint's code was written for transformers 4.40.1 (transformers 5 cannot import it): runs in "
                     "its own virtual environment (baselines/envs/transformers440.txt), created on first use")
_IN_440 = {"env": "transformers440"}


def RemoteCodeForecaster(card: str, weights: str | None = None, trust_remote_code: bool = False, device: str = "cpu",
                         seed: int = 0, output: str = "append", normalise: bool = True, num_samples: int = 20,
                         generate_kwargs: dict | None = None, span: int = 64, terminal_ode: bool = False,
                         env: str | None = None, sample_layout: str | None = None, batch: int = 32) -> WorkerModel:
    """An ``AutoModelForCausalLM`` checkpoint with its own code, served by ``baselines/workers/remote_code_worker.py``.

    Per channel. Only with ``--trust-remote-code NAME`` (the flag comes first, then the weights, then the
    environment). ``env`` names the isolated environment the card's code needs (``transformers440`` for
    the code written for transformers 4.40); None runs the worker under this environment's Python.
    ``output`` says how the model forecasts: ``"append"`` (``generate`` -> one path: Timer, TimeMoE),
    ``"samples"`` (``generate(..., num_samples)`` -> sample paths whose mean is the point and whose
    empirical quantiles are the quantile forecasts: Sundial, Aurora) or ``"mira"`` (MIRA's own
    step-by-step loop on values and timestamps); ``normalise`` standardises each context (mean/std over
    the context) before the call and undoes it after, as the model cards do; ``span``: steps generated
    per call (then cut to H), so that a step's forecast does not depend on the horizon asked for;
    ``sample_layout`` ``"sample-major"`` (Sundial): rows are sampled ``batch`` per call, each from its own
    random stream (the rows equal one-at-a-time's); None: one row per call.
    """
    c: Card = CARDS[card]
    if not trust_remote_code:
        raise ModelUnavailableError(f"{c.name} runs its checkpoint's own code: pass --trust-remote-code {c.name}")
    source = resolve_weights(c, weights)
    python, info = (sys.executable, {"environment": "this one"}) if env is None else _environment(env)
    options = {"device": device, "output": output, "normalise": normalise, "num_samples": num_samples,
               "generate_kwargs": dict(generate_kwargs or {}), "span": span, "terminal_ode": terminal_ode,
               **({"sample_layout": sample_layout, "batch": batch} if sample_layout else {})}
    return WorkerModel(c.name, c.capabilities, python, WORKERS_DIR / "remote_code_worker.py", weights=source, seed=seed,
                       options=options, info={**info, "weights": source})


def _environment(env: str) -> tuple[str, dict[str, str]]:
    spec = ENVS[env]
    python = ensure_env(spec)
    files = ", ".join(str(p.relative_to(ENVS_DIR.parent.parent)) for p in spec.files())
    return str(python), {"environment": f"{spec.name} ({files})", "env_dir": str(spec.root())}


def check_remote_code(card: str, weights: str | None = None, trust_remote_code: bool = False, env: str | None = None,
                      **options: object) -> str | None:
    """Registry check (cheap): the flag, then the weights, then (for an isolated card) that a virtual
    environment can be made here."""
    reason = check_weights(card, weights=weights, trust_remote_code=trust_remote_code)
    if reason is not None or env is None:
        return reason
    return isolated_check(card, env, weights=weights, trust_remote_code=trust_remote_code)


_PER_CHANNEL = Capabilities(multivariate=False)

# ------------------------------------------------------------------ transformers remote code
for card in (
    Card("timer-base", "Timer", "84.14M", "thuml/timer-base-84m", source="Hugging Face", licence="Apache-2.0 (weights)",
         requires=(), extra=None, files=_REMOTE_FILES, remote_code=True,
         capabilities=Capabilities(multivariate=False, min_context=96, settings=((96, 48), (128, 64))),
         native_horizon=96, options=_IN_440,
         notes="the paper runs it on 96/48 and 128/64 only (96-step input token); " + _TRANSFORMERS_440),
    Card("sundial-base", "Sundial-Base", "128.3M", "thuml/sundial-base-128m", source="Hugging Face",
         licence="Apache-2.0 (weights)", requires=(), extra=None, files=_REMOTE_FILES,
         remote_code=True, capabilities=Capabilities(multivariate=False, min_context=16, quantiles=True),
         native_horizon=720, options={**_IN_440, "output": "samples", "sample_layout": "sample-major"},
         notes="generative (flow matching): mean of 20 seeded samples; quantiles from the same samples; "
               + _TRANSFORMERS_440),
    Card("timemoe-base", "TimeMoE-Base", "113.3M", "Maple728/TimeMoE-50M", source="Hugging Face",
         licence="Apache-2.0 (weights)", requires=(), extra=None, files=_REMOTE_FILES,
         remote_code=True, capabilities=_PER_CHANNEL, options=_IN_440, notes=_TRANSFORMERS_440),
    Card("timemoe-large", "TimeMoE-Large", "453.2M", "Maple728/TimeMoE-200M", source="Hugging Face",
         licence="Apache-2.0 (weights)", requires=(), extra=None, files=_REMOTE_FILES,
         remote_code=True, capabilities=_PER_CHANNEL, options=_IN_440, notes=_TRANSFORMERS_440),
    Card("mira-large", "MIRA-Large", "339.9M", None, source="the official release linked from github.com/microsoft/MIRA",
         licence="MIT (github.com/microsoft/MIRA; its NOTICE.md names a Llama 2 Community Licence component)",
         requires=(), extra=None, files=_REMOTE_FILES, remote_code=True, capabilities=_PER_CHANNEL,
         options={**_IN_440, "output": "mira"},
         notes="medical TSFM (CT-RoPE, Neural-ODE extrapolation): forecast by its own inference loop on values and "
               "timestamps (MIRA/models/mira_inference.py), one step per pass; " + _TRANSFORMERS_440),
    Card("aurora", "Aurora", "210.8M", None, source="the official release linked from github.com/decisionintelligence/Aurora",
         licence="see github.com/decisionintelligence/Aurora (no licence file there; its PyPI package says MIT)",
         requires=("transformers",), extra="remote-code", files=_REMOTE_FILES, remote_code=True,
         capabilities=Capabilities(multivariate=False, quantiles=True), options={"output": "samples"},
         notes="multimodal generative TSFM, used on time series only; the paper's appendix gives 260.8M, its table "
               "210.8M; its code needs transformers >= 4.50 and runs under this environment's Python"),
):
    register_card(card, RemoteCodeForecaster, check=check_remote_code)

# ------------------------------------------------------------------ their own environment (baselines/isolated.py)
_MOMENT_NOTES = ("runs in its own virtual environment (momentfm 0.1.4 pins transformers 4.33.3 and numpy 1.25.2; "
                 "baselines/envs/moment.txt), created on first use; forecasts by zero-shot masked reconstruction "
                 "of a 64-step masked block after the context (the released checkpoints carry only the reconstruction "
                 "head)")
_MOIRAI_NOTES = ("runs in its own virtual environment (uni2ts 2.0.0 installed --no-deps beside torch 2.13, its other "
                 "requirements pinned by hand: baselines/envs/moirai.txt), created on first use; channels forecast "
                 "jointly")

for card in (
    *(Card(f"moment-{size.lower()}", f"MOMENT-{size}", params, f"AutonLab/MOMENT-1-{size.lower()}",
           source="Hugging Face", licence="MIT (weights)", requires=(), extra=None, files=_HF_FILES,
           capabilities=Capabilities(multivariate=False, min_context=8, max_context=512, embed=True),
           tasks=("forecasting", "imputation", "noise", "classification"), notes=_MOMENT_NOTES,
           options={"env": "moment", "worker": "moment_worker.py"})
      for size, params in (("Small", "35.34M"), ("Base", "109.6M"), ("Large", "341.3M"))),
    *(Card(f"moirai-moe-{size.lower()}", f"MoiraiMoE-{size}", params, f"Salesforce/moirai-moe-1.0-R-{size.lower()}",
           source="Hugging Face", licence="CC-BY-NC-4.0 (weights; non-commercial)", requires=(), extra=None,
           files=_HF_FILES, capabilities=Capabilities(multivariate=True, quantiles=True), native_horizon=16,
           notes=_MOIRAI_NOTES + "; point forecast: median of 100 seeded sample paths (patch size 16)",
           options={"env": "moirai", "worker": "moirai_worker.py", "worker_options": {"family": "moirai-moe"}})
      for size, params in (("Small", "117.0M"), ("Base", "935.1M"))),
    Card("moirai-2.0-small", "Moirai2.0-Small", "11.39M", "Salesforce/moirai-2.0-R-small", source="Hugging Face",
         licence="CC-BY-NC-4.0 (weights; non-commercial)", requires=(), extra=None, files=_HF_FILES,
         capabilities=Capabilities(multivariate=False, quantiles=True),
         notes=_MOIRAI_NOTES.replace("; channels forecast jointly", "") + "; per channel (uni2ts 2.0.0's Moirai2Forecast "
               "handles one target only: its recursive path fails for several); point forecast: its 0.5 quantile",
         options={"env": "moirai", "worker": "moirai_worker.py", "worker_options": {"family": "moirai2"}}),
):
    register_card(card, IsolatedForecaster, check=isolated_check)

# Lag-Llama: not on PyPI; its code comes from the user's checkout (needs code), its checkpoint is a pickle
# read with weights_only=True and an allow-list (baselines/workers/lag_llama_worker.py)
register_card(
    Card("lag-llama", "Lag-Llama", "2.451M", "time-series-foundation-models/Lag-Llama", source="Hugging Face",
         licence="Apache-2.0 (weights and code)", requires=(), extra=None, files=(("lag-llama.ckpt",),),
         capabilities=Capabilities(multivariate=False, quantiles=True), native_horizon=None,
         notes="runs in its own virtual environment (gluonts 0.14.4, lightning 2.1: baselines/envs/lag-llama.txt) "
               "with the code of a user's checkout of github.com/time-series-foundation-models/lag-llama "
               "($SOTER_BENCH_LAG_LLAMA_CODE, or the weights directory itself); the checkpoint is loaded with "
               "torch.load(weights_only=True) and an allow-list; point forecast: median of 100 seeded sample "
               "paths, per channel",
         options={"env": "lag-llama", "worker": "lag_llama_worker.py"}),
    LagLlamaForecaster, check=check_lag_llama)

_TTM_NOTES = ("runs in its own virtual environment (granite-tsfm 0.3.2, the newest release that accepts torch 2.13, "
              "pins transformers 4.56.0: baselines/envs/ttm.txt), created on first use; per channel, 512-step "
              "context (shorter ones left-padded, marked unobserved); point forecast: the model's output, rolled "
              "out in fixed 96-step blocks")
_TFM1_NOTES = ("runs in its own virtual environment (timesfm 1.3.0, the last release with the PyTorch TimesFM 1.0/2.0 "
               "classes, which timesfm 2.x/3.x dropped: baselines/envs/timesfm1.txt), created on first use; per "
               "channel; point forecast: the mean head, rolled out in fixed 128-step blocks")

for card in (
    Card("ttm", "TTM", "0.805M", "ibm-granite/granite-timeseries-ttm-r1", source="Hugging Face",
         licence="Apache-2.0 (weights)", requires=(), extra=None, files=_HF_FILES, capabilities=_PER_CHANNEL,
         native_horizon=96, notes=_TTM_NOTES, options={"env": "ttm", "worker": "ttm_worker.py"}),
    *(Card(f"timesfm-{v}", f"TimesFM {v}", params, hub, source="Hugging Face", licence="Apache-2.0 (weights)",
           requires=(), extra=None, files=(("torch_model.ckpt",),),
           capabilities=Capabilities(multivariate=False, quantiles=True), native_horizon=128,
           notes=_TFM1_NOTES + f"; context up to {ctx} steps (latest kept)",
           options={"env": "timesfm1", "worker": "timesfm1_worker.py", "worker_options": {"version": v}})
      for v, params, hub, ctx in (("1.0", "203.6M", "google/timesfm-1.0-200m-pytorch", 512),
                                  ("2.0", "498.8M", "google/timesfm-2.0-500m-pytorch", 2048))),
):
    register_card(card, IsolatedForecaster, check=isolated_check)

# ------------------------------------------------------------------ research code from the user's checkout
# (baselines/checkout.py): NormWear and TF-C, embedding only, in this environment (docs/research-code-baselines.md)
register_card(
    Card("normwear", "NormWear", None, None,
         source="the v1.0.0-alpha release of github.com/Mobile-Sensing-and-UbiComp-Laboratory/NormWear",
         licence="Apache-2.0 (its repository's licence)", requires=(), extra=None,
         files=(("*.pth", "*.pt"),),
         capabilities=Capabilities(forecast=False, embed=True, multivariate=True, min_context=11),
         tasks=("classification",),
         notes="embedding only; runs the code of a user's checkout of its repository ($SOTER_BENCH_NORMWEAR_CODE, "
               "or a checkout holding the checkpoint); checkpoint read with "
               "torch.load(weights_only=True); tokens averaged per channel, channels concatenated; signals above "
               "256 Hz resampled to 65 Hz, as its downstream code does"),
    NormWear, check=normwear_check)
register_card(
    Card("tf-c", "TF-C", None, None,
         source="github.com/mims-harvard/TFC-pretraining (a checkpoint its code saved; it ships one pre-trained on SleepEEG: "
                "code/experiments_logs/SleepEEG_2_Epilepsy/run1/pre_train_seed_42_2layertransformer/saved_models/"
                "ckp_last.pt)",
         licence="MIT (its repository's licence)", requires=(), extra=None, files=(("*.pt",),),
         capabilities=Capabilities(forecast=False, embed=True, multivariate=True), tasks=("classification",),
         notes="embedding only; runs the code of a user's checkout of its repository ($SOTER_BENCH_TFC_CODE, or the "
               "checkout holding the checkpoint); checkpoint read with torch.load(weights_only=True); per channel "
               "[z_time; z_freq] of the newest L samples (L from the checkpoint, 178 for the released one; shorter "
               "windows zero-padded on the left), channels encoded one at a time and concatenated"),
    TFC, check=tfc_check)
