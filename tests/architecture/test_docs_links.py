"""The README stays a newcomer's page, and every relative link of it and of docs/ leads somewhere."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but hyphens and underscores dropped, spaces hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target):
            continue  # a web address: not checked offline
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor}")
    return broken


def test_the_slug_is_githubs() -> None:
    assert slug(" What the service says about itself: `platform_status` and holds") == (
        "what-the-service-says-about-itself-platform_status-and-holds"
    )


def test_every_relative_link_of_the_readme_and_the_docs_resolves() -> None:
    broken = {page.relative_to(REPO_ROOT).as_posix(): broken_links(page) for page in PAGES}
    assert not {page: links for page, links in broken.items() if links}


def test_the_readme_fits_in_300_lines() -> None:
    assert len((REPO_ROOT / "README.md").read_text().splitlines()) <= 300


def test_no_table_of_the_schema_reference_is_repeated() -> None:
    """The column tables live in docs/schema.md only: no other page holds a row of one."""
    rows = {line for line in (REPO_ROOT / "docs" / "schema.md").read_text().splitlines() if line.startswith("| `")}
    for page in PAGES:
        if page.name != "schema.md":
            assert not rows & set(page.read_text().splitlines()), page
