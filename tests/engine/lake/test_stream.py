"""land_stream: a stream of raw trades lands sorted and checked, in any arrival order, as if it were whole."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.lake import stream
from pipeline.engine.lake.store import Lake
from pipeline.engine.lake.stream import land_stream
from pipeline.engine.normalize import unified
from pipeline.engine.normalize.unified import normalize, normalized_chunks
from pipeline.engine.normalized import MarketsDone, Normalized
from pipeline.engine.schema import TABLES

DAY = date(2026, 11, 20)
DAY_START = int(datetime(2026, 11, 20, tzinfo=UTC).timestamp())
FETCHED_AT = datetime(2026, 11, 21, 3, tzinfo=UTC)
MARKETS = frozenset({"m1", "m2", "m3"})
CONTEXT: dict[str, Any] = {"platform": "kalshi", "day": DAY, "source": "sandbox", "fetched_at": FETCHED_AT}


def trade(market: str, n: int, at: int, **changes: Any) -> dict[str, Any]:
    return {
        "trade_id": f"{market}-{n}",
        "market_id": market,
        "platform": "kalshi",
        "side": "buy",
        "price": 0.5,
        "size": 1.0,
        "timestamp": at,
        "taker": True,
        "metadata": {"n": n},
        **changes,
    }


def raw_trades() -> list[dict[str, Any]]:
    """Three markets in id order, each newest first, with what a busy day brings: a trade of the next day,
    one of the day before, a malformed record, a duplicate, ties on time, a market the partition lacks."""
    records = [trade("m1", 0, DAY_START + 86_400 + 5)]
    records += [trade("m1", n, DAY_START + 80_000 - 10 * (n // 3)) for n in range(1, 40)]
    records += [trade("m1", 40, DAY_START - 1)]
    records += [trade("m2", n, DAY_START + 50_000 - n) for n in range(25)]
    records += [trade("m2", 99, DAY_START + 100, price="0.5")]  # rejected: a price must be a number
    records += [trade("m2", 3, DAY_START + 30, price=1.5)]  # the same key as an earlier m2 trade; price above 1
    records += [trade("m4", n, DAY_START + 9_000 - n) for n in range(30)]
    return records


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 7 records: every market spans several chunks and chunk boundaries fall inside markets."""
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", 7)


# (records a chunk, rows of a market held in memory): whole chunks; markets across chunks; large markets set
# aside on disk in runs of a few rows; runs of one row, so that every second's ties span runs.
SIZES = [(50_000, 200_000), (7, 200_000), (7, 5), (3, 1)]


def land(lake: Lake, records: list[dict[str, Any]]) -> stream.StreamLanding:
    chunks = normalized_chunks("trades", records, platform="kalshi", day=DAY, source="sandbox", fetched_at=FETCHED_AT)
    return land_stream(lake, "trades", "kalshi", DAY, chunks, market_ids=MARKETS)


@pytest.mark.parametrize(("chunk", "held"), SIZES)
def test_a_stream_lands_like_the_whole_partition_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, held: int
) -> None:
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", chunk)
    monkeypatch.setattr(stream, "HELD_ROWS", held)
    records = raw_trades()
    landed = land(Lake(tmp_path), iter(records))

    whole = normalize("trades", records, platform="kalshi", day=DAY, source="sandbox", fetched_at=FETCHED_AT)
    day_rows = whole.rows.filter(pl.col("timestamp").dt.date() == DAY)
    stored = Lake(tmp_path).read_partition("trades", "kalshi", DAY)
    assert_frame_equal(stored, day_rows.sort(TABLES["trades"].sort_key, maintain_order=True))
    assert_frame_equal(Lake(tmp_path).read_rejects("trades", "kalshi", DAY), whole.rejects)
    assert (landed.written.rows, landed.written.rejects) == (day_rows.height, 1)

    expected = run_checks("trades", day_rows, PartitionContext("kalshi", DAY, MARKETS), whole.rejects)
    assert [(o.name, o.passed, o.violations) for o in landed.outcomes] == [
        (o.name, o.passed, o.violations) for o in expected
    ]
    failed = {o.name: o.violations for o in landed.outcomes if not o.passed}
    assert failed == {"unique_key": 1, "prices_in_unit_interval": 1, "references_partition_markets": 30}
    assert_frame_equal(landed.head, stored.head(5))


def test_an_empty_stream_lands_an_empty_partition_whose_checks_pass(tmp_path: Path) -> None:
    landed = land(Lake(tmp_path), [])
    assert landed.written.rows == 0
    assert all(o.passed for o in landed.outcomes)


def _interleaved_by_time(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: (r["timestamp"], r["trade_id"]))


def _shuffled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return random.Random(7).sample(records, len(records))


