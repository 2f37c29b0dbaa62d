-- Trade prices are probabilities: every trade's price is within [0, 1].
SELECT platform, market_id, trade_id, traded_at, price
FROM staging.stg_trades
WHERE price IS NULL OR price NOT BETWEEN 0 AND 1
