"""The input-sensitivity probe's verdict table (``run --probe-input``, ``protocols.sensitivity``): one row per model,
one column per dataset; each cell the verdict and the forecasts' median relative change under each input change
(level / reversed / other, in standard deviations of the context), so that the margin to the tolerance shows."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from harness.reporting.tables import TEXT_WIDTH, md_escape, plain

CAPTION = ("Input-sensitivity probe: per model and dataset, the verdict and the forecasts' median relative change "
           "when the context was shifted in level / time-reversed / replaced by another window of the test subject "
           "(mean absolute change over the horizon, in standard deviations of the context; a change at most the "
           "tolerance is ignored). Flagged verdicts in capitals.")


def _cell(verdict: Mapping[str, Any]) -> str:
    changes = verdict.get("changes") or {}
    if not changes:
        return f"{verdict['verdict']} ({verdict.get('note', '')})"
    numbers = " / ".join("-" if changes.get(c) is None else f"{changes[c]:.3g}" for c in ("level", "reversed", "other"))
    word = str(verdict["verdict"]).upper() if verdict.get("flagged") else str(verdict["verdict"])
    ignored = verdict.get("ignored") or []
    return f"{word} {numbers}" + (f" (ignores {', '.join(ignored)})" if ignored and not verdict.get("flagged") else "")


def verdict_table(verdicts: Sequence[Mapping[str, Any]], style: str = "markdown") -> str:
    """The verdicts as a Markdown or text table ("" when there are none)."""
    if not verdicts:
        return ""
    datasets = list(dict.fromkeys(str(v["dataset"]) for v in verdicts))
    models = list(dict.fromkeys(str(v["model"]) for v in verdicts))
    cells = {(str(v["model"]), str(v["dataset"])): _cell(v) for v in verdicts}
    tolerances = sorted({float(v["rtol"]) for v in verdicts if "rtol" in v})
    caption = CAPTION + (f" Tolerance {', '.join(f'{t:g}' for t in tolerances)}." if tolerances else "")
    setting = sorted({f"{v['dataset']}: fold {v['fold']}, {v.get('setting', '?')}" for v in verdicts if "fold" in v})
    footer = "Probed: " + "; ".join(setting) + "." if setting else ""
    if style == "markdown":
        lines = [md_escape(caption), "", "| Model | " + " | ".join(md_escape(d) for d in datasets) + " |",
                 "|" + "---|" * (len(datasets) + 1)]
        lines += ["| " + " | ".join([md_escape(m), *[md_escape(cells.get((m, d), "")) for d in datasets]]) + " |"
                  for m in models]
        return "\n".join(lines + (["", md_escape(footer)] if footer else [])) + "\n"
    if style != "text":
        raise ValueError(f"the verdict table is text or markdown, not {style!r}")
    rows = [["Model", *datasets], *[[m, *[cells.get((m, d), "") for d in datasets]] for m in models]]
    widths = [max(len(plain(r[i])) for r in rows) for i in range(len(rows[0]))]
    out = [textwrap.fill(plain(caption), TEXT_WIDTH), *["  ".join(plain(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]]
    out.insert(2, "  ".join("-" * w for w in widths))
    return "\n".join(out + ([textwrap.fill(plain(footer), TEXT_WIDTH)] if footer else [])) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m harness.reporting.input_sensitivity OUT ...``: one verdict table of several runs' folders."""
    import argparse
    import sys

    from harness.records.input_sensitivity import VERDICTS_FILE, read_verdicts

    parser = argparse.ArgumentParser(prog="python -m harness.reporting.input_sensitivity", description=main.__doc__)
    parser.add_argument("folders", nargs="+", metavar="OUT", help="--out folders of `run --probe-input`")
    parser.add_argument("--format", choices=("text", "markdown"), default="text")
    args = parser.parse_args(argv)
    verdicts = [v for folder in args.folders for v in read_verdicts(folder)]
    if not verdicts:
        print(f"error: no {VERDICTS_FILE} with verdicts in {', '.join(args.folders)}: run with --probe-input first",
              file=sys.stderr)
        return 2
    print(verdict_table(verdicts, args.format), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
