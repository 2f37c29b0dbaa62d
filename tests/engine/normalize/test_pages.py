"""Extraction and normalization apart: the raw pages of a run against the sandbox, saved and loaded again,
normalize into exactly the rows the run landed, for the unified API and for both platforms' own APIs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.config import Secret
from pipeline.engine.normalize import unified
from pipeline.engine.normalize.pages import normalize_page, normalized_stream
from pipeline.engine.normalize.partitions.kalshi import KalshiPartitions
from pipeline.engine.normalize.partitions.polymarket import PolymarketPartitions
from pipeline.engine.normalize.partitions.protocol import PartitionSource
from pipeline.engine.normalize.partitions.unified import UnifiedPartitions
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.raw_pages import UNIFIED, RawPage
from pipeline.engine.sources.http import HttpLayer
from pipeline.engine.sources.kalshi import KalshiPages
from pipeline.engine.sources.polymarket import PolymarketPages
from pipeline.engine.sources.unified import UnifiedSource
from pmw_sandbox import SandboxApp, SandboxConfig, WorldConfig
from pmw_sandbox.transport import SANDBOX_BASE_URL, SandboxTransport
from tests.support.raw_pages import load, page_from_json, page_json, save

DAY = date(2026, 11, 21)
# Busy enough that markets span several trade pages (and the Data API's offset cap), small enough to be quick.
WORLD = WorldConfig(seed=11, end=DAY, days=2, series_per_platform=2, events_per_series=2, markets_per_event=3,
                    trades_per_market_day=1_500, multivariate_markets=1)
Item = Normalized | MarketsDone


@pytest.fixture(scope="module")
def app() -> SandboxApp:
    return SandboxApp(SandboxConfig(world=WORLD))


def layer(app: SandboxApp, path: str = "", key: bool = False) -> HttpLayer:
    api_key = Secret(app.config.api_keys[0]) if key else None
    return HttpLayer(SANDBOX_BASE_URL + path, api_key=api_key, transport=SandboxTransport(app), max_attempts=1)


class Recorder:
    """Wraps an extractor's methods: each call's pages pass through unchanged and are kept, call by call."""

    def __init__(self, extractor: Any, methods: tuple[str, ...]) -> None:
        self.calls: dict[str, list[list[RawPage]]] = {name: [] for name in methods}
        for name in methods:
            setattr(extractor, name, self._recording(name, getattr(extractor, name)))

    def _recording(self, name: str, extract: Callable[..., Any]) -> Callable[..., Iterator[RawPage]]:
        def recorded(*arguments: Any, **options: Any) -> Iterator[RawPage]:
            kept: list[RawPage] = []
            self.calls[name].append(kept)
            for page in extract(*arguments, **options):
                kept.append(page)
                yield page

        return recorded

    def saved_and_loaded(self, directory: Path) -> dict[str, list[list[RawPage]]]:
        """Every page through `save` and `load`, one file a method, cut back into calls."""
        loaded = {}
        for name, calls in self.calls.items():
            path = directory / f"{name}.jsonl"
            assert save((page for call in calls for page in call), path) == sum(map(len, calls))
            pages = iter(load(path))
            loaded[name] = [[next(pages) for _ in call] for call in calls]
            assert next(pages, None) is None
        return loaded


class Replayed:
    """An extractor answering each call of a method with the pages recorded for that call: no API at all."""

    def __init__(self, calls: dict[str, list[list[RawPage]]]) -> None:
        self._calls = {name: iter(pages) for name, pages in calls.items()}

    def __getattr__(self, name: str) -> Callable[..., Iterator[RawPage]]:
        calls = self._calls[name]
        return lambda *arguments, **options: iter(next(calls))


def run(source: PartitionSource) -> dict[str, Any]:
    """What the assets ask of a source for the partition."""
    markets = source.markets(DAY)
    rows = markets.rows.unique("id", keep="first", maintain_order=True)
    return {
        "markets": markets,
        "events": source.members(DAY, "events", set(rows["event_id"].drop_nulls().to_list())),
        "series": source.members(DAY, "series", set(rows["series_id"].drop_nulls().to_list())),
        "trades": list(source.trades(DAY, rows)),
        "price_history": list(source.price_history(DAY, rows)),
    }


def assert_same(replayed: dict[str, Any], landed: dict[str, Any]) -> None:
    for table, result in landed.items():
        items = result if isinstance(result, list) else [result]
        again = replayed[table] if isinstance(result, list) else [replayed[table]]
        assert [type(i) for i in again] == [type(i) for i in items], table
        for one, other in zip(again, items, strict=True):
            if isinstance(one, MarketsDone):
                assert one == other, table
            else:
                assert_frame_equal(one.rows, other.rows)
                assert_frame_equal(one.rejects, other.rejects)
    assert sum(i.rows.height for i in landed["trades"] if isinstance(i, Normalized)) > 0
    assert any(isinstance(i, MarketsDone) for i in landed["trades"])


UNIFIED_METHODS = ("market_pages", "member_pages", "trade_pages", "price_pages")


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_unified_pages_saved_and_replayed_normalize_into_the_same_rows(
    app: SandboxApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", 2_500)  # batches across markets and within them
    extractor = UnifiedSource(layer(app, key=True), None, "test")
    recorder = Recorder(extractor, UNIFIED_METHODS)
    landed = run(UnifiedPartitions(extractor, platform, "sandbox"))
    calls = recorder.saved_and_loaded(tmp_path)
    assert calls == recorder.calls
    assert len(calls["trade_pages"][0]) > len({p.asked_for for p in calls["trade_pages"][0]})  # markets span pages
    replayed = run(UnifiedPartitions(Replayed(calls), platform, "sandbox"))  # type: ignore[arg-type]
    assert_same(replayed, landed)


@pytest.mark.parametrize("platform", ["polymarket", "kalshi"])
def test_platform_pages_saved_and_replayed_normalize_into_the_same_rows(
    app: SandboxApp, tmp_path: Path, platform: str
) -> None:
    if platform == "kalshi":
        source: KalshiPartitions | PolymarketPartitions = KalshiPartitions(KalshiPages(layer(app, "/kalshi")))
        methods = ("market_pages", "event_pages", "series_pages", "trade_pages", "candlestick_pages")
    else:
        hosts = (layer(app, f"/polymarket/{host}") for host in ("gamma", "clob", "data"))
        source = PolymarketPartitions(PolymarketPages(*hosts))
        methods = ("market_pages", "member_pages", "trade_pages", "price_pages")
    recorder = Recorder(source.pages, methods)
    landed = run(source)
    calls = recorder.saved_and_loaded(tmp_path)
    assert calls == recorder.calls
    source.pages = Replayed(calls)  # type: ignore[assignment]
    assert_same(run(source), landed)


def test_a_raw_page_survives_json_whatever_its_body() -> None:
    page = RawPage(UNIFIED, "trades", "kalshi", DAY, datetime(2026, 11, 22, 1, 2, 3, 456789, tzinfo=UTC),
                   {"trades": [{"trade_id": "t", "price": 0.5, "metadata": {"n": [1, None, True]}}],
                    "pagination": {"has_more": False, "next_cursor": None}}, "trades", ("KX-1",), {"a": "b"},
                   [{"trade_id": "t0", "price": 0.7}])
    assert page_from_json(page_json(page)) == page
    assert page.records == page.body["trades"]


def test_a_unified_trades_page_belongs_to_the_market_it_was_asked_for() -> None:
    record = {"trade_id": "t1", "market_id": "served-id", "platform": "kalshi", "side": "buy", "price": 0.5,
              "size": 1.0, "timestamp": 1_795_305_600, "taker": True}
    page = RawPage(UNIFIED, "trades", "kalshi", DAY, datetime(2026, 11, 22, tzinfo=UTC), {"trades": [record]},
                   "trades", ("KX-1",))
    rows = normalize_page(page, source="sandbox").rows
    assert rows.select("market_id", "_served_market_id").row(0) == ("KX-1", "served-id")


def test_a_stream_says_markets_are_done_as_pages_of_later_markets_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trades of markets m1, m3 (m2 not asked): normalized in batches of at least 3 records across markets."""
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", 3)

    def page(market: str, first: int, count: int) -> RawPage:
        trades = [{"trade_id": f"{market}-{n}", "market_id": market, "platform": "kalshi", "side": "buy",
                   "price": 0.5, "size": 1.0, "timestamp": 1_795_305_600 + n, "taker": True}
                  for n in range(first, first + count)]
        return RawPage(UNIFIED, "trades", "kalshi", DAY, datetime(2026, 11, 22, tzinfo=UTC), {"trades": trades},
                       "trades", (market,))

    markets = pl.DataFrame({"id": ["m3", "m2", "m1"], "outcomes": [[{"id": "yes", "name": "Yes"}]] * 3})
    stream = list(normalized_stream([page("m1", 0, 2), page("m1", 2, 2), page("m3", 0, 1), page("m3", 1, 4)],
                                    markets, source="sandbox"))
    shape = [item.through if isinstance(item, MarketsDone) else item.rows["market_id"].to_list() for item in stream]
    assert shape == [["m1"] * 4, ["m3"] * 5, "m2", "m3"]
