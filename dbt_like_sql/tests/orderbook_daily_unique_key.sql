-- marts.orderbook_daily has one row per (platform, market_id, day).
SELECT platform, market_id, day, count(*) AS copies
FROM marts.orderbook_daily
GROUP BY platform, market_id, day
HAVING count(*) > 1
