-- materialized: table
-- Hourly OHLC candles per market and outcome, from price history: one row per
-- (platform, market_id, outcome_id, hour). Finer points (minute history) roll up into their UTC hour:
-- open of the first, close of the last, high and low over all of them; `volume` is their sum.
SELECT
    p.platform,
    p.market_id,
    p.outcome_id,
    o.outcome_index,
    o.outcome_name,
    time_bucket(INTERVAL 1 HOUR, p.period_start) AS hour,
    arg_min(p.open_price, p.period_start) AS open_price,
    max(p.high_price) AS high_price,
    min(p.low_price) AS low_price,
    arg_max(p.close_price, p.period_start) AS close_price,
    sum(p.volume) AS volume,
    count(*) AS points
FROM staging.stg_price_history AS p
LEFT JOIN staging.stg_market_outcomes AS o
    ON o.platform = p.platform AND o.market_id = p.market_id AND o.outcome_id = p.outcome_id
GROUP BY ALL
ORDER BY p.platform, p.market_id, p.outcome_id, hour
