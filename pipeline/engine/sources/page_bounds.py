"""How many pages a list may take, from evidence: what the service says of the list, or what the caller knows.

A list that gives its own count of its items (`pagination.total`) may take twice the pages that count needs at the
items a page the server serves, plus `MARGIN_PAGES` (a count off by as much as half, items added while paging,
overlaps), counting only the pages that bring new items; a restart from the first page starts a new allowance. A
list that counts nothing is held to the caller's `Evidence` the same way (the previous listing's size), and with
neither to PMW_MAX_PAGES. A server that sends new items on every page is so
stopped within a few pages of what it said, not after 20,000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MARGIN_PAGES = 50  # pages past twice the evidence's


@dataclass(frozen=True)
class Evidence:
    """What says, besides the list itself, how many items it holds: `items`, and where that comes from (`source`,
    as the failure names it, e.g. "the 38 items of the previous listing")."""

    items: int
    source: str


class PageBound:
    """The most pages one walk of a list may ask for, as its pages come.

    With evidence, what is bounded is the pages that brought new items (empty pages and pages of items already
    given have their own bounds in a row, paging.py), against the pages the evidence needs at the items a page the
    server has been serving: a server whose pages are short, whose count is off by half, or that pads with empty
    pages is not cut short; one that sends new items on every page is."""

    def __init__(self, max_pages: int, expected: Evidence | None = None) -> None:
        self.max_pages, self.expected = max_pages, expected
        self.total: int | None = None  # the first count the list gave of itself
        self.productive = 0  # pages that brought new items
        self.items = 0  # the new items they brought
        self.start = 0  # productive pages before the current pass (a restart from the first page)

    def counted(self, total: int | None) -> None:
        """A page's count of the list's items: the first one given holds (a count that grew on every page would
        move the bound with it)."""
        if self.total is None and total:
            self.total = total

    def brought(self, new_items: int) -> None:
        """A page's new items (none: an empty page, or one of items already given)."""
        if new_items:
            self.productive += 1
            self.items += new_items

    def restart(self) -> None:
        """The walk starts again from the first page: a new allowance."""
        self.start = self.productive

    def reached(self, asked: int, query: dict[str, Any]) -> bool:
        """Whether the walk, `asked` pages in, may ask for no more."""
        needed = self._needed(query)
        if needed is None:
            return asked >= self.max_pages
        return self.productive - self.start >= 2 * needed[0] + MARGIN_PAGES

    def said(self, query: dict[str, Any]) -> str:
        """The bound as a failure names it."""
        needed = self._needed(query)
        if needed is None:
            return f"PMW_MAX_PAGES={self.max_pages}"
        pages, source = needed
        restarted = f" (counted from the restart at page {self.start + 1})" if self.start else ""
        return (f"{2 * pages + MARGIN_PAGES} pages that brought new items, twice the {pages} "
                f"page{'s' if pages != 1 else ''} of {source} at the {self._per_page(query)} items a page served "
                f"(limit={query['limit']}), plus {MARGIN_PAGES}{restarted}")

    def _per_page(self, query: dict[str, Any]) -> int:
        """The items a page brings: as served so far (short pages: fewer than the limit), else the limit."""
        limit = int(query["limit"])
        return max(1, min(limit, self.items // self.productive)) if self.productive else limit

    def _needed(self, query: dict[str, Any]) -> tuple[int, str] | None:
        """The pages the evidence says the list needs at the items a page served, and what said so."""
        evidence, limit = self._evidence(), query.get("limit")
        if evidence is None or type(limit) is not int or limit <= 0:
            return None
        return -(-evidence[0] // self._per_page(query)), evidence[1]

    def _evidence(self) -> tuple[int, str] | None:
        if self.total is not None:
            return self.total, f"its pagination.total={self.total}"
        if self.expected is not None and self.expected.items > 0:
            return self.expected.items, self.expected.source
        return None
