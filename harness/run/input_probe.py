"""``run --probe-input``: the input-sensitivity probe (``protocols.sensitivity``) once per (model, dataset) of a run,
its verdicts kept beside the records (``harness.records.input_sensitivity``). The cells, their keys and the task
modules are untouched: the probe loads each model once more, on the first fold's test subject, in the run's first
setting the model supports, and forecasts a few of its windows with changed contexts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from protocols.specs import ForecastingSpec, SpecError

N_WINDOWS = 4  # windows probed per (model, dataset)


def check_probe_task(task: str, spec: object) -> None:
    """``--probe-input`` probes forecasts in a context/horizon setting: a task whose spec has none is a usage error."""
    if not (hasattr(spec, "settings") and hasattr(spec, "sampling")):
        raise SpecError(f"--probe-input probes forecasts in a context/horizon setting; task {task} has no settings "
                        "(use it with forecasting or noise)")


def probe_run(config, summary, datasets: dict[str, Any], model_options: Callable[[str], tuple],
              log: Callable[[str], None] = print) -> Path:
    """Probe every model of the run (those that load and forecast) on every dataset; write and return the file."""
    from harness.records.input_sensitivity import record_verdicts
    from models.registry import get_spec
    from protocols.sensitivity import probe_input
    from protocols.data import nominal_sampling_rate
    from protocols.splits import loso_folds

    spec = config.specs(config.run_seeds[0])
    check_probe_task(config.task, spec)
    models = [m for m in (config.models or config.task_object.default_models())
              if m not in config.task_object.model_free]
    verdicts = []
    for ref, dataset in datasets.items():
        label = summary.dataset_labels.get(ref, dataset.name)
        fold = loso_folds(dataset)[0]
        spec = config.specs(config.run_seeds[0], nominal_sampling_rate(dataset))  # settings in seconds: this rate's
        for model in models:
            entry = {"dataset": label, "model": model, "model_id": summary.identities[model]["model_id"],
                     "fold": fold.test_subject, "seed": spec.sampling.seed}
            options = dict(model_options(model))
            if get_spec(model).unavailable_reason(**options) is not None:
                continue
            try:
                loaded = get_spec(model).load(**options)
                setting = next((s for s in spec.settings
                                if loaded.capabilities.supports_setting(s.context, s.horizon)), None)
                if not loaded.capabilities.forecast or setting is None:
                    continue
                one = ForecastingSpec(settings=(setting,), sampling=spec.sampling, batch_size=spec.batch_size)
                report = probe_input(loaded, dataset, fold, setting, one, n_windows=N_WINDOWS,
                                     seed=spec.sampling.seed)
            except Exception as exc:  # a model that fails is the cells' business: the probe says it could not run
                verdicts.append({**entry, "verdict": "not probed", "flagged": False,
                                 "note": f"the probe failed: {type(exc).__name__}: {exc}"[:500]})
                log(f"[probe-input] {model} on {label}: the probe failed ({type(exc).__name__}: {exc})")
                continue
            verdicts.append({**entry, "setting": f"{setting.context}/{setting.horizon}", "verdict": report.verdict,
                             "flagged": report.flagged, "ignored": list(report.ignored), "changes": report.changes,
                             "rtol": report.rtol, "n_windows": report.n_windows, "note": report.describe()})
            log(f"[probe-input] {model} on {label}: {report.describe()}")
    return record_verdicts(Path(config.out), verdicts)
