-- materialized: view
-- One row per price point (hourly by default) of a market's outcome: the latest fetch of each
-- (platform, market_id, outcome_id, period_start), with the OHLC struct flattened. Points are labelled by
-- the start of their period.
SELECT
    platform,
    market_id,
    outcome_id,
    "timestamp" AS period_start,
    date AS period_date,
    price.open AS open_price,
    price.high AS high_price,
    price.low AS low_price,
    price.close AS close_price,
    volume,
    open_interest,
    bid_ask.bid.close AS bid_close,
    bid_ask.ask.close AS ask_close,
    _source AS source,
    _fetched_at AS fetched_at
FROM raw.price_history
QUALIFY row_number() OVER (
    PARTITION BY platform, market_id, outcome_id, "timestamp" ORDER BY _fetched_at DESC, date DESC
) = 1
