"""One page of a unified list: its items and its pagination object, cursors redeemed and issued, under the
readings and faults that shape pages (empty or short pages, overlaps, refused cursors, totals)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pmw_sandbox.cursors import CursorBook, CursorError
from pmw_sandbox.unified_context import Context
from pmw_sandbox.unified_http import Query, UnifiedError
from pmw_sandbox.world import Record

# Under the `page_overlap` reading, each next page starts with this many items of the page before.
PAGE_OVERLAP = 2


class Pager:
    """Cursor pagination of the unified lists, cursors bound to the listing (endpoint and filters) they page."""

    def __init__(self, context: Context, cursors: CursorBook) -> None:
        self.context, self.cursors = context, cursors
        self._refused_listings: set[str] = set()  # listings whose first cursor was refused (cursor_refusal reading)

    def page(
        self, endpoint: str, resource: str, query: Query, total: int, fetch: Callable[[int, int], list[Record]]
    ) -> tuple[list[Record], Record]:
        """One page of a cursor-paginated list: the items and the pagination object."""
        limit = query.limit(resource)
        filters = query.filters()
        readings = self.context.readings
        # Under `empty_pages`, an empty page (its items filtered out after paging) comes before each page of
        # items: its cursor holds the offset of the page it comes before, as -(offset + 1).
        offset = -1 if readings.empty_pages and total else 0
        token = query.text("cursor")
        if token is not None:
            offset = self._redeem(token, endpoint, filters)
        if offset < 0:
            following = -offset - 1
            pagination = {"total": total, "limit": limit, "has_more": True,
                          "next_cursor": self.cursors.issue(endpoint, filters, following)}
            return [], self._total_as_read(pagination)
        served = max(1, limit // 3) if readings.short_pages else limit
        items = fetch(offset, served)
        end = offset + len(items)
        has_more = end < total
        next_cursor = None
        if has_more:
            overlap = min(max(self.context.faults.duplicate_items, PAGE_OVERLAP * readings.page_overlap),
                          len(items) - 1)
            following = end - max(overlap, 0)
            next_cursor = self.cursors.issue(endpoint, filters, -following - 1 if readings.empty_pages else following)
        elif readings.cursor_on_last_page:
            next_cursor = self.cursors.issue(endpoint, filters, end)
        pagination: Record = {"total": total, "limit": limit, "has_more": has_more, "next_cursor": next_cursor}
        return items, self._total_as_read(pagination)

    def _redeem(self, token: str, endpoint: str, filters: Mapping[str, str]) -> int:
        """The offset a cursor stands for, or the reading's refusal: a cursor that has expired (under the
        `cursor_expiry_rate` fault, or, under a `cursor_refusal` reading other than the default, the first
        cursor of each listing, once), or one that is no cursor of this listing."""
        faults, refusal = self.context.faults, self.context.readings.cursor_refusal
        if faults.cursor_expiry_rate and self.context.dice.random() < faults.cursor_expiry_rate:
            self.cursors.expire(token)
        listing = self.cursors.filters_digest(endpoint, filters)
        if refusal != "invalid_cursor" and listing not in self._refused_listings:
            self._refused_listings.add(listing)
            self.cursors.expire(token)
        try:
            return self.cursors.redeem(token, endpoint, filters)
        except (CursorError, ValueError, KeyError) as error:
            message = str(error) if isinstance(error, CursorError) else "cursor is not a cursor this service issued"
            if refusal == "gone":
                raise UnifiedError(410, "GONE", f"the cursor is no longer valid: {message}") from None
            code = "INVALID_CURSOR" if refusal == "invalid_cursor" else "VALIDATION_ERROR"
            raise UnifiedError(400, code, f"invalid parameter 'cursor': {message}") from None

    def _total_as_read(self, pagination: Record) -> Record:
        """`pagination.total` as the reading gives it: the count, absent, or wrong."""
        readings = self.context.readings
        total = pagination["total"]
        if readings.pagination_total == "absent":
            del pagination["total"]
        elif readings.pagination_total == "wrong":  # too low: a total above the items would say some are lost
            pagination["total"] = total // 2
        return pagination
