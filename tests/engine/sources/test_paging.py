"""The paginators, one per paging style, on hand-made answers: every item once (duplicates dropped and
counted), loops refused, and each list ended where its API says it is done."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date
from typing import Any

import httpx
import pytest

from pipeline.engine.sources import paging
from pipeline.engine.sources.http import ApiError, HttpLayer, RequestStats
from pipeline.engine.sources.identities import SeenIds, SeenKeys, content_keys, field_keys, fingerprints
from pipeline.engine.sources.paging import STALE_PAGES, DataApiOffset, GammaOffset, KalshiCursor, UnifiedCursor
from pipeline.engine.sources.unified import PastTheDay, UnifiedSource, day_bounds

Handler = Callable[[httpx.Request], httpx.Response]
BY_ID = field_keys("id")
DAY = date(2026, 11, 20)
START, END = day_bounds(DAY)
HOUR = 3_600


def layer(handler: Handler, asked: list[httpx.Request] | None = None, max_pages: int = 20_000) -> HttpLayer:
    def handle(request: httpx.Request) -> httpx.Response:
        if asked is not None:
            asked.append(request)
        return handler(request)

    return HttpLayer("http://api.test", transport=httpx.MockTransport(handle), max_attempts=1, max_pages=max_pages)


def error(status: int, code: str, message: str = "nope") -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message, "timestamp": "t"}})


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"] for item in items]


# -- the unified API's cursor ------------------------------------------------------------------------------


def unified_pages(items: list[dict], page_size: int, expire_once_at: int | None = None, duplicate: int = 0,
                  cursor_on_last_page: bool = False, refusal: httpx.Response | None = None) -> Handler:
    """A cursor-paged list whose cursor is the offset; `duplicate` items of each page come again on the next,
    and the cursor of `expire_once_at` is refused once as expired (400 INVALID_CURSOR, or `refusal`)."""
    state = {"expired": False}

    def handler(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("cursor", "0") or 0)
        if expire_once_at is not None and offset == expire_once_at and not state["expired"]:
            state["expired"] = True
            return refusal or error(400, "INVALID_CURSOR", "cursor has expired")
        page = items[offset : offset + page_size]
        end = offset + len(page)
        more = end < len(items)
        cursor = str(end - duplicate) if more or cursor_on_last_page else None
        return httpx.Response(200, json={
            "items": page,
            "pagination": {"total": len(items), "limit": page_size, "has_more": more, "next_cursor": cursor},
        })

    return handler


def unified(handler: Handler, page_size: int = 5, **options: Any) -> UnifiedCursor:
    return UnifiedCursor(layer(handler), "/markets", "items", {}, page_size=page_size, keys=BY_ID, **options)


def test_unified_paging_walks_every_item_once_across_restarts_and_duplicates() -> None:
    items = [{"id": str(i)} for i in range(23)]
    walk = unified(unified_pages(items, 5, expire_once_at=9, duplicate=2))
    assert ids(list(walk.items())) == ids(items)
    assert walk.http.stats.cursor_restarts == 1
    assert walk.http.stats.duplicates_dropped > 0


def test_unified_pages_keep_their_envelope_with_only_the_new_items() -> None:
    items = [{"id": str(i)} for i in range(8)]
    pages = list(unified(unified_pages(items, 5, duplicate=2)).pages())
    assert [ids(page.items) for page in pages] == [["0", "1", "2", "3", "4"], ["5", "6", "7"]]
    assert pages[1].body["items"] == pages[1].items and pages[1].body["pagination"]["has_more"] is False
    assert {page.items_key for page in pages} == {"items"}


def test_unified_paging_asks_for_the_page_size_and_stops_early() -> None:
    asked: list[httpx.Request] = []
    handler = unified_pages([{"id": str(i)} for i in range(50)], 10)
    walk = UnifiedCursor(layer(handler, asked), "/trades", "items", {"market_id": "m"}, page_size=10, keys=BY_ID,
                         stop=lambda page: page[-1]["id"] == "19")
    assert len(list(walk.items())) == 20
    assert [r.url.params["limit"] for r in asked] == ["10", "10"]
    assert all(r.url.params["market_id"] == "m" for r in asked)


def test_unified_paging_stops_when_either_has_more_or_the_cursor_says_so() -> None:
    """The last page may still carry a cursor with `has_more` false (the spec's rule 4)."""
    asked: list[httpx.Request] = []
    items = [{"id": str(i)} for i in range(7)]
    walk = UnifiedCursor(layer(unified_pages(items, 5, cursor_on_last_page=True), asked), "/markets", "items",
                         page_size=5, keys=BY_ID)
    assert ids(list(walk.items())) == ids(items)
    assert len(asked) == 2


def test_a_refused_page_size_is_asked_again_at_the_smaller_one() -> None:
    """A server whose maximum is below the one asked for may refuse it (400 naming `limit`) instead of capping."""
    limits = []

    def handler(request: httpx.Request) -> httpx.Response:
        limits.append(request.url.params["limit"])
        if int(request.url.params["limit"]) > 4:
            return error(400, "VALIDATION_ERROR", "invalid parameter 'limit': must be at most 4, got 10")
        return unified_pages([{"id": str(i)} for i in range(9)], 4)(request)

    walked = list(unified(handler, page_size=10, smaller_page_size=4).items())
    assert ids(walked) == [str(i) for i in range(9)]
    assert limits == ["10", "4", "4", "4"]
    with pytest.raises(ApiError, match="must be at most 4"):  # with nothing smaller to ask for, the refusal stands
        list(unified(handler, page_size=10).items())


def test_a_unified_cursor_that_repeats_forever_is_stopped() -> None:
    def loop(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={
            "items": [{"id": request.url.params.get("cursor", "0")}],
            "pagination": {"total": 9, "limit": 1, "has_more": True, "next_cursor": "c"},
        })

    with pytest.raises(ApiError, match="already given"):
        list(unified(loop, page_size=1).items())


def filtered_after_paging(items: list[dict], page_size: int) -> Handler:
    """A cursor-paged list with an empty page that says there is more before each page of items (a server that
    filters items out after paging): cursor `e<n>` is the empty page before offset n."""
    def handler(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor", "e0")
        if cursor.startswith("e"):
            return httpx.Response(200, json={"items": [], "pagination": {"has_more": True,
                                                                         "next_cursor": cursor.removeprefix("e")}})
        answer = unified_pages(items, page_size)(request).json()
        more = answer["pagination"]["next_cursor"]
        return httpx.Response(200, json={**answer, "pagination": {"has_more": answer["pagination"]["has_more"],
                                                                  "next_cursor": more and f"e{more}"}})

    return handler


def test_empty_pages_that_say_there_is_more_are_followed_and_a_stop_rule_takes_them_for_nothing() -> None:
    items = [{"id": str(i), "timestamp": END + 7200 - 600 * i} for i in range(12)]
    asked: list[httpx.Request] = []
    walk = UnifiedCursor(layer(filtered_after_paging(items, 5), asked), "/trades", "items", page_size=5, keys=BY_ID,
                         stop=PastTheDay(START, END, late_s=0))
    assert ids(list(walk.items())) == ids(items)
    assert len(asked) == 6


def test_empty_pages_that_never_end_are_stopped_at_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    def empty(request: httpx.Request) -> httpx.Response:
        number = int(request.url.params.get("cursor", "0"))
        return httpx.Response(200, json={"items": [], "pagination": {"has_more": True, "next_cursor": str(number + 1)}})

    monkeypatch.setattr(paging, "EMPTY_PAGES", 7)
    with pytest.raises(ApiError, match="7 empty pages in a row while the server says there are more"):
        list(unified(empty).items())


@pytest.mark.parametrize(("status", "code", "message"), [
    (400, "VALIDATION_ERROR", "invalid parameter 'cursor': cursor has expired"),
    (410, "GONE", "the cursor is no longer valid"),
])
def test_a_cursor_refused_with_400_or_410_naming_it_restarts_from_the_first_page(status: int, code: str,
                                                                                 message: str) -> None:
    items = [{"id": str(i)} for i in range(12)]
    walk = unified(unified_pages(items, 5, expire_once_at=5, refusal=error(status, code, message)))
    assert ids(list(walk.items())) == ids(items)
    assert walk.http.stats.cursor_restarts == 1


def test_a_400_naming_another_parameter_than_the_cursor_stands() -> None:
    refusal = error(400, "VALIDATION_ERROR", "invalid parameter 'platform': expected one of kalshi, polymarket")
    walk = unified(unified_pages([{"id": str(i)} for i in range(12)], 5, expire_once_at=5, refusal=refusal))
    with pytest.raises(ApiError, match="invalid parameter 'platform'"):
        list(walk.items())


def test_unified_paging_gives_up_after_its_restarts() -> None:
    def always_expired(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("cursor"):
            return error(400, "INVALID_CURSOR", "cursor has expired")
        return unified_pages([{"id": str(i)} for i in range(10)], 5)(request)

    walk = unified(always_expired, max_restarts=2)
    with pytest.raises(ApiError, match="gave up after 2 restarts"):
        list(walk.items())
    assert walk.http.stats.cursor_restarts == 3
    assert walk.http.stats.duplicates_dropped == 10  # the first page, met again on each restart


def test_items_without_identity_pass_through_for_the_normalizer_to_reject() -> None:
    items = [{"id": "a"}, {"no_id": 1}, {"id": ["unhashable"]}, {"id": "a"}, "not an object", {"id": 7}, {"id": 7}]
    walked = list(unified(unified_pages(items, 10), page_size=10).items())
    assert walked == [{"id": "a"}, {"no_id": 1}, {"id": ["unhashable"]}, "not an object", {"id": 7}]


def test_a_unified_body_without_its_envelope_is_an_error() -> None:
    with pytest.raises(ApiError, match="expected 'items' and 'pagination'"):
        list(unified(lambda request: httpx.Response(200, json={"items": []})).items())


# -- Kalshi's cursor ---------------------------------------------------------------------------------------


def kalshi_pages(items: list[dict], page_size: int, overlap: int = 0) -> Handler:
    """Kalshi's shape: `{markets, cursor}`, the cursor empty on the last page; `overlap` items come twice."""

    def handler(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("cursor") or 0)
        end = min(offset + page_size, len(items))
        return httpx.Response(200, json={
            "markets": items[offset:end], "cursor": str(end - overlap) if end < len(items) else ""})

    return handler


def kalshi(handler: Handler, **options: Any) -> KalshiCursor:
    return KalshiCursor(layer(handler), "/markets", "markets", {"limit": 3}, keys=field_keys("ticker"), **options)


def test_kalshi_paging_follows_the_cursor_to_an_empty_one_and_drops_overlaps() -> None:
    items = [{"ticker": f"K-{i}"} for i in range(10)]
    walk = kalshi(kalshi_pages(items, 3, overlap=1))
    pages = list(walk.pages())
    assert [item for page in pages for item in page.items] == items
    assert all(page.body["markets"] == page.items and page.items_key == "markets" for page in pages)
    assert walk.http.stats.duplicates_dropped == len(pages) - 1


def test_kalshi_walks_sharing_what_they_have_seen_keep_each_item_once() -> None:
    """A live list and its historical twin, read one after the other, overlap."""
    live = [{"ticker": f"K-{i}"} for i in range(5)]
    historical = [{"ticker": f"K-{i}"} for i in range(3, 8)]
    http = layer(lambda r: kalshi_pages(live if r.url.path == "/markets" else historical, 2)(r))
    seen = SeenKeys(http.stats)
    walked = [item for path in ("/markets", "/historical/markets")
              for item in KalshiCursor(http, path, "markets", keys=field_keys("ticker"), seen=seen).items()]
    assert [item["ticker"] for item in walked] == [f"K-{i}" for i in range(8)]
    assert http.stats.duplicates_dropped == 2


def test_a_kalshi_cursor_that_comes_back_is_an_error_not_an_endless_loop() -> None:
    answer = {"cursor": "same", "markets": [{"ticker": "K-1"}]}
    with pytest.raises(ApiError, match="cursor it had already given"):
        list(kalshi(lambda request: httpx.Response(200, json=answer)).items())


def test_kalshi_paging_that_never_ends_is_stopped() -> None:
    endless = KalshiCursor(layer(lambda r: httpx.Response(200, json={
        "markets": [], "cursor": str(int(r.url.params.get("cursor") or 0) + 1)}), max_pages=4), "/markets", "markets",
        keys=field_keys("ticker"))
    with pytest.raises(ApiError, match=r"GET /markets: 4 pages and the server still says there are more: "
                                       r"stopped at PMW_MAX_PAGES=4"):
        list(endless.pages())


def test_a_unified_cursor_that_changes_forever_over_new_items_is_stopped_at_the_page_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue "Nothing lost", point 3: every page a new cursor and new items, for ever; before the bound, 2,487
    requests in 90 s and memory without end. A long walk says how far it has got."""
    def endless(request: httpx.Request) -> httpx.Response:
        at = int(request.url.params.get("cursor") or 0)
        return httpx.Response(200, json={"items": [{"id": str(at)}],
                                         "pagination": {"has_more": True, "next_cursor": str(at + 1)}})

    walk = UnifiedCursor(layer(endless, max_pages=1_200), "/trades", "items", {}, page_size=1, keys=BY_ID)
    with caplog.at_level(logging.INFO), pytest.raises(ApiError, match=r"GET /trades: 1200 pages .* PMW_MAX_PAGES=1200"):
        list(walk.items())
    assert "GET /trades: 1000 pages so far, still paging" in caplog.text


def test_a_list_that_counts_more_pages_than_the_bound_is_walked_whole_and_a_wrong_count_never_cuts_it() -> None:
    """A catalogue of a million markets served 25 a page takes 40,000 pages: its `pagination.total` raises the
    bound. A count too low (a spec-silent field: the sandbox's `pagination_total=wrong`) leaves the setting's."""
    items = [{"id": str(i)} for i in range(30)]
    counted = unified(unified_pages(items, page_size=1), page_size=1)
    counted.http.max_pages = 10
    assert ids(list(counted.items())) == ids(items)

    def undercounted(request: httpx.Request) -> httpx.Response:
        answer = unified_pages(items, page_size=1)(request)
        body = answer.json()
        body["pagination"]["total"] = 3
        return httpx.Response(200, json=body)

    short = unified(undercounted, page_size=1)
    short.http.max_pages = 40
    assert ids(list(short.items())) == ids(items)


def test_a_cursor_that_changes_over_the_same_items_is_stopped_after_the_stale_bound() -> None:
    asked: list[httpx.Request] = []

    def same_items(request: httpx.Request) -> httpx.Response:
        at = int(request.url.params.get("cursor") or 0)
        return httpx.Response(200, json={"items": [{"id": "a"}, {"id": "b"}],
                                         "pagination": {"has_more": True, "next_cursor": str(at + 1)}})

    walk = UnifiedCursor(layer(same_items, asked), "/markets", "items", {}, page_size=2, keys=BY_ID)
    with pytest.raises(ApiError, match=rf"GET /markets: {STALE_PAGES} pages in a row brought only items already given"):
        list(walk.items())
    assert len(asked) == 1 + STALE_PAGES


def test_a_restart_may_walk_again_every_page_it_had_walked() -> None:
    """After an expired cursor the walk starts over: the pages it had walked bring nothing new, and are due."""
    items = [{"id": str(i)} for i in range(70)]
    walk = unified(unified_pages(items, page_size=1, expire_once_at=60), page_size=1)
    assert ids(list(walk.items())) == ids(items)


def test_a_kalshi_body_without_its_items_is_an_error() -> None:
    with pytest.raises(ApiError, match="expected 'markets'"):
        list(kalshi(lambda request: httpx.Response(200, json={"cursor": ""})).items())


# -- Gamma's offset ----------------------------------------------------------------------------------------


def offset_pages(items: list[Any], envelope: bool = False) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        offset, limit = int(request.url.params["offset"]), int(request.url.params["limit"])
        page = items[offset : offset + limit]
        return httpx.Response(200, json={"data": page, "pagination": {}} if envelope else page)

    return handler


def gamma(handler: Handler, asked: list[httpx.Request] | None = None, max_offset: int = 10_000) -> GammaOffset:
    return GammaOffset(layer(handler, asked), "/markets", {"closed": "false"}, page_size=4, max_offset=max_offset,
                       keys=BY_ID)


def test_gamma_paging_asks_offset_after_offset_until_a_short_page() -> None:
    asked: list[httpx.Request] = []
    items = [{"id": str(i)} for i in range(10)]
    pages = list(gamma(offset_pages(items), asked).pages())
    assert [page.items for page in pages] == [items[:4], items[4:8], items[8:]]
    assert all(page.body == page.items and page.items_key is None for page in pages)
    assert [(r.url.params["offset"], r.url.params["limit"], r.url.params["closed"]) for r in asked] == [
        ("0", "4", "false"), ("4", "4", "false"), ("8", "4", "false")]


def test_gamma_pages_that_overlap_keep_each_item_once() -> None:
    """A market added while paging pushes the next page's first item back onto it."""
    items = [{"id": str(i)} for i in range(9)]

    def shifting(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        listing = items if offset == 0 else [{"id": "new"}, *items]
        return httpx.Response(200, json=listing[offset : offset + 4])

    walk = gamma(shifting)
    assert ids(list(walk.items())) == ids(items)
    assert walk.http.stats.duplicates_dropped == 1


def test_a_gamma_page_identical_to_the_one_before_is_a_loop() -> None:
    """A server that ignores `offset` answers the first page forever."""
    with pytest.raises(ApiError, match="repeats the one before"):
        list(gamma(lambda request: httpx.Response(200, json=[{"id": str(i)} for i in range(4)])).items())


def test_gamma_refuses_to_page_past_its_offset_cap() -> None:
    with pytest.raises(ApiError, match="more than 8 items match; Gamma pages no deeper"):
        list(gamma(offset_pages([{"id": str(i)} for i in range(20)]), max_offset=8).items())
    assert len(list(gamma(offset_pages([{"id": str(i)} for i in range(11)]), max_offset=8).items())) == 11


def test_a_gamma_answer_that_is_no_array_is_an_error() -> None:
    with pytest.raises(ApiError, match="expected a JSON array, got dict"):
        list(gamma(lambda request: httpx.Response(200, json={"markets": []})).items())


# -- the Data API's offset with a cap ----------------------------------------------------------------------


def trade(n: int, at: int) -> dict[str, Any]:
    return {"transactionHash": f"0x{n:x}", "asset": "111", "size": 1.0, "price": 0.5, "timestamp": at}


def data_api(handler: Handler, asked: list[httpx.Request] | None = None, stop_before: int | None = None,
             cap: int = 12) -> DataApiOffset:
    stop = None if stop_before is None else (lambda page: min(t["timestamp"] for t in page) < stop_before)
    return DataApiOffset(layer(handler, asked), "/trades", {"market": "0xc0"}, page_size=4, cap=cap,
                         keys=content_keys, stop=stop)


NEWEST_FIRST = [trade(n, 1_000 - n) for n in range(30)]


def test_data_api_paging_stops_at_the_first_page_past_the_rule() -> None:
    asked: list[httpx.Request] = []
    walk = data_api(offset_pages(NEWEST_FIRST), asked, stop_before=1_000 - 5)
    assert list(walk.items()) == NEWEST_FIRST[:8]
    assert [r.url.params["offset"] for r in asked] == ["0", "4"] and not walk.capped


def test_data_api_paging_ends_at_its_cap_and_says_so() -> None:
    asked: list[httpx.Request] = []
    walk = data_api(offset_pages(NEWEST_FIRST), asked)
    assert list(walk.items()) == NEWEST_FIRST[:16]
    assert [int(r.url.params["offset"]) for r in asked] == [0, 4, 8, 12] and walk.capped


def test_a_short_page_before_the_cap_is_the_end_of_a_complete_list() -> None:
    walk = data_api(offset_pages(NEWEST_FIRST[:10]))
    assert list(walk.items()) == NEWEST_FIRST[:10] and not walk.capped


def test_an_offset_refused_sooner_than_the_cap_ends_the_list_as_capped() -> None:
    def refusing(request: httpx.Request) -> httpx.Response:
        if int(request.url.params["offset"]) >= 8:
            return httpx.Response(400, json={"error": "max historical activity offset exceeded"})
        return offset_pages(NEWEST_FIRST)(request)

    walk = data_api(refusing)
    assert list(walk.items()) == NEWEST_FIRST[:8] and walk.capped
    with pytest.raises(ApiError):  # on the first page, a refusal is an error
        list(data_api(lambda request: httpx.Response(400, json={"error": "bad market"})).items())


def test_data_api_pages_keep_their_envelope() -> None:
    pages = list(data_api(offset_pages(NEWEST_FIRST[:6], envelope=True)).pages())
    assert [page.items_key for page in pages] == ["data", "data"]
    assert pages[1].body == {"data": NEWEST_FIRST[4:6], "pagination": {}}


def test_data_api_trades_pushed_onto_the_next_page_come_once_and_identical_fills_stay() -> None:
    """Trades carry no id: the same trade is known by its content; two identical fills of one page are two."""
    fills = [trade(1, 990), trade(1, 990)]
    listing = [*NEWEST_FIRST[:3], *fills, *NEWEST_FIRST[3:5]]

    def shifting(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        now = listing if offset == 0 else [trade(99, 2_000), *listing]  # a new trade arrived meanwhile
        return httpx.Response(200, json=now[offset : offset + 4])

    walk = data_api(shifting)
    assert list(walk.items()) == listing
    assert walk.http.stats.duplicates_dropped == 1


def test_a_data_api_page_identical_to_the_one_before_is_a_loop() -> None:
    with pytest.raises(ApiError, match="page at offset 4 repeats the one before"):
        list(data_api(lambda request: httpx.Response(200, json=NEWEST_FIRST[:4])).items())


# -- identities --------------------------------------------------------------------------------------------


def test_field_keys_give_no_identity_to_what_has_none_usable() -> None:
    keys = field_keys("id")
    assert keys([{"id": "a"}, {"id": None}, {}]) == ["a", None, None]
    assert keys([{"id": "a"}, {"id": 3}, {"id": [1]}, "text", None]) == ["a", 3, None, None, None]


def test_content_keys_tell_identical_items_of_a_page_apart_by_their_place() -> None:
    a, b = {"x": 1, "y": [2]}, {"x": 2}
    keys = content_keys([a, dict(a), b, dict(a)])
    assert len(set(keys)) == 4
    assert content_keys([a]) == keys[:1] and content_keys([b, a]) == [keys[2], keys[0]]  # the first is the item
    assert content_keys([]) == []


def met(seen: SeenKeys, identities: list[Any], items: list[Any] | None = None) -> tuple[list[bool], list[bool]]:
    """Which of the items are new and which conflicting (items: by default, each identity's own record)."""
    result = seen.meet(identities, fingerprints(items if items is not None else [{"id": i} for i in identities]))
    return result.new, result.conflicting


@pytest.mark.parametrize("kind", [SeenKeys, SeenIds])  # the trades' and the catalogue's
def test_seen_keys_keep_the_first_of_each_identity_across_pages_and_runs(kind: type[SeenKeys]) -> None:
    stats = RequestStats()
    seen = kind(stats)
    kept = [met(seen, [f"t{i}" for i in range(start, start + 100)])[0] for start in range(0, 5000, 100)]
    assert all(all(k) for k in kept)
    new, conflicting = met(seen, ["t0", "t4999", "t2500", "new", "new", None, None])
    assert new == [False, False, False, True, False, True, True]
    assert not any(conflicting)
    assert (stats.duplicates_dropped, stats.conflicting_repeats) == (4, 0)


@pytest.mark.parametrize("kind", [SeenKeys, SeenIds])  # the trades' and the catalogue's
def test_seen_keys_compare_other_identities_like_python(kind: type[SeenKeys]) -> None:
    stats = RequestStats()
    seen = kind(stats)
    same = [{"id": 1}] * 7
    assert met(seen, ["a", 1, None, 1.0, True, "1", "a"], same)[0] == [True, True, True, False, False, True, False]
    assert met(seen, ["a", "b"], same[:2])[0] == [False, True]
    assert stats.duplicates_dropped == 4


@pytest.mark.parametrize("kind", [SeenKeys, SeenIds])  # the trades' and the catalogue's
def test_an_identity_met_again_with_other_values_is_a_conflicting_repeat_and_the_first_is_kept(
        kind: type[SeenKeys]) -> None:
    stats = RequestStats()
    seen = kind(stats)
    first = [{"trade_id": f"t{i}", "price": 0.5, "tags": ["a"] if i % 2 else None} for i in range(300)]
    assert met(seen, ids_of(first), first) == ([True] * 300, [False] * 300)
    # Later pages: t1 again as it was (its fields in another order), t2 and t3 at another price, t7 with
    # another list; within one page, t400 twice otherwise, t401 twice alike; an item without an id.
    again = [dict(reversed(first[1].items())), {**first[2], "price": 0.6}, {**first[3], "price": 0.4},
             {**first[7], "tags": ["b"]}, {"trade_id": "t400", "price": 0.1}, {"trade_id": "t400", "price": 0.2},
             {"trade_id": "t401", "price": 0.1}, {"trade_id": "t401", "price": 0.1}, {"price": 0.3}]
    new, conflicting = met(seen, [*ids_of(again[:-1]), None], again)
    assert new == [False, False, False, False, True, False, True, False, True]
    assert conflicting == [False, True, True, True, False, True, False, False, False]
    assert (stats.conflicting_repeats, stats.duplicates_dropped) == (4, 2)
    numbers = [{"id": 5, "v": 1}, {"id": 5, "v": 2}, {"id": 6, "v": 1}]
    assert met(seen, [5, 5, 6], numbers) == ([True, False, True], [False, True, False])
    assert met(seen, [6, 5], [{"id": 6, "v": 3}, {"id": 5, "v": 1}]) == ([False, False], [True, False])


def ids_of(items: list[dict[str, Any]]) -> list[str]:
    return [item["trade_id"] for item in items]


def test_fingerprints_tell_contents_apart_whatever_their_fields_order_or_nesting() -> None:
    flat, nested = {"a": 1, "b": "x"}, {"a": [1, {"c": None}], "b": {"d": 2.5}}
    prints = fingerprints([flat, {"b": "x", "a": 1}, {"a": 1, "b": "y"}, nested,
                           {"b": {"d": 2.5}, "a": [1, {"c": None}]}, {"a": [1, {"c": 0}], "b": {"d": 2.5}},
                           "text", 3])
    assert prints[0] == prints[1] and prints[3] == prints[4]
    assert len({prints[0], prints[2], prints[3], prints[5], prints[6], prints[7]}) == 6


def test_a_page_sets_aside_the_items_sent_again_otherwise() -> None:
    items = [{"id": f"m{i}", "price": 0.5} for i in range(6)]
    served = [items[:3], [{**items[2], "price": 0.7}, items[1], *items[3:]]]

    def handler(request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("cursor", "0") or 0)
        more = page + 1 < len(served)
        pagination = {"has_more": more, "next_cursor": str(page + 1) if more else None}
        return httpx.Response(200, json={"markets": served[page], "pagination": pagination})

    walk = UnifiedCursor(layer(handler), "/markets", "markets", page_size=3, keys=BY_ID)
    pages = list(walk.pages())
    assert [ids(page.items) for page in pages] == [["m0", "m1", "m2"], ["m3", "m4", "m5"]]
    assert [page.conflicting for page in pages] == [[], [{"id": "m2", "price": 0.7}]]
    assert (walk.http.stats.conflicting_repeats, walk.http.stats.duplicates_dropped) == (1, 1)


# -- the early stop of a market's trades (unified.PastTheDay) --------------------------------------------------


def trade_pages(times: list[int], page_size: int, duplicate: int = 0) -> Handler:
    """A market's trades (trade_id its place) at these times, in this order, paged by `unified_pages`."""
    pages = unified_pages([{"id": str(i), "timestamp": t} for i, t in enumerate(times)], page_size,
                          duplicate=duplicate)

    def handler(request: httpx.Request) -> httpx.Response:
        body = pages(request).json()
        trades = [{"trade_id": item["id"], "timestamp": item["timestamp"]} for item in body.pop("items")]
        return httpx.Response(200, json={"trades": trades, **body})

    return handler


def read_trades(handler: Handler, asked: list[httpx.Request]) -> set[str]:
    """The trade ids the unified source reads for DAY (trades of other days come along)."""
    source = UnifiedSource(layer(handler, asked), None, "test")
    return {trade["trade_id"] for page in source.trade_pages("kalshi", DAY, ["m"])
            for trade in page.body["trades"]}


def test_pages_that_start_with_the_last_trades_of_the_page_before_still_stop_past_the_day() -> None:
    """Newest first, each page repeating the last two trades of the page before: the order is judged on the new
    trades alone, so paging stops at the first page an hour (PMW_TRADE_LATENESS_S) before the day."""
    times = list(range(END + 2 * 86_400, START - 2 * 86_400, -HOUR))  # hourly, two days on either side
    asked: list[httpx.Request] = []
    read = read_trades(trade_pages(times, 10, duplicate=2), asked)
    assert {str(i) for i, t in enumerate(times) if START <= t < END} <= read
    first_past = next(i for i, t in enumerate(times) if t < START - HOUR)  # the trade that ends the walk
    assert len(asked) == -(-(first_past - 1) // 8)  # the pages of 8 new trades (10 less 2 repeated) up to it


def test_a_trade_recorded_late_behind_trades_of_the_next_day_is_read() -> None:
    """Oldest first as recorded: the day's last trade was recorded half an hour late, so that it comes on the page
    after the first page past the day's end."""
    before = [START + HOUR * h for h in range(24)]  # six pages of 4
    next_day = [END + 60, END + 600, END + 1_200, END + 1_500]  # the seventh: past the day's end
    late = END - 60
    after = [END + 1_800 + HOUR * h for h in range(12)]
    times = [*before, *next_day, late, *after]
    asked: list[httpx.Request] = []
    assert str(times.index(late)) in read_trades(trade_pages(times, 4), asked)
    assert len(asked) == 8  # the eighth page, the late trade's, reaches an hour past the day's end


@pytest.mark.parametrize("times", [[START + 10, START + 20, START + 30], [END + HOUR * 3, END + HOUR]])
def test_the_order_is_not_known_while_it_spans_no_more_than_the_lateness_and_pages_in_no_order_read_on(
        times: list[int]) -> None:
    rule = PastTheDay(START, END)
    assert not rule([{"timestamp": t} for t in times])  # both orders possible, or (the second) one, not past yet
    assert not rule([])  # a page of repeats or an empty one decides nothing
    assert not rule([{"timestamp": START - HOUR * 5}, {"timestamp": END + HOUR * 5}])  # now in neither order
    assert not rule([{"timestamp": START - HOUR * 9}])
