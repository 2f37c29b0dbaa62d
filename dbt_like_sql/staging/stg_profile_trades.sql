-- materialized: view
-- One row per watched trader's trade: the latest fetch of each (platform, trader, trade_id). A trade lands in
-- the day of its timestamp, so the same trade is never in two days' partitions; a day landed again keeps one.
SELECT
    platform,
    trader,
    trade_id,
    market_id,
    "timestamp" AS traded_at,
    date AS trade_date,
    outcome AS outcome_name,
    side,
    price,
    size,
    price * size AS notional,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.profile_trades
QUALIFY row_number() OVER (PARTITION BY platform, trader, trade_id ORDER BY _fetched_at DESC, date DESC) = 1
