"""`python -m harness data download|check|stats`: get datasets, check them, describe them."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(subparsers) -> None:
    data = subparsers.add_parser("data", help="download, check and describe datasets")
    sub = data.add_subparsers(dest="data_command", required=True)
    dl = sub.add_parser("download", help="fetch an open PhysioNet dataset (resumable, SHA-256 verified)")
    dl.add_argument("name")
    dl.add_argument("--root", type=Path, required=True)
    dl.add_argument("--base-url", default=None, help="mirror of https://physionet.org (tests use a local server)")
    ck = sub.add_parser("check", help="which files are present, missing or corrupt")
    ck.add_argument("name")
    ck.add_argument("--root", type=Path, required=True)
    st = sub.add_parser("stats", help="the paper's dataset table: type, channels, NPE")
    st.add_argument("--data-root", type=Path, default=None)
    st.add_argument("--dataset", nargs="+", default=[], metavar="NAME|PATH",
                    help="datasets to describe (default: the embedded cohort and every dataset under --data-root)")


def run(args: argparse.Namespace) -> int:
    from protocols.datasets.download import PHYSIONET, check, download

    if args.data_command == "download":
        files = download(args.name, args.root, base=args.base_url or PHYSIONET)
        print(f"{args.name}: {len(files)} files verified under {args.root / args.name}")
        return 0
    if args.data_command == "check":
        report = check(args.name, args.root)
        for key in ("present", "missing", "corrupt"):
            print(f"{key}: {len(report[key])}" + (f"  {', '.join(report[key][:10])}" if key != "present" else ""))
        return 0 if not (report["missing"] or report["corrupt"]) else 1
    return _stats(args)


def _stats(args: argparse.Namespace) -> int:
    from protocols.data import DatasetError
    from protocols.datasets import all_datasets, load_dataset, resolve_data_root
    from protocols.npe import dataset_npe

    root = resolve_data_root(args.data_root)
    names = list(args.dataset)
    if not names:
        names = [n for n, s in all_datasets().items() if not s.needs_root]
        if root is not None:
            names += [n for n, s in all_datasets().items() if s.needs_root]
    rows = []
    for name in names:
        try:
            ds = load_dataset(name, data_root=root)
        except DatasetError as exc:
            if args.dataset:
                raise
            print(f"skipped {name}: {exc}")
            continue
        c = len(ds.channels)
        rows.append((ds.name, "SC" if c == 1 else "MC", c, dataset_npe([r.values for r in ds.recordings]),
                     len(ds.subjects)))
    print(f"{'Dataset':<24} {'Type':<5} {'#Channels':>9} {'NPE':>6} {'#Subjects':>9}")
    for name, kind, c, npe, subjects in rows:
        print(f"{name:<24} {kind:<5} {c:>9} {npe:>6.3f} {subjects:>9}")
    print("NPE: normalised permutation entropy, order 4, delay 1, mean over channels and recordings "
          "(first 20,000 samples of each), see protocols/npe.py")
    return 0
