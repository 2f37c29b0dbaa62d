-- Every price a price-history point carries is within [0, 1], and a point with any price has its close.
-- Prices may be missing: a Polymarket CLOB point is a close only, and a Kalshi candle of an hour without
-- trades has no price at all (PMW_SOURCE=direct).
SELECT platform, market_id, outcome_id, period_start, open_price, high_price, low_price, close_price
FROM staging.stg_price_history
WHERE open_price NOT BETWEEN 0 AND 1
    OR high_price NOT BETWEEN 0 AND 1
    OR low_price NOT BETWEEN 0 AND 1
    OR close_price NOT BETWEEN 0 AND 1
    OR (close_price IS NULL AND coalesce(open_price, high_price, low_price) IS NOT NULL)