ORDERS = {"reversed": lambda r: r[::-1], "interleaved_by_time": _interleaved_by_time, "shuffled": _shuffled}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("held", [200_000, 5, 1])
def test_a_stream_in_any_order_lands_like_the_whole_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_chunks: None, order: str, held: int
) -> None:
    """Markets in any order, interleaved, each in any time order, held in memory or set aside on disk."""
    monkeypatch.setattr(stream, "HELD_ROWS", held)
    records = raw_trades()
    land(Lake(tmp_path / "whole"), records)
    landed = land(Lake(tmp_path / "any"), ORDERS[order](records))
    assert_frame_equal(Lake(tmp_path / "any").read_partition("trades", "kalshi", DAY),
                       Lake(tmp_path / "whole").read_partition("trades", "kalshi", DAY))
    failed = {o.name: o.violations for o in landed.outcomes if not o.passed}
    assert failed == {"unique_key": 1, "prices_in_unit_interval": 1, "references_partition_markets": 30}


def test_rows_of_a_market_declared_complete_are_refused_and_the_previous_partition_stays(
    tmp_path: Path, small_chunks: None
) -> None:
    lake = Lake(tmp_path)
    land(lake, raw_trades())
    before = lake.read_partition("trades", "kalshi", DAY)

    def broken_promise() -> Iterator[Normalized | MarketsDone]:
        yield normalize("trades", [trade("m2", 1, DAY_START + 5)], **CONTEXT)
        yield MarketsDone("m2")
        yield normalize("trades", [trade("m1", 1, DAY_START + 6)], **CONTEXT)

    with pytest.raises(ValueError, match="arrived after the stream said every market up to 'm2' was complete"):
        land_stream(lake, "trades", "kalshi", DAY, broken_promise(), market_ids=MARKETS)
    assert_frame_equal(lake.read_partition("trades", "kalshi", DAY), before)


def test_markets_declared_complete_go_out_before_the_stream_ends(tmp_path: Path) -> None:
    written: list[str] = []
    when_declared: list[list[str]] = []  # what the writer had been given when the stream went on past a marker

    def declared() -> Iterator[Normalized | MarketsDone]:
        for market in ("m1", "m2", "m3"):
            yield normalize("trades", [trade(market, n, DAY_START + 10 - n) for n in range(3)], **CONTEXT)
            yield MarketsDone(market)
            when_declared.append(list(written))

    class Recording(Lake):
        def write_partition_batches(self, *args: Any, **kwargs: Any) -> Any:
            batches = args[3]

            def seen() -> Iterator[pl.DataFrame]:
                for batch in batches:
                    written.extend(batch["market_id"].unique(maintain_order=True).to_list())
                    yield batch

            return super().write_partition_batches(*args[:3], seen(), *args[4:], **kwargs)

    land_stream(Recording(tmp_path), "trades", "kalshi", DAY, declared(), market_ids=MARKETS)
    assert when_declared == [["m1"], ["m1", "m2"], ["m1", "m2", "m3"]]


@pytest.mark.parametrize("newest_first", [True, False])
def test_a_large_market_paged_in_either_time_order_reaches_the_writer_in_bounded_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newest_first: bool
) -> None:
    """Newest first or oldest first, as a trades endpoint may page, a market is never held whole."""
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", 7)
    monkeypatch.setattr(stream, "HELD_ROWS", 5)
    monkeypatch.setattr(stream, "BATCH_ROWS", 5)
    heights: list[int] = []
    in_file_order = stream._in_file_order

    def recorded(*args: Any, **kwargs: Any) -> Any:
        for batch in in_file_order(*args, **kwargs):
            heights.append(batch.height)
            yield batch

    monkeypatch.setattr(stream, "_in_file_order", recorded)
    records = [trade("m1", n, DAY_START + 1_000 - n // 2) for n in range(100)]
    land(Lake(tmp_path), records if newest_first else records[::-1])
    assert sum(heights) == 100
    assert max(heights) <= 5 + 7
    stored = Lake(tmp_path).read_partition("trades", "kalshi", DAY)
    assert stored.height == 100
    assert_frame_equal(stored, stored.sort(TABLES["trades"].sort_key))


def test_a_large_market_that_does_not_come_newest_first_still_lands_sorted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unified, "NORMALIZE_CHUNK", 4)
    monkeypatch.setattr(stream, "HELD_ROWS", 3)
    records = [trade("m1", n, DAY_START + (n * 7919) % 500) for n in range(60)]  # times in no order
    land(Lake(tmp_path), records)
    stored = Lake(tmp_path).read_partition("trades", "kalshi", DAY)
    assert stored.height == 60
    assert_frame_equal(stored, stored.sort(TABLES["trades"].sort_key))


def test_runs_set_aside_leave_no_file_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "HELD_ROWS", 2)
    land(Lake(tmp_path), raw_trades())
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["data.parquet", "rejects.parquet"]
