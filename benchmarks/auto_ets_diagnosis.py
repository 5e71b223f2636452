"""Why AutoETS trails last-value on the cohort: which ETS forms its search picks, and what each costs.

Usage: OMP_NUM_THREADS=1 python benchmarks/auto_ets_diagnosis.py [--setting 96/48] [--windows-per-subject 4]

On the test windows of every LOSO fold of the embedded cohort (scaled as the protocol scales them)
it fits, per channel, statsforecast's AutoETS with the library's defaults (``model="ZZZ"``,
``damped=None``: the configuration the harness uses), the same search without trend (``"ZNN"``)
and with a damped trend only, and reports the RMSE and MAE (x100) of each beside last value, and
how often the default search picked a trend. Numbers are measured, nothing is assumed.
"""

from __future__ import annotations

import argparse
import warnings
from collections import Counter

import numpy as np

from protocols.datasets import load_dataset
from protocols.forecasting import fold_windows
from protocols.specs import ForecastingSpec, SamplingSpec, Setting
from protocols.splits import loso_folds


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--setting", default="96/48")
    p.add_argument("--windows-per-subject", type=int, default=4)
    p.add_argument("--dataset", default="synthetic-cohort")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    from statsforecast.models import AutoETS

    setting = Setting.parse(args.setting)
    spec = ForecastingSpec(settings=(setting,), sampling=SamplingSpec(max_windows_per_subject=args.windows_per_subject))
    dataset = load_dataset(args.dataset)
    variants = {"AutoETS ZZZ (library default, harness)": dict(model="ZZZ"),
                "AutoETS ZNN (no trend)": dict(model="ZNN"),
                "AutoETS ZZZ damped only": dict(model="ZZZ", damped=True)}
    errors: dict[str, list[np.ndarray]] = {name: [] for name in [*variants, "last value"]}
    picked: Counter[str] = Counter()
    for fold in loso_folds(dataset):
        arrays, _ = fold_windows(dataset, fold, setting, spec)
        for ctx, target in zip(arrays.context, arrays.target):
            for y, truth in zip(ctx, target):
                if np.ptp(y) == 0 or np.isnan(y).any():
                    continue
                errors["last value"].append(y[-1] - truth)
                for name, kw in variants.items():
                    model = AutoETS(season_length=1, **kw)
                    fitted = model.fit(y.astype(np.float64))
                    errors[name].append(fitted.predict(h=truth.size)["mean"] - truth)
                    if kw["model"] == "ZZZ" and "damped" not in kw:
                        picked[str(fitted.model_["method"])] += 1
    n = len(errors["last value"])
    print(f"{args.dataset}, setting {setting.name}, {n} channel windows (x100)")
    for name, errs in errors.items():
        e = np.concatenate(errs)
        print(f"  {name:<42} RMSE {100 * np.sqrt(np.mean(e ** 2)):7.2f}  MAE {100 * np.mean(np.abs(e)):6.2f}")
    print("  forms picked by the default search: " + ", ".join(f"{k} {v}" for k, v in picked.most_common()))


if __name__ == "__main__":
    main()
