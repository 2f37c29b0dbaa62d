"""Orderbook answers into rows: best price first whatever the served order, a book in no order or crossed kept
as served and reported by its check, an answer that is no book a reject with the reason."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import polars as pl

from pipeline.engine.checks import PartitionContext, run_checks
from pipeline.engine.normalize.orderbooks import RoundRows, normalize_round
from pipeline.engine.raw_pages import BookAnswer
from pipeline.engine.schema import REJECTS_SCHEMA

DAY = date(2026, 11, 21)
AT = datetime(2026, 11, 21, 12, tzinfo=UTC)


def _side(*levels: tuple[float, float]) -> list[dict[str, float]]:
    return [{"price": p, "size": s} for p, s in levels]


def _book(market_id: str, bids: list[dict[str, float]], asks: list[dict[str, float]]) -> dict[str, Any]:
    no_bids = [{"price": round(1 - a["price"], 4), "size": a["size"]} for a in asks]
    no_asks = [{"price": round(1 - b["price"], 4), "size": b["size"]} for b in bids]
    return {"data": {"market_id": market_id, "platform": "kalshi", "timestamp": "2026-11-21T12:00:01Z",
                     "yes": {"bids": bids, "asks": asks, "depth": 1.0},
                     "no": {"bids": no_bids, "asks": no_asks, "depth": 1.0},
                     "metadata": {"min_order_size": 1, "tick_size": 0.01, "neg_risk": False}}, "meta": {}}


def _round(*bodies: tuple[str, Any], at: datetime = AT) -> RoundRows:
    return normalize_round([BookAnswer(m, body, AT) for m, body in bodies], "kalshi", DAY, at, "sandbox")


def _failed(table: str, rows: pl.DataFrame) -> dict[str, int]:
    outcomes = run_checks(table, rows, PartitionContext("kalshi", DAY), pl.DataFrame(schema=REJECTS_SCHEMA))
    return {o.name: o.violations for o in outcomes if not o.passed}


def test_a_side_served_best_last_is_numbered_from_its_best_price() -> None:
    rows = _round(("A", _book("A", _side((0.40, 5), (0.42, 7)), _side((0.47, 3), (0.45, 2)))))
    yes = rows.levels.rows.filter(pl.col("outcome_side") == "yes").sort("book_side", "level")
    assert yes.select("book_side", "level", "price").rows() == [
        ("ask", 1, 0.45), ("ask", 2, 0.47), ("bid", 1, 0.42), ("bid", 2, 0.40)]
    snapshot = rows.snapshots.rows.row(0, named=True)
    assert (snapshot["best_bid"], snapshot["best_ask"], snapshot["best_bid_size"], snapshot["best_ask_size"]) == (
        0.42, 0.45, 7, 2)
    assert abs(snapshot["spread"] - 0.03) < 1e-12 and snapshot["bid_depth"] == 12 and snapshot["ask_levels"] == 2
    assert _failed("orderbook_levels", rows.levels.rows) == {} and _failed("orderbook_snapshots",
                                                                           rows.snapshots.rows) == {}


def test_a_book_in_no_order_and_a_crossed_book_are_landed_and_reported() -> None:
    rows = _round(("A", _book("A", _side((0.40, 5), (0.43, 1), (0.41, 2)), _side((0.45, 1)))),
                  ("B", _book("B", _side((0.50, 1)), _side((0.48, 1)))),
                  ("C", _book("C", _side((0.20, 0.0)), _side((1.5, 2.0)))))  # a negative size is a reject
    assert rows.snapshots.rows.height == 3 and rows.snapshots.rejects.height == 0
    assert _failed("orderbook_levels", rows.levels.rows) == {
        "levels_in_price_order": 2, "sizes_positive": 2, "prices_in_unit_interval": 2}  # the NO book mirrors the YES
    assert _failed("orderbook_snapshots", rows.snapshots.rows) == {"book_not_crossed": 1, "prices_in_unit_interval": 1}


def test_what_is_no_book_is_a_reject_with_its_reason() -> None:
    untimed = _book("B", [], [])
    untimed["data"]["timestamp"] = "2026-11-21T12:00:00"
    wrong_type = _book("C", _side((0.4, 1)), [])
    wrong_type["data"]["yes"]["bids"][0]["price"] = "0.4"
    rows = _round(("A", {"error": {"code": "NOT_FOUND", "message": "no market A"}}), ("B", untimed),
                  ("C", wrong_type), ("D", _book("served-as-E", [], _side((0.6, 1)))))
    reasons = sorted(rows.snapshots.rejects["reason"])
    assert len(reasons) == 3 and reasons[0].startswith("field 'timestamp'") and "NOT_FOUND" in reasons[2]
    assert "yes.bids[].price" in reasons[1]
    landed = rows.snapshots.rows.row(0, named=True)
    assert (landed["market_id"], landed["_served_market_id"], landed["bid_levels"]) == ("D", "served-as-E", 0)


def test_a_round_outside_its_partitions_day_is_reported() -> None:
    """A run of a day's partition whose round time (its `pmw/snapshot_at` tag) is another day's."""
    rows = _round(("A", _book("A", _side((0.4, 1)), _side((0.5, 1)))), at=datetime(2026, 11, 22, 0, 30, tzinfo=UTC))
    assert _failed("orderbook_snapshots", rows.snapshots.rows) == {"timestamps_inside_day": 1}
    assert _failed("orderbook_levels", rows.levels.rows) == {"timestamps_inside_day": 4}
