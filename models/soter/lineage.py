"""The SOTER lineage as data: every checkpoint the departing entry ran, with its parent, rule and held-out score.

Why: superseded checkpoints leave the registry and the tree (git keeps them), but what each one added, the rule that
shipped it and its score stay readable in one generated table (``lineage.csv`` beside this file; docs/soter.md holds
the table between the markers below). ``python -m models.soter.lineage`` prints it; ``--write FILE`` replaces the
table in FILE; a test checks that docs/soter.md holds the current one.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

LINEAGE = Path(__file__).with_name("lineage.csv")
BEGIN = "<!-- lineage: generated from models/soter/lineage.csv by `python -m models.soter.lineage --write docs/soter.md` -->"
END = "<!-- end of lineage -->"
COLUMNS = ("rule", "checkpoint", "parent", "entry", "adds", "heldout_score", "decision", "where")


def rows(path: Path = LINEAGE) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: columns must be {COLUMNS}, got {reader.fieldnames}")
        return list(reader)


def _where(value: str) -> str:
    """A commit hash says where to find a checkpoint that left the tree (`git checkout HASH -- FOLDER`)."""
    return f"git `{value}`" if value and all(c in "0123456789abcdef" for c in value) else value


def markdown(path: Path = LINEAGE) -> str:
    """The table, between its markers."""
    lines = [BEGIN, "| rule | checkpoint | parent | shipped as | what it adds | held-out score | decision | where |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows(path):
        cells = [r["rule"], f"`{r['checkpoint']}`" if r["checkpoint"] != "-" else "-", r["parent"] or "-",
                 r["entry"], r["adds"], r["heldout_score"], r["decision"], _where(r["where"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, END])


def replace_table(text: str, table: str) -> str:
    """``text`` with the part between the markers replaced by ``table``; the markers must be there once."""
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError("the lineage markers must appear exactly once")
    head, rest = text.split(BEGIN)
    return head + table + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m models.soter.lineage", description=__doc__)
    p.add_argument("--write", type=Path, help="replace the table between the markers in this file")
    args = p.parse_args(argv)
    if args.write is None:
        print(markdown())
        return 0
    args.write.write_text(replace_table(args.write.read_text(encoding="utf-8"), markdown()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
