"""``python -m tests.golden write [NAME ...]``: write the golden file of each current version that has none;
``python -m tests.golden check [NAME ...]``: recompute and compare. NAME: a task (``forecasting``) or a model
(``model-soter``, or ``soter``); none: every golden. Exit 1 when numbers moved, 2 on a bad name."""

from __future__ import annotations

import argparse
import os
import sys

from tests.golden import numbers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden", description=__doc__)
    parser.add_argument("action", choices=("write", "check"))
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of: {', '.join(numbers.names())} (default: all)")
    args = parser.parse_args(argv)
    try:
        chosen = [numbers.canonical(n) for n in args.names] or numbers.names()
    except KeyError as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    failed = False
    for name in chosen:
        now = numbers.compute(name)
        if args.action == "write":
            ok, line = numbers.write(name, now)
        else:
            line = numbers.check(name, now)
            ok, line = not line, line or f"{numbers.stem(name)}: numbers hold"
        print(line, file=sys.stdout if ok else sys.stderr)
        failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.exit(main())
