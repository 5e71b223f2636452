"""`python -m harness data download|check|stats`: get datasets, check them, describe them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parser(subparsers) -> None:
    data = subparsers.add_parser("data", help="download, check and describe datasets")
    sub = data.add_subparsers(dest="data_command", required=True)
    dl = sub.add_parser("download", help="fetch an open PhysioNet dataset (resumable, SHA-256 verified)")
    dl.add_argument("name", help="mitbih, heartrate (raw bidmc), scientisst-move, mmash, wdd; ieee-ppg: instructions")
    dl.add_argument("--root", type=Path, required=True, help="data root; the dataset goes to ROOT/NAME")
    dl.add_argument("--base-url", default=None, help="mirror of https://physionet.org (tests use a local server)")
    dl.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    ck = sub.add_parser("check", help="which expected files are present, missing or corrupt")
    ck.add_argument("name")
    ck.add_argument("--root", type=Path, required=True)
    st = sub.add_parser("stats", help="the paper's dataset table: type, channels, NPE, ours beside the paper's")
    st.add_argument("--data-root", type=Path, default=None, help="default: $SOTER_BENCH_DATA")
    st.add_argument("--dataset", nargs="+", default=[], metavar="NAME|PATH",
                    help="datasets to describe (default: the embedded cohort and every paper dataset present "
                         "under the data root)")
    st.add_argument("--npe-order", type=int, default=None, help="permutation order (default: protocols.npe.ORDER)")
    st.add_argument("--npe-delay", type=int, default=None, help="embedding delay (default: protocols.npe.DELAY)")
    ov = sub.add_parser("overlap", help="which model may have seen which dataset in pre-training: the matrix model x "
                                        "dataset with each reason and its source (docs/pretraining-overlap.md)")
    ov.add_argument("dataset", nargs="*", metavar="NAME",
                    help="evaluation datasets, options allowed (heartrate:channels=PLETH); default: every one")
    ov.add_argument("--models", nargs="+", default=None, metavar="MODEL", help="default: every registered model")


def run(args: argparse.Namespace) -> int:
    if args.data_command == "download":
        return _download(args)
    if args.data_command == "check":
        return _check(args)
    if args.data_command == "overlap":
        from harness.reporting.pretraining_marks import matrix_text

        print(matrix_text(args.models, args.dataset or None))
        return 0
    return _stats(args)


def _download(args: argparse.Namespace) -> int:
    from protocols.datasets.download import HEARTRATE_TS_NOTE, MANUAL, PHYSIONET, download, source_name

    name = source_name(args.name)
    if name in MANUAL:
        print(MANUAL[name].replace("ROOT", str(args.root)))
        return 0
    files = download(name, args.root, base=args.base_url or PHYSIONET, show_progress=not args.no_progress)
    print(f"{name}: {len(files)} files verified (SHA-256) under {args.root / name}")
    if name == "heartrate":
        print(HEARTRATE_TS_NOTE)
    return 0


def _check(args: argparse.Namespace) -> int:
    from protocols.datasets.check import check_dataset

    report = check_dataset(args.name, args.root)
    print(f"{report.dataset}: checked against {report.how}")
    for key in ("present", "missing", "corrupt"):
        files = getattr(report, key)
        shown = "" if key == "present" or not files else "  " + ", ".join(files[:20]) + (" ..." if len(files) > 20 else "")
        print(f"  {key}: {len(files)}{shown}")
    for file, why in report.problems.items():
        print(f"  {file}: {why}")
    if not report.ok:
        print(f"{report.dataset}: incomplete; `python -m harness data download {report.dataset} --root {args.root}` "
              "fetches what is missing or corrupt", file=sys.stderr)
    return 0 if report.ok else 1


def _stats(args: argparse.Namespace) -> int:
    from protocols.data import DatasetError
    from protocols.datasets import BLOCKS_SUFFIX, all_datasets, load_dataset, resolve_data_root
    from protocols.datasets.paper import PAPER_DATASETS
    from protocols.npe import DELAY, ORDER, dataset_npe

    order = args.npe_order or ORDER
    delay = args.npe_delay or DELAY
    root = resolve_data_root(args.data_root)
    names = list(args.dataset)
    if not names:
        names = [n for n, s in all_datasets().items() if not s.needs_root]
        if root is not None:
            from protocols.datasets.mitbih import holds_records

            names += [n for n in PAPER_DATASETS
                      if (root / n).is_dir() or (n == "mitbih" and holds_records(root))]
            names += [n for n, s in all_datasets().items()
                      if s.needs_root and n not in PAPER_DATASETS and (root / n).is_dir()]
    paper = _paper_statistics()
    rows = []
    for name in names:
        try:
            ds = load_dataset(name, data_root=root)
            npe = dataset_npe([r.values for r in ds.recordings], order, delay)
        except (DatasetError, ValueError) as exc:
            if args.dataset:  # asked for by name: its failure is the answer
                raise
            print(f"skipped {name}: {exc}", file=sys.stderr)
            continue
        c = len(ds.channels)
        theirs = paper.get(name.partition(BLOCKS_SUFFIX)[0], ("-", "-"))
        rows.append((ds.name, "SC" if c == 1 else "MC", c, f"{npe:.3f}", len(ds.subjects), len(ds.recordings), *theirs))
    print(f"{'Dataset':<24} {'Type':<5} {'#Channels':>9} {'NPE':>6} {'#Subjects':>9} {'#Recordings':>11}"
          f"   {'Paper: #Channels':>16} {'NPE':>6}")
    for name, kind, c, npe, subjects, recordings, paper_c, paper_npe in rows:
        print(f"{name:<24} {kind:<5} {c:>9} {npe:>6} {subjects:>9} {recordings:>11}   {paper_c:>16} {paper_npe:>6}")
    print(f"NPE: normalised permutation entropy, order {order}, delay {delay}, mean over every channel of every "
          "recording (missing samples skipped); parameters are our choice, see protocols/npe.py")
    if any(r[-1] != "-" for r in rows):
        print("Paper: the paper's dataset statistics (tab:eval-stats, transcribed in results/paper/eval-stats.csv) "
              "for its whole datasets; ours for the recordings read here (docs/paper-datasets.md)")
    return 0


def _paper_statistics() -> dict[str, tuple[str, str]]:
    """Our dataset name -> the paper's (channels, NPE) as printed, from the transcribed paper tables."""
    from harness.reporting import paper
    from harness.reporting.paper_cells import DATASETS

    try:
        table = paper.load()["tab:eval-stats"]
    except (OSError, KeyError) as exc:  # a copy without results/paper: ours alone, and why
        print(f"paper values not shown: no transcribed paper table ({exc}); `python -m harness.reporting.paper` writes it",
              file=sys.stderr)
        return {}
    values = {(row.dataset, row.metric): str(row.value) for row in table.itertuples()}
    return {ours: (values[(theirs, "channels")], values[(theirs, "NPE")]) for ours, theirs in DATASETS.items()}
