"""marts.cross_platform_daily and its check, run on hand-made rows of the relations they read."""

from __future__ import annotations

from datetime import date

import duckdb

from pipeline.engine.warehouse.project import DEFAULT_SQL_DIR, Relation, load_project

PROJECT = load_project(DEFAULT_SQL_DIR)
MART = PROJECT.models[Relation("marts", "cross_platform_daily")].sql
RESOLVED_ALIKE = next(t for t in PROJECT.tests if t.name == "cross_platform_daily_pairs_resolved_alike").sql
DAY = date(2026, 11, 20)


def _session() -> duckdb.DuckDBPyConnection:
    db = duckdb.connect()
    db.execute("CREATE SCHEMA links; CREATE SCHEMA marts")
    db.execute("""CREATE TABLE links.market_links AS SELECT * FROM (VALUES
        ('1', 'KX-A', 'linked', 'swapped', 0.9, 'matcher', 'P one', 'K one'),
        ('2', 'KX-B', 'linked', 'same', 1.0, 'analyst', 'P two', 'K two'),
        ('3', 'KX-C', 'unsure', 'same', 0.6, 'matcher', 'P three', 'K three'))
        t(polymarket_id, kalshi_id, decision, outcome_map, confidence, source, polymarket_title, kalshi_title)""")
    db.execute("""CREATE TABLE marts.market_daily AS SELECT * FROM (VALUES
        ('polymarket', '1', DATE '2026-11-20', 0.30, NULL, 100.0, 4),
        ('kalshi', 'KX-A', DATE '2026-11-20', 0.65, 0.66, 50.0, 2),
        ('kalshi', 'KX-A', DATE '2026-11-19', 0.60, NULL, 10.0, 1),
        ('polymarket', '2', DATE '2026-11-20', 0.40, NULL, 5.0, 1),
        ('kalshi', 'KX-B', DATE '2026-11-20', 0.45, NULL, 7.0, 1),
        ('polymarket', '3', DATE '2026-11-20', 0.50, NULL, 1.0, 1),
        ('kalshi', 'KX-C', DATE '2026-11-20', 0.50, NULL, 1.0, 1))
        t(platform, market_id, day, close_price, last_price, volume, trades)""")
    db.execute("""CREATE TABLE marts.dim_markets AS SELECT * FROM (VALUES
        ('polymarket', '1', 'P one', 'resolved', 0.0), ('kalshi', 'KX-A', 'K one', 'resolved', 1.0),
        ('polymarket', '2', 'P two', 'resolved', 1.0), ('kalshi', 'KX-B', 'K two', 'resolved', 0.0))
        t(platform, market_id, market_title, status, yes_price)""")
    db.execute(f"CREATE TABLE marts.cross_platform_daily AS {MART}")
    return db


def test_closes_are_in_kalshis_yes_terms_with_the_gap_and_both_volumes() -> None:
    with _session() as db:
        rows = db.sql("SELECT polymarket_id, kalshi_id, day, round(polymarket_close, 4)::DOUBLE, "
                      "kalshi_close::DOUBLE, round(gap, 4)::DOUBLE, polymarket_volume::DOUBLE, kalshi_volume::DOUBLE, "
                      "confidence::DOUBLE FROM marts.cross_platform_daily").fetchall()
    assert rows == [
        ("1", "KX-A", date(2026, 11, 19), None, 0.60, None, None, 10.0, 0.9),  # Polymarket did not trade
        ("1", "KX-A", DAY, 0.70, 0.66, 0.04, 100.0, 50.0, 0.9),  # swapped: 1 - 0.30; Kalshi's last price point
        ("2", "KX-B", DAY, 0.40, 0.45, -0.05, 5.0, 7.0, 1.0),
    ]  # the unsure pair 3 is left out


def test_a_pair_that_resolved_differently_is_flagged() -> None:
    with _session() as db:
        flagged = db.sql(f"SELECT polymarket_id, kalshi_id FROM ({RESOLVED_ALIKE})").fetchall()
    assert flagged == [("2", "KX-B")]  # pair 1 paid alike: Polymarket's No is Kalshi's Yes
