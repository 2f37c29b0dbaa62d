"""The catalogue's market listing skims the pages of markets that ended long ago (market_skim.py): it never leaves
out a record that `liveness.ended_before` keeps, and any page it cannot vouch for is read as JSON and judged as
before, so a record whose selection fields are malformed still reaches the rule and the normalizer."""

from __future__ import annotations

import random
from datetime import date
from typing import Any

import httpx
import pyarrow as pa

from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.schema import Platform
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.liveness import SELECTION, ended_records
from pipeline.engine.sources.market_skim import MarketListing, SkimmedMarkets, surely_ended
from pipeline.engine.sources.unified import UnifiedSource
from pmw_sandbox.archive import Archive
from pmw_sandbox.catalogue import WorldConfig

SINCE = date(2026, 10, 23)
ARCHIVE = Archive(WorldConfig(seed=36, end=date(2026, 11, 21), days=2, archived_markets=1))
DAY = date(2026, 11, 21)
TIMES = ["2026-09-20T17:01:00Z", "2026-10-22T23:59:59Z", "2026-10-23T00:00:00Z", "2026-10-23T00:00:01Z",
         "2026-11-22T00:00:00Z", "2024-02-29T12:00:00Z", "2025-02-29T12:00:00Z", "2026-04-31T00:00:00Z",
         "2026-13-01T00:00:00Z", "2026-09-20T24:00:00Z", "2026-09-20T23:59:60Z", "2026-09-20t17:01:00z",
         "2026-09-20T17:01:00+00:00", "2026-09-20T17:01:00.5Z", "2026-09-20 17:01:00Z", "0999-01-01T00:00:00Z",
         "2026-09-2OT17:01:00Z", "\uff12\uff10\uff12\uff16-09-20T17:01:00Z", "", None]
STATUSES = ["open", "resolved", "closed", "OPEN", None]


def test_the_skim_leaves_out_only_records_the_rule_leaves_out_and_reads_the_one_form_it_knows() -> None:
    draw = random.Random(36)  # half the records of times of every kind, half of the one form and nulls
    records = [{"id": str(n), "event_id": "e", "status": draw.choice(STATUSES),
                **{name: draw.choice(TIMES if n % 2 else [*TIMES[:6], None]) for name in SELECTION[2:-1]}}
               for n in range(4_000)]
    columns = {name: pa.array([r[name] for r in records], type=pa.string()) for name in SELECTION}
    surely, ended = surely_ended(columns, SINCE), ended_records(records, SINCE).to_numpy()
    wrongly = [records[i] for i in range(len(records)) if surely[i] and not ended[i]]
    assert not wrongly, f"left out by the skim, kept by the rule: {wrongly[:3]}"
    canonical = {t for t in TIMES[:6]}  # the one form, real moments: the skim says what the rule says
    plain = [i for i, r in enumerate(records) if all(r[n] in canonical or r[n] is None for n in SELECTION[2:-1])]
    assert plain and all(surely[i] == ended[i] for i in plain)
    assert surely.sum() > 100


def _market(market_id: str, end: Any, event: str = "e1", **fields: Any) -> dict[str, Any]:
    """An archived market's whole record (the sandbox's), under this id and event, ending then."""
    return {**ARCHIVE.market_record(Platform.POLYMARKET, 0), "id": market_id, "platform_id": f"0x{market_id}",
            "event_id": event, "created_at": "2026-01-01T00:00:00Z", "trading_start_at": "2026-01-02T00:00:00Z",
            "trading_end_at": end, "resolved_at": None, "last_synced_at": "2026-11-22T00:00:00Z", **fields}


ENDED = "2026-03-01T00:00:00Z"
PAGES: list[list[Any]] = [
    [_market("a1", ENDED), _market("a2", ENDED, "e2"), _market("a3", ENDED)],  # all ended: skimmed
    [_market("a4", ENDED), _market("number", 1_772_323_200), _market("feb30", "2026-02-30T00:00:00Z")],
    [_market("a1", ENDED, title="again, otherwise"), _market("a5", ENDED, status=5), _market("a6", ENDED, "e2")],
    [_market("live", "2026-11-30T00:00:00Z", status="open", resolved_at=None), 7, _market("a7", ENDED)],
]


def _serve(request: httpx.Request) -> httpx.Response:
    path = request.url.path.strip("/")
    if path != "markets":
        return httpx.Response(200, json={path: [], "pagination": {"has_more": False, "next_cursor": None}})
    page = int(request.url.params.get("cursor", "0"))
    more = page + 1 < len(PAGES)
    return httpx.Response(200, json={"markets": PAGES[page], "meta": {"data_freshness": "2026-11-22T00:00:00Z"},
                                     "pagination": {"has_more": more, "next_cursor": str(page + 1) if more else None,
                                                    "total": 12}})


def test_a_page_of_ended_markets_is_skimmed_and_any_other_is_read_as_json_and_judged_record_by_record() -> None:
    http = HttpLayer("http://api.test", transport=httpx.MockTransport(_serve), max_attempts=1)
    walk = MarketListing(http, "/markets", "markets", {"platform": "polymarket"}, page_size=250, since=SINCE)
    pages = list(walk.pages())
    assert [type(page.items) for page in pages] == [SkimmedMarkets, list, list, list]
    assert [len(page.items) for page in pages] == [3, 3, 2, 3]  # a1 met again: a repeat, dropped
    assert http.stats.duplicates_dropped == 1 and http.stats.conflicting_repeats == 0  # both versions ended

    catalogue = UnifiedSource(http, cache=None, cache_key="test").catalogue("polymarket", DAY)
    assert [r if isinstance(r, int) else r["id"] for r in catalogue.markets] == ["number", "feb30", "live", 7]
    assert catalogue.listings["markets"].listed == 11
    assert catalogue.listed_per_event == {"e1": 8, "e2": 2}


def test_a_record_with_malformed_selection_fields_reaches_the_normalizer_s_rejects() -> None:
    http = HttpLayer("http://api.test", transport=httpx.MockTransport(_serve), max_attempts=1)
    markets = UnifiedPartitions(UnifiedSource(http, cache=None, cache_key="test"), "polymarket", "api").markets(DAY)
    assert markets.rows["id"].to_list() == ["live"]
    rejected = markets.rejects["raw"].to_list()
    assert all(any(text in record for record in rejected) for text in ('"number"', '"feb30"', "7")), rejected
