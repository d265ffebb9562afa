"""README.md and docs/*.md link only to what the repository holds (no device: reads files).

A relative link must name an existing file or folder, and an anchor (``page.md#section``, or
``#section`` on the same page) a heading of that page, as GitHub spells heading anchors.
Nothing may point outside the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), the target up to a space or the closing parenthesis.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)[^)]*\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())  # code blocks hold commands, not links
    text = re.sub(r"`[^`\n]*`", "", text)  # and so do inline code spans
    return LINK.findall(text)


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes."""
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {_anchor(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def test_there_are_docs_pages_and_the_readme_links_every_one() -> None:
    docs = [page for page in PAGES if page.parent == ROOT / "docs"]
    assert len(docs) >= 10
    linked = {ROOT / "docs" / name for name in re.findall(r"\(docs/([\w-]+\.md)\)", (ROOT / "README.md").read_text())}
    assert set(docs) <= linked, sorted(page.name for page in set(docs) - linked)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: outside links are not checked here
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if ROOT.resolve() not in (file, *file.parents):
            broken.append(f"{target}: outside the repository")
        elif not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, broken


def test_the_anchor_rule_is_github_s() -> None:
    assert _anchor("linbench ab: same-job A/B") == "linbench-ab-same-job-ab"
    assert _anchor("Against one impl: `--compare-to`") == "against-one-impl---compare-to"
    assert _anchor("Against the state of the art: fla, torch.compile and SDPA's backends") == (
        "against-the-state-of-the-art-fla-torchcompile-and-sdpas-backends"
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_no_page_cites_a_file_outside_the_repository(page: Path) -> None:
    """Not in a link, and not in prose or a command either: every path that climbs with ``../``
    stays inside the repository."""
    climbing = re.findall(r"(?:\.\./)+[\w.-]*", page.read_text())
    outside = [path for path in climbing if ROOT.resolve() not in (page.parent / path).resolve().parents]
    assert not outside, outside
