"""Issue #32 item 7: `harness report` also writes one self-contained HTML file (tables, statistics, every
figure embedded, the paper comparison, what was not produced and why), checked in headless Chromium:
no missing image, no console error, and sortable columns that sort."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from harness.reporting.report import write_report
from harness.reporting.report_html import markdown_to_html
from tests.test_report import fixed_records, imputation_records

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("html")
    results = root / "run"
    results.mkdir()
    pd.concat([fixed_records(), imputation_records()], ignore_index=True).to_csv(results / "records.csv", index=False)
    return write_report(results, root / "out")


def test_the_html_report_holds_everything_and_needs_no_other_file(report):
    out = report.path.parent
    page = report.html.read_text()
    assert report.html == out / "report.html"
    assert not re.search(r"""(src|href)=["'](https?:|//|file:)""", page) and "<link" not in page
    images = re.findall(r'<img src="([^"]+)"', page)
    pngs = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.png"))
    assert pngs and len(images) == len(pngs)  # every figure, embedded
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG)
    for md in (*out.glob("tables/*.md"), *out.glob("statistics/*.md"), *out.glob("comparison/*.md")):
        assert f"<h3>{md.stem}</h3>" in page
    for what, _ in report.missing:
        assert what.split(":")[0] in page
    assert "tab:ablation" in page and "needs the ablation study" in page  # what was not produced, and why


def test_the_html_report_holds_the_pre_training_overlap_registry_as_report_md_does(report):
    """Before, REPORT.md ended with the overlap registry (issue #35) and report.html left it out."""
    from models.pretraining import registry

    page = report.html.read_text()
    assert "## Pre-training overlap" in report.path.read_text()
    assert "Pre-training overlap</h" in page
    reg = registry()
    for key in [k for k, e in reg.entries.items() if not e.generated] + list(reg.checkpoints):
        assert f"<td>{key}</td>" in page  # each row of the registry


def test_markdown_tables_keep_escaped_bars_and_the_best_marks():
    html = markdown_to_html("| model | RMSE |\n|---|---:|\n| a \\| b | **1.00** |\n| c | <u>2.00</u> |\n")
    assert "<td>a | b</td>" in html and "<td><b>1.00</b></td>" in html and "<td><u>2.00</u></td>" in html
    assert "<script" not in markdown_to_html("<script>alert(1)</script>")  # text is escaped


CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
PROBE = """<script>
window.__errors = [];
window.addEventListener("error", function (e) { window.__errors.push(String(e.message || e.target.src)); }, true);
window.addEventListener("load", function () {
  var broken = Array.from(document.images).filter(function (i) { return !i.complete || i.naturalWidth === 0; });
  var table = document.querySelector("table.sortable"), sorted = "no table";
  if (table) {
    table.tHead.rows[0].cells[1].click();
    var v = Array.from(table.tBodies[0].rows).map(function (r) { return parseFloat(r.cells[1].textContent); })
      .filter(function (x) { return !isNaN(x); });
    sorted = v.every(function (x, i) { return i === 0 || v[i - 1] <= x; }) ? "ascending" : "unsorted";
  }
  document.body.setAttribute("data-probe", JSON.stringify({images: document.images.length, broken: broken.length,
    errors: window.__errors, sorted: sorted}));
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed (Debian: apt-get install chromium)")
def test_the_report_renders_in_headless_chromium(report, tmp_path):
    probed = tmp_path / "probed.html"
    probed.write_text(report.html.read_text().replace("<head>", "<head>" + PROBE, 1))
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"]
    proc = subprocess.run([*flags, "--dump-dom", probed.as_uri()], capture_output=True, text=True)
    found = re.search(r"data-probe=\"([^\"]+)\"", proc.stdout)
    assert found, proc.stderr[-2000:]
    import html as html_lib
    import json

    probe = json.loads(html_lib.unescape(found.group(1)))
    assert probe["images"] > 0 and probe["broken"] == 0 and probe["errors"] == []
    assert probe["sorted"] == "ascending"
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert console == []
    shot = tmp_path / "report.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1280,2400", report.html.as_uri()],
                   capture_output=True)
    assert shot.read_bytes().startswith(PNG)
