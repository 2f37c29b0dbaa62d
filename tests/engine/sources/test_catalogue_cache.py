"""The catalogue cache never blocks a run: a catalogue it cannot write is left uncached, a file it cannot read is
a miss, and neither leaves a file behind; what it keeps includes the records listed again otherwise."""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.unified import Catalogue, CatalogueCache, UnifiedSource

KEY = "api:test:polymarket"
START = "2026-10-01T00:00:00Z"


def _catalogue(extra: Any = None) -> Catalogue:
    market: dict[str, Any] = {"id": "m1", "platform": "polymarket"}
    if extra is not None:
        market["extra"] = extra
    return Catalogue([{"id": "s1"}], [{"id": "e1"}], [market], datetime.now(UTC))


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def test_a_catalogue_round_trips(tmp_path: Path) -> None:
    cache = CatalogueCache(tmp_path / "catalogue", ttl_s=60)
    cache.store(KEY, _catalogue())
    loaded = cache.load(KEY)
    assert loaded is not None and loaded.markets == [{"id": "m1", "platform": "polymarket"}]


@pytest.mark.parametrize("depth", [300, 1024])
def test_a_record_nested_too_deep_to_write_is_left_uncached_without_a_trace(
    tmp_path: Path, depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    cache = CatalogueCache(tmp_path / "catalogue", ttl_s=60)
    with caplog.at_level(logging.WARNING):
        cache.store(KEY, _catalogue(_nested(depth)))
    assert cache.load(KEY) is None
    assert list((tmp_path / "catalogue").iterdir()) == [], "no cache file and no temporary file left"
    assert "catalogue not cached" in caplog.text


UNREADABLE = [b'{"fetched_at": "2026-11-21T00:00:00+00:00", "series": [', b"", b"[]", b'{"a": 1}',
              b'{"fetched_at": "yesterday", "series": [], "events": [], "markets": []}']


@pytest.mark.parametrize("content", UNREADABLE)
def test_a_cache_file_that_does_not_read_is_a_miss_and_is_removed(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    cache = CatalogueCache(tmp_path / "catalogue", ttl_s=60)
    cache.store(KEY, _catalogue())
    cache.path(KEY).write_bytes(content)  # cut short by a full disk, or edited by hand
    with caplog.at_level(logging.WARNING):
        assert cache.load(KEY) is None
    assert not cache.path(KEY).exists()
    assert "is unreadable" in caplog.text and str(cache.path(KEY)) in caplog.text
    cache.store(KEY, _catalogue())  # the next listing is cached again
    assert cache.load(KEY) is not None


def test_records_listed_again_otherwise_reach_the_partitions_that_hold_them_through_the_cache(tmp_path: Path) -> None:
    """A market, an event and a series sent twice with another title (a cursor restart over a catalogue that
    changed): each partition gets the first version and, to reject, the other; a process reading the cached
    catalogue gets them too."""
    day = date(2026, 11, 21)
    lists = {
        "series": [{"id": "s1", "title": "S"}, {"id": "s2", "title": "S2"}],
        "events": [{"id": "e1", "title": "E"}],
        "markets": [{"id": "m1", "title": "M", "trading_start_at": START, "trading_end_at": "2026-11-22T00:00:00Z"},
                    {"id": "m2", "title": "gone", "trading_start_at": START, "trading_end_at": "2026-11-01T00:00:00Z",
                     "last_synced_at": "2026-11-02T00:00:00Z"}],  # saw its end pass: left out for sure
    }

    def listing(request: httpx.Request) -> httpx.Response:
        name = request.url.path.strip("/")
        records = lists[name]
        if request.url.params.get("cursor") != "again":  # the first page, then the whole list again, otherwise
            return httpx.Response(200, json={name: records, "pagination": {"has_more": True, "next_cursor": "again"}})
        otherwise = [{**record, "title": record["title"] + " (edited)"} for record in records]
        return httpx.Response(200, json={name: otherwise, "pagination": {"has_more": False, "next_cursor": None}})

    def source() -> UnifiedSource:
        http = HttpLayer("http://api.test", transport=httpx.MockTransport(listing), max_attempts=1)
        return UnifiedSource(http, CatalogueCache(tmp_path / "catalogue", ttl_s=60), KEY)

    listed = source()
    for unified in (listed, source()):  # the second reads the cache
        [markets] = unified.market_pages("polymarket", day)
        assert markets.records == [lists["markets"][0]]
        assert markets.conflicting == [{**lists["markets"][0], "title": "M (edited)"}]  # m2 is not live on the day
        [series] = unified.member_pages("polymarket", day, "series", {"s2"})
        assert series.records == [lists["series"][1]] and series.conflicting == [{"id": "s2", "title": "S2 (edited)"}]
        [events] = unified.member_pages("polymarket", day, "events", {"e1"})
        assert events.conflicting == [{"id": "e1", "title": "E (edited)"}]
    assert listed.http.stats.conflicting_repeats == 5


def test_a_cache_altered_but_still_valid_json_is_not_trusted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 39, point 9: a cached catalogue edited by hand (or by anything else) into other valid JSON was trusted
    for its TTL. Its checksum, kept with it, no longer matches: a miss, with a warning, and the file removed."""
    cache = CatalogueCache(tmp_path / "catalogue", ttl_s=60)
    cache.store(KEY, _catalogue())
    path = cache.path(KEY)
    altered = path.read_bytes().replace(b'"m1"', b'"m2"')
    assert altered != path.read_bytes()
    path.write_bytes(altered)
    with caplog.at_level(logging.WARNING):
        assert cache.load(KEY) is None
    assert not path.exists()
    assert f"catalogue cache {path} is unreadable (its SHA-256 is not the one written with it" in caplog.text
    cache.store(KEY, _catalogue())
    assert cache.load(KEY) is not None and cache.listed(KEY) == {"series": 1, "events": 1, "markets": 1}
