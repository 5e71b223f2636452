"""One self-contained HTML file of a report (``report.html`` beside ``REPORT.md``): the tables, the
leaderboard and significance grids, every figure (PNG embedded as data URIs), the paper comparison, and
what was not produced and why. It needs no network and no other file to view, so it can be mailed or
archived as one file; columns sort on a click (numbers as numbers).

It reads the Markdown and PNG files :func:`harness.reporting.report.write_report` wrote under ``out``: one source
of every number, never a second rendering of the records.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

SECTIONS = (  # (heading, folder under out, what it holds)
    ("Tables", "tables", "this run's tables (x100; best in bold, second best underlined where marked)"),
    ("Statistics", "statistics", "leaderboard, significance grids with bootstrap intervals, win/tie/loss"),
    ("Figures", "figures", "figures drawn from the records and those copied in"),
    ("Paper comparison", "comparison", "the paper's numbers beside ours, cell by cell"),
)

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;
color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f3f3f3;cursor:pointer;user-select:none}th:first-child,td:first-child{text-align:left}
th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
tr:nth-child(even) td{background:#fafafa}.wrap{overflow-x:auto}
figure{margin:1em 0 2em}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}nav a{margin-right:1em}ul.missing li{margin-bottom:.3em}
code{background:#f3f3f3;padding:0 .2em}
"""

SORT_SCRIPT = """
function cellValue(td){const t=td.textContent.trim();const m=t.match(/^[-+]?\\d*\\.?\\d+(e[-+]?\\d+)?/i);
return m?parseFloat(m[0]):t.toLowerCase();}
document.querySelectorAll("table.sortable").forEach(function(table){
 table.querySelectorAll("th").forEach(function(th,col){th.addEventListener("click",function(){
  const body=table.tBodies[0];const rows=Array.from(body.rows);
  const dir=th.getAttribute("aria-sort")==="ascending"?"descending":"ascending";
  table.querySelectorAll("th").forEach(function(o){o.removeAttribute("aria-sort");});
  th.setAttribute("aria-sort",dir);
  rows.sort(function(a,b){const x=cellValue(a.cells[col]),y=cellValue(b.cells[col]);
   const blankX=a.cells[col].textContent.trim()==="",blankY=b.cells[col].textContent.trim()==="";
   if(blankX!==blankY)return blankX?1:-1;
   const c=(typeof x===typeof y)?(x<y?-1:x>y?1:0):(typeof x==="number"?-1:1);
   return dir==="ascending"?c:-c;});
  rows.forEach(function(r){body.appendChild(r);});});});});
"""


def _inline(text: str) -> str:
    """Markdown inline marks the harness writes (``**bold**``, ``<u>`` underline, ```code```, backslash
    escapes) as HTML; everything else escaped."""
    out = html.escape(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", lambda m: "\x00%d\x00" % ord(m.group(1)), text),
                      quote=False)
    out = re.sub(r"&lt;(/?)u&gt;", r"<\1u>", out)  # the tables' second-best mark
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub("\x00(\\d+)\x00", lambda m: html.escape(chr(int(m.group(1)))), out)


def _cells(line: str) -> list[str]:
    """The cells of one pipe-table row (``\\|`` is a literal bar)."""
    parts = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in parts[1:-1]] if len(parts) > 2 else [c.strip() for c in parts]


def markdown_to_html(text: str) -> str:
    """The Markdown subset the harness writes: headings, pipe tables, bullet lists, paragraphs."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            rows = [_cells(r) for r in block if not re.fullmatch(r"\s*\|?[\s:|-]+\|?\s*", r)]
            head, body = rows[0], rows[1:]
            out.append('<div class="wrap"><table class="sortable"><thead><tr>'
                       + "".join(f"<th>{_inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                       + "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in body)
                       + "</tbody></table></div>")
            continue
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        if heading:
            level = min(len(heading.group(1)) + 2, 6)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.lstrip().startswith(("- ", "* ")):
            items = []
            while i < len(lines) and lines[i].lstrip().startswith(("- ", "* ")):
                items.append(f"<li>{_inline(lines[i].lstrip()[2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out)


def _figure(path: Path, out: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    name = path.relative_to(out).as_posix()
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(name)}">'
            f"<figcaption>{html.escape(name)} (the PDF beside it in the report folder)</figcaption></figure>")


def _section(out: Path, heading: str, folder: str, about: str) -> str:
    root = out / folder
    parts = [f'<h2 id="{folder}">{heading}</h2>', f"<p>{html.escape(about)}.</p>"]
    files = sorted(root.glob("*.md")) if root.is_dir() else []
    images = sorted(root.glob("*.png")) if root.is_dir() else []
    if folder == "figures":
        images = sorted(p for p in out.rglob("*.png") if p.parent.name in ("figures", "statistics"))
        files = []
    for f in files:
        parts += [f"<h3>{html.escape(f.stem)}</h3>", markdown_to_html(f.read_text())]
    if folder == "figures":
        parts += [_figure(p, out) for p in images]
    if len(parts) == 2:
        parts.append("<p>none produced (see <a href=\"#missing\">Not produced</a>).</p>")
    return "\n".join(parts)


def write_html(out: Path, header: str, produced: list[str] | tuple[str, ...],
               missing: list[tuple[str, str]] | tuple[tuple[str, str], ...], appendix: str = "") -> Path:
    """``out/report.html`` from the files under ``out``; ``header`` says what the records were; ``appendix``:
    Markdown sections REPORT.md ends with (the pre-training overlap registry), shown after the lists."""
    nav = "".join(f'<a href="#{folder}">{heading}</a>' for heading, folder, _ in SECTIONS)
    body = [f"<h1>Report</h1><p>{_inline(header)}</p>",
            f'<nav>{nav}<a href="#produced">Produced</a><a href="#missing">Not produced</a></nav>',
            "<p>Units: every RMSE and MAE (normalised space), Macro-F1 and Macro-AUROC is x100, shown with two "
            "decimals, in tables, comparisons and figures alike. Click a column header to sort.</p>"]
    body += [_section(out, heading, folder, about) for heading, folder, about in SECTIONS]
    body.append('<h2 id="produced">Produced</h2><ul>' + "".join(f"<li>{_inline(p)}</li>" for p in produced)
                + "</ul>")
    body.append('<h2 id="missing">Not produced, and why</h2><ul class="missing">'
                + ("".join(f"<li><b>{_inline(w)}</b>: {_inline(y)}</li>" for w, y in missing) or "<li>nothing</li>")
                + "</ul>")
    if appendix:
        body.append(markdown_to_html(appendix))
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>soter-bench report</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{STYLE}</style></head>"
            f"<body>\n{chr(10).join(body)}\n<script>{SORT_SCRIPT}</script></body></html>\n")
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
