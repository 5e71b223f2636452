"""The held-out forecasting sets for model selection (issue #26): never evaluation data, never in the
training corpus, written in the harness's folder format so that the harness scores them with its
own protocol and metric code.

    python -m models.soter.training.heldout --out heldout \\
        --wfdb-segment ../shared/data/wfdb-python-sample/multi-segment/s25047/3234460_0016 --synthetic-seed 9000

- ``mimic-<segment>``: one real MIMIC-III waveform segment (all its signals), one recording; score it
  as ``heldout/mimic-3234460_0016:blocks=6`` (leave-one-block-out). Build the training corpus with
  the segment's subject excluded (``--exclude s25047``), so no window of that person is trained on.
- ``synthetic-<seed>``: the evaluation cohort's generator with another seed (the cohort is seed 0,
  the training corpus uses 1000-1003), ten subjects, LOSO as the cohort.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from protocols.data import Dataset, Recording
from protocols.datasets.folder import write_folder_dataset

EVALUATION_SEEDS = frozenset({0})


def wfdb_segment(path: Path) -> Dataset:
    """One WFDB record (a MIMIC-III segment) as a one-recording dataset, every signal kept."""
    import wfdb

    record = wfdb.rdrecord(str(path))
    values = np.asarray(record.p_signal, dtype=np.float64).T
    name = Path(path).name
    return Dataset(f"mimic-{name}", tuple(record.sig_name),
                   (Recording(name, name, values, np.arange(values.shape[1]) / float(record.fs)),),
                   float(record.fs), description=f"held-out WFDB segment {name} (model selection only)")


def synthetic(seed: int) -> Dataset:
    """The cohort generator with a seed that is neither the evaluation cohort's nor the corpus's."""
    from protocols.datasets.synthetic import SyntheticCohortConfig, generate

    if seed in EVALUATION_SEEDS or 1000 <= seed < 2000:
        raise ValueError(f"seed {seed} is the evaluation cohort's or a training corpus seed; pick e.g. 9000")
    ds = generate(SyntheticCohortConfig(seed=seed))
    return Dataset(f"synthetic-{seed}", ds.channels, ds.recordings, ds.sampling_rate, ds.label_names,
                   f"held-out synthetic cohort, generator seed {seed} (model selection only)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.training.heldout", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--wfdb-segment", type=Path, nargs="*", default=[], help="WFDB record paths without extension")
    p.add_argument("--synthetic-seed", type=int, nargs="*", default=[])
    args = p.parse_args(argv)
    for ds in [*(wfdb_segment(s) for s in args.wfdb_segment), *(synthetic(s) for s in args.synthetic_seed)]:
        manifest = write_folder_dataset(ds, args.out / ds.name)
        print(f"{manifest.parent}: {len(ds.recordings)} recordings, channels {list(ds.channels)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
