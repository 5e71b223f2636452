"""`python -m harness list [datasets|models|tasks]`: what exists, and what each model needs to run."""

from __future__ import annotations

import argparse


def add_arguments(lst: argparse.ArgumentParser) -> None:
    lst.add_argument("what", nargs="?", choices=("datasets", "models", "tasks", "all"), default="all")
    lst.add_argument("--overlap", nargs="+", default=None, metavar="DATASET",
                     help="with `models`: the pre-training overlap matrix, every model on DATASET ('all': every "
                          "evaluation dataset), with the reasons (the same as `data overlap`)")
    lst.add_argument("--long", action="store_true",
                     help="every model in full: licence, description, capabilities and tasks, pre-training data, what "
                          "it needs to run (default: one line each)")


def run(args: argparse.Namespace) -> int:
    """The listing asked for, or with ``--overlap`` the pre-training overlap matrix."""
    if args.overlap is not None:
        if args.what != "models":
            raise ValueError("--overlap lists models: use `list models --overlap DATASET`")
        from harness.reporting.pretraining_marks import matrix_text

        print(matrix_text(None, None if args.overlap == ["all"] else args.overlap))
        return 0
    return _list(args.what, args.long)


WIDTH = 120  # a model's line in the short listing: name, status, family, the description cut to fit


def _list(what: str, long: bool = False) -> int:
    from harness.registry.tasks import all_tasks
    from models.pretraining import data_line
    from models.registry import FAMILY_LABELS, all_specs
    from models.soter.entries import refused as refused_entries
    from protocols.datasets import all_datasets

    if what in ("datasets", "all"):
        print("Datasets (or pass a folder path, see docs/datasets.md):")
        for name, spec in sorted(all_datasets().items()):
            print(f"  {name:<22} {'[default] ' if spec.default else ''}{spec.description}")
    if what in ("models", "all"):
        print("Models (status: ready | needs weights | needs package | needs environment | needs flag | needs code):")
        for name, spec in sorted(all_specs().items()):
            status, reason = spec.status()
            if not long:
                label = f"{spec.default_label()} " if spec.default_label() else ""
                print(_short_line(f"  {name:<22} {status:<17} {spec.family:<12} {label}{spec.description}"))
                continue
            print(f"  {name:<22} {status:<17} {spec.family:<12} licence: {spec.licence}"
                  f"{'  ' + spec.default_label() if spec.default_label() else ''}")
            print(f"  {'':<22} {spec.description}")
            if spec.family in FAMILY_LABELS:
                print(f"  {'':<22} {FAMILY_LABELS[spec.family]}")
            print(f"  {'':<22} capabilities: {_capabilities(spec)}; tasks: {', '.join(spec.tasks)}")
            print(f"  {'':<22} pre-training data: {data_line(name)}")
            if reason:
                print(f"  {'':<22} to run it: {reason}")
        for problem in refused_entries():
            print(f"  skipped (not registered): {problem}")
        if not long:
            print("  (`list models --long`: each model's licence, capabilities, tasks, pre-training data and what it "
                  "needs to run)")
    if what in ("tasks", "all"):
        print("Tasks:")
        for name, task in all_tasks().items():
            print(f"  {name:<22} {task.description}")
            if task.options:
                print(f"  {'':<22} options: {' '.join(o.flag for o in task.options)}")
    return 0


def _short_line(line: str) -> str:
    """``line`` cut to :data:`WIDTH` characters, the cut marked."""
    return line if len(line) <= WIDTH else line[:WIDTH - 3].rstrip() + "..."


def _capabilities(spec) -> str:
    """One line: what the model does (forecast, quantile forecasts, causal imputation, embedding), per
    channel or multivariate, context limits, native horizon."""
    caps = spec.model_capabilities()
    if caps is None:
        return "declared by the model when it loads"
    does = [k for k in ("forecast", "quantiles", "impute", "embed", "fit") if getattr(caps, k)]  # quantiles: CRPS/WQL
    parts = ["+".join(does) or "none", "multivariate" if caps.multivariate else "per channel"]
    if caps.min_context > 1 or caps.max_context is not None:
        parts.append(f"context {caps.min_context}..{caps.max_context if caps.max_context is not None else ''}")
    if caps.settings is not None:
        parts.append("settings " + " ".join(f"{c}/{h}" for c, h in caps.settings))
    if spec.native_horizon:
        parts.append(f"native horizon {spec.native_horizon}")
    return ", ".join(parts)
