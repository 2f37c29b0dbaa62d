"""The catalogue cache never blocks a run: a catalogue it cannot write is left uncached, a file it cannot read is
a miss, and neither leaves a file behind."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from pipeline.engine.sources.unified import Catalogue, CatalogueCache

KEY = "api:test:polymarket"


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
