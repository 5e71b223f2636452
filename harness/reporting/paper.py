"""The paper's tables as data: a parser for the tables of ``soter-paper.tex`` and the meaning of
every column, so that ``results/paper/`` holds one tidy CSV per table (values as printed).

    python -m harness.reporting.paper --tex ../shared/paper/soter-paper.tex --out results/paper

Cells are read as printed: ``\\pmstd{m}{s}`` gives mean and std, bold / underline / asterisks are
dropped, ``/`` (not supported) gives no row.  ``scale`` says how the paper printed the values (100:
"entries rescaled by 10^2"), so that ``mean / scale`` is in the protocol's units.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

PAPER_DIR = Path(__file__).resolve().parents[2] / "results" / "paper"
DATASETS = ("HeartRate", "MIT-BIH", "ScientiSST MOVE", "IEEE PPG", "MMASH", "WDD")
ERRORS = ("RMSE", "MAE")


def average_of(datasets) -> str:
    """The name of an average column: it compares only with an average over the same datasets."""
    return "average of " + ", ".join(sorted(datasets))


AVERAGE_OF_THREE = average_of(("WDD", "ScientiSST MOVE", "MMASH"))


@dataclass(frozen=True)
class Spec:
    keys: tuple[str, ...]  # names of the leading label columns; the first is the row's method/label
    columns: tuple[tuple[str, str, str], ...]  # (dataset, metric, condition) of each value column
    scale: float  # printed value = protocol value x scale
    task: str
    units: str


def _errors(datasets, condition: str) -> tuple[tuple[str, str, str], ...]:
    return tuple((d, m, condition) for d in datasets for m in ERRORS)


_BUDGETS = ("1%", "5%", "10%", "25%", "50%", "100%")
SPECS: dict[str, Spec] = {
    "tab:main_results": Spec(("method", "params", "source"), _errors(DATASETS, "mean over 4 windows"), 100,
                             "forecasting", "RMSE / MAE x 100, normalised space; mean ± std over the four windows"),
    "tab:classification": Spec(("method",), (*[(d, m, "budget=100%") for d in ("WDD", "ScientiSST MOVE", "MMASH")
                                               for m in ("Macro-F1", "Macro-AUROC")],
                                             (AVERAGE_OF_THREE, "Macro-AUROC", "budget=100%")), 100, "classification",
                               "Macro-F1 and Macro-AUROC in %; mean ± std over three runs"),
    "tab:ablation": Spec(("method",), _errors(("HeartRate", "MIT-BIH", "ScientiSST MOVE"), "mean over 4 windows"), 100,
                         "ablation", "RMSE / MAE x 100"),
    "tab:corpus_matched": Spec(("method",), _errors(("MIT-BIH", "ScientiSST MOVE"), "mean over 4 windows"), 100,
                               "corpus-matched", "RMSE / MAE x 100; mean ± std over the four windows"),
    "tab:pretraining_exposure": Spec(("exposure",), _errors(("MIT-BIH", "ScientiSST MOVE", "WDD"),
                                                            "mean over 4 windows"), 100, "exposure",
                                     "RMSE / MAE x 100; mean ± std over the four windows"),
    "tab:eval-stats": Spec(("dataset", "type"), (("", "channels", ""), ("", "NPE", "")), 1, "dataset statistics",
                           "number of channels; normalised permutation entropy"),
    "tab:sensitivity": Spec(("dft", "solver", "tolerance"), (("MIT-BIH", "RMSE", "128/64"), ("MIT-BIH", "MAE", "128/64"),
                                                             ("MIT-BIH", "latency_s_per_step", "")), 1, "sensitivity",
                            "RMSE / MAE in normalised space (256 windows of 128/64, seed 42); seconds per step"),
    **{f"tab:e-win{h}": Spec(("method",), _errors(DATASETS, f"{2 * h}/{h}"), 1, "forecasting",
                             "RMSE / MAE in normalised space (unscaled), one window")
       for h in (24, 36, 48, 64)},
    **{f"tab:e-imp{r}": Spec(("method",), _errors(DATASETS, f"missing={r}%"), 1, "imputation",
                             "RMSE / MAE in normalised space (unscaled); mean ± std over three seeds")
       for r in (25, 50, 75)},
    "tab:label_efficiency": Spec(("method",), (*[("ScientiSST MOVE", "Macro-F1", f"budget={b}") for b in _BUDGETS],
                                               *[("ScientiSST MOVE", "Macro-AUROC", f"budget={b}") for b in _BUDGETS]),
                                 100, "classification", "Macro-F1 / Macro-AUROC in %; mean ± std over three runs"),
}


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_MATH = [(r"\\pm", "±"), (r"\\times", "×"), (r"\\%", "%"), (r"\{,\}", ","),
         (r"\\(?:mathrm|mathbf|text|textbf|mathit)\{([^{}]*)\}", r"\1")]


def plain_caption(text: str) -> str:
    """A caption of the paper as plain text (a report, a web page): ``$10^{2}$`` as 10², ``Table~\\ref{tab:x}``
    as "Table tab:x", ``$\\mathrm{mean}_{\\pm\\mathrm{std}}$`` as mean±std, ``$25\\%$`` as 25%, quotes as quotes."""
    def math(m: re.Match) -> str:
        inner = m.group(1)
        for pattern, repl in _MATH:
            inner = re.sub(pattern, repl, inner)
        inner = re.sub(r"\^\{([-\d]+)\}", lambda n: n.group(1).translate(_SUPERSCRIPT), inner)
        inner = re.sub(r"_\{([^{}]*)\}", r"\1", inner)
        return inner.replace("{", "").replace("}", "")

    text = re.sub(r"\$([^$]*)\$", math, text)
    text = re.sub(r"\\(?:ref|cite|eqref)\{([^}]*)\}", r"\1", text).replace("~", " ")
    text = re.sub(r"\\(?:textbf|emph|textit|mathrm)\{([^{}]*)\}", r"\1", text).replace("\\%", "%")
    return text.replace("``", "\u201c").replace("''", "\u201d")


def _strip(cell: str) -> str:
    """A cell's text without formatting: bold, underline, asterisks, math, multirow."""
    cell = re.sub(r"\\multirow\{[^}]*\}\{[^}]*\}\{([^}]*)\}", r"\1", cell)
    cell = re.sub(r"\\(mathbf|underline|second|textbf|mathrm)\{", "{", cell)
    cell = cell.replace("^{*}", "").replace("$", "").replace("\\%", "%")
    cell = re.sub(r"10\^\{(-?\d+)\}", r"1e\1", cell)
    return re.sub(r"[{}]", "", cell).strip()


