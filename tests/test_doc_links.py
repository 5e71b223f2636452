"""Every relative link and ``#anchor`` in README.md and docs/*.md resolves: a file that exists, and a heading of
that file whose GitHub slug is the anchor (lowercase, spaces to '-', punctuation other than '-' and '_' removed;
a repeated heading gets '-1', '-2', ...)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _outside_code(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code spans blanked."""
    out, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text: markup dropped, lowercase, punctuation but '-' and '_' removed, each
    space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").lower()
    return re.sub(r"[^\w\- ]", "", text, flags=re.UNICODE).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: dict[str, int] = {}
    out = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else _HEADING.match(line)
        if match:
            base = slug(match.group(2))
            n = found.get(base, 0)
            found[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[str]:
    return [m.group(1) for line in _outside_code(page.read_text(encoding="utf-8")) for m in _LINK.finditer(line)]


def test_the_slug_follows_githubs_rules():
    assert slug("Adaptation (`run --adapt`)") == "adaptation-run---adapt"
    assert slug("Subject shift (issue #48)") == "subject-shift-issue-48"
    assert slug("Fracast-0, the other SOTER entries") == "fracast-0-the-other-soter-entries"
    assert slug("What `--jobs` does: a_b") == "what---jobs-does-a_b"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):  # http:, mailto: ...
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)
