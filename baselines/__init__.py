"""Baseline adapters, registered by name (cheap: nothing heavy is imported here)."""

from models.registry import ModelSpec, register

_NAIVE = "baselines.naive"
_SF = "baselines.statsforecast_models"

register(ModelSpec("last-value", f"{_NAIVE}:LastValue", "Repeats the last observed value (per channel)"))
register(ModelSpec("window-mean", f"{_NAIVE}:WindowMean", "Mean of the context (per channel)"))
register(ModelSpec("drift", f"{_NAIVE}:Drift", "Line through the first and last context points, extended in time"))
register(ModelSpec("seasonal-naive", f"{_NAIVE}:SeasonalNaive",
                   "Repeats the last season; period from the context's autocorrelation peak"))
register(ModelSpec("auto-ets", f"{_SF}:AutoETS", "statsforecast AutoETS per channel", family="statistical",
                   requires=("statsforecast",)))
register(ModelSpec("auto-theta", f"{_SF}:AutoTheta", "statsforecast AutoTheta per channel", family="statistical",
                   requires=("statsforecast",)))
register(ModelSpec("auto-arima", f"{_SF}:AutoARIMA",
                   "statsforecast AutoARIMA per channel (not in the default set: ~0.6 s per series here, "
                   "see BENCHMARKS.md; add it with --models auto-arima --jobs N)",
                   family="statistical", requires=("statsforecast",), default=False))

register(ModelSpec("fracast", "baselines.fracast_model:Fracast",
                   "Fracast-0, a pretrained time-series foundation model (85k parameters) with weights in its "
                   "wheel: real zero-shot forecasts offline (not in the default set: ~0.13 s per series on 2 CPU "
                   "cores, see BENCHMARKS.md; --models fracast)", family="foundation",
                   licence="Apache-2.0 (weights)", requires=("fracast",), extra="fracast", default=False))

# causal imputation baselines (imputation task only)
_IMP = "baselines.imputation"
register(ModelSpec("locf", f"{_IMP}:CarryForward", "Last observation carried forward", tasks=("imputation",)))
register(ModelSpec("linear-extrapolation", f"{_IMP}:LinearExtrapolation",
                   "Line through the last two observed points", tasks=("imputation",)))
register(ModelSpec("spline-extrapolation", f"{_IMP}:SplineExtrapolation",
                   "Natural cubic spline of the observed prefix, extrapolated", tasks=("imputation",)))

# classification: an honest non-neural embedding
register(ModelSpec("stat-features", "baselines.features:StatisticalFeatures",
                   "Per-channel mean, std and spectral band-power shares (embedding only)",
                   family="statistical", tasks=("classification",)))

# foundation-model baselines of the paper (cheap: cards only; each library is imported on load)
import baselines.chronos_model  # noqa: E402,F401
import baselines.timesfm_model  # noqa: E402,F401
import baselines.tirex_model  # noqa: E402,F401
import baselines.paper_models  # noqa: E402,F401
