-- Every price-history point's open, high, low and close are within [0, 1] (a missing one counts as outside).
SELECT platform, market_id, outcome_id, period_start, open_price, high_price, low_price, close_price
FROM staging.stg_price_history
WHERE NOT coalesce(
    open_price BETWEEN 0 AND 1
    AND high_price BETWEEN 0 AND 1
    AND low_price BETWEEN 0 AND 1
    AND close_price BETWEEN 0 AND 1,
    false
)