def _split_pmstd(cell: str) -> tuple[str, str | None]:
    m = re.fullmatch(r"\s*\\pmstd\{(.*)\}\{(.*)\}\s*", cell)
    return (_strip(m.group(1)), _strip(m.group(2))) if m else (_strip(cell), None)


def parse_tables(tex: str) -> dict[str, tuple[str, list[list[str]]]]:
    """label -> (caption, body rows as lists of raw cells)."""
    out = {}
    for env in re.finditer(r"\\begin\{table\*?\}(.*?)\\end\{table\*?\}", tex, flags=re.S):
        text = env.group(1)
        label = re.search(r"\\label\{([^}]*)\}", text)
        if not label:
            continue
        caption = _caption(text)
        tabular = re.search(r"\\begin\{tabular\}\{.*?\}\n(.*?)\\end\{tabular\}", text, flags=re.S)
        body = tabular.group(1).split("\\midrule", 1)[1]
        body = re.sub(r"\\rowcolor(\[[^]]*\])?\{[^}]*\}", "", body)
        body = re.sub(r"\\(midrule|bottomrule|hline)", "", body)
        body = "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in body.splitlines())  # comments, not \\%
        rows = [[c.strip() for c in r.split("&")] for r in body.split("\\\\") if "&" in r]
        out[label.group(1)] = (caption, rows)
    return out


def _caption(text: str) -> str:
    start = text.index("\\caption{") + len("\\caption{")
    depth, i = 1, start
    while depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return " ".join(text[start:i - 1].split())


def transcribe(tex: str) -> dict[str, pd.DataFrame]:
    tables = parse_tables(tex)
    missing = sorted(set(SPECS) - set(tables))
    if missing:
        raise ValueError(f"tables not found in the paper: {missing}")
    out = {}
    for label, spec in SPECS.items():
        caption, rows = tables[label]
        records = []
        for row in rows:
            n = len(spec.keys)
            if len(row) != n + len(spec.columns):
                raise ValueError(f"{label}: a row has {len(row)} cells, expected {n + len(spec.columns)}: {row[:3]}")
            keys = {k: _strip(v) for k, v in zip(spec.keys, row[:n])}
            for (dataset, metric, condition), cell in zip(spec.columns, row[n:]):
                mean, std = _split_pmstd(cell)
                if mean in ("/", "", "-"):
                    continue
                records.append({"table": label, **keys, "dataset": dataset or keys.get("dataset", ""),
                                "metric": metric, "condition": condition, "value": mean, "std": std,
                                "scale": spec.scale})
        frame = pd.DataFrame(records)
        frame.attrs["caption"] = caption
        out[label] = frame
    return out


def write(tex_path: Path, out: Path) -> list[Path]:
    tables = transcribe(Path(tex_path).read_text())
    out.mkdir(parents=True, exist_ok=True)
    files, meta = [], {}
    for label, frame in tables.items():
        path = out / f"{label.split(':', 1)[1]}.csv"
        frame.to_csv(path, index=False)
        files.append(path)
        spec = SPECS[label]
        meta[label] = {"file": path.name, "caption": frame.attrs["caption"], "units": spec.units, "scale": spec.scale,
                       "task": spec.task, "keys": list(spec.keys)}
    (out / "tables.json").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    return files + [out / "tables.json"]


def load(folder: Path = PAPER_DIR) -> dict[str, pd.DataFrame]:
    """The transcribed tables (label -> frame with ``caption`` in attrs)."""
    meta = json.loads((folder / "tables.json").read_text())
    out = {}
    for label, m in meta.items():
        frame = pd.read_csv(folder / m["file"], dtype={"value": str, "std": str})
        frame.attrs.update(m)
        out[label] = frame
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.reporting.paper", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tex", type=Path, default=Path(__file__).resolve().parents[3] / "shared" / "paper" /
                   "soter-paper.tex")
    p.add_argument("--out", type=Path, default=PAPER_DIR)
    args = p.parse_args(argv)
    for f in write(args.tex, args.out):
        print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
