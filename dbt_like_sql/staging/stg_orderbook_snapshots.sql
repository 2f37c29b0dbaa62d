-- materialized: view
-- One row per orderbook snapshot: a market's YES book at one snapshot round.
--
-- Rounds are taken through the day (every PMW_ORDERBOOK_EVERY_MIN minutes) and land in the day of their time,
-- so a (platform, market_id, snapshot_at) is one row. `spread` = best_ask - best_bid, null when a side is
-- empty (and negative for a crossed book, which the `book_not_crossed` check reports); depths are the sizes
-- resting on a side, summed.
SELECT
    platform,
    market_id,
    snapshot_at,
    date AS snapshot_date,
    "timestamp" AS book_time,
    best_bid,
    best_ask,
    mid,
    spread,
    best_bid_size,
    best_ask_size,
    bid_depth,
    ask_depth,
    bid_levels,
    ask_levels,
    min_order_size,
    tick_size,
    neg_risk,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.orderbook_snapshots
