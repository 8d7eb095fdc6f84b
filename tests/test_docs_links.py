"""Every relative link in README.md and docs/*.md leads somewhere: the file exists and, when the link
names a heading (`page.md#heading`), the page has that heading. The README points into docs/ and
the pages point at each other, so a renamed page or heading would otherwise break them silently."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^`]*$")       # an info string never holds a backtick
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def prose(text: str) -> str:
    """The text with fenced code blocks and inline code removed: a link-like string there is code."""
    kept, fence = [], None
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * 3
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            kept.append(line)
    return CODE_SPAN.sub("", "\n".join(kept))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    for line in prose(page.read_text()).splitlines():
        match = HEADING.match(line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):        # https:, mailto: ...: not ours to check
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


def test_the_readme_links_to_every_docs_page():
    readme = prose((ROOT / "README.md").read_text())
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in LINK.findall(readme)}
    assert PAGES[1:], "no docs/*.md pages"
    assert [p.name for p in PAGES[1:] if p.resolve() not in linked] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(page):
    assert broken_links(page) == []


def test_a_broken_link_is_caught(tmp_path):
    """The checker itself: a missing file, a missing heading and a good link, told apart."""
    (tmp_path / "other.md").write_text("# Other page\n\n## Exit codes\n\n## Exit codes\n")
    page = tmp_path / "page.md"
    page.write_text("[a](other.md#exit-codes) [b](other.md#exit-codes-1) [c](missing.md)\n"
                    "[d](other.md#no-such) `[e](in-code.md)` [f](https://example.com/x)\n"
                    "```\n[g](fenced.md)\n```\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#no-such: no heading #no-such in other.md"]
