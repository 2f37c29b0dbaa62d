"""The sandbox's readings of the unified API's spec, wherever the spec is silent.

The spec leaves open the order of items, which id a field carries, envelope details and page sizes. A real
server may have read any of those either way, so the sandbox serves each reading, chosen by a switch, and the
tests land the same world through every one (tests/defs/ingestion/test_readings.py): the pipeline must not depend
on the sandbox's own choice. The defaults are the sandbox's original reading. docs/api-readings.md lists them
with what the pipeline does about each.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from pmw_sandbox.switches import parse_switches

# Every reading of each switch that is not a plain yes/no; the first is the default.
CHOICES: dict[str, tuple[str, ...]] = {
    "trades_order": ("newest_first", "oldest_first", "recorded"),
    "price_points_order": ("by_market", "by_market_reversed", "by_time"),
    "row_market_id": ("unified", "platform", "absent"),
    "trade_outcome": ("name", "id"),
    "trade_taker": ("flagged", "absent"),
    "price_label": ("period_start", "period_end"),
    "pagination_total": ("exact", "absent", "wrong"),
    "single_envelope": ("list", "data"),
    "list_order": ("catalogue", "reversed"),
    "iso_times": ("z", "offset", "fractional", "lowercase"),
    "over_limit": ("cap", "reject"),
    "book_order": ("best_first", "best_last"),
    "american_odds": ("signed", "bare"),
    "award_detail": ("awards", "futures"),
    "cursor_refusal": ("invalid_cursor", "validation_error", "gone"),
    "price_range": ("exact", "periods"),
    "profile_trades_envelope": ("trades", "data"),
    "member_ids": ("unified", "platform"),
    "price_keys": ("id", "name"),
    "market_id_param": ("any", "platform"),
    "unavailable_status": ("unavailable", "maintenance", "offline"),
    "price_time_range": ("asked", "data"),
}


@dataclass(frozen=True)
class Readings:
    """One reading of every point the spec leaves open (the defaults: the sandbox's original reading)."""

    trades_order: str = "newest_first"  # /trades pages newest first, oldest first, or oldest first as recorded
    price_points_order: str = "by_market"  # market by market as asked, in reverse, or all interleaved by time
    row_market_id: str = "unified"  # a trade's market_id, a point's marketId: the unified id, the platform's, none
    trade_outcome: str = "name"  # a trade's outcome: the outcome's name, or its id
    trade_taker: str = "flagged"  # a trade's `taker`: true or false (a maker's row of a match), or left null
    price_label: str = "period_start"  # a price point's time: its period's start, or its end
    pagination_total: str = "exact"  # pagination.total: the count, absent, or wrong (half the count)
    single_envelope: str = "list"  # /events/{id}, /markets/{id}: {pagination, events: [e]} or {data: e}
    list_order: str = "catalogue"  # series, events and markets lists: catalogue order, or reversed
    iso_times: str = "z"  # ISO times: 2026-11-20T00:00:00Z, ...+00:00, ...00.000Z, or 2026-11-20t00:00:00z
    over_limit: str = "cap"  # a limit above the maximum: capped, or refused (400) above the lowest documented one
    book_order: str = "best_first"  # an orderbook side's levels: best price first, or best price last
    american_odds: str = "signed"  # a future outcome's odds.american: +350 / -200, or 350 / -200
    award_detail: str = "awards"  # an award's detail at /awards/{id}, or (that path not served) at /futures/{id}
    short_pages: bool = False  # pages hold fewer items than `limit` while has_more is true
    cursor_on_last_page: bool = False  # the last page still carries a next_cursor (has_more false)
    page_overlap: bool = False  # each next page starts with the last items of the page before
    empty_pages: bool = False  # items filtered after paging: an empty page, has_more true, before each page
    # an expired cursor (the first of each listing is refused once, except under the default): 400
    # INVALID_CURSOR, 400 VALIDATION_ERROR naming the cursor, or 410 Gone
    cursor_refusal: str = "invalid_cursor"
    redirect: bool = False  # a list endpoint asked without a trailing slash answers 307 to the path with one
    price_range: str = "exact"  # /price-history: points labelled within [start_ts, end_ts], or every period overlapping
    profile_trades_envelope: str = "trades"  # /profile/trades: {trades, pagination, meta} or {data, pagination, meta}
    stale_listing: bool = False  # some listed market records synced hours or days before the world's end
    # Events' and series' platform_id equal to their id, markets (and events) pointing at them by id; or a
    # platform_id of their own (Polymarket `{slug}-{id}`, Kalshi the ticker in lower case) that markets' event_id
    # and series_id, and events' series_id, carry.
    member_ids: str = "unified"
    price_keys: str = "id"  # current_prices, price_24h/7d_changes, last_trades keyed by outcome id, or by its name
    # /trades, /price-history and /markets/{id}/orderbook take a market's id or its platform_id, or only the
    # platform_id (404 NOT_FOUND for the id where the two differ: Polymarket's numeric id vs its condition id)
    market_id_param: str = "any"
    # the status /platforms gives a platform the `unavailable` fault names (the spec shows only `available`)
    unavailable_status: str = "unavailable"
    # /price-history's meta.time_range: the span asked (start_ts, end_ts), or the span of the points it holds
    price_time_range: str = "asked"

    def __post_init__(self) -> None:
        for name, allowed in CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"reading {name} must be one of {', '.join(allowed)}, got {value!r}")

    @classmethod
    def parse(cls, spec: str) -> Readings:
        """`"trades_order=oldest_first,short_pages=true"` -> Readings; names and values are checked."""
        return parse_switches(cls, spec, "reading")

    def label(self) -> str:
        """The switches away from their default, as `pmw sandbox --readings` takes them."""
        default = Readings()
        changed = [f.name for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)]
        return ",".join(f"{name}={str(getattr(self, name)).lower()}" for name in changed) or "defaults"
