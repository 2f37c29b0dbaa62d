-- marts.price_candles_hourly has one row per (platform, market_id, outcome_id, hour).
SELECT platform, market_id, outcome_id, hour, count(*) AS copies
FROM marts.price_candles_hourly
GROUP BY platform, market_id, outcome_id, hour
HAVING count(*) > 1
