"""How many pages a list may take, from evidence: what the service says of the list, or what the caller knows.

A list that gives its own count of its items (`pagination.total`) may take twice the pages that count needs at the
page size asked, plus `MARGIN_PAGES` (a count a little off, items added while paging, overlaps); a restart from the
first page starts a new allowance. A list that counts nothing is held to the caller's `Evidence` the same way (the
previous listing's size), and with neither to PMW_MAX_PAGES. A server that sends new items on every page is so
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
    """The most pages one walk of a list may ask for, as its pages come."""

    def __init__(self, max_pages: int, expected: Evidence | None = None) -> None:
        self.max_pages, self.expected = max_pages, expected
        self.total: int | None = None  # the first count the list gave of itself
        self.start = 0  # pages asked before the current pass (a restart from the first page)

    def counted(self, total: int | None) -> None:
        """A page's count of the list's items: the first one given holds (a count that grew on every page would
        move the bound with it)."""
        if self.total is None and total:
            self.total = total

    def restart(self, asked: int) -> None:
        """The walk starts again from the first page after `asked` pages: a new allowance."""
        self.start = asked

    def pages(self, query: dict[str, Any]) -> int:
        needed = self._needed(query)
        return self.max_pages if needed is None else self.start + 2 * needed[0] + MARGIN_PAGES

    def said(self, query: dict[str, Any]) -> str:
        """The bound as a failure names it."""
        needed = self._needed(query)
        if needed is None:
            return f"PMW_MAX_PAGES={self.max_pages}"
        pages, source = needed
        restarted = f" (counted from page {self.start + 1}, a restart)" if self.start else ""
        return (f"{self.pages(query)} pages, twice the {pages} page{'s' if pages != 1 else ''} of {source} at "
                f"limit={query['limit']}, plus {MARGIN_PAGES}{restarted}")

    def _needed(self, query: dict[str, Any]) -> tuple[int, str] | None:
        """The pages the evidence says the list needs at the query's page size, and what said so."""
        evidence, limit = self._evidence(), query.get("limit")
        if evidence is None or type(limit) is not int or limit <= 0:
            return None
        return -(-evidence[0] // limit), evidence[1]

    def _evidence(self) -> tuple[int, str] | None:
        if self.total is not None:
            return self.total, f"its pagination.total={self.total}"
        if self.expected is not None and self.expected.items > 0:
            return self.expected.items, self.expected.source
        return None
